//! Pages of dispatch passes (`db::pass_pages`): any page size reads the same passes, and passes
//! whose dispatch row is gone are left out without ending the reading early.

use super::pages::StoredProcess;
use super::*;
use crate::records::*;
use crate::testdata::*;
use rusqlite::Connection;
use std::path::Path;

/// A run of two processes: passes of interleaved dispatches, pass 1 of some far from pass 0.
fn records() -> Vec<Record> {
    let mut records = Vec::new();
    for pid in [9, 10] {
        records.extend(recorded_run(pid));
        for id in 1_000..1_040 {
            records.push(Record::Dispatch(dispatch(
                pid,
                id,
                Some(0),
                vec![sample("SQ_WAVES", id as f64)],
            )));
            if id % 3 != 0 {
                records.push(Record::Dispatch(dispatch(
                    pid,
                    id,
                    Some(1),
                    vec![sample("GRBM_GUI_ACTIVE", 1.0)],
                )));
            }
        }
        for id in (1_000..1_040).filter(|id| id % 3 == 0) {
            records.push(Record::Dispatch(dispatch(
                pid,
                id,
                Some(1),
                vec![sample("GRBM_GUI_ACTIVE", 2.0)],
            )));
        }
    }
    records
}

pub(super) fn write(path: &Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
}

/// Every pass of each process of `path`, read `limit` at a time.
fn read_in_pages(path: &Path, limit: i64) -> Vec<Vec<DispatchRecord>> {
    let run = open_databases(&[path.to_path_buf()]).unwrap();
    run.processes
        .iter()
        .map(|process| {
            let source = &process.stored.as_ref().unwrap().0;
            let stored = source
                .as_any()
                .unwrap()
                .downcast_ref::<StoredProcess>()
                .unwrap();
            let (mut passes, mut after) = (Vec::new(), 0);
            loop {
                let (page, last) = stored.pass_page(after, limit).unwrap();
                if page.is_empty() {
                    return passes;
                }
                assert!(page.len() <= limit as usize);
                passes.extend(page);
                after = last;
            }
        })
        .collect()
}

#[test]
fn every_page_size_reads_the_passes_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let records = records();
    write(&path, &records);
    let expected: Vec<Vec<DispatchRecord>> = crate::RunData::from_records(records)
        .processes
        .into_iter()
        .map(|p| p.dispatches)
        .collect();
    for limit in [1, 2, 7, 64, 4096] {
        assert_eq!(read_in_pages(&path, limit), expected, "pages of {limit}");
    }
}

#[test]
fn passes_without_their_dispatch_row_are_left_out_and_reading_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let records = records();
    write(&path, &records);
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    let table: String = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_kernel_dispatch_%'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    // Dispatches 1001 to 1008 of both processes: whole pages of 2 passes without a dispatch.
    // The rows are read (the record blocks, which hold every pass whole, deleted with them).
    conn.execute(
        &format!("DELETE FROM {table} WHERE dispatch_id BETWEEN 1001 AND 1008"),
        [],
    )
    .unwrap();
    conn.execute("DELETE FROM kreplay_record_block", [])
        .unwrap();
    drop(conn);
    let gone = |d: &DispatchRecord| (1_001..=1_008).contains(&d.dispatch_id);
    let expected: Vec<Vec<DispatchRecord>> = crate::RunData::from_records(records)
        .processes
        .into_iter()
        .map(|p| p.dispatches.into_iter().filter(|d| !gone(d)).collect())
        .collect();
    for limit in [2, 3, 4096] {
        assert_eq!(read_in_pages(&path, limit), expected, "pages of {limit}");
    }
}
