use super::*;
use crate::identity::guid_for;
use crate::records::*;
use crate::run::RunData;
use crate::schema;
use crate::testdata::*;
use rusqlite::Connection;
use std::collections::HashMap;
use std::path::Path;
use std::time::{Duration, Instant};

fn write_through_writer(path: &Path, records: &[Record]) {
    let writer = DbWriter::create(path, || {}).unwrap();
    for record in records {
        writer.send(record.clone());
    }
    writer.finish().unwrap();
}

#[test]
fn a_recorded_run_reads_back_equal() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    let records = recorded_run(4242);
    write_through_writer(&path, &records);
    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    assert_eq!(read, RunData::from_records(records));
    // finish() leaves one self-contained file: no WAL beside it.
    assert!(!dir.path().join("run.db-wal").exists());
}

#[test]
fn close_through_a_shared_sink_leaves_a_single_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let records = recorded_run(12);
    let sink: std::sync::Arc<dyn RecordSink> =
        std::sync::Arc::new(DbWriter::create(&path, || {}).unwrap());
    for record in &records {
        sink.send(record.clone());
    }
    sink.close();
    assert!(
        !dir.path().join("shared.db-wal").exists(),
        "closed: no WAL left"
    );
    sink.send(records[7].clone()); // after close: dropped, no panic
    sink.flush(); // after close: returns at once
    sink.close();
    assert_eq!(
        read_databases(std::slice::from_ref(&path)).unwrap(),
        RunData::from_records(records)
    );
}

#[test]
fn a_child_forked_without_exec_neither_waits_for_nor_stops_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("forked.db");
    let records = recorded_run(77);
    let sink: std::sync::Arc<dyn RecordSink> =
        std::sync::Arc::new(DbWriter::create(&path, || {}).unwrap());
    sink.send(records[0].clone());
    // SAFETY: the child only calls the writer's methods and _exit.
    let child = unsafe { libc::fork() };
    assert!(child >= 0, "fork failed");
    if child == 0 {
        // No writer thread here: waiting for it would block forever.
        sink.flush();
        sink.close();
        // SAFETY: ends the forked child without running the parent's exit handlers.
        unsafe { libc::_exit(0) };
    }
    let began = Instant::now();
    let mut status = 0;
    loop {
        // SAFETY: waits for our own child without blocking.
        let done = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
        if done == child {
            break;
        }
        if began.elapsed() > Duration::from_secs(5) {
            // SAFETY: our own child.
            unsafe { libc::kill(child, libc::SIGKILL) };
            panic!("the forked child blocked in the writer");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    // The parent's writer is untouched by the child.
    for record in &records[1..] {
        sink.send(record.clone());
    }
    sink.close();
    assert_eq!(
        read_databases(std::slice::from_ref(&path)).unwrap(),
        RunData::from_records(records)
    );
}

#[test]
fn a_writer_that_falls_behind_drops_records_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("behind.db");
    let writer = DbWriter::create_with_limits(&path, 4, BACKLOG_AT, || {}).unwrap();
    // Another connection holds the write lock: the writer thread stalls on its first insert.
    let blocker = Connection::open(&path).unwrap();
    blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
    let records = recorded_run(3);
    writer.send(records[0].clone());
    std::thread::sleep(Duration::from_millis(50));
    let sending = Instant::now();
    for _ in 0..100 {
        writer.send(records[7].clone());
    }
    assert!(
        sending.elapsed() < Duration::from_secs(1),
        "send() must not wait for the writer"
    );
    blocker.execute_batch("COMMIT").unwrap();
    drop(blocker);
    writer.finish().unwrap();
    let read = read_databases(&[path]).unwrap();
    let process = &read.processes[0];
    let dropped = 100 - process.dispatches.len();
    assert!(dropped >= 95, "only {dropped} dropped with room for 4");
    assert_eq!(process.warnings.len(), 1);
    let message = &process.warnings[0].message;
    assert!(
        message.starts_with(&format!("{dropped} records were dropped")),
        "{message}"
    );
}

