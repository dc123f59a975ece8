//! `--marker-trace` and `--kernel-rename` on the reference app, whose workload marks its phases
//! with NVTX-style ranges (a push/pop range per iteration holding `update` and `mix`, a mark, a
//! domain range around its tail, a start/end range ended on another thread): the database's
//! `regions` and `samples` views (plain SQL), `marker_api_trace.csv` with rocprofv3's columns,
//! the range stack on every dispatch, the renamed kernels, and nothing of it without the option.

use crate::common::*;
use std::path::Path;

/// Rows of `sql` on the database at `db`, read by Python's `sqlite3` (no kreplay code).
pub(crate) fn query(db: &Path, sql: &str) -> Vec<Vec<serde_json::Value>> {
    let script = "import json, sqlite3, sys\n\
                  c = sqlite3.connect(sys.argv[1])\n\
                  print(json.dumps([list(r) for r in c.execute(sys.argv[2])]))";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(db)
        .arg(sql)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{sql}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The workload's iterations (kreplay-sim-app's default).
const ITERATIONS: usize = 3;

fn run_with(dir: &Path, more: &[&str]) -> std::path::PathBuf {
    let mut args = two_groups_replay(&["-f", "rocpd", "csv", "-d", "DIR", "-o", "out"]);
    args.extend_from_slice(more);
    let out = run_sim(dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join("DIR")
}

#[test]
fn marker_trace_fills_rocpds_regions_and_samples_and_the_marker_csv() {
    let dir = tempfile::tempdir().unwrap();
    let d = run_with(dir.path(), &["--marker-trace"]);
    let db = d.join("out_results.db");
    let regions = query(
        &db,
        r#"SELECT category, name, json_extract(extdata, '$.message'), duration > 0 FROM regions ORDER BY "start", id"#,
    );
    let names: Vec<&str> = regions.iter().map(|r| r[2].as_str().unwrap()).collect();
    // The workload's start/end range first, then the iterations with their phases, the tail.
    assert_eq!(names[0], "workload");
    assert_eq!(&names[1..4], ["iteration 0", "update", "mix"]);
    assert_eq!(names.len(), 1 + 3 * ITERATIONS + 1, "{names:?}");
    assert_eq!(names.last(), Some(&"tail"));
    assert!(regions.iter().all(|r| r[0] == "MARKER_CORE_RANGE_API"));
    assert!(
        regions.iter().all(|r| r[3] == 1),
        "every range has a duration"
    );
    assert_eq!(regions[0][1], "nvtxRangeStartA");
    assert_eq!(regions[1][1], "nvtxRangePushA");
    let tail = query(
        &db,
        "SELECT json_extract(extdata, '$.domain'), json_extract(extdata, '$.category') FROM regions WHERE name = 'nvtxDomainRangePushEx'",
    );
    assert_eq!(
        tail,
        [vec![serde_json::json!("kreplay-sim"), serde_json::json!(2)]]
    );
    // The start/end range began on the main thread and ended on another; its row keeps the
    // thread that started it, the push/pop ranges the workload thread's.
    let threads = query(&db, "SELECT COUNT(DISTINCT tid) FROM regions");
    assert_eq!(threads[0][0], 2);
    let marks = query(
        &db,
        "SELECT category, json_extract(extdata, '$.message') FROM samples",
    );
    assert_eq!(
        marks,
        [vec![
            serde_json::json!("MARKER_CORE_RANGE_API"),
            serde_json::json!("loop done")
        ]]
    );
    assert_eq!(
        query(&db, "SELECT COUNT(*) FROM regions_and_samples")[0][0],
        names.len() + 1
    );

    // rocprofv3's marker CSV: its columns, a row per range and mark.
    let csv = std::fs::read_to_string(d.join("out_marker_api_trace.csv")).unwrap();
    let mut lines = csv.lines();
    assert_eq!(
        lines.next().unwrap(),
        r#""Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp""#
    );
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), names.len() + 1);
    assert!(rows.iter().all(|r| r[0] == r#""MARKER_CORE_RANGE_API""#));
    assert!(rows
        .iter()
        .any(|r| r[1] == r#""loop done""# && r[5] == r[6]));
    assert!(rows.iter().any(|r| r[1] == r#""iteration 2""#));
}

#[test]
fn ranges_and_dispatches_share_a_clock() {
    // A trace without replay: each dispatch runs once, at its launch, so the five kernels of
    // the first iteration lie inside its range. (Under kernel replay a dispatch's times are
    // its timing execution's, which a replay window may run after the range closed.)
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &["--kernel-trace", "--marker-trace", "-d", "T", "-o", "t"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let db = dir.path().join("T/t_results.db");
    let inside = query(
        &db,
        r#"SELECT COUNT(*) FROM kernels K, regions R
           WHERE json_extract(R.extdata, '$.message') = 'iteration 0'
           AND K."start" >= R."start" AND K."end" <= R."end""#,
    );
    assert_eq!(inside[0][0], 5, "the five kernels of iteration 0");
}

#[test]
fn every_dispatch_carries_its_range_stack_and_kernel_rename_names_it_by_the_innermost() {
    let dir = tempfile::tempdir().unwrap();
    let d = run_with(dir.path(), &["--marker-trace"]);
    let db = d.join("out_results.db");
    // The stack at launch, outermost first, in the dispatch row; rocpd's region is the innermost.
    let stacks = query(
        &db,
        "SELECT json_extract(K.extdata, '$.ranges'), R.string FROM rocpd_kernel_dispatch K
         JOIN rocpd_string R ON R.id = K.region_name_id ORDER BY K.dispatch_id",
    );
    assert_eq!(stacks[0][0], r#"["iteration 0","update"]"#);
    assert_eq!(stacks[0][1], "update");
    assert_eq!(stacks[1][0], r#"["iteration 0","mix"]"#);
    assert_eq!(stacks.last().unwrap()[0], r#"["kreplay-sim@tail"]"#);
    assert!(
        stacks.iter().all(|r| !r[0].is_null()),
        "every dispatch ran in a range"
    );
    // Without --kernel-rename the CSV names kernels by their symbol.
    let counters = std::fs::read_to_string(d.join("out_counter_collection.csv")).unwrap();
    assert!(counters.contains("scale_add"), "{counters}");
    assert!(!counters.contains(r#""update""#));

    let renamed = tempfile::tempdir().unwrap();
    let d = run_with(renamed.path(), &["--kernel-rename"]);
    let trace = std::fs::read_to_string(d.join("out_counter_collection.csv")).unwrap();
    assert!(trace.contains(r#""update""#), "{trace}");
    assert!(trace.contains(r#""mix""#));
    assert!(trace.contains(r#""kreplay-sim@tail""#));
    assert!(
        !trace.contains("scale_add"),
        "every dispatch ran inside a range: {trace}"
    );
    // --kernel-rename needs the ranges: it records them as --marker-trace does.
    assert!(d.join("out_marker_api_trace.csv").is_file());
    // The database keeps both: `kreplay convert` writes the same renamed rows and markers.
    let out = kreplay(
        renamed.path(),
        &[
            "convert",
            "-i",
            "DIR/out_results.db",
            "-f",
            "csv",
            "-d",
            "C",
            "-o",
            "c",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let converted = renamed.path().join("C");
    assert_eq!(
        std::fs::read_to_string(converted.join("c_counter_collection.csv")).unwrap(),
        trace
    );
    assert_eq!(
        std::fs::read_to_string(converted.join("c_marker_api_trace.csv")).unwrap(),
        std::fs::read_to_string(d.join("out_marker_api_trace.csv")).unwrap()
    );
}

#[test]
fn without_marker_trace_nothing_of_it_is_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = run_with(dir.path(), &[]);
    let db = d.join("out_results.db");
    assert_eq!(
        query(&db, "SELECT COUNT(*) FROM regions_and_samples")[0][0],
        0
    );
    assert_eq!(
        query(
            &db,
            "SELECT COUNT(*) FROM rocpd_kernel_dispatch WHERE json_extract(extdata, '$.ranges') IS NOT NULL"
        )[0][0],
        0
    );
    assert_eq!(
        query(&db, "SELECT COUNT(*) FROM kernels")[0][0],
        18,
        "the dispatches are there"
    );
    assert!(!d.join("out_marker_api_trace.csv").exists());
}

#[test]
fn marker_trace_alone_is_a_run_and_other_tracing_is_still_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &["--marker-trace", "-f", "csv", "-d", "D", "-o", "o"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(dir.path().join("D/o_marker_api_trace.csv").is_file());
    assert_usage_error(
        &kreplay(dir.path(), &["--marker-trace", "--hip-trace", "--", "true"]),
        "--hip-trace: kreplay traces CUDA, not HIP or HSA",
    );
}

#[test]
fn every_thread_records_its_own_ranges_and_stacks() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let out = kreplay(
        dir.path(),
        &[
            "--kernel-trace",
            "--marker-trace",
            "-d",
            "T",
            "-o",
            "t",
            "--",
            app.to_str().unwrap(),
            "--threads",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let db = dir.path().join("T/t_results.db");
    // Each workload thread has its iterations, each with its phases.
    let per_thread = query(
        &db,
        "SELECT tid, COUNT(*) FROM regions WHERE json_extract(extdata, '$.message') LIKE 'iteration %' GROUP BY tid",
    );
    assert_eq!(per_thread.len(), 2, "{per_thread:?}");
    assert!(per_thread.iter().all(|r| r[1] == ITERATIONS));
    // A dispatch's stack is its own thread's: no dispatch sees the other thread's phases.
    let stacks = query(
        &db,
        "SELECT T.tid, json_extract(K.extdata, '$.ranges') FROM rocpd_kernel_dispatch K
         JOIN rocpd_info_thread T ON T.id = K.tid",
    );
    assert!(stacks.len() >= 2 * 3 * ITERATIONS, "{stacks:?}");
    for row in &stacks {
        let stack: Vec<String> = serde_json::from_str(row[1].as_str().unwrap()).unwrap();
        assert!(stack.len() <= 2, "one thread's ranges only: {stack:?}");
    }
}
