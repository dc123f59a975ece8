//! One dispatch row per dispatch with every pass kept, rocprofv3's views, and files of the
//! previous schema version.

use super::*;
use crate::records::*;
use crate::run::RunData;
use crate::testdata::*;
use crate::views::ROCPD_VIEWS;
use rusqlite::Connection;
use std::path::Path;

fn write_through_writer(path: &Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
}

fn count(conn: &Connection, sql: &str) -> i64 {
    conn.query_row(sql, [], |r| r.get(0)).unwrap()
}

#[test]
fn every_view_rocprofv3_writes_answers_plain_sql() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write_through_writer(&path, &recorded_run(3));
    let conn = Connection::open(&path).unwrap();
    for view in ROCPD_VIEWS {
        conn.prepare(&format!("SELECT * FROM {view}"))
            .and_then(|mut s| s.query([])?.next().map(|_| ()))
            .unwrap_or_else(|e| panic!("{view}: {e}"));
    }
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM kernels"), 3);
    let categories: Vec<String> = conn
        .prepare("SELECT DISTINCT category FROM kernels")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(categories, ["KERNEL_DISPATCH"]);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM regions"), 0);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM processes"), 1);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM threads"), 1);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM kernel_symbols"), 2);
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM pmc_events"),
        4,
        "one value per dispatch and counter"
    );
    let (name, calls): (String, i64) = conn
        .query_row(
            "SELECT name, total_calls FROM top_kernels WHERE name LIKE 'saxpy%'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((name.as_str(), calls), ("saxpy(float*, float*, float)", 1));
    let truncated: String = conn
        .query_row(
            "SELECT truncated_kernel_name FROM kernel_symbols WHERE kernel_name = '_Z5saxpyPfS_f'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(truncated, "saxpy");
}

#[test]
fn pmc_info_has_a_row_per_agent_and_counter() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let mut records = recorded_run(5);
    // A second device, described after the counters.
    let mut second = match &records[1] {
        Record::Agent(agent) => agent.clone(),
        other => panic!("{other:?}"),
    };
    second.agent_id = 1;
    records.push(Record::Agent(second));
    write_through_writer(&path, &records);
    let conn = Connection::open(&path).unwrap();
    let rows: Vec<(i64, String)> = conn
        .prepare("SELECT agent_abs_index, name FROM pmc_info ORDER BY agent_abs_index, id")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let names = ["SQ_WAVES", "SQ_INSTS_VALU", "GRBM_GUI_ACTIVE"];
    let expected: Vec<(i64, String)> = [0, 1]
        .iter()
        .flat_map(|agent| names.iter().map(move |n| (*agent, n.to_string())))
        .collect();
    assert_eq!(rows, expected);
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM rocpd_info_pmc WHERE agent_id IS NULL"
        ),
        0
    );
    // Read back, every counter once.
    let read = read_databases(&[path]).unwrap();
    assert_eq!(read.processes[0].counters.len(), 3);
}

#[test]
fn counters_described_before_any_agent_go_to_the_first_agent() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let mut records = recorded_run(6);
    let agent = records.remove(1);
    let at = records
        .iter()
        .position(|r| matches!(r, Record::Dispatch(_)))
        .unwrap();
    records.insert(at, agent);
    write_through_writer(&path, &records);
    let conn = Connection::open(&path).unwrap();
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM pmc_info"), 3);
    assert_eq!(count(&conn, "SELECT COUNT(*) FROM rocpd_info_pmc"), 3);
    assert_eq!(
        read_databases(&[path]).unwrap(),
        RunData::from_records(records)
    );
}

#[test]
fn a_later_pass_arriving_first_gives_way_to_the_lower_one() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let mut records = recorded_run(7);
    // Pass 1 of dispatch 1 before its pass 0.
    let first = records
        .iter()
        .position(|r| matches!(r, Record::Dispatch(d) if d.dispatch_id == 1))
        .unwrap();
    records.swap(first, first + 1);
    write_through_writer(&path, &records);
    let conn = Connection::open(&path).unwrap();
    let (pass, start): (u32, i64) = conn
        .query_row(
            r#"SELECT replay_pass, "start" FROM kernels WHERE dispatch_id = 1"#,
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!((pass, start), (0, 6_000), "pass 0's execution");
    let waves: (f64, u32) = conn
        .query_row(
            "SELECT value, replay_pass FROM counters_collection WHERE dispatch_id = 1 AND counter_name = 'SQ_WAVES'",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .unwrap();
    assert_eq!(waves, (512.0, 0));
    assert_eq!(
        read_databases(&[path]).unwrap(),
        RunData::from_records(records),
        "every pass reads back, in the order written"
    );
}

/// A database kreplay wrote with schema version 3 (one dispatch row per pass): the reference
/// app, three groups sharing a counter, two of its kernels.
const SCHEMA_3: &str = include_str!("testdata/kreplay_schema_3.sql");

#[test]
fn a_database_of_schema_version_3_still_reads_and_converts() {
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old.db");
    Connection::open(&old)
        .unwrap()
        .execute_batch(SCHEMA_3)
        .unwrap();
    let run = read_databases(std::slice::from_ref(&old)).unwrap();
    let process = &run.processes[0];
    assert_eq!(process.dispatches.len(), 21, "7 dispatches, 3 passes each");
    for pass in 0..3 {
        assert_eq!(
            process
                .dispatches
                .iter()
                .filter(|d| d.replay_pass == Some(pass))
                .count(),
            7
        );
    }
    let new = dir.path().join("new.db");
    write_rocpd(&run, &new).unwrap();
    assert_eq!(read_databases(std::slice::from_ref(&new)).unwrap(), run);
    let conn = Connection::open(&new).unwrap();
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM rocpd_kernel_dispatch"),
        7
    );
    assert_eq!(
        count(&conn, "SELECT COUNT(*) FROM kreplay_pass_counters"),
        process
            .dispatches
            .iter()
            .map(|d| d.counters.len() as i64)
            .sum::<i64>()
    );
}

#[test]
fn a_later_pass_finds_its_dispatch_after_many_others_came_between() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let mut records = recorded_run(9);
    let at = records
        .iter()
        .position(|r| matches!(r, Record::Dispatch(_)))
        .unwrap();
    let mut between: Vec<Record> = vec![Record::Dispatch(dispatch(
        9,
        100,
        Some(1),
        vec![sample("SQ_WAVES", 7.0), sample("GRBM_GUI_ACTIVE", 1.0)],
    ))];
    // More dispatches than the writer remembers, then pass 0 of dispatch 100.
    between.extend((0..5_000).map(|i| {
        Record::Dispatch(dispatch(
            9,
            1_000 + i,
            Some(0),
            vec![sample("SQ_WAVES", 1.0)],
        ))
    }));
    between.push(Record::Dispatch(dispatch(
        9,
        100,
        Some(0),
        vec![sample("SQ_WAVES", 5.0)],
    )));
    records.splice(at..at, between);
    write_through_writer(&path, &records);
    let conn = Connection::open(&path).unwrap();
    assert_eq!(
        count(
            &conn,
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch WHERE dispatch_id = 100"
        ),
        1
    );
    let values: Vec<(String, f64, u32)> = conn
        .prepare(
            "SELECT counter_name, value, replay_pass FROM counters_collection WHERE dispatch_id = 100 ORDER BY counter_name",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        values,
        [
            ("GRBM_GUI_ACTIVE".to_string(), 1.0, 1),
            ("SQ_WAVES".to_string(), 5.0, 0)
        ]
    );
    assert_eq!(
        read_databases(&[path]).unwrap(),
        RunData::from_records(records)
    );
}
