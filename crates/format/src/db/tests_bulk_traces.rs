//! A traced run's rocpd output copied from its stored databases (`db::bulk`, `db::bulk_merge`,
//! issue 49): one file is copied as it was recorded (its trace rows' ids among the dispatches',
//! where the row-by-row writer puts the dispatches' first), several are appended with every
//! reference moved; the views and kreplay's reader give the same rows as from the sources and
//! as from the row-by-row writer's file, and every reference points at a row of its process.

use super::tests_bulk::{both_ways, contents, recorded};
use super::*;
use crate::api::{ApiDomain, ApiRecord};
use crate::api_args::{ApiArg, ApiArgs};
use crate::markers::MarkerRecord;
use crate::records::{AgentInfo, Record};
use crate::testdata::*;
use rusqlite::types::Value;
use rusqlite::Connection;
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// An API call of process `pid` on the dispatches' thread, with `args` (position, name, value).
fn call(pid: u32, id: u64, function: &'static str, args: &[(&str, &str)]) -> Record {
    Record::Api(ApiRecord {
        correlation_id: id,
        parent_id: 0,
        domain: ApiDomain::Runtime,
        function: Cow::Borrowed(function),
        pid,
        tid: u64::from(pid) + 1,
        start_ns: 4_500 + id * 10,
        end_ns: 4_505 + id * 10,
        args: match args.is_empty() {
            true => ApiArgs::None,
            false => ApiArgs::Read(
                (args.iter().enumerate())
                    .map(|(position, (name, value))| ApiArg {
                        position: position as u32,
                        ty: "int".into(),
                        name: name.to_string(),
                        value: value.to_string(),
                    })
                    .collect(),
            ),
        },
    })
}

/// [`recorded_run`] of process `pid` with its traces recorded among the dispatches, as a GPU
/// run records them: a call and a host allocation (the CPU agent's row) before the device is
/// described, a launch's call before its dispatch, markers, copies (a new stream among them)
/// and frees after.
fn traced(pid: u32) -> Vec<Record> {
    // Thread ids of the process's own (tids are unique on a host).
    let tid = |tid: u64| u64::from(pid) * 100 + tid;
    let of_process = |record: Record| match record {
        Record::Marker(m) => Record::Marker(MarkerRecord {
            pid,
            tid: tid(m.tid),
            ..m
        }),
        Record::MemoryCopy(mut c) => {
            (c.pid, c.tid) = (pid, tid(c.tid));
            Record::MemoryCopy(c)
        }
        Record::MemoryAllocation(mut a) => {
            (a.pid, a.tid) = (pid, tid(a.tid));
            Record::MemoryAllocation(a)
        }
        other => other,
    };
    let traces: Vec<Record> = recorded_with_traces()
        .into_iter()
        .filter(|r| {
            matches!(
                r,
                Record::Marker(_) | Record::MemoryCopy(_) | Record::MemoryAllocation(_)
            )
        })
        .map(of_process)
        .collect();
    // Markers 0..4, then allocations 1-4, copies 1-3, frees 5-7.
    let (markers, memory) = traces.split_at(4);
    let mut run = recorded_run(pid);
    // The peer copy's device is described after the host's CPU agent row.
    let second = match &run[1] {
        Record::Agent(agent) => Record::Agent(AgentInfo {
            agent_id: 1,
            ..agent.clone()
        }),
        _ => unreachable!("recorded_run describes its agent first"),
    };
    run.insert(2, second);
    let mut at = |index: usize, records: Vec<Record>| {
        let position = run
            .iter()
            .position(|r| match (index, r) {
                (0, Record::Agent(_)) => true,
                (1, Record::Dispatch(d)) => d.dispatch_id == 1,
                (2, Record::Dispatch(d)) => d.dispatch_id == 2,
                (3, Record::CodeObject(_)) => true,
                _ => false,
            })
            .unwrap();
        run.splice(position..position, records);
    };
    at(
        0,
        vec![
            call(pid, 1, "cudaMalloc", &[("size", "4096")]),
            memory[1].clone(),
            markers[3].clone(),
        ],
    );
    at(
        1,
        vec![
            memory[0].clone(),
            memory[2].clone(),
            call(
                pid,
                101,
                "cudaLaunchKernel",
                &[("func", "0x1"), ("stream", "7")],
            ),
        ],
    );
    at(
        2,
        vec![
            markers[1].clone(),
            memory[4].clone(),
            call(pid, 102, "cudaGraphLaunch", &[]),
        ],
    );
    at(3, [&markers[..1], &markers[2..3], &memory[5..]].concat());
    at(3, vec![memory[3].clone()]);
    run
}

