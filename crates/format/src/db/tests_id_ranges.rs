//! A file's only process read by ranges of row ids (`RecordSource::id_ranges`): any width and
//! either reader's connection read the passes and costs as written, and as the pages read one
//! after another do where rows are missing; a file of several processes is read a page after
//! another.

use super::pages::StoredProcess;
use super::*;
use crate::records::*;
use crate::run::{IdRanges, RecordSource, Stored};
use crate::testdata::*;
use rusqlite::Connection;
use std::path::Path;

/// One process's run: passes of interleaved dispatches, pass 1 of some far from pass 0.
fn records(pids: &[u32]) -> Vec<Record> {
    let mut records = Vec::new();
    for &pid in pids {
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
                    vec![sample("GRBM_GUI_ACTIVE", 1.0), sample("SQ_WAVES", 2.0)],
                )));
            }
        }
        for id in (1_000..1_040).filter(|id| id % 3 == 0) {
            records.push(Record::Dispatch(dispatch(pid, id, Some(1), Vec::new())));
        }
    }
    records
}

fn write(path: &Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
}

/// Every range of `ranges` (`width` ids each) read by `read`, the readers taking turns.
fn by_ranges<T>(
    ranges: IdRanges,
    width: i64,
    read: impl Fn(std::ops::RangeInclusive<i64>, usize, bool) -> Vec<T>,
) -> Vec<T> {
    let ranges = IdRanges { width, ..ranges };
    (0..ranges.count())
        .flat_map(|n| read(ranges.nth(n), (n % 2) as usize, n + 2 >= ranges.count()))
        .collect()
}

fn stored(process: &crate::run::ProcessRun) -> &StoredProcess {
    let source = &process.stored.as_ref().unwrap().0;
    source.as_any().unwrap().downcast_ref().unwrap()
}

/// The passes and costs read one page after another.
fn in_pages(stored: &StoredProcess) -> (Vec<DispatchRecord>, Vec<ReplayCost>) {
    let (mut passes, mut costs, mut after) = (Vec::new(), Vec::new(), 0);
    loop {
        let (page, last) = stored.dispatches_after(after).unwrap();
        if page.is_empty() {
            break;
        }
        passes.extend(page);
        after = last;
    }
    after = 0;
    loop {
        let (page, last) = stored.costs_after(after).unwrap();
        if page.is_empty() {
            break;
        }
        costs.extend(page);
        after = last;
    }
    (passes, costs)
}

/// Every width reads what the pages one after another read; so do the process's records.
fn assert_ranges_read_as_pages(path: &Path) {
    let run = open_databases(&[path.to_path_buf()]).unwrap();
    let process = &run.processes[0];
    let stored = stored(process);
    let (passes, costs) = in_pages(stored);
    assert!(!passes.is_empty() && !costs.is_empty());
    let pass_ids = stored.id_ranges(Stored::Passes).unwrap();
    let cost_ids = stored.id_ranges(Stored::Costs).unwrap();
    for width in [1, 2, 7, 4096] {
        let read = by_ranges(pass_ids, width, |ids, reader, last| {
            stored.dispatches_in(ids, reader, last).unwrap()
        });
        assert_eq!(read, passes, "passes, {width} ids a range");
        let read = by_ranges(cost_ids, width, |ids, reader, last| {
            stored.costs_in(ids, reader, last).unwrap()
        });
        assert_eq!(read, costs, "costs, {width} ids a range");
    }
    let each: Vec<DispatchRecord> = process
        .each_dispatch()
        .map(|d| d.unwrap().into_owned())
        .collect();
    assert_eq!(each, passes);
    let each: Vec<ReplayCost> = process
        .each_cost()
        .map(|c| c.unwrap().into_owned())
        .collect();
    assert_eq!(each, costs);
}

#[test]
fn a_file_s_only_process_reads_its_records_by_ranges_as_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let records = records(&[9]);
    write(&path, &records);
    let expected = crate::RunData::from_records(records);
    let run = open_databases(std::slice::from_ref(&path)).unwrap();
    let stored = stored(&run.processes[0]);
    assert_eq!(in_pages(stored).0, expected.processes[0].dispatches);
    assert_eq!(in_pages(stored).1, expected.processes[0].costs);
    assert_ranges_read_as_pages(&path);
}