#[test]
fn three_passes_are_one_dispatch_row_carrying_pass_0_and_three_pass_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write_through_writer(&path, &recorded_run(1));
    let conn = Connection::open(&path).unwrap();
    let rows: Vec<(i64, Option<u32>, i64, i64)> = conn
        .prepare(r#"SELECT id, replay_pass, event_id, "start" FROM rocpd_kernel_dispatch WHERE dispatch_id = 1"#)
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(rows.len(), 1, "one dispatch row per dispatch: {rows:?}");
    let (row, pass, _, start) = rows[0];
    assert_eq!(
        pass,
        Some(0),
        "the row carries the application's own execution"
    );
    let passes: Vec<(Option<u32>, i64)> = conn
        .prepare(r#"SELECT replay_pass, "start" FROM kreplay_dispatch_pass WHERE dispatch_row = ?1 ORDER BY id"#)
        .unwrap()
        .query_map([row], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(
        passes.iter().map(|p| p.0).collect::<Vec<_>>(),
        vec![Some(0), Some(1), Some(2)],
        "every pass kept"
    );
    assert_eq!(passes[0].1, start);
    let events: i64 = conn
        .query_row("SELECT COUNT(*) FROM rocpd_event", [], |r| r.get(0))
        .unwrap();
    assert_eq!(events, 3, "one event per dispatch (dispatches 1, 2 and 3)");
    let untraced: Option<u32> = conn
        .query_row(
            "SELECT replay_pass FROM rocpd_kernel_dispatch WHERE dispatch_id = 3",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(
        untraced, None,
        "a dispatch without replay has a NULL replay_pass"
    );
}

#[test]
fn counters_collection_gives_each_counter_once_per_dispatch_and_our_view_every_pass() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.db");
    write_through_writer(&path, &recorded_run(1));
    let conn = Connection::open(&path).unwrap();
    type Row = (String, f64, Option<u32>, String, i64, i64, i64);
    let rows: Vec<Row> = conn
        .prepare(
            "SELECT counter_name, value, replay_pass, kernel_name, agent_id, grid_size, lds_block_size
             FROM counters_collection WHERE dispatch_id = 1 ORDER BY counter_name",
        )
        .unwrap()
        .query_map([], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                r.get(3)?,
                r.get(4)?,
                r.get(5)?,
                r.get(6)?,
            ))
        })
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    let values: Vec<(&str, f64, Option<u32>)> =
        rows.iter().map(|r| (r.0.as_str(), r.1, r.2)).collect();
    assert_eq!(
        values,
        vec![
            ("GRBM_GUI_ACTIVE", 0.5, Some(1)),
            ("SQ_INSTS_VALU", 262_144.0, Some(0)),
            ("SQ_WAVES", 512.0, Some(0)),
        ],
        "each counter once, the lowest pass's value (not 512 + 513 + 514)"
    );
    assert_eq!(rows[0].3, "saxpy(float*, float*, float)");
    assert_eq!(rows[0].4, 0);
    assert_eq!(rows[0].5, 1024 * 256 * 2, "grid counted in work-items");
    assert_eq!(rows[0].6, 1024 + 512, "static + dynamic shared memory");
    let total: i64 = conn
        .query_row("SELECT COUNT(*) FROM counters_collection", [], |r| r.get(0))
        .unwrap();
    assert_eq!(total, 4, "one row per (dispatch, counter)");
    let passes: Vec<(u32, f64)> = conn
        .prepare(
            "SELECT replay_pass, value FROM kreplay_pass_counters
             WHERE dispatch_id = 1 AND counter_name = 'SQ_WAVES' ORDER BY replay_pass",
        )
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(passes, vec![(0, 512.0), (1, 513.0), (2, 514.0)]);
    let all_passes: i64 = conn
        .query_row("SELECT COUNT(*) FROM kreplay_pass_counters", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert_eq!(all_passes, 6, "one row per (dispatch, pass, counter)");
    let kernels: i64 = conn
        .query_row(
            "SELECT COUNT(*) FROM kernels WHERE dispatch_id = 1",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(kernels, 1);
}

#[test]
fn a_writer_that_never_finished_leaves_a_readable_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crash.db");
    let records = recorded_run(77);
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in &records[..8] {
        writer.send(record.clone());
    }
    writer.flush();
    // A crash: the writer is neither finished nor dropped; its thread and open file remain.
    std::mem::forget(writer);
    let read = read_databases(&[path]).unwrap();
    let mut expected = RunData::from_records(records[..8].to_vec());
    assert_eq!(read.processes.len(), 1);
    assert_eq!(
        read.processes[0].dispatches,
        expected.processes[0].dispatches
    );
    expected.processes[0].process.end_ns = 0;
    assert_eq!(read, expected);
}