/// The columns of the views that hold row ids (the ids differ between the files compared).
const ROW_IDS: &[&str] = &[
    "id",
    "event_id",
    "argument_id",
    "stream_id",
    "queue_id",
    "pmc_id",
    "code_object_id",
    "kernel_id",
    "agent_id",
    "region_name_id",
    "track_id",
    "counter_id",
    "dispatch_row",
    "pass_id",
];

/// Every kreplay and rocpd view of a database (not the tables' own views) with its rows sorted,
/// the columns that hold row ids left out: what the rows say and what they refer to.
fn views(path: &Path) -> Vec<(String, Vec<Vec<Value>>)> {
    let conn = Connection::open(path).unwrap();
    let names: Vec<String> = super::bulk::column(
        &conn,
        "SELECT name FROM sqlite_master WHERE type = 'view' AND name NOT LIKE 'rocpd_%' ORDER BY name",
        [],
    )
    .unwrap();
    names
        .into_iter()
        .map(|name| (name.clone(), view(&conn, &name)))
        .collect()
}

fn view(conn: &Connection, name: &str) -> Vec<Vec<Value>> {
    let mut statement = conn.prepare(&format!(r#"SELECT * FROM "{name}""#)).unwrap();
    let kept: Vec<usize> = (0..statement.column_count())
        .filter(|&i| !ROW_IDS.contains(&statement.column_name(i).unwrap()))
        .collect();
    let mut rows: Vec<Vec<Value>> = statement
        .query_map([], |r| kept.iter().map(|&i| r.get::<_, Value>(i)).collect())
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.sort_by_key(|row| format!("{row:?}"));
    rows
}

/// The references of the trace tables and the dispatches (table, column, table referred to).
const REFERENCES: &[(&str, &str, &str)] = &[
    ("rocpd_event", "category_id", "rocpd_string"),
    ("rocpd_kernel_dispatch", "event_id", "rocpd_event"),
    ("rocpd_kernel_dispatch", "region_name_id", "rocpd_string"),
    ("rocpd_kernel_dispatch", "stream_id", "rocpd_info_stream"),
    ("rocpd_track", "name_id", "rocpd_string"),
    ("rocpd_track", "tid", "rocpd_info_thread"),
    ("rocpd_arg", "event_id", "rocpd_event"),
    ("rocpd_region", "name_id", "rocpd_string"),
    ("rocpd_region", "event_id", "rocpd_event"),
    ("rocpd_region", "tid", "rocpd_info_thread"),
    ("rocpd_sample", "track_id", "rocpd_track"),
    ("rocpd_sample", "event_id", "rocpd_event"),
    ("rocpd_memory_copy", "name_id", "rocpd_string"),
    ("rocpd_memory_copy", "dst_agent_id", "rocpd_info_agent"),
    ("rocpd_memory_copy", "src_agent_id", "rocpd_info_agent"),
    ("rocpd_memory_copy", "queue_id", "rocpd_info_queue"),
    ("rocpd_memory_copy", "stream_id", "rocpd_info_stream"),
    ("rocpd_memory_copy", "event_id", "rocpd_event"),
    ("rocpd_memory_allocate", "agent_id", "rocpd_info_agent"),
    ("rocpd_memory_allocate", "stream_id", "rocpd_info_stream"),
    ("rocpd_memory_allocate", "event_id", "rocpd_event"),
];

/// Every reference of `path` (but NULL) is to a row of the same process; each table has rows.
fn assert_references_hold(path: &Path) {
    let conn = Connection::open(path).unwrap();
    for (table, column, to) in REFERENCES {
        let count = |sql: String| conn.query_row(&sql, [], |r| r.get::<_, i64>(0)).unwrap();
        assert!(
            count(format!("SELECT COUNT(*) FROM {table}")) > 0,
            "{table}"
        );
        let dangling = count(format!(
            "SELECT COUNT(*) FROM {table} F WHERE F.{column} IS NOT NULL AND NOT EXISTS
             (SELECT 1 FROM {to} T WHERE T.id = F.{column} AND T.guid = F.guid)"
        ));
        assert_eq!(dangling, 0, "{path:?}: {table}.{column}");
    }
}

/// The copy of `run` (taken) and its row-by-row file: the same views and the same run read
/// back, every reference in place, and the copy's ids not the row-by-row writer's.
fn assert_copy_is_the_rows_as_recorded(run: &crate::run::RunData, dir: &Path, name: &str) {
    let (taken, copy, rows) = both_ways(run, dir, name);
    assert!(taken, "{name}: the copy is taken");
    assert_ne!(copy, rows, "{name}: the ids are in the order recorded");
    let copied = dir.join(format!("{name}-copied.db"));
    let written = dir.join(format!("{name}-rows.db"));
    assert_references_hold(&copied);
    // Its trace blocks moved with the rows: each kind of each process is read from them.
    for kinds in super::tests_blocks::kinds_in_blocks(&copied) {
        assert_eq!(kinds.traces, [true; 4], "{name}");
    }
    assert_eq!(views(&copied), views(&written), "{name}");
    assert_eq!(
        read_databases(std::slice::from_ref(&copied)).unwrap(),
        read_databases(&[written]).unwrap()
    );
}

#[test]
fn a_traced_file_is_copied_as_recorded_and_reads_as_its_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path(), "traced.db", &traced(3));
    let run = open_databases(std::slice::from_ref(&path)).unwrap();
    assert!(run.processes[0].has_traces());
    assert_copy_is_the_rows_as_recorded(&run, dir.path(), "traced");
    // The copy is the file: every table row for row (only the uuid new).
    assert_eq!(
        contents(&dir.path().join("traced-copied.db")),
        contents(&path)
    );
    // Through the public writer, and that output converted again (the output as it is).
    let out = dir.path().join("out.db");
    write_rocpd(&run, &out).unwrap();
    assert_eq!(contents(&out), contents(&path));
    let again = open_databases(std::slice::from_ref(&out)).unwrap();
    let twice = dir.path().join("twice.db");
    write_rocpd(&again, &twice).unwrap();
    assert_eq!(contents(&twice), contents(&out));
    assert_eq!(
        read_databases(&[twice]).unwrap(),
        read_databases(&[path]).unwrap()
    );
}

