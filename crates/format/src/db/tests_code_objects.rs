//! Code objects in the database: their rows and rocpd's `code_objects` view, kernel symbols'
//! links to them, whatever order the records come in, and merged databases.

use super::*;
use crate::records::*;
use crate::run::RunData;
use crate::testdata::*;
use rusqlite::Connection;
use std::path::Path;

fn write(path: &Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
}

/// The recorded run with its code objects moved before its kernel symbols (the order the
/// producers send them in: a module is loaded before its kernels run).
fn loaded_first(pid: u32) -> Vec<Record> {
    let records = recorded_run(pid);
    let (objects, mut rest): (Vec<Record>, Vec<Record>) = records
        .into_iter()
        .partition(|r| matches!(r, Record::CodeObject(_)));
    rest.splice(2..2, objects);
    rest
}

/// (uri, storage type, code object size, memory size) of every row of rocpd's `code_objects`
/// view, and whether every kernel symbol's `code_object_id` names one of them.
fn view_rows(path: &Path) -> (Vec<(String, String, i64, i64)>, bool) {
    let conn = Connection::open(path).unwrap();
    let mut statement = conn
        .prepare(
            "SELECT uri, storage_type_str, code_object_size, memory_size FROM code_objects ORDER BY id",
        )
        .unwrap();
    let rows = statement
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let dangling: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM kernel_symbols K WHERE NOT EXISTS
             (SELECT 1 FROM code_objects C WHERE C.id = K.code_object_id AND C.guid = K.guid)",
            [],
            |r| r.get(0),
        )
        .unwrap();
    (rows, dangling == 0)
}

#[test]
fn code_objects_are_rocpd_rows_that_kernel_symbols_name() {
    let dir = tempfile::tempdir().unwrap();
    for (name, records) in [("first.db", loaded_first(5)), ("late.db", recorded_run(5))] {
        let path = dir.path().join(name);
        write(&path, &records);
        let (rows, linked) = view_rows(&path);
        assert_eq!(
            rows,
            vec![
                (
                    "memory://5#offset=0x7f0000001000&size=9216".to_string(),
                    "MEMORY".to_string(),
                    88,
                    9216
                ),
                (
                    "memory://5#offset=0x7f0000020000&size=512".to_string(),
                    "MEMORY".to_string(),
                    88,
                    512
                ),
            ],
            "{name}"
        );
        assert!(linked, "{name}: a kernel symbol names no code object");
        let read = read_databases(&[path]).unwrap();
        assert_eq!(read, RunData::from_records(records), "{name}");
    }
}

#[test]
fn a_kernel_whose_code_object_never_came_keeps_its_id_and_the_view_stays_clean() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing.db");
    let records: Vec<Record> = recorded_run(6)
        .into_iter()
        .filter(|r| !matches!(r, Record::CodeObject(o) if o.code_object_id == 2))
        .collect();
    write(&path, &records);
    let (rows, _) = view_rows(&path);
    assert_eq!(rows.len(), 1, "the placeholder is not in rocpd's view");
    let read = read_databases(&[path]).unwrap();
    let process = &read.processes[0];
    assert_eq!(process.code_objects.len(), 1);
    assert_eq!(process.kernel(12).unwrap().code_object_id, 2);
    assert_eq!(read, RunData::from_records(records));
}

#[test]
fn merged_processes_keep_their_own_code_objects() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    write(&a, &loaded_first(21));
    write(&b, &recorded_run(22));
    let run = read_databases(&[a, b]).unwrap();
    let merged = dir.path().join("merged.db");
    write_rocpd(&run, &merged).unwrap();
    let (rows, linked) = view_rows(&merged);
    assert_eq!(rows.len(), 4);
    assert!(rows[0].0.starts_with("memory://21#") && rows[3].0.starts_with("memory://22#"));
    assert!(linked);
    assert_eq!(read_databases(&[merged]).unwrap(), run);
}
