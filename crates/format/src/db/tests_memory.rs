//! Copies and allocations in the database: rocpd's `memory_copies` and `memory_allocations`
//! views show them as rocprofv3 writes its memory records (the host a `CPU` agent), they read
//! back as written, a page at a time, and the CPU agent is no device of the run.

use super::*;
use crate::records::*;
use crate::run::RunData;
use crate::testdata::*;
use rusqlite::Connection;

fn write(path: &std::path::Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
}

#[test]
fn copies_and_allocations_are_rocpd_rows_and_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let records = recorded_with_memory();
    write(&path, &records);

    let conn = Connection::open(&path).unwrap();
    type CopyRow = (String, String, i64, String, String, i64, i64);
    let copies: Vec<CopyRow> = conn
        .prepare(
            "SELECT category, name, size, src_agent_type, dst_agent_type, corr_id, stack_id FROM memory_copies ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?, r.get(6)?))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let row = |name: &str, size, src: &str, dst: &str, id| {
        (
            "MEMORY_COPY".to_string(),
            name.to_string(),
            size,
            src.to_string(),
            dst.to_string(),
            0,
            id,
        )
    };
    assert_eq!(
        copies,
        [
            row("MEMORY_COPY_HOST_TO_DEVICE", 256, "CPU", "GPU", 1),
            row("MEMORY_COPY_DEVICE_TO_HOST", 512, "GPU", "CPU", 2),
            row("MEMORY_COPY_DEVICE_TO_DEVICE", 768, "GPU", "GPU", 3),
        ]
    );
    let peer: (i64, i64) = conn
        .query_row(
            "SELECT src_agent_abs_index, dst_agent_abs_index FROM memory_copies WHERE name = 'MEMORY_COPY_DEVICE_TO_DEVICE'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(peer, (1, 0));

    type AllocRow = (String, String, String, Option<String>, i64, i64);
    let allocations: Vec<AllocRow> = conn
        .prepare(
            "SELECT category, type, level, agent_type, address, size FROM memory_allocations ORDER BY id",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?, r.get(4)?, r.get(5)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let gpu = || Some("GPU".to_string());
    let alloc = |kind: &str, level: &str, agent: Option<String>, address: i64, size| {
        (
            "MEMORY_ALLOCATION".to_string(),
            kind.to_string(),
            level.to_string(),
            agent,
            address,
            size,
        )
    };
    assert_eq!(
        allocations,
        [
            alloc("ALLOC", "REAL", gpu(), 0x7f00_0000_0000, 4096),
            alloc("ALLOC", "REAL", Some("CPU".into()), 0x5000, 512),
            alloc("ALLOC", "REAL", gpu(), 0x7f00_0001_0000, 64),
            alloc("ALLOC", "VIRTUAL", gpu(), 0x7f10_0000_0000, 1 << 21),
            alloc("FREE", "REAL", None, 0x7f00_0001_0000, 0),
            alloc("FREE", "VIRTUAL", None, 0x7f10_0000_0000, 0),
            alloc("FREE", "REAL", None, 0x5000, 0),
        ]
    );
    // A stream-ordered allocation names its stream.
    let stream: String = conn
        .query_row(
            "SELECT stream_name FROM memory_allocations WHERE size = 64",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(stream, "stream 7");

    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    let expected = RunData::from_records(records);
    assert_eq!(read.processes[0].copies, expected.processes[0].copies);
    assert_eq!(
        read.processes[0].allocations,
        expected.processes[0].allocations
    );
    // The CPU agent is no device of the run.
    assert_eq!(read.processes[0].agents, expected.processes[0].agents);

    // `kreplay convert` writes them again.
    let merged = dir.path().join("merged.db");
    write_rocpd(&read, &merged).unwrap();
    let back = read_databases(&[merged]).unwrap();
    assert_eq!(back.processes[0].copies, expected.processes[0].copies);
    assert_eq!(
        back.processes[0].allocations,
        expected.processes[0].allocations
    );
}

#[test]
fn copies_read_back_page_after_page_in_the_order_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("many.db");
    let one = recorded_with_memory()
        .into_iter()
        .find_map(|r| match r {
            Record::MemoryCopy(c) => Some(c),
            _ => None,
        })
        .unwrap();
    let mut records = vec![Record::Process(process(3))];
    // More than a page (4096).
    records.extend(
        (1..=4500u64)
            .map(|id| Record::MemoryCopy(crate::memory::MemoryCopyRecord { id, ..one.clone() })),
    );
    write(&path, &records);
    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    let ids: Vec<u64> = read.processes[0].copies.iter().map(|c| c.id).collect();
    assert_eq!(ids, (1..=4500).collect::<Vec<_>>());
}
