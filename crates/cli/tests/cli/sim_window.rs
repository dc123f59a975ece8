//! Window replay end to end, without a GPU: `kreplay --replay-window N|auto` profiling
//! `kreplay-sim-app`. The app's own verification proves its memory is as one execution left
//! it; the records must carry what per-dispatch replay's carry.

use crate::common::*;
use kreplay_format::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Profiles the sim app with two groups under kernel replay plus `extra` kreplay options and
/// `app_args`; returns the output and the database.
fn profile(dir: &Path, extra: &[&str], app_args: &[&str]) -> (std::process::Output, RunData) {
    let app = sim_app();
    let mut args = two_groups_replay(&["-d", "DIR", "-o", "out"]);
    args.extend_from_slice(extra);
    args.push("--");
    args.push(app.to_str().unwrap());
    args.extend_from_slice(app_args);
    let out = kreplay(dir, &args);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(stdout.contains("verification PASSED"), "{stdout}");
    let db = read_databases(&[dir.join("DIR").join("out_results.db")]).unwrap();
    (out, db)
}

/// Deterministic counters by (dispatch id, pass, counter).
fn deterministic(run: &RunData) -> BTreeMap<(u64, Option<u32>, String), f64> {
    let mut out = BTreeMap::new();
    for p in &run.processes {
        for d in &p.dispatches {
            for c in d.counters.iter().filter(|c| c.name != C) {
                out.insert((d.dispatch_id, d.replay_pass, c.name.to_string()), c.value);
            }
        }
    }
    out
}

fn costs(run: &RunData) -> Vec<ReplayCost> {
    run.processes.iter().flat_map(|p| p.costs.clone()).collect()
}

#[test]
fn a_window_of_four_records_what_per_dispatch_replay_records() {
    let per_dispatch_dir = tempfile::tempdir().unwrap();
    let (_, per_dispatch) = profile(per_dispatch_dir.path(), &["--replay-window", "1"], &[]);
    let window_dir = tempfile::tempdir().unwrap();
    let (out, windowed) = profile(window_dir.path(), &["--replay-window", "4"], &[]);
    // The end-of-run line says what closed the windows (the app's host reads and full windows).
    let stderr = text(&out.stderr);
    let line = stderr
        .lines()
        .find(|l| l.starts_with("kreplay: replay windows closed by: "))
        .unwrap_or_else(|| panic!("no window line: {stderr}"));
    assert!(line.contains("read_u32s"), "{line}");

    let expected = deterministic(&per_dispatch);
    assert!(expected.len() >= 10, "too few records: {expected:?}");
    assert_eq!(deterministic(&windowed), expected);

    // Windows really formed: members after a window's first carry no snapshot of their own,
    // and fewer bytes were restored in all than with one restore per dispatch.
    let window_costs = costs(&windowed);
    let replayed: Vec<&ReplayCost> = window_costs
        .iter()
        .filter(|c| c.outcome == ReplayOutcome::Replayed)
        .collect();
    assert!(replayed.iter().all(|c| c.passes == 2));
    let members = replayed.iter().filter(|c| c.bytes_snapshotted == 0).count();
    assert!(members > 0, "no dispatch shared a window: {replayed:?}");
    let restored = |costs: &[ReplayCost]| costs.iter().map(|c| c.bytes_restored).sum::<u64>();
    assert!(restored(&window_costs) < restored(&costs(&per_dispatch)));
    // One cost record per dispatch, as per-dispatch replay gives.
    assert_eq!(window_costs.len(), costs(&per_dispatch).len());
}

#[test]
fn auto_windows_with_several_threads_leave_every_threads_memory_right() {
    let dir = tempfile::tempdir().unwrap();
    let (_, db) = profile(
        dir.path(),
        &["--replay-window", "auto"],
        &["--threads", "3"],
    );
    // Every replayed dispatch has passes 0 and 1 exactly once.
    let mut passes: BTreeMap<u64, Vec<Option<u32>>> = BTreeMap::new();
    for p in &db.processes {
        for d in &p.dispatches {
            passes.entry(d.dispatch_id).or_default().push(d.replay_pass);
        }
    }
    let replayed: Vec<u64> = costs(&db)
        .iter()
        .filter(|c| c.outcome == ReplayOutcome::Replayed)
        .map(|c| c.dispatch_id)
        .collect();
    assert!(!replayed.is_empty());
    for id in replayed {
        let mut seen = passes[&id].clone();
        seen.sort();
        assert_eq!(seen, vec![Some(0), Some(1)], "dispatch {id}");
    }
}

#[test]
fn a_replay_window_without_kernel_replay_is_a_usage_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay(
        dir.path(),
        &["--pmc", W, "--replay-window", "4", "--", "true"],
    );
    assert_usage_error(
        &out,
        "--replay-window (input-file replay_window) applies only to kernel replay",
    );
    let out = kreplay(
        dir.path(),
        &[
            "--pmc",
            W,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--replay-window",
            "zero",
            "--",
            "true",
        ],
    );
    assert_usage_error(&out, "e.g. 8 or auto");
}

/// Two one-counter groups that fit one SIM pass together, per dispatch or in windows, with
/// the software device packing them (`KREPLAY_PACK_GROUPS=1`) or not.
fn two_small_groups(dir: &Path, window: &str, packed: bool) -> RunData {
    let app = sim_app();
    let args = [
        "--pmc",
        W,
        "--pmc",
        I,
        "--replay-mode",
        "kernel",
        "--kernel-replay-beta-enabled",
        "--replay-window",
        window,
        "-d",
        "DIR",
        "-o",
        "out",
        "--",
        app.to_str().unwrap(),
    ];
    let out = kreplay_command(dir, &args)
        .env("KREPLAY_PACK_GROUPS", if packed { "1" } else { "0" })
        .output()
        .expect("kreplay runs");
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.contains("verification PASSED"), "{stdout}");
    read_databases(&[dir.join("DIR").join("out_results.db")]).unwrap()
}

#[test]
fn groups_packed_into_one_pass_cost_one_execution_and_give_the_same_records() {
    for window in ["1", "auto"] {
        let (plain_dir, packed_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let plain = two_small_groups(plain_dir.path(), window, false);
        let packed = two_small_groups(packed_dir.path(), window, true);
        // The same dispatches, passes and deterministic values.
        assert_eq!(
            deterministic(&packed),
            deterministic(&plain),
            "window {window}"
        );
        assert!(!deterministic(&packed).is_empty());
        let replayed = |run: &RunData| -> Vec<ReplayCost> {
            costs(run)
                .into_iter()
                .filter(|c| c.outcome == ReplayOutcome::Replayed)
                .collect()
        };
        assert!(!replayed(&packed).is_empty());
        assert!(replayed(&plain).iter().all(|c| c.passes == 2));
        // Packed: one execution, nothing staged or restored.
        for cost in replayed(&packed) {
            assert_eq!(cost.passes, 1, "window {window}: {cost:?}");
            assert_eq!(cost.bytes_snapshotted, 0, "window {window}: {cost:?}");
            assert_eq!(cost.bytes_restored, 0, "window {window}: {cost:?}");
        }
    }
}
