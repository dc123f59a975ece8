//! Trace record blocks (`db::trace_blocks`): every tracing kind read from a process's blocks is
//! what reading its rows gives (each file here is read both ways: as written, and with its
//! trace blocks removed), in a file of several processes and in one merged from several; a
//! process whose blocks or counts do not hold every record is read from its rows; a damaged
//! block is a clear error.

use super::tests_blocks::{kinds_in_blocks, written_by_a_crashed_writer};
use super::tests_bulk::recorded;
use super::trace_blocks::TRACE_BLOCK_RECORDS;
use super::*;
use crate::api::{ApiDomain, ApiRecord};
use crate::api_args::{ApiArg, ApiArgs};
use crate::markers::{MarkerKind, MarkerRecord};
use crate::memory::{AllocationOperation, CopyDirection, MemoryAllocationRecord, MemoryCopyRecord};
use crate::records::*;
use crate::run::RunData;
use crate::testdata::*;
use rusqlite::Connection;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

const FUNCTIONS: [&str; 4] = [
    "cudaLaunchKernel",
    "cuLaunchKernel",
    "cudaMemcpyAsync",
    "cudaStreamSynchronize",
];

/// More than a block of API calls (with arguments in any order of position, duplicates among
/// them, or none), and markers of every kind, copies between every pair of sides and
/// allocations of every operation among them: values large and small, names repeated and new.
fn traced(pid: u32) -> Vec<Record> {
    let mut records = recorded_run(pid);
    let calls = TRACE_BLOCK_RECORDS as u64 + 300;
    for i in 0..calls {
        let tid = u64::from(pid) * 10 + i % 3;
        let args: Vec<ApiArg> = [2u32, 0, 1, 0]
            .iter()
            .take((i % 5) as usize)
            .enumerate()
            .map(|(n, position)| ApiArg {
                position: *position,
                ty: ["int", "void*", "size_t"][n % 3].into(),
                name: format!("a{}", (i + n as u64) % 7),
                value: format!("{}", u64::MAX - i * 977 - n as u64),
            })
            .collect();
        records.push(Record::Api(ApiRecord {
            // Not rising: a child call's id below its parent's.
            correlation_id: if i % 6 == 5 { i / 2 } else { i + 1 },
            parent_id: i % 4,
            domain: if i % 2 == 0 {
                ApiDomain::Runtime
            } else {
                ApiDomain::Driver
            },
            function: Cow::Borrowed(FUNCTIONS[(i % 4) as usize]),
            pid,
            tid,
            start_ns: 1_000_000 + i * 1_000 - (i % 3) * 700,
            end_ns: 1_000_000 + i * 1_000 + 400,
            args: match args.is_empty() {
                true => ApiArgs::None,
                false => ApiArgs::Read(args),
            },
        }));
        if i % 3 == 0 {
            let kind =
                [MarkerKind::PushPop, MarkerKind::StartEnd, MarkerKind::Mark][(i % 9 / 3) as usize];
            records.push(Record::Marker(MarkerRecord {
                id: i / 3 + 1,
                kind,
                operation: ["nvtxRangePushA", "nvtxDomainRangeStartEx", "nvtxMarkA"]
                    [(i % 9 / 3) as usize]
                    .into(),
                domain: if i % 2 == 0 {
                    String::new()
                } else {
                    "trainer".into()
                },
                message: if i % 4 == 0 {
                    String::new()
                } else {
                    format!("step {i} — ü")
                },
                category: (i % 7) as u32,
                pid,
                tid,
                start_ns: 1_000_000 + i * 1_000,
                // A mark's end, other than its start in memory, reads back as its start.
                end_ns: 1_000_000 + i * 1_000 + 9,
            }));
        }
        if i % 4 == 1 {
            let side = |n: u64| [None, Some(0), Some(1)][(n % 3) as usize];
            let (src_agent, dst_agent) = (side(i), side(i / 3));
            records.push(Record::MemoryCopy(MemoryCopyRecord {
                id: i / 4 + 1,
                operation: ["cuMemcpyHtoDAsync_v2", "cudaMemcpy"][(i % 2) as usize].into(),
                direction: CopyDirection::between(src_agent, dst_agent),
                src_agent,
                dst_agent,
                src_address: u64::MAX - i,
                dst_address: i << 20,
                bytes: i * 4096,
                stream_id: i % 4,
                pid,
                tid,
                start_ns: 1_000_000 + i * 1_000 + 100,
                end_ns: 1_000_000 + i * 1_000 + 300,
            }));
        }
        if i % 5 == 2 {
            let operation = [
                AllocationOperation::Allocate,
                AllocationOperation::Free,
                AllocationOperation::VmemAllocate,
                AllocationOperation::VmemFree,
            ][(i / 5 % 4) as usize];
            records.push(Record::MemoryAllocation(MemoryAllocationRecord {
                id: i / 5 + 1,
                operation,
                memory: ["device", "host", "managed"][(i % 3) as usize].into(),
                api: ["cudaMalloc", "cudaFree", "cuMemCreate"][(i % 3) as usize].into(),
                // A free's agent is not kept: it reads back as none.
                agent_id: [None, Some(0), Some(1)][(i / 2 % 3) as usize],
                address: u64::MAX - (i << 12),
                size: i * 512,
                stream_id: (i % 2 == 0).then_some(i % 3),
                pid,
                tid,
                start_ns: 1_000_000 + i * 1_000 + 500,
                end_ns: 1_000_000 + i * 1_000 + 501,
            }));
        }
    }
    records
}