#[test]
fn ranges_with_rows_missing_read_as_the_pages_do() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write(&path, &records(&[9]));
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch("PRAGMA foreign_keys = OFF").unwrap();
    let table: String = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_kernel_dispatch_%'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    // Gaps in the pass and cost ids, and passes whose dispatch row is gone.
    conn.execute_batch(&format!(
        "DELETE FROM kreplay_dispatch_pass WHERE id % 5 = 0 OR id BETWEEN 20 AND 40;
         DELETE FROM kreplay_replay_cost WHERE id % 2 = 0;
         DELETE FROM {table} WHERE dispatch_id BETWEEN 1001 AND 1008;"
    ))
    .unwrap();
    drop(conn);
    assert_ranges_read_as_pages(&path);
}

#[test]
fn a_file_of_several_processes_is_read_a_page_after_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write(&path, &records(&[9, 10]));
    let run = open_databases(&[path]).unwrap();
    for process in &run.processes {
        assert_eq!(stored(process).id_ranges(Stored::Passes), None);
        assert_eq!(stored(process).id_ranges(Stored::Costs), None);
    }
}

#[test]
fn ranges_and_their_ends_are_found_by_row_id_without_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write(&path, &records(&[9]));
    let conn = Connection::open(&path).unwrap();
    let plan = |sql: &str| -> String {
        let mut statement = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
        let bounds = rusqlite::params_from_iter(1..=statement.parameter_count() as i64);
        let details = statement
            .query_map(bounds, |row| row.get::<_, String>(3))
            .unwrap();
        details.map(Result::unwrap).collect::<Vec<_>>().join("; ")
    };
    let costs = format!(
        "SELECT * FROM kreplay_replay_cost {}",
        super::pages::COST_RANGE_SQL
    );
    for sql in [
        super::pages::ends_sql("kreplay_dispatch_pass"),
        super::pages::ends_sql("kreplay_replay_cost"),
        super::pass_pages::PASS_RANGE_SQL.to_string(),
        costs,
    ] {
        let plan = plan(&sql);
        assert!(!plan.contains("SCAN kreplay"), "{sql}: {plan}");
    }
}

#[test]
fn a_replay_cost_whose_text_columns_are_not_text_is_reported_as_corrupt() {
    for (set, said) in [
        ("outcome = x'07'", "outcome is not text"),
        ("staging = NULL", "staging is not text"),
        ("cache = 'lukewarm'", "unknown cache state \"lukewarm\""),
        ("pass_ns = '[1,x]'", "is not a list of integers"),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.db");
        write(&path, &records(&[9]));
        let conn = Connection::open(&path).unwrap();
        // staging is NOT NULL in the schema: the check is lifted for the test's corrupt row.
        conn.execute_batch(
            "PRAGMA writable_schema = ON;
             UPDATE sqlite_schema SET sql = replace(sql, '\"staging\" TEXT NOT NULL', '\"staging\" TEXT')
               WHERE name = 'kreplay_replay_cost';
             PRAGMA writable_schema = OFF;",
        )
        .unwrap();
        drop(conn);
        let conn = Connection::open(&path).unwrap();
        conn.execute(
            &format!("UPDATE kreplay_replay_cost SET {set} WHERE id = (SELECT max(id) FROM kreplay_replay_cost)"),
            [],
        )
        .unwrap();
        drop(conn);
        let run = open_databases(std::slice::from_ref(&path)).unwrap();
        let stored = stored(&run.processes[0]);
        let err = stored.costs_after(0).expect_err(set).to_string();
        assert!(err.contains(said), "{set}: {err}");
        let ids = stored.id_ranges(Stored::Costs).unwrap();
        let err = stored.costs_in(ids.first..=ids.last, 1, true);
        let err = err.expect_err(set).to_string();
        assert!(err.contains(said), "{set}: {err}");
    }
}
