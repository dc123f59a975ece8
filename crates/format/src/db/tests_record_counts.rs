//! The counts a closed database stores (`db::record_counts`): read instead of counting the
//! tables, and counted as before where they are missing or no longer describe the file.

use super::*;
use crate::records::*;
use crate::testdata::*;
use rusqlite::Connection;
use std::path::Path;

fn write_through_writer(path: &Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
}

/// Each process's (dispatch passes, replay costs) as opened, and every record read.
fn opened(path: &Path) -> Vec<((usize, usize), crate::run::ProcessRun)> {
    open_database(path)
        .unwrap()
        .into_iter()
        .map(|p| {
            let counts = (p.dispatch_count(), p.cost_count());
            (counts, p.loaded().unwrap())
        })
        .collect()
}

fn count_rows(path: &Path) -> Vec<String> {
    let conn = Connection::open(path).unwrap();
    let mut statement = conn
        .prepare("SELECT value FROM rocpd_metadata WHERE tag = 'kreplay_record_counts'")
        .unwrap();
    let rows = statement.query_map([], |r| r.get(0)).unwrap();
    rows.collect::<Result<_, _>>().unwrap()
}

/// Runs `sql` on the file's `rocpd_metadata` table (named `METADATA` in it: the view over it
/// cannot be changed).
fn change_metadata(path: &Path, sql: &str) {
    let conn = Connection::open(path).unwrap();
    let table: String = conn
        .query_row(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_metadata_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(&sql.replace("METADATA", &format!(r#""{table}""#)), [])
        .unwrap();
}

#[test]
fn a_closed_database_stores_its_counts_and_is_read_the_same_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write_through_writer(&path, &recorded_run(3));
    assert!(
        !dir.path().join("run.db-wal").exists(),
        "closed whole, out of WAL"
    );
    let stored = count_rows(&path);
    assert_eq!(stored.len(), 1);
    let with_counts = opened(&path);
    let (counts, process) = &with_counts[0];
    assert_eq!(*counts, (process.dispatches.len(), process.costs.len()));
    assert!(counts.0 > 0 && counts.1 > 0);
    assert!(stored[0].contains(&format!(r#""passes":{}"#, counts.0)));
    // An older kreplay's file, or a process killed before it closed its file: counted.
    change_metadata(
        &path,
        "DELETE FROM METADATA WHERE tag = 'kreplay_record_counts'",
    );
    assert_eq!(opened(&path), with_counts);
}

#[test]
fn counts_that_no_longer_add_up_to_the_tables_are_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write_through_writer(&path, &recorded_run(3));
    let expected = opened(&path);
    // A count row that lies (or rows added after the file was closed) is not believed.
    change_metadata(
        &path,
        r#"UPDATE METADATA SET value = replace(value, '"passes":', '"passes":1')
           WHERE tag = 'kreplay_record_counts'"#,
    );
    assert_eq!(opened(&path), expected);
}

#[test]
fn a_merged_file_stores_each_process_counts() {
    let dir = tempfile::tempdir().unwrap();
    let mut run = crate::run::RunData::default();
    for pid in [3, 4] {
        let path = dir.path().join(format!("{pid}.db"));
        write_through_writer(&path, &recorded_run(pid));
        run.processes.extend(open_database(&path).unwrap());
    }
    let merged = dir.path().join("merged.db");
    write_rocpd(&run, &merged).unwrap();
    assert_eq!(count_rows(&merged).len(), 2);
    let read = opened(&merged);
    assert_eq!(read.len(), 2);
    for ((counts, process), original) in read.iter().zip(&run.processes) {
        assert_eq!(
            *counts,
            (original.dispatch_count(), original.cost_count()),
            "{}",
            process.guid()
        );
        assert_eq!(*counts, (process.dispatches.len(), process.costs.len()));
    }
}
