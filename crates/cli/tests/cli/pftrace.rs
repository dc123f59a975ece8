//! `-f pftrace`: the Perfetto trace of a kernel-replay run of the software device's app, read
//! back with Perfetto's own Python bindings of the full trace schema (`pftrace_read.py`; the
//! `perfetto` and `protobuf` packages, which `.ci/run` installs into `.deps/py`), and compared
//! with the same run's database.

use crate::common::*;
use kreplay_format::*;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Where `perfetto` and `protobuf` are installed: `KREPLAY_PYTHONPATH`, else the workspace's
/// `.deps/py` (`.ci/run` installs them there).
fn python_path() -> PathBuf {
    let path = std::env::var_os("KREPLAY_PYTHONPATH")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.deps/py"));
    assert!(
        path.join("perfetto").is_dir(),
        "Perfetto's Python package is not in {}: run .ci/run (it installs perfetto and protobuf there) or set KREPLAY_PYTHONPATH",
        path.display()
    );
    path
}

fn read_trace(path: &Path) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pftrace_read.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(path)
        .env("PYTHONPATH", python_path())
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn a_replay_run_is_a_perfetto_trace_with_one_slice_per_pass_and_its_counters() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let out = kreplay(
        dir.path(),
        &two_groups_replay(&[
            "-f",
            "pftrace",
            "rocpd",
            "-d",
            "DIR",
            "-o",
            "out",
            "--",
            app.to_str().unwrap(),
        ]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let d = dir.path().join("DIR");
    let trace = read_trace(&d.join("out_results.pftrace"));
    let db = read_databases(&[d.join("out_results.db")]).unwrap();
    let process = &db.processes[0];

    assert_eq!(trace["unknown_fields"], 0, "{trace}");
    assert_eq!(trace["sequence_ids"], serde_json::json!([1]));
    assert_eq!(trace["first_sequence_flags"], 1);
    assert_eq!(
        (trace["unclosed"].as_u64(), trace["unmatched_ends"].as_u64()),
        (Some(0), Some(0))
    );
    let processes = trace["processes"].as_array().unwrap();
    assert_eq!(processes.len(), 1);
    assert_eq!(processes[0]["pid"], process.process.pid);
    assert_eq!(processes[0]["name"], "kreplay-sim-app");

    // One slice per pass of every dispatch, on its stream's track (pass 0) or the stream's
    // replay-pass track, named after the kernel, with the pass's counters as arguments.
    let tracks = trace["tracks"].as_object().unwrap();
    let slices = trace["slices"].as_array().unwrap();
    assert_eq!(slices.len(), process.dispatches.len());
    let mut seen = BTreeMap::new();
    for s in slices {
        let args = s["args"].as_object().unwrap();
        let id = args["dispatch_id"].as_u64().unwrap();
        let pass = args["replay_pass"].as_u64().unwrap() as u32;
        seen.insert((id, pass), s);
    }
    for record in &process.dispatches {
        let pass = record.replay_pass.unwrap_or(0);
        let slice = seen
            .get(&(record.dispatch_id, pass))
            .unwrap_or_else(|| panic!("no slice for dispatch {} pass {pass}", record.dispatch_id));
        let kernel = process.kernel(record.kernel_id).unwrap();
        assert_eq!(slice["name"], kernel.demangled_name.as_str());
        assert_eq!(slice["ts"], record.start_ns);
        assert_eq!(slice["dur"], record.end_ns - record.start_ns);
        let track = &tracks[slice["track"].as_str().unwrap()];
        let stream = format!("stream {}", record.stream_id);
        let name = track["name"].as_str().unwrap();
        assert!(
            name.starts_with("GPU 0") && name.contains(&stream),
            "{name}"
        );
        assert_eq!(
            name.contains(&format!("replay pass {pass}")),
            pass > 0,
            "{name}"
        );
        let args = slice["args"].as_object().unwrap();
        for counter in &record.counters {
            assert_eq!(args[&counter.name].as_f64(), Some(counter.value), "{slice}");
        }
        assert_eq!(args["correlation_id"].as_u64(), Some(record.correlation_id));
        assert_eq!(
            args["grid"].as_str().unwrap(),
            format!("{},{},{}", record.grid[0], record.grid[1], record.grid[2])
        );
    }
}
