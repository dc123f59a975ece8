//! Record blocks (`db::blocks`): the passes and costs a writer keeps as blocks read back as their
//! rows do (every read in these tests is also read from the rows and compared, `pass_pages`),
//! a process whose blocks miss rows is read from its rows, and a damaged block is a clear error.

use super::pages::{Blocks, StoredProcess, PAGE_ROWS};
use super::tests_pass_pages::write;
use super::*;
use crate::records::*;
use crate::testdata::*;
use rusqlite::Connection;
use std::path::Path;

/// Dispatches of one process in replay windows of 8 (pass 0 of each, then pass 1 of each), some
/// under marker ranges, values among them NaN, -0 and large ones, a replay cost per dispatch:
/// more than two pages of pass rows.
fn records(pid: u32) -> Vec<Record> {
    let mut records = recorded_run(pid);
    let first = 1_000u64;
    let dispatches = PAGE_ROWS as u64 + 1_500;
    for window in (first..first + dispatches).step_by(8) {
        for pass in [0, 1] {
            for id in window..(window + 8).min(first + dispatches) {
                let value = match id % 5 {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => 1e300,
                    _ => id as f64 + 0.25,
                };
                let name = ["SQ_WAVES", "GRBM_GUI_ACTIVE"][pass as usize];
                let mut d = dispatch(pid, id, Some(pass), vec![sample(name, value)]);
                if id % 7 == 0 {
                    d.ranges = vec!["step 1".into(), format!("layer {}", id % 3)];
                }
                if id % 11 == 0 {
                    d.block = [0, 1, 1];
                }
                records.push(Record::Dispatch(d));
            }
        }
        for id in window..(window + 8).min(first + dispatches) {
            records.push(Record::ReplayCost(ReplayCost {
                dispatch_id: id,
                agent_id: 0,
                outcome: if id % 2 == 0 {
                    ReplayOutcome::Replayed
                } else {
                    ReplayOutcome::DeclinedDevicePrintf
                },
                passes: 2,
                bytes_tracked: id * 4096,
                bytes_snapshotted: id,
                bytes_restored: 0,
                staging: Staging::Device,
                drain_ns: 10,
                snapshot_ns: id % 13,
                pass_ns: vec![id, id + 1],
                restore_ns: 3,
                timing_execution_ns: 0,
                cache: CacheState::Flushed,
                sm_clock_mhz: [1_755, 1_980],
                memory_clock_mhz: [2_619, 2_619],
            }));
        }
    }
    records
}

/// Whether each process of `path` reads its passes and its costs from blocks.
pub(super) fn read_from_blocks(path: &Path) -> Vec<(bool, bool)> {
    kinds_in_blocks(path)
        .into_iter()
        .map(|blocks| (blocks.passes, blocks.costs))
        .collect()
}

/// Which kinds of records each process of `path` reads from blocks.
pub(super) fn kinds_in_blocks(path: &Path) -> Vec<Blocks> {
    let run = open_databases(&[path.to_path_buf()]).unwrap();
    run.processes
        .iter()
        .map(|process| {
            let source = &process.stored.as_ref().unwrap().0;
            let stored = source.as_any().unwrap();
            stored.downcast_ref::<StoredProcess>().unwrap().blocks
        })
        .collect()
}

/// The records a reader should give for `records`: values as SQLite gives them back (-0 as 0),
/// a grid of 0 where its block is 0; printed, so that NaN equals NaN.
fn expected(records: Vec<Record>) -> String {
    let mut run = crate::RunData::from_records(records);
    for process in &mut run.processes {
        for d in &mut process.dispatches {
            for axis in 0..3 {
                if d.block[axis] == 0 {
                    d.grid[axis] = 0;
                }
            }
            for sample in &mut d.counters {
                if sample.value == 0.0 {
                    sample.value = 0.0;
                }
            }
        }
    }
    printed(&run)
}

/// Every process's passes and costs of `run`, printed.
fn printed(run: &crate::RunData) -> String {
    let all: Vec<_> = run
        .processes
        .iter()
        .map(|p| (&p.dispatches, &p.costs))
        .collect();
    format!("{all:?}")
}

fn read(path: &Path) -> String {
    printed(&read_databases(&[path.to_path_buf()]).unwrap())
}

#[test]
fn blocks_hold_every_pass_and_cost_in_pages_and_read_as_the_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let records = records(9);
    write(&path, &records);
    assert_eq!(read_from_blocks(&path), vec![(true, true)]);
    let conn = Connection::open(&path).unwrap();
    let count = |sql: &str| conn.query_row(sql, [], |r| r.get::<_, i64>(0)).unwrap();
    assert!(count("SELECT count(*) FROM kreplay_record_block WHERE kind = 0") >= 3);
    assert_eq!(
        count("SELECT count(*) FROM kreplay_record_block WHERE (first_row - 1) / 4096 != (last_row - 1) / 4096"),
        0,
        "no block spans two pages of row ids"
    );
    drop(conn);
    assert_eq!(read(&path), expected(records));
}

#[test]
fn a_process_whose_blocks_miss_rows_is_read_from_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let mut records = records(9);
    records.extend(self::records(10));
    write(&path, &records);
    assert_eq!(read_from_blocks(&path), vec![(true, true), (true, true)]);
    let conn = Connection::open(&path).unwrap();
    // One block of the first process's passes, and every block of the second's costs.
    conn.execute_batch(
        "DELETE FROM kreplay_record_block WHERE id = (SELECT min(id) FROM kreplay_record_block WHERE kind = 0);
         DELETE FROM kreplay_record_block WHERE kind = 1 AND guid = (SELECT max(guid) FROM kreplay_record_block)",
    )
    .unwrap();
    drop(conn);
    let mut from_blocks = read_from_blocks(&path);
    from_blocks.sort();
    assert_eq!(from_blocks, vec![(false, true), (true, false)]);
    assert_eq!(read(&path), expected(records));
}

#[test]
fn a_block_cut_short_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write(&path, &records(9));
    let conn = Connection::open(&path).unwrap();
    conn.execute_batch(
        "UPDATE kreplay_record_block SET data = substr(data, 1, length(data) - 3)
         WHERE id = (SELECT max(id) FROM kreplay_record_block WHERE kind = 0)",
    )
    .unwrap();
    drop(conn);
    let error = read_databases(std::slice::from_ref(&path))
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("record block") && error.contains("cut short"),
        "{error}"
    );
}

#[test]
fn a_file_whose_writer_never_closed_it_is_read_from_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let records = records(9);
    written_by_a_crashed_writer(&path, &records);
    assert_eq!(read_from_blocks(&path), vec![(false, false)]);
    assert_eq!(read(&path), expected(records));
}

/// `records` committed to `path` by a writer that then crashes: neither finished nor dropped, its
/// last blocks and its counts never written.
pub(super) fn written_by_a_crashed_writer(path: &Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.flush();
    std::mem::forget(writer);
}