/// The child half of the next test: writes, flushes, then dies without any cleanup.
#[test]
#[ignore = "run as a child process by a_process_that_aborts_after_flush_leaves_a_readable_database"]
fn abort_after_flush_child() {
    let Ok(path) = std::env::var("KREPLAY_FORMAT_ABORT_DB") else {
        panic!("only run as a child process of the abort test");
    };
    let records = recorded_run(66);
    let writer = DbWriter::create(Path::new(&path), || {}).unwrap();
    for record in &records[..8] {
        writer.send(record.clone());
    }
    writer.flush();
    for record in &records[8..] {
        writer.send(record.clone());
    }
    std::process::abort();
}

#[test]
fn a_process_that_aborts_after_flush_leaves_a_readable_database() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("abort.db");
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", "db::tests::abort_after_flush_child"])
        .env("KREPLAY_FORMAT_ABORT_DB", &path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(!status.success(), "the child must have aborted");
    let mut wal = path.clone().into_os_string();
    wal.push("-wal");
    assert!(
        Path::new(&wal).exists(),
        "a crashed writer leaves its WAL behind"
    );
    let read = read_databases(&[path]).unwrap();
    let flushed = RunData::from_records(recorded_run(66)[..8].to_vec());
    let process = &read.processes[0];
    // Everything flushed is there; what came after may or may not have been committed.
    assert_eq!(process.process, flushed.processes[0].process);
    assert_eq!(process.agents, flushed.processes[0].agents);
    assert_eq!(process.kernels, flushed.processes[0].kernels);
    assert_eq!(process.counters, flushed.processes[0].counters);
    assert_eq!(process.dispatches[0], flushed.processes[0].dispatches[0]);
}

/// Measures the writer: `cargo test -p kreplay-format --release -- --ignored write_throughput --nocapture`.
#[test]
#[ignore = "a measurement, not a check"]
fn write_throughput() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("speed.db");
    let head = recorded_run(1);
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in &head[..7] {
        writer.send(record.clone());
    }
    let passes = 100_000u64;
    let started = Instant::now();
    for i in 0..passes {
        let counters = vec![
            sample("SQ_WAVES", i as f64),
            sample("SQ_INSTS_VALU", 2.0 * i as f64),
        ];
        writer.send(Record::Dispatch(dispatch(
            1,
            i / 4,
            Some((i % 4) as u32),
            counters,
        )));
    }
    let queued = started.elapsed();
    writer.finish().unwrap();
    let written = started.elapsed();
    println!(
        "{passes} dispatch passes with 2 counters: send {:.0} ns each on the caller, {:.0} passes/s written, {} bytes",
        queued.as_nanos() as f64 / passes as f64,
        passes as f64 / written.as_secs_f64(),
        std::fs::metadata(&path).unwrap().len()
    );
}

#[test]
fn batches_are_committed_within_the_interval_without_a_flush() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("timed.db");
    let records = recorded_run(5);
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in &records[..8] {
        writer.send(record.clone());
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut seen = 0;
    while Instant::now() < deadline {
        std::thread::sleep(BATCH_INTERVAL / 2);
        seen = read_database(&path)
            .ok()
            .and_then(|p| p.first().map(|p| p.dispatches.len()))
            .unwrap_or(0);
        if seen == 1 {
            break;
        }
    }
    assert_eq!(seen, 1, "the first batch was not committed on time");
    writer.finish().unwrap();
}

