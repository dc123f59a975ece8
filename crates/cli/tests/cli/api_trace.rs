//! `-r/--runtime-trace` and `-s/--sys-trace` on the reference app, whose runtime's calls stand
//! for CUDA runtime calls made of driver calls: the database's `regions` (plain SQL),
//! `cuda_api_trace.csv` with rocprofv3's `hip_api_trace.csv` columns, every dispatch sharing
//! its launch call's correlation id, the same calls with kernel replay as without (the tool's
//! own work never recorded), the domains `-r`/`-s` turn on, the kernel naming options
//! (`-M`, `-T`), and nothing of it without the options.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Rows of `sql` on the database at `db`, read by Python's `sqlite3` (no kreplay code).
fn query(db: &Path, sql: &str) -> Vec<Vec<serde_json::Value>> {
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

/// A CSV file's rows, by column name.
fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// kreplay with `args` (and rocpd and csv output into `DIR/out`) on the sim app.
fn run(dir: &Path, args: &[&str]) -> PathBuf {
    let mut all = args.to_vec();
    all.extend_from_slice(&["-f", "rocpd", "csv", "-d", "DIR", "-o", "out"]);
    let out = run_sim(dir, &all);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join("DIR")
}

/// The API calls of the run's CSV, as (domain, function), in order.
fn api_csv(d: &Path) -> Vec<(String, String)> {
    csv_rows(&d.join("out_cuda_api_trace.csv"))
        .into_iter()
        .map(|r| (r["Domain"].clone(), r["Function"].clone()))
        .collect()
}

#[test]
fn runtime_trace_fills_rocpds_regions_and_the_api_csv() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path(), &two_groups_replay(&["-r"]));
    let db = d.join("out_results.db");
    let regions = query(
        &db,
        r#"SELECT category, name, duration >= 0, parent_stack_id FROM regions WHERE category LIKE 'CUDA%' ORDER BY "start", id"#,
    );
    // The application's own calls: runtime calls, and the driver calls it makes itself (the
    // workload maps and unmaps virtual memory, which has no runtime call).
    for r in &regions {
        assert!(
            r[0] == "CUDA_RUNTIME_API"
                || (r[0] == "CUDA_DRIVER_API"
                    && r[3] == 0
                    && matches!(r[1].as_str(), Some("cuMemMap" | "cuMemUnmap"))),
            "{r:?}"
        );
    }
    let names: Vec<&str> = regions.iter().map(|r| r[1].as_str().unwrap()).collect();
    for call in [
        "cudaMalloc",
        "cudaMallocPitch",
        "cudaMallocManaged",
        "cudaMemcpy",
        "cudaLaunchKernel",
        "cudaGraphLaunch",
        "cudaFreeAsync",
        "cudaFreeHost",
        "cuMemMap",
        "cuMemUnmap",
    ] {
        assert!(names.contains(&call), "{call} in {names:?}");
    }
    assert_eq!(names.iter().filter(|n| **n == "cudaGraphLaunch").count(), 1);
    // The CSV has the same calls with rocprofv3's columns.
    let header = std::fs::read_to_string(d.join("out_cuda_api_trace.csv")).unwrap();
    assert!(header.starts_with(
        r#""Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp""#
    ));
    let csv = api_csv(&d);
    assert_eq!(csv.len(), regions.len());
    // -r turns on the kernel dispatches and markers too (rocprofv3's runtime trace).
    assert!(d.join("out_kernel_trace.csv").is_file());
    assert!(d.join("out_marker_api_trace.csv").is_file());
}

#[test]
fn every_dispatch_shares_its_launch_calls_correlation_id() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path(), &two_groups_replay(&["-r"]));
    let db = d.join("out_results.db");
    let unlinked = query(
        &db,
        "SELECT COUNT(*) FROM kernels K WHERE NOT EXISTS (SELECT 1 FROM regions R WHERE R.corr_id = K.correlation_id AND R.name IN ('cudaLaunchKernel', 'cudaGraphLaunch'))",
    );
    assert_eq!(unlinked[0][0], 0);
    let linked = query(
        &db,
        "SELECT COUNT(DISTINCT K.correlation_id) FROM kernels K JOIN regions R ON R.corr_id = K.correlation_id",
    );
    assert!(linked[0][0].as_u64().unwrap() > 10);
    // The same in the CSV files: every kernel_trace.csv row's Correlation_Id names a launch.
    let launches: std::collections::BTreeSet<String> = csv_rows(&d.join("out_cuda_api_trace.csv"))
        .into_iter()
        .filter(|r| r["Function"] == "cudaLaunchKernel" || r["Function"] == "cudaGraphLaunch")
        .map(|r| r["Correlation_Id"].clone())
        .collect();
    let kernels = csv_rows(&d.join("out_kernel_trace.csv"));
    assert!(!kernels.is_empty());
    for row in kernels {
        assert!(launches.contains(&row["Correlation_Id"]), "{row:?}");
    }
}