/// Every tracing record of every process of `path` as the writers read them, printed: each
/// kind, the calls also without arguments and of each domain.
fn traces(path: &Path) -> String {
    let run = open_databases(&[path.to_path_buf()]).unwrap();
    printed_traces(&run)
}

fn printed_traces(run: &RunData) -> String {
    macro_rules! all {
        ($records:expr) => {
            $records
                .map(|r| r.unwrap().into_owned())
                .collect::<Vec<_>>()
        };
    }
    let mut printed = String::new();
    for process in &run.processes {
        printed += &format!(
            "{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n{:?}\n",
            all!(process.each_marker()),
            all!(process.each_api_call()),
            all!(process.each_api_call_without_args()),
            all!(process.each_api_call_of(ApiDomain::Runtime)),
            all!(process.each_api_call_of(ApiDomain::Driver)),
            all!(process.each_copy()),
            all!(process.each_allocation()),
        );
    }
    printed
}

/// A copy of `path` without its trace blocks: read from its rows.
pub(super) fn without_trace_blocks(path: &Path) -> PathBuf {
    let copy = path.with_extension("rows.db");
    std::fs::copy(path, &copy).unwrap();
    let conn = Connection::open(&copy).unwrap();
    conn.execute("DELETE FROM kreplay_record_block WHERE kind >= 2", [])
        .unwrap();
    copy
}

/// Whether each process of `path` reads each tracing kind from its blocks.
fn traces_in_blocks(path: &Path) -> Vec<[bool; 4]> {
    kinds_in_blocks(path)
        .into_iter()
        .map(|b| b.traces)
        .collect()
}

/// `path` read from its trace blocks (every kind of every process) gives what its rows give;
/// `untraced`: how many of its processes have no tracing record (none to read either way).
fn assert_blocks_read_as_rows(path: &Path, untraced: usize) -> String {
    let processes = traces_in_blocks(path).len();
    assert_eq!(traces_in_blocks(path), vec![[true; 4]; processes]);
    let rows = without_trace_blocks(path);
    let from_rows = traces_in_blocks(&rows);
    assert_eq!(
        from_rows.iter().filter(|k| **k == [false; 4]).count(),
        processes - untraced
    );
    assert_eq!(
        from_rows.iter().filter(|k| **k == [true; 4]).count(),
        untraced
    );
    let from_blocks = traces(path);
    assert_eq!(from_blocks, traces(&rows), "blocks and rows differ");
    from_blocks
}