#[test]
fn a_writer_closes_cleanly_while_another_connection_reads_its_file() {
    // SQLite refuses to leave WAL mode at once while any other connection has the file open
    // (`database is locked`): the close keeps WAL mode then, and nothing is lost.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("read-along.db");
    let records = recorded_run(5);
    let writer = DbWriter::create(&path, || {}).unwrap();
    for record in &records {
        writer.send(record.clone());
    }
    writer.flush();
    let reader = rusqlite::Connection::open(&path).unwrap();
    let passes: i64 = reader
        .query_row("SELECT COUNT(*) FROM kreplay_dispatch_pass", [], |r| {
            r.get(0)
        })
        .unwrap();
    assert!(passes > 0);
    writer.finish().unwrap();
    drop(reader);
    let read = read_databases(&[path]).unwrap();
    assert_eq!(read, RunData::from_records(recorded_run(5)));
}

#[test]
fn records_before_their_descriptions_still_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("late.db");
    let mut records = recorded_run(9);
    // The dispatches (and a warning) come before the process, agent, kernels and counters.
    let described: Vec<Record> = records.drain(..7).collect();
    let mut reordered: Vec<Record> = records[..3].to_vec();
    reordered.extend(described);
    reordered.extend(records[3..].iter().cloned());
    write_through_writer(&path, &reordered);
    let read = read_databases(&[path]).unwrap();
    let expected = RunData::from_records(recorded_run(9));
    assert_eq!(read, expected);
}

#[test]
fn merging_two_process_databases_keeps_both() {
    let dir = tempfile::tempdir().unwrap();
    let first = dir.path().join("a.db");
    let second = dir.path().join("b.db");
    write_through_writer(&first, &recorded_run(100));
    write_through_writer(&second, &recorded_run(200));
    let merged = read_databases(&[first.clone(), second.clone(), first.clone()]).unwrap();
    let mut expected = RunData::from_records(recorded_run(100));
    expected
        .processes
        .extend(RunData::from_records(recorded_run(200)).processes);
    assert_eq!(merged, expected, "both processes, the repeated file once");
    assert_ne!(merged.processes[0].guid(), merged.processes[1].guid());

    // The merged database holds both processes and reads back equal.
    let out = dir.path().join("merged.db");
    write_rocpd(&merged, &out).unwrap();
    assert_eq!(
        read_databases(std::slice::from_ref(&out)).unwrap(),
        expected
    );
    let conn = Connection::open(&out).unwrap();
    let pids: Vec<u32> = conn
        .prepare("SELECT DISTINCT pid FROM counters_collection ORDER BY pid")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(pids, vec![100, 200]);
}

#[test]
fn records_without_a_process_record_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("headless.db");
    let records: Vec<Record> = recorded_run(21).into_iter().skip(1).collect();
    write_through_writer(&path, &records);
    let read = read_databases(&[path]).unwrap();
    assert_eq!(read, RunData::from_records(records));
    assert_eq!(
        read.processes[0].process.pid, 21,
        "the pid of the dispatches"
    );
}

