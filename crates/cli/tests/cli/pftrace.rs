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

pub(crate) fn read_trace(path: &Path) -> serde_json::Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/pftrace_read.py");
    let out = std::process::Command::new("python3")
        .arg(script)
        .arg(path)
        .env("PYTHONPATH", python_path())
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let trace: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    // Every interned name an event refers to was defined before it on its sequence.
    assert_eq!(trace["unresolved_iids"], 0, "{}", path.display());
    trace
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
            assert_eq!(
                args[counter.name.as_str()].as_f64(),
                Some(counter.value),
                "{slice}"
            );
        }
        // rocprofv3's category and argument names; its grid size counts work-items.
        assert_eq!(slice["categories"], serde_json::json!(["kernel_dispatch"]));
        assert_eq!(args["corr_id"].as_u64(), Some(record.correlation_id));
        let threads: u64 = (0..3)
            .map(|axis| u64::from(record.grid[axis]) * u64::from(record.block[axis]))
            .product();
        assert_eq!(args["grid_size"].as_u64(), Some(threads));
        let block: u64 = record.block.iter().map(|&n| u64::from(n)).product();
        assert_eq!(args["workgroup_size"].as_u64(), Some(block));
        assert_eq!(args["begin_ns"].as_u64(), Some(record.start_ns));
        assert_eq!(args["stream_ID"].as_u64(), Some(record.stream_id));
    }
}

/// rocprofv3's Perfetto checks, re-expressed: its counter tracks ("Agent [N] PMC <counter>", one
/// per agent and counter) hold each dispatch's value over its application execution, as the
/// database's `counters_collection` gives it (once per dispatch, never summed over passes).
#[test]
fn counters_are_perfetto_counter_tracks_with_one_value_per_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &[
            "--pmc",
            W,
            I,
            "--pmc",
            W,
            C,
            "--pmc",
            W,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "-f",
            "pftrace",
            "rocpd",
            "-d",
            "DIR",
            "-o",
            "out",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let d = dir.path().join("DIR");
    let trace = read_trace(&d.join("out_results.pftrace"));
    assert_eq!(trace["unknown_fields"], 0, "{trace}");
    let db = read_databases(&[d.join("out_results.db")]).unwrap();
    let process = &db.processes[0];
    let tracks = trace["counter_tracks"].as_object().unwrap();
    let mut names: Vec<&str> = tracks
        .values()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    names.sort_unstable();
    let mut expected: Vec<String> = [W, I, C]
        .iter()
        .map(|c| format!("Agent [0] PMC {c}"))
        .collect();
    expected.sort();
    assert_eq!(names, expected);
    // Per counter: the values the track rises to, in time order, are each dispatch's value
    // (its lowest pass measuring it) in the order the dispatches ran.
    for counter in [W, I, C] {
        let uuid = tracks
            .iter()
            .find(|(_, t)| t["name"].as_str().unwrap().ends_with(counter))
            .map(|(u, _)| u.clone())
            .unwrap();
        let mut points: Vec<(u64, f64)> = trace["counters"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|p| p["track"] == uuid.as_str())
            .map(|p| (p["ts"].as_u64().unwrap(), p["value"].as_f64().unwrap()))
            .collect();
        points.sort_by_key(|p| p.0);
        // dispatch -> (pass, start, value) of its lowest pass measuring the counter.
        let mut per_dispatch: BTreeMap<u64, (u32, u64, f64)> = BTreeMap::new();
        let mut app_start: BTreeMap<u64, (u32, u64)> = BTreeMap::new();
        for record in &process.dispatches {
            let pass = record.replay_pass.unwrap_or(0);
            let start = app_start
                .entry(record.dispatch_id)
                .or_insert((pass, record.start_ns));
            if pass < start.0 {
                *start = (pass, record.start_ns);
            }
            if let Some(sample) = record.counters.iter().find(|s| s.name == counter) {
                let entry =
                    per_dispatch
                        .entry(record.dispatch_id)
                        .or_insert((pass, 0, sample.value));
                if pass <= entry.0 {
                    *entry = (pass, 0, sample.value);
                }
            }
        }
        let mut expected: Vec<(u64, f64)> = per_dispatch
            .iter()
            .map(|(id, (_, _, value))| (app_start[id].1, *value))
            .collect();
        expected.sort_by_key(|p| p.0);
        let rises: Vec<(u64, f64)> = expected
            .iter()
            .map(|(start, _)| {
                let at: Vec<f64> = points
                    .iter()
                    .filter(|p| p.0 == *start)
                    .map(|p| p.1)
                    .collect();
                (*start, *at.last().unwrap())
            })
            .collect();
        assert_eq!(rises, expected, "{counter}");
        assert_eq!(
            points.len(),
            2 * expected.len(),
            "{counter}: a rise and a fall per dispatch"
        );
    }
}
