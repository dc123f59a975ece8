//! The rocpd output copied from its stored database (`db::bulk`) is the file the row-by-row
//! writer makes of the same run: every table, view and AUTOINCREMENT counter, row for row with
//! the same ids and schema (only the file's uuid differs, and the order in which `sqlite_sequence`
//! lists the tables where files are appended); runs it does not handle are written row by row.
//! Traced runs, copied as recorded, are `tests_bulk_traces`'.

use super::bulk::copy_stored;
use super::merged::write_rows;
use super::*;
use crate::progress::{Silent, Ticker};
use crate::records::{Record, RecordSink};
use crate::run::RunData;
use crate::testdata::*;
use rusqlite::types::Value;
use rusqlite::Connection;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn write_through_writer(path: &Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
}

/// A database's tables and views (names without the file's uuid), each with its rows.
pub(super) type Contents = BTreeMap<String, Vec<Vec<Value>>>;

/// Every table and view of a database (names without the file's uuid) with its rows in their
/// order, `sqlite_sequence` among them; the uuid's value made `UUID`.
pub(super) fn contents(path: &Path) -> Contents {
    let conn = Connection::open(path).unwrap();
    let uuid: String = conn
        .query_row(
            "SELECT value FROM rocpd_metadata WHERE tag = 'uuid'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    let names: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let strip = |value: Value| match value {
        Value::Text(text) => Value::Text(text.replace(&uuid, "UUID")),
        other => other,
    };
    let mut contents = BTreeMap::new();
    for name in names {
        let mut statement = conn.prepare(&format!(r#"SELECT * FROM "{name}""#)).unwrap();
        let width = statement.column_count();
        let rows: Vec<Vec<Value>> = statement
            .query_map([], |r| {
                (0..width)
                    .map(|i| r.get::<_, Value>(i).map(strip))
                    .collect()
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut rows = rows;
        if name == "sqlite_sequence" {
            // SQLite's AUTOINCREMENT counters: the same, listed in the order the tables got
            // their first row (the copy's own order where files are appended).
            rows.sort_by_key(|row| format!("{row:?}"));
        }
        contents.insert(name.replace(&uuid, ""), rows);
    }
    // The schema itself: tables, indexes (SQLite's own among them) and views, by name.
    let mut schema = conn
        .prepare("SELECT type, name, tbl_name, sql FROM sqlite_master")
        .unwrap();
    let mut entries: Vec<Vec<Value>> = schema
        .query_map([], |r| {
            (0..4).map(|i| r.get::<_, Value>(i).map(strip)).collect()
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    entries.sort_by_key(|row| format!("{row:?}"));
    contents.insert("sqlite_master".to_string(), entries);
    contents
}

/// Writes `run` both ways into `dir`: whether the copy was taken, and both files' contents
/// (the copy's empty when it was not). Every process of both reads its passes and costs from
/// record blocks (a copy's moved with their rows).
pub(super) fn both_ways(run: &RunData, dir: &Path, name: &str) -> (bool, Contents, Contents) {
    let copied = dir.join(format!("{name}-copied.db"));
    let rows = dir.join(format!("{name}-rows.db"));
    let taken = copy_stored(run, &copied).unwrap();
    write_rows(run, &rows, &Ticker::begin(&Silent, &rows, 0)).unwrap();
    let mut written = vec![&rows];
    if taken {
        written.push(&copied);
    }
    for path in written {
        for blocks in super::tests_blocks::read_from_blocks(path) {
            assert_eq!(blocks, (true, true), "{name}: {}", path.display());
        }
    }
    let copy = if taken {
        let check: String = Connection::open(&copied)
            .unwrap()
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(check, "ok", "{name}: the copy is a sound database");
        contents(&copied)
    } else {
        BTreeMap::new()
    };
    (taken, copy, contents(&rows))
}

fn assert_copied_equal(run: &RunData, dir: &Path, name: &str) {
    let (taken, copy, rows) = both_ways(run, dir, name);
    assert!(taken, "{name}: the copy is taken");
    for table in [
        "rocpd_kernel_dispatch",
        "kreplay_pass_pmc",
        "sqlite_sequence",
        "kernels",
    ] {
        assert!(!rows[table].is_empty(), "{name}: {table} has rows");
    }
    assert_eq!(
        copy.keys().collect::<Vec<_>>(),
        rows.keys().collect::<Vec<_>>()
    );
    for (table, expected) in &rows {
        // Record blocks are cut where each file's pages of rows end, the row writer's where
        // the merged file's do: both hold every record (below), and the readers' tests read
        // the rows beside them and compare (`db::blocks`).
        if table == "kreplay_record_block" {
            continue;
        }
        let blocks = Value::Text("kreplay_record_block".into());
        let kept = |rows: &Vec<Vec<Value>>| -> Vec<Vec<Value>> {
            rows.iter()
                .filter(|row| row.first() != Some(&blocks))
                .cloned()
                .collect()
        };
        let (got, expected) = (kept(&copy[table]), kept(expected));
        assert_eq!(got.len(), expected.len(), "{name}: rows of {table}");
        for (index, (got, want)) in got.iter().zip(&expected).enumerate() {
            assert_eq!(got, want, "{name}: {table}, row {index}");
        }
    }
}

pub(super) fn recorded(dir: &Path, name: &str, records: &[Record]) -> PathBuf {
    let path = dir.join(name);
    write_through_writer(&path, records);
    path
}

#[test]
fn one_recorded_process_is_copied_as_the_row_writer_writes_it() {
    // Replayed passes, a pass-less dispatch, costs, code objects described after their kernels,
    // a warning, the process's end.
    let dir = tempfile::tempdir().unwrap();
    let path = recorded(dir.path(), "one.db", &recorded_run(4242));
    let run = open_databases(std::slice::from_ref(&path)).unwrap();
    assert_copied_equal(&run, dir.path(), "one");
    // Through the public writer, in place (the input's file replaced by the output).
    write_rocpd(&run, &path).unwrap();
    assert_eq!(
        read_databases(&[path]).unwrap(),
        RunData::from_records(recorded_run(4242))
    );
}

#[test]
fn a_merged_file_of_several_processes_is_copied_as_the_row_writer_writes_it() {
    let dir = tempfile::tempdir().unwrap();
    // Two hosts: the third process's node is a row of its own.
    let inputs: Vec<PathBuf> = [100, 200, 300]
        .iter()
        .map(|pid| recorded(dir.path(), &format!("{pid}.db"), &on_host(*pid, "node-a")))
        .collect();
    // Several files into one (a run of several processes): each file's rows appended, with a
    // counter described after reading (as the command line does).
    let mut run = open_databases(&inputs).unwrap();
    assert_copied_equal(&run, dir.path(), "files");
    run.processes[1].counters[0].description = "described again".to_string();
    assert_copied_equal(&run, dir.path(), "files-described");
    let merged = dir.path().join("merged.db");
    write_rocpd(&run, &merged).unwrap();
    // That file again (`kreplay convert -f rocpd` of a run's output): copied.
    let again = open_databases(std::slice::from_ref(&merged)).unwrap();
    assert_copied_equal(&again, dir.path(), "merged");
    // A part of the file's processes is not the file.
    let mut part = again.clone();
    part.processes.remove(1);
    assert!(!both_ways(&part, dir.path(), "part").0);
    // A process whose pid an earlier file's process has (another host): row by row.
    let twin = recorded(dir.path(), "twin.db", &on_host(100, "node-b"));
    let run = open_databases(&[inputs[0].clone(), twin]).unwrap();
    assert!(!both_ways(&run, dir.path(), "twin").0);
    // Files of several processes and of one (without warnings), merged.
    let quiet = recorded(
        dir.path(),
        "400.db",
        &without_warnings(on_host(400, "node-b")),
    );
    let run = open_databases(&[merged, quiet.clone()]).unwrap();
    assert_eq!(run.processes.len(), 4);
    assert_copied_equal(&run, dir.path(), "files-of-several");
    // No file with a warning: the copy's warning table gets no AUTOINCREMENT counter either.
    let quieter = recorded(
        dir.path(),
        "500.db",
        &without_warnings(on_host(500, "node-a")),
    );
    let run = open_databases(&[quiet, quieter]).unwrap();
    assert_copied_equal(&run, dir.path(), "no-warnings");
}

fn without_warnings(mut records: Vec<Record>) -> Vec<Record> {
    records.retain(|r| !matches!(r, Record::Warning(_)));
    records
}

/// [`recorded_run`] of a process on `host`.
fn on_host(pid: u32, host: &str) -> Vec<Record> {
    let mut records = recorded_run(pid);
    if let Record::Process(process) = &mut records[0] {
        process.hostname = host.to_string();
    }
    records
}

#[test]
fn what_the_command_line_adds_is_carried_and_other_changes_are_written_row_by_row() {
    let dir = tempfile::tempdir().unwrap();
    // Counters recorded by name only, as the injected library records them on a GPU.
    let mut records = recorded_run(7);
    for record in &mut records {
        if let Record::Counter(counter) = record {
            counter.description.clear();
            counter.unit.clear();
        }
    }
    let path = recorded(dir.path(), "one.db", &records);
    let read = open_databases(std::slice::from_ref(&path)).unwrap();
    let carried: [fn(&mut crate::run::ProcessRun); 3] = [
        |p| {
            p.counters[0].description = "described by the command line".to_string();
            p.counters[0].unit = "warp".to_string();
        },
        |p| p.process.kernel_rename = true,
        |p| {
            p.process.sections = vec![crate::section_spec::SectionSpec {
                identifier: "Mem".into(),
                display_name: "Memory".into(),
                rows: Vec::new(),
            }]
        },
    ];
    for (index, change) in carried.iter().enumerate() {
        let mut run = read.clone();
        change(&mut run.processes[0]);
        assert_copied_equal(&run, dir.path(), &format!("carried-{index}"));
    }
    let others: [fn(&mut crate::run::ProcessRun); 4] = [
        |p| p.process.mangled_kernels = true,
        |p| p.process.truncate_kernels = true,
        |p| p.warnings.clear(),
        |p| p.counters[1].metric = "another.metric".to_string(),
    ];
    for (index, change) in others.iter().enumerate() {
        let mut run = read.clone();
        change(&mut run.processes[0]);
        let (taken, _, _) = both_ways(&run, dir.path(), &format!("changed-{index}"));
        assert!(!taken, "change {index}");
    }
}

#[test]
fn records_before_their_descriptions_are_written_row_by_row() {
    // Dispatches before the agent and kernels that describe them: placeholder rows came first.
    let dir = tempfile::tempdir().unwrap();
    let mut records = recorded_run(9);
    let described: Vec<Record> = records.drain(..7).collect();
    let mut reordered: Vec<Record> = records[..3].to_vec();
    reordered.extend(described);
    reordered.extend(records[3..].iter().cloned());
    let path = recorded(dir.path(), "late.db", &reordered);
    let run = open_databases(&[path]).unwrap();
    let (taken, _, _) = both_ways(&run, dir.path(), "late");
    assert!(!taken);
}