#[test]
fn sys_trace_adds_the_driver_calls_each_runtime_call_makes() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path(), &two_groups_replay(&["-s"]));
    let db = d.join("out_results.db");
    let counts = query(
        &db,
        "SELECT category, COUNT(*) FROM regions WHERE category LIKE 'CUDA%' GROUP BY category ORDER BY category",
    );
    assert_eq!(counts.len(), 2, "{counts:?}");
    assert_eq!(counts[0][0], "CUDA_DRIVER_API");
    // One driver call per runtime call, and the two the application makes itself.
    assert_eq!(
        counts[0][1].as_u64().unwrap(),
        counts[1][1].as_u64().unwrap() + 2
    );
    let direct = query(
        &db,
        "SELECT name FROM regions WHERE category = 'CUDA_DRIVER_API' AND parent_stack_id = 0 ORDER BY \"start\"",
    );
    assert_eq!(direct, [vec!["cuMemMap"], vec!["cuMemUnmap"]]);
    let orphans = query(
        &db,
        "SELECT COUNT(*) FROM regions D WHERE D.category = 'CUDA_DRIVER_API' AND D.parent_stack_id != 0 AND NOT EXISTS (SELECT 1 FROM regions R WHERE R.category = 'CUDA_RUNTIME_API' AND R.corr_id = D.parent_stack_id AND R.\"start\" <= D.\"start\" AND D.\"end\" <= R.\"end\")",
    );
    assert_eq!(orphans[0][0], 0);
    let launch = query(
        &db,
        "SELECT COUNT(*) FROM regions WHERE name = 'cuLaunchKernel'",
    );
    assert!(launch[0][0].as_u64().unwrap() > 0);
    // -s turns on every domain kreplay traces.
    assert!(d.join("out_kernel_trace.csv").is_file());
    assert!(d.join("out_marker_api_trace.csv").is_file());
}

#[test]
fn the_same_calls_with_kernel_replay_as_without_and_none_of_the_tools_own() {
    let dir = tempfile::tempdir().unwrap();
    let replayed = api_csv(&run(dir.path(), &two_groups_replay(&["-s"])));
    let windows = api_csv(&run(
        dir.path(),
        &two_groups_replay(&["-s", "--replay-window", "4"]),
    ));
    let alone = api_csv(&run(dir.path(), &["-s"]));
    assert!(!alone.is_empty());
    assert_eq!(replayed, alone);
    assert_eq!(windows, alone);
}

#[test]
fn input_file_keys_and_short_options() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.yaml"), "jobs:\n  - sys_trace: true\n").unwrap();
    // A job's run writes into a folder of its own.
    let from_file = api_csv(&run(dir.path(), &["-i", "in.yaml"]).join("pass_1"));
    let from_option = api_csv(&run(dir.path(), &["--sys-trace"]));
    assert_eq!(from_file, from_option);
    let runtime = api_csv(&run(dir.path(), &["--runtime-trace", "true"]));
    assert!(runtime
        .iter()
        .all(|(domain, f)| domain == "CUDA_RUNTIME_API" || f == "cuMemMap" || f == "cuMemUnmap"));
    assert_eq!(runtime, api_csv(&run(dir.path(), &["-r"])));
}

/// The Kernel_Name column of a --kernel-trace run with `naming` options.
fn kernel_names(dir: &Path, naming: &[&str]) -> std::collections::BTreeSet<String> {
    let mut args = vec!["--kernel-trace"];
    args.extend_from_slice(naming);
    let d = run(dir, &args);
    csv_rows(&d.join("out_kernel_trace.csv"))
        .into_iter()
        .map(|r| r["Kernel_Name"].clone())
        .collect()
}

#[test]
fn mangled_and_truncated_kernel_names() {
    let dir = tempfile::tempdir().unwrap();
    let plain = kernel_names(dir.path(), &[]);
    assert!(plain.contains("scale_add(unsigned int*, unsigned int, unsigned int, unsigned int)"));
    let mangled = kernel_names(dir.path(), &["-M"]);
    assert!(mangled.contains("_Z9scale_addPjjjj"), "{mangled:?}");
    let truncated = kernel_names(dir.path(), &["-T"]);
    assert!(truncated.contains("scale_add"), "{truncated:?}");
    assert_eq!(kernel_names(dir.path(), &["--truncate-kernels"]), truncated);
    assert_eq!(
        kernel_names(dir.path(), &["--mangled-kernels", "-T"]),
        mangled
    );
}

#[test]
fn nothing_is_recorded_without_the_options() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path(), &two_groups_replay(&["--marker-trace"]));
    assert!(!d.join("out_cuda_api_trace.csv").exists());
    let api = query(
        &d.join("out_results.db"),
        "SELECT COUNT(*) FROM regions WHERE category LIKE 'CUDA%'",
    );
    assert_eq!(api[0][0], 0);
}

#[test]
fn hip_and_hsa_tracing_are_refused_naming_cudas() {
    let dir = tempfile::tempdir().unwrap();
    for option in ["--hip-trace", "--hsa-trace"] {
        assert_usage_error(
            &kreplay(dir.path(), &[option, "--", "true"]),
            &format!("{option}: kreplay traces CUDA, not HIP or HSA"),
        );
    }
}

#[test]
fn convert_writes_the_same_api_csv_and_kernel_names_from_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path(), &["-s", "-T"]);
    let args = [
        "convert",
        "-i",
        "DIR/out_results.db",
        "-f",
        "csv",
        "-d",
        "C",
        "-o",
        "out",
    ];
    let out = kreplay(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for file in ["out_cuda_api_trace.csv", "out_kernel_trace.csv"] {
        assert_eq!(
            std::fs::read_to_string(dir.path().join("C").join(file)).unwrap(),
            std::fs::read_to_string(d.join(file)).unwrap(),
            "{file}"
        );
    }
    let names: std::collections::BTreeSet<String> =
        csv_rows(&dir.path().join("C/out_kernel_trace.csv"))
            .into_iter()
            .map(|r| r["Kernel_Name"].clone())
            .collect();
    assert!(names.contains("scale_add"), "{names:?}");
}