/// Opens `paths` the way rocpd's importer does: attach each file, read its `uuid` from
/// `rocpd_metadata`, find its `rocpd_*` tables by that uuid and make a temporary view of each
/// base name over the attached files' un-suffixed names.
fn open_like_rocpd(paths: &[&Path]) -> Connection {
    let conn = Connection::open_in_memory().unwrap();
    let mut bases: HashMap<String, Vec<String>> = HashMap::new();
    for (i, path) in paths.iter().enumerate() {
        conn.execute(
            &format!("ATTACH DATABASE '{}' AS db{i}", path.display()),
            [],
        )
        .unwrap();
        let uuid: String = conn
            .query_row(
                &format!("SELECT value FROM db{i}.rocpd_metadata WHERE tag = 'uuid'"),
                [],
                |r| r.get(0),
            )
            .unwrap();
        let mut statement = conn
            .prepare(&format!(
                "SELECT name FROM db{i}.sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'"
            ))
            .unwrap();
        let tables: Vec<String> = statement
            .query_map([], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for table in tables.iter().filter(|t| t.contains(&uuid)) {
            let base = table.replace(&uuid, "");
            bases
                .entry(base.clone())
                .or_default()
                .push(format!("SELECT * FROM db{i}.{base}"));
        }
    }
    for (base, selects) in &bases {
        conn.execute(
            &format!(
                "CREATE TEMPORARY VIEW {base} AS {}",
                selects.join(" UNION ALL ")
            ),
            [],
        )
        .unwrap();
    }
    conn
}

#[test]
fn rocpds_importer_finds_every_table_and_its_views_joins_reach_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
    write_through_writer(&a, &recorded_run(11));
    write_through_writer(&b, &recorded_run(12));
    let conn = open_like_rocpd(&[&a, &b]);
    let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
    for table in schema::ROCPD_TABLES {
        count(&format!("SELECT COUNT(*) FROM {table}"));
    }
    let dispatches = count("SELECT COUNT(*) FROM rocpd_kernel_dispatch");
    let values = count("SELECT COUNT(*) FROM rocpd_pmc_event");
    assert!(dispatches > 0 && values > 0);
    // The joins of rocpd's `kernels` view: agent, event, region name, kernel symbol, queue
    // (its process), thread; each dispatch row is reached once.
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch K
             JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
             JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
             JOIN rocpd_string R ON R.id = K.region_name_id AND R.guid = K.guid
             JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
             LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid
             LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
             JOIN rocpd_info_process P ON P.id = Q.pid AND P.guid = Q.guid
             JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid
             WHERE R.string = S.display_name AND ST.id IS NOT NULL"
        ),
        dispatches
    );
    // Those of its `counters_collection` and `pmc_events`: every value reaches its dispatch,
    // process and thread.
    assert_eq!(
        count(
            "SELECT COUNT(*) FROM rocpd_pmc_event PMC_E
             JOIN rocpd_info_pmc PMC_I ON PMC_I.id = PMC_E.pmc_id AND PMC_I.guid = PMC_E.guid
             JOIN rocpd_event E ON E.id = PMC_E.event_id AND E.guid = PMC_E.guid
             JOIN rocpd_kernel_dispatch K ON K.event_id = PMC_E.event_id AND K.guid = PMC_E.guid
             JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
             JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
             JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid"
        ),
        values
    );
    // Operating-system ids read as such, and the stream behind the queue row.
    let (pid, tid, stream): (i64, i64, i64) = conn
        .query_row(
            "SELECT P.pid, T.tid, JSON_EXTRACT(Q.extdata, '$.stream_id') FROM rocpd_kernel_dispatch K
             JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
             JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid
             JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
             WHERE P.pid = 11 LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .unwrap();
    assert_eq!((pid, tid, stream), (11, 12, 7));
    // The process and thread rows' ids are the operating system's.
    assert_eq!(
        count("SELECT COUNT(*) FROM rocpd_info_process WHERE id = pid"),
        2
    );
}

#[test]
fn a_database_of_another_schema_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("future.db");
    write_through_writer(&path, &recorded_run(1));
    let conn = Connection::open(&path).unwrap();
    let uuid: String = conn
        .query_row(
            "SELECT value FROM rocpd_metadata WHERE tag = 'uuid'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    conn.execute(
        &format!(
            "UPDATE rocpd_metadata{uuid} SET value = '99' WHERE tag = 'kreplay_schema_version'"
        ),
        [],
    )
    .unwrap();
    drop(conn);
    let error = read_databases(&[path]).unwrap_err().to_string();
    assert!(
        error.contains("future.db") && error.contains("version 99"),
        "{error}"
    );
}

#[test]
fn a_second_process_in_one_writer_gets_its_own_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two.db");
    let mut records = recorded_run(1);
    records.extend(recorded_run(2));
    write_through_writer(&path, &records);
    assert_eq!(
        read_databases(&[path]).unwrap(),
        RunData::from_records(records)
    );
}

#[test]
fn create_replaces_an_old_file_and_makes_folders() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host/1234/run.db");
    write_through_writer(&path, &recorded_run(1));
    write_through_writer(&path, &recorded_run(2));
    let read = read_databases(&[path]).unwrap();
    assert_eq!(read.processes.len(), 1);
    assert_eq!(read.processes[0].process.pid, 2);
}