#[test]
fn traced_files_are_appended_with_every_reference_moved() {
    let dir = tempfile::tempdir().unwrap();
    // Traced processes and an untraced one, each file after the first with ids to move.
    let inputs: Vec<PathBuf> = [
        ("100.db", traced(100)),
        ("200.db", recorded_run(200)),
        ("300.db", traced(300)),
    ]
    .iter()
    .map(|(name, records)| recorded(dir.path(), name, records))
    .collect();
    let run = open_databases(&inputs).unwrap();
    assert_copy_is_the_rows_as_recorded(&run, dir.path(), "files");
    // The views of the copy are those of the files one after another (the summaries, which
    // add up over the processes, apart).
    let copied = views(&dir.path().join("files-copied.db"));
    let per_file: Vec<_> = inputs.iter().map(|path| views(path)).collect();
    for (index, (name, rows)) in copied.iter().enumerate() {
        if ["top_kernels", "busy", "top"].contains(&name.as_str()) {
            continue;
        }
        let mut expected: Vec<Vec<Value>> = (per_file.iter())
            .flat_map(|file| file[index].1.clone())
            .collect();
        expected.sort_by_key(|row| format!("{row:?}"));
        assert_eq!(rows, &expected, "{name}");
    }
}

/// Rows SQLite keeps partly on overflow pages (a dispatch's ranges longer than a page), which
/// a merge does not write by pages (`db::btree`): every file's rows of those tables are then
/// appended by SQL instead, the copy the same.
#[test]
fn rows_longer_than_a_page_are_appended_by_sql() {
    let dir = tempfile::tempdir().unwrap();
    let mut long = traced(200);
    for record in &mut long {
        if let Record::Dispatch(d) = record {
            d.ranges = vec!["a".repeat(3_000), "b".repeat(3_000)];
        }
    }
    let inputs = [
        recorded(dir.path(), "100.db", &traced(100)),
        recorded(dir.path(), "200.db", &long),
    ];
    let run = open_databases(&inputs).unwrap();
    assert_copy_is_the_rows_as_recorded(&run, dir.path(), "long");
}