#[test]
fn every_tracing_kind_reads_from_its_blocks_as_from_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Record> = traced(3).into_iter().chain(traced(5)).collect();
    let path = recorded(dir.path(), "two.db", &records);
    let read = assert_blocks_read_as_rows(&path, 0);
    assert!(read.contains("cudaStreamSynchronize") && read.contains("step 3 — ü"));
    let conn = Connection::open(&path).unwrap();
    let blocks: i64 = conn
        .query_row(
            "SELECT count(*) FROM kreplay_record_block WHERE kind = 3",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(blocks, 4, "two blocks of API calls per process");
}

#[test]
fn a_merged_file_reads_its_trace_blocks_as_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let inputs = [
        recorded(dir.path(), "100.db", &traced(100)),
        recorded(dir.path(), "200.db", &recorded_run(200)),
        recorded(dir.path(), "300.db", &traced(300)),
    ];
    let run = open_databases(&inputs).unwrap();
    let merged = dir.path().join("merged.db");
    write_rocpd(&run, &merged).unwrap();
    let read = assert_blocks_read_as_rows(&merged, 1);
    assert_eq!(read, printed_traces(&run), "the merge reads as its files");
}

#[test]
fn a_process_whose_trace_blocks_or_counts_fall_short_is_read_from_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let records: Vec<Record> = traced(3).into_iter().chain(traced(5)).collect();
    let path = recorded(dir.path(), "two.db", &records);
    let expected = traces(&path);
    // One block of API calls gone: that process reads its calls from the rows.
    let short = dir.path().join("short.db");
    std::fs::copy(&path, &short).unwrap();
    Connection::open(&short)
        .unwrap()
        .execute(
            "DELETE FROM kreplay_record_block WHERE id = (SELECT min(id) FROM kreplay_record_block WHERE kind = 3)",
            [],
        )
        .unwrap();
    let mut kinds = traces_in_blocks(&short);
    kinds.sort();
    assert_eq!(kinds, vec![[true, false, true, true], [true; 4]]);
    assert_eq!(traces(&short), expected);
    // A region added after the file was closed: the counts no longer describe it.
    let added = dir.path().join("added.db");
    std::fs::copy(&path, &added).unwrap();
    let conn = Connection::open(&added).unwrap();
    let table: String = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_region%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(
        &format!(
            "INSERT INTO {table} (guid, nid, pid, tid, start, end, name_id, event_id)
             SELECT guid, nid, pid, tid, start, end, name_id, event_id FROM {table} LIMIT 1"
        ),
        [],
    )
    .unwrap();
    drop(conn);
    assert_eq!(traces_in_blocks(&added), vec![[false; 4]; 2]);
}

#[test]
fn a_file_whose_writer_never_closed_it_reads_its_traces_from_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let records = traced(9);
    written_by_a_crashed_writer(&path, &records);
    assert_eq!(traces_in_blocks(&path), vec![[false; 4]]);
    let closed = recorded(dir.path(), "closed.db", &records);
    assert_eq!(traces(&path), traces(&closed));
}

#[test]
fn a_trace_block_cut_short_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path(), "run.db", &traced(9));
    Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE kreplay_record_block SET data = substr(data, 1, length(data) - 3)
             WHERE id = (SELECT max(id) FROM kreplay_record_block WHERE kind = 3)",
            [],
        )
        .unwrap();
    let run = open_databases(std::slice::from_ref(&path)).unwrap();
    let error = (run.processes[0].each_api_call())
        .find_map(|call| call.err())
        .expect("an error")
        .to_string();
    assert!(
        error.contains("record block") && error.contains("cut short"),
        "{error}"
    );
}