#[test]
fn bad_inputs_get_errors_that_name_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing.db");
    let error = read_databases(&[missing]).unwrap_err().to_string();
    assert!(
        error.contains("missing.db") && error.contains("no such"),
        "{error}"
    );

    let other = dir.path().join("other.db");
    Connection::open(&other)
        .unwrap()
        .execute_batch("CREATE TABLE t (x INTEGER);")
        .unwrap();
    let error = read_databases(&[other]).unwrap_err().to_string();
    assert!(
        error.contains("other.db") && error.contains("not a kreplay database"),
        "{error}"
    );

    let text = dir.path().join("text.db");
    std::fs::write(
        &text,
        "not sqlite at all, just some text that is long enough",
    )
    .unwrap();
    let error = read_databases(&[text]).unwrap_err().to_string();
    assert!(error.contains("text.db"), "{error}");

    let blocked = dir.path().join("file");
    std::fs::write(&blocked, "").unwrap();
    let error = DbWriter::create(&blocked.join("run.db"), || {})
        .err()
        .unwrap()
        .to_string();
    assert!(error.contains("file"), "{error}");
}

#[test]
fn guids_are_stable_and_distinct() {
    assert_eq!(guid_for(&process(1)), guid_for(&process(1)));
    assert_ne!(guid_for(&process(1)), guid_for(&process(2)));
    assert_eq!(guid_for(&process(1)).len(), 36);
}

#[test]
fn the_run_cache_and_clock_controls_are_rocpd_metadata() {
    let dir = tempfile::tempdir().unwrap();
    let setting = |control: CacheControl| {
        let path = dir.path().join(format!("{}.db", control.as_str()));
        let mut records = recorded_run(1);
        for record in &mut records {
            if let Record::Process(process) = record {
                process.cache_control = control;
            }
        }
        write_through_writer(&path, &records);
        let conn = Connection::open(&path).unwrap();
        let value = |tag: &str| -> Vec<String> {
            let mut statement = conn
                .prepare("SELECT value FROM rocpd_metadata WHERE tag = ?1")
                .unwrap();
            let rows = statement.query_map([tag], |r| r.get(0)).unwrap();
            rows.map(Result::unwrap).collect()
        };
        let read = read_database(&path).unwrap();
        (
            value("cache_control"),
            value("clock_control"),
            read[0].process.cache_control,
        )
    };
    for control in [CacheControl::All, CacheControl::None] {
        assert_eq!(
            setting(control),
            (
                vec![control.as_str().to_string()],
                vec!["none".to_string()],
                control
            )
        );
    }
}

#[test]
fn the_writer_thread_runs_its_creators_hook_first() {
    static HOOK_THREAD: std::sync::Mutex<Option<String>> = std::sync::Mutex::new(None);
    fn hook() {
        let name = std::thread::current().name().map(str::to_string);
        *HOOK_THREAD.lock().unwrap() = name;
    }
    let dir = tempfile::tempdir().unwrap();
    let writer = DbWriter::create(&dir.path().join("hooked.db"), hook).unwrap();
    writer.finish().unwrap();
    assert_eq!(
        HOOK_THREAD.lock().unwrap().as_deref(),
        Some("kreplay-db-writer")
    );
}

#[test]
fn a_database_from_before_the_timing_execution_column_reads_it_as_zero() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("older.db");
    let records = recorded_run(31);
    write_through_writer(&path, &records);
    let conn = rusqlite::Connection::open(&path).unwrap();
    // An older kreplay's file: no column, and no record blocks (`db::blocks`).
    conn.execute_batch(
        "ALTER TABLE kreplay_replay_cost DROP COLUMN timing_execution_ns;
         DROP TABLE kreplay_record_block",
    )
    .unwrap();
    drop(conn);
    let read = read_databases(std::slice::from_ref(&path)).unwrap();
    let costs: Vec<_> = read.processes.iter().flat_map(|p| &p.costs).collect();
    assert!(!costs.is_empty());
    assert!(
        costs.iter().all(|c| c.timing_execution_ns == 0),
        "{costs:?}"
    );
    let mut expected = RunData::from_records(records);
    for process in &mut expected.processes {
        for cost in &mut process.costs {
            cost.timing_execution_ns = 0;
        }
    }
    assert_eq!(read, expected, "everything else as written");
}
