//! A writer sent records faster than it inserts them keeps every one (through its backlog on
//! disk); and the writer's throughput on dispatch passes (ignored: a measurement, run by hand):
//! `KREPLAY_BENCH_DB=/tmp/w.db cargo test --release -p kreplay-format writer_throughput -- --ignored --nocapture`
//! writes 200k pass records (100k dispatches of 2 passes, 2 counters each, some passes out of
//! order or late) after the unit tests' recorded runs, and keeps the file for comparison.

use super::*;
use crate::records::*;
use crate::testdata::*;
use crate::RunData;
use std::time::Instant;

/// The records of the measurement: the shared recorded runs, then `dispatches` dispatches.
fn bench_records(dispatches: u64) -> Vec<Record> {
    let mut records = recorded_with_markers();
    records.extend(
        recorded_with_memory()
            .into_iter()
            .chain(recorded_with_traces())
            .filter(|r| {
                matches!(
                    r,
                    Record::MemoryCopy(_) | Record::MemoryAllocation(_) | Record::Api(_)
                )
            }),
    );
    let mut late = Vec::new();
    for id in 1000..1000 + dispatches {
        let mut first = dispatch(
            3,
            id,
            Some(0),
            vec![
                sample("SQ_WAVES", id as f64),
                sample("SQ_INSTS_VALU", 2.0 * id as f64),
            ],
        );
        let mut second = dispatch(
            3,
            id,
            Some(1),
            vec![
                sample("SQ_WAVES", 1.0 + id as f64),
                sample("GRBM_GUI_ACTIVE", 0.5 * id as f64),
            ],
        );
        first.kernel_id = 11 + id % 3;
        second.kernel_id = first.kernel_id;
        if id % 5 == 0 {
            first.ranges = vec!["outer".to_string(), format!("range {}", id % 4)];
            second.ranges = first.ranges.clone();
        }
        if id % 1000 == 7 {
            late.push(Record::Dispatch(first));
            records.push(Record::Dispatch(second));
        } else if id % 7 == 0 {
            records.push(Record::Dispatch(second));
            records.push(Record::Dispatch(first));
        } else {
            records.push(Record::Dispatch(first));
            records.push(Record::Dispatch(second));
        }
        if id % 10_000 == 0 {
            records.append(&mut late);
        }
    }
    records.append(&mut late);
    records.push(Record::ProcessEnd { end_ns: 9_999_999 });
    records
}

#[test]
fn a_writer_sent_more_than_it_inserts_keeps_every_record_through_its_backlog() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fast.db");
    let backlog = super::backlog::path_of(&path);
    let records = bench_records(4_000);
    let writer = DbWriter::create_with_limits(&path, MAX_QUEUED_RECORDS, 1000, || {}).unwrap();
    for record in records.clone() {
        writer.send(record);
    }
    // The queue is far longer than the 1,000 records: what waits goes to the file beside the database.
    let began = Instant::now();
    while !backlog.exists() && began.elapsed() < std::time::Duration::from_secs(5) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    assert!(
        backlog.exists(),
        "no backlog file while 8,000 passes waited"
    );
    writer.finish().unwrap();
    assert!(!backlog.exists(), "the backlog is removed once drained");
    assert_eq!(
        read_databases(std::slice::from_ref(&path)).unwrap(),
        RunData::from_records(records)
    );
}

#[test]
#[ignore = "a measurement: run by hand with --release"]
fn writer_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let path = std::env::var_os("KREPLAY_BENCH_DB")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| dir.path().join("bench.db"));
    let records = bench_records(100_000);
    let count = records.len();
    let started = Instant::now();
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in records {
        writer.send(record);
    }
    writer.finish().unwrap();
    let seconds = started.elapsed().as_secs_f64();
    println!(
        "{count} records in {seconds:.2} s: {:.0} records/s",
        count as f64 / seconds
    );
}
