//! The replay contract end to end, without a GPU: the real `kreplay` binary profiling
//! `kreplay-sim-app` (the reference software device's app) — issue 4's "Done when" list.

use crate::common::*;
use kreplay_format::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn assert_ok_and_verified(out: &std::process::Output) {
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.contains("verification PASSED"),
        "the app's verification line is missing: {stdout}"
    );
}

/// (dispatch id, pass, counter) -> value, formatted to the CSV's 6 decimals so that all three
/// formats compare exactly.
type Values = BTreeMap<(u64, Option<u32>, String), String>;

fn key_value(value: f64) -> String {
    format!("{value:.6}")
}

fn db_values(run: &RunData) -> Values {
    let mut out = Values::new();
    for p in &run.processes {
        for d in &p.dispatches {
            for c in &d.counters {
                out.insert(
                    (d.dispatch_id, d.replay_pass, c.name.to_string()),
                    key_value(c.value),
                );
            }
        }
    }
    out
}

fn json_values(path: &Path) -> Values {
    let mut out = Values::new();
    for r in read_json_counter_records(path).unwrap() {
        for (name, value) in r.counters {
            out.insert((r.dispatch_id, r.replay_pass, name), key_value(value));
        }
    }
    out
}

/// CSV rows have no pass: (dispatch id, counter) -> sorted values.
fn without_pass(values: &Values) -> BTreeMap<(u64, String), Vec<String>> {
    let mut out: BTreeMap<(u64, String), Vec<String>> = BTreeMap::new();
    for ((id, _, name), value) in values {
        out.entry((*id, name.clone()))
            .or_default()
            .push(value.clone());
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

fn csv_values(path: &Path) -> BTreeMap<(u64, String), Vec<String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (id, counter, value) = (
        col("Dispatch_Id"),
        col("Counter_Name"),
        col("Counter_Value"),
    );
    let mut out: BTreeMap<(u64, String), Vec<String>> = BTreeMap::new();
    for row in reader.records() {
        let row = row.unwrap();
        let v: f64 = row[value].parse().unwrap();
        out.entry((row[id].parse().unwrap(), row[counter].to_string()))
            .or_default()
            .push(key_value(v));
    }
    out.values_mut().for_each(|v| v.sort());
    out
}

fn costs(run: &RunData) -> Vec<ReplayCost> {
    run.processes.iter().flat_map(|p| p.costs.clone()).collect()
}

#[test]
fn kernel_replay_with_two_groups_collects_both_on_every_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &two_groups_replay(&["-f", "json", "csv", "rocpd", "-d", "DIR", "-o", "out"]),
    );
    assert_ok_and_verified(&out);
    let stderr = text(&out.stderr);
    let d = dir.path().join("DIR");
    let db = read_databases(&[d.join("out_results.db")]).unwrap();
    let json = json_values(&d.join("out_results.json"));

    // Every replayed dispatch: passes 0 and 1 exactly once under one id, W equal in both.
    let replayed: BTreeSet<u64> = costs(&db)
        .iter()
        .filter(|c| c.outcome == ReplayOutcome::Replayed)
        .map(|c| c.dispatch_id)
        .collect();
    assert!(
        replayed.len() >= 5,
        "too few replayed dispatches: {replayed:?}"
    );
    let records = read_json_counter_records(d.join("out_results.json")).unwrap();
    for id in &replayed {
        let mut passes: Vec<Option<u32>> = records
            .iter()
            .filter(|r| r.dispatch_id == *id)
            .map(|r| r.replay_pass)
            .collect();
        passes.sort();
        assert_eq!(passes, vec![Some(0), Some(1)], "dispatch {id}");
        let w0 = &json[&(*id, Some(0), W.to_string())];
        let w1 = &json[&(*id, Some(1), W.to_string())];
        assert_eq!(w0, w1, "{W} differs across passes of dispatch {id}");
        assert!(json.contains_key(&(*id, Some(0), I.to_string())));
        assert!(json.contains_key(&(*id, Some(1), C.to_string())));
    }

    // Every dispatch was replayed, the graph's kernel nodes too (sim_graph.rs): nothing ran once.
    let all: BTreeSet<u64> = records.iter().map(|r| r.dispatch_id).collect();
    assert_eq!(replayed, all, "every dispatch replayed");
    assert!(!stderr.contains("not replayed"), "{stderr}");

    // The database and the CSV say what the JSON says.
    assert_eq!(db_values(&db), json, "database and JSON disagree");
    assert_eq!(
        csv_values(&d.join("out_counter_collection.csv")),
        without_pass(&json),
        "CSV and JSON disagree"
    );
    assert!(!files_under(&d).iter().any(|f| f.contains("pass_")));
}

/// The execution without counters after the measured ones (on by default; off with
/// `KREPLAY_TIMING_EXECUTION=0`) changes neither the application's results nor a deterministic
/// counter, and adds no record; its own time is in every replayed unit's cost.
#[test]
fn a_timing_execution_changes_no_result_and_no_deterministic_counter() {
    let deterministic = |dir: &Path| -> Values {
        json_values(&dir.join("DIR").join("out_results.json"))
            .into_iter()
            .filter(|((_, _, name), _)| name == W || name == I)
            .collect()
    };
    let args = two_groups_replay(&["-f", "json", "rocpd", "-d", "DIR", "-o", "out"]);
    let timed = tempfile::tempdir().unwrap();
    assert_ok_and_verified(&run_sim(timed.path(), &args));
    let plain = tempfile::tempdir().unwrap();
    let app = sim_app();
    let mut all = args.clone();
    all.extend(["--", app.to_str().unwrap()]);
    let out = kreplay_command(plain.path(), &all)
        .env("KREPLAY_TIMING_EXECUTION", "0")
        .output()
        .unwrap();
    assert_ok_and_verified(&out);
    let values = deterministic(plain.path());
    assert!(!values.is_empty());
    assert_eq!(values, deterministic(timed.path()));
    let records =
        |dir: &Path| read_json_counter_records(dir.join("DIR").join("out_results.json")).unwrap();
    assert_eq!(records(timed.path()).len(), records(plain.path()).len());
    let timing_ns = |dir: &Path| -> Vec<u64> {
        let run = read_databases(&[dir.join("DIR").join("out_results.db")]).unwrap();
        costs(&run)
            .iter()
            .filter(|c| c.outcome == ReplayOutcome::Replayed && c.passes > 1)
            .map(|c| c.timing_execution_ns)
            .collect()
    };
    let (timed_ns, plain_ns) = (timing_ns(timed.path()), timing_ns(plain.path()));
    assert!(
        !timed_ns.is_empty() && timed_ns.iter().any(|&ns| ns > 0),
        "{timed_ns:?}"
    );
    assert!(
        !plain_ns.is_empty() && plain_ns.iter().all(|&ns| ns == 0),
        "{plain_ns:?}"
    );
}

/// `KREPLAY_HOST_STAGING=1`: every snapshot on the host, the application's results (verified)
/// and the deterministic counters as with device staging.
#[test]
fn host_staging_switch_stages_every_snapshot_on_the_host() {
    let args = two_groups_replay(&["-d", "DIR", "-o", "out"]);
    let run = |host: bool| {
        let dir = tempfile::tempdir().unwrap();
        let app = sim_app();
        let mut all = args.clone();
        all.extend(["--", app.to_str().unwrap()]);
        let mut command = kreplay_command(dir.path(), &all);
        if host {
            command.env("KREPLAY_HOST_STAGING", "1");
        }
        assert_ok_and_verified(&command.output().unwrap());
        let run = read_databases(&[dir.path().join("DIR/out_results.db")]).unwrap();
        let staged: Vec<Staging> = costs(&run)
            .iter()
            .filter(|c| c.bytes_snapshotted > 0)
            .map(|c| c.staging)
            .collect();
        // The deterministic counters, by dispatch and pass (windows close elsewhere on the host).
        let counters: BTreeSet<(u64, Option<u32>, String, u64)> = run
            .processes
            .iter()
            .flat_map(|p| &p.dispatches)
            .flat_map(|d| {
                d.counters
                    .iter()
                    .filter(|c| c.name == W || c.name == I)
                    .map(|c| {
                        (
                            d.dispatch_id,
                            d.replay_pass,
                            c.name.to_string(),
                            c.value.to_bits(),
                        )
                    })
            })
            .collect();
        (staged, counters)
    };
    let (on_device, device_counters) = run(false);
    let (on_host, host_counters) = run(true);
    assert!(
        !on_device.is_empty() && on_device.iter().all(|s| *s == Staging::Device),
        "{on_device:?}"
    );
    assert!(
        !on_host.is_empty() && on_host.iter().all(|s| *s == Staging::Host),
        "{on_host:?}"
    );
    assert!(!device_counters.is_empty());
    assert_eq!(host_counters, device_counters);
}

/// `--host-staging-max`: a snapshot that device staging cannot hold is staged on the host only
/// within the bound; above it every dispatch runs once (the application's results kept, every
/// dispatch recorded) and the outputs say why and how to raise it. A bad size, or the bound
/// without kernel replay, is a usage error before the application starts.
#[test]
fn host_staging_max_bounds_host_snapshots_and_says_why_a_dispatch_ran_once() {
    let run = |max: &str| {
        let dir = tempfile::tempdir().unwrap();
        let app = sim_app();
        let mut all = two_groups_replay(&["-d", "DIR", "-o", "out", "--host-staging-max", max]);
        all.extend(["--", app.to_str().unwrap()]);
        let out = kreplay_command(dir.path(), &all)
            .env("KREPLAY_HOST_STAGING", "1")
            .output()
            .unwrap();
        assert_ok_and_verified(&out);
        let run = read_databases(&[dir.path().join("DIR/out_results.db")]).unwrap();
        let warnings: Vec<String> = run
            .processes
            .iter()
            .flat_map(|p| p.warnings.iter().map(|w| w.message.clone()))
            .collect();
        (costs(&run), warnings, text(&out.stderr))
    };
    let (within, warnings, _) = run("1G");
    let tracked = within.iter().map(|c| c.bytes_tracked).max().unwrap();
    assert!(tracked > 1024, "{tracked}");
    assert!(
        within
            .iter()
            .filter(|c| c.bytes_tracked > 0)
            .all(|c| (c.outcome, c.staging) == (ReplayOutcome::Replayed, Staging::Host)),
        "{within:?}"
    );
    assert!(!warnings.iter().any(|w| w.contains("--host-staging-max")));

    let (above, warnings, stderr) = run("1K");
    assert_eq!(above.len(), within.len(), "every dispatch recorded");
    let declined: Vec<_> = above.iter().filter(|c| c.bytes_tracked > 1024).collect();
    assert!(!declined.is_empty());
    for cost in &declined {
        assert_eq!(
            (cost.outcome, cost.passes, cost.bytes_snapshotted),
            (ReplayOutcome::DeclinedSnapshotTooLarge, 1, 0),
            "{cost:?}"
        );
    }
    let said: Vec<&String> = warnings
        .iter()
        .filter(|w| w.contains("is above --host-staging-max (1.0 KiB)"))
        .collect();
    assert_eq!(said.len(), 1, "{warnings:?}");
    assert!(said[0].contains("Raise --host-staging-max"), "{}", said[0]);
    assert!(stderr.contains("is above --host-staging-max"), "{stderr}");
    assert!(
        stderr.contains("not replayed: snapshot too large"),
        "{stderr}"
    );

    let dir = tempfile::tempdir().unwrap();
    let out = kreplay(
        dir.path(),
        &["--pmc", W, "--host-staging-max", "8G", "--", "true"],
    );
    assert_usage_error(&out, "--host-staging-max applies only to kernel replay");
    let mut bad = two_groups_replay(&["--host-staging-max", "8GB"]);
    bad.extend(["--", "true"]);
    let out = kreplay(dir.path(), &bad);
    assert_usage_error(&out, "is not a size; give bytes or a number with a unit");
    assert_eq!(
        text(&out.stderr).lines().count(),
        1,
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn one_group_snapshots_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &[
            "--pmc",
            W,
            I,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "-d",
            "DIR",
            "-o",
            "out",
        ],
    );
    assert_ok_and_verified(&out);
    let db = read_databases(&[dir.path().join("DIR/out_results.db")]).unwrap();
    let costs = costs(&db);
    assert!(!costs.is_empty(), "no cost records");
    assert!(costs.iter().any(|c| c.outcome == ReplayOutcome::SinglePass));
    for c in &costs {
        assert_eq!(c.bytes_snapshotted, 0, "{c:?}");
        assert_eq!(c.bytes_restored, 0, "{c:?}");
    }
    assert!(
        text(&out.stderr).contains("0 B snapshotted"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn application_replay_runs_the_app_once_per_group_into_pass_folders() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &[
            "--pmc", W, I, "--pmc", W, C, "-f", "json", "-d", "DIR", "-o", "out",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(stdout.matches("verification PASSED").count(), 2, "{stdout}");
    let stderr = text(&out.stderr);
    assert!(stderr.contains("kreplay: pass 1/2: "), "{stderr}");
    assert!(stderr.contains("kreplay: pass 2/2: "), "{stderr}");
    let d = dir.path().join("DIR");
    for (pass, only) in [("pass_1", I), ("pass_2", C)] {
        let records = read_json_counter_records(d.join(pass).join("out_results.json")).unwrap();
        assert!(!records.is_empty(), "{pass} has no records");
        let names: BTreeSet<&str> = records
            .iter()
            .flat_map(|r| r.counters.keys().map(String::as_str))
            .collect();
        assert_eq!(names, BTreeSet::from([W, only]), "{pass}");
        assert!(records.iter().all(|r| r.replay_pass.is_none()), "{pass}");
    }
}

#[test]
fn yaml_pmc_groups_rotate_every_two_dispatches_per_device() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rotate.yaml"),
        format!("jobs:\n  - pmc_groups: [[{W}, {I}], [{W}, {C}]]\n    pmc_group_interval: 2\n    output_file: rot\n    output_directory: DIR\n"),
    )
    .unwrap();
    let out = run_sim(dir.path(), &["-i", "rotate.yaml"]);
    assert_ok_and_verified(&out);
    let db = read_databases(&[dir.path().join("DIR/pass_1/rot_results.db")]).unwrap();
    // Per device, in dispatch order: which group each profiled dispatch got.
    let mut per_agent: BTreeMap<u64, Vec<(u64, usize)>> = BTreeMap::new();
    for p in &db.processes {
        for d in &p.dispatches {
            let names: BTreeSet<&str> = d.counters.iter().map(|c| c.name.as_str()).collect();
            let group = if names.contains(I) {
                0
            } else if names.contains(C) {
                1
            } else {
                continue;
            };
            assert!(d.replay_pass.is_none(), "rotation does not replay");
            per_agent
                .entry(d.agent_id)
                .or_default()
                .push((d.dispatch_id, group));
        }
    }
    assert!(!per_agent.is_empty());
    for (agent, mut seq) in per_agent {
        seq.sort();
        let groups: Vec<usize> = seq.iter().map(|(_, g)| *g).collect();
        assert!(groups.len() >= 4, "agent {agent}: {groups:?}");
        for (i, g) in groups.iter().enumerate() {
            assert_eq!(*g, (i / 2) % 2, "agent {agent}: groups {groups:?}");
        }
    }
}

#[test]
fn a_three_counter_sim_group_is_refused_before_the_app_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &[
            "--pmc",
            W,
            I,
            C,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "-d",
            "DIR",
        ],
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{W} {I} {C}")), "{stderr}");
    assert!(
        stderr.contains("2 hardware passes") && stderr.contains("one pass"),
        "{stderr}"
    );
    assert!(
        !text(&out.stdout).contains("verification"),
        "the app must not start"
    );
    assert!(!dir.path().join("DIR").exists());
}

#[test]
fn demo_runs_on_the_software_device_when_asked_or_without_a_gpu() {
    let dir = tempfile::tempdir().unwrap();
    // The software-device app must sit next to kreplay for the demo.
    sim_app();
    let out = kreplay(dir.path(), &["demo", "--sim", "-d", "demo-out"]);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");
    assert!(
        stderr.contains("running the bundled demo on the reference software device instead"),
        "{stderr}"
    );
    assert!(
        stderr.contains("this ran on the reference software device"),
        "{stderr}"
    );
    // The demo's report (counters of every pass) is on stderr, as a run's; stdout is the app's.
    assert!(
        stderr.contains("sim__warps_launched.sum=") && stderr.contains("sim__bytes_written.sum="),
        "per-pass counters missing: {stderr}"
    );
    assert!(
        !stdout.contains("kreplay:") && !stdout.contains("kreplay demo:"),
        "{stdout}"
    );
    // No warning a user cannot act on, and no row that ran once: the graph's kernel nodes are
    // replayed like the other dispatches; the stream capture explained in the demo's words.
    for said in ["not replayed", "runs whole", "do not execute", "once"] {
        assert!(!stderr.contains(said), "{said}: {stderr}");
    }
    assert!(
        stderr.contains("the kernel nodes of the app's CUDA graph included"),
        "{stderr}"
    );
    assert!(
        stderr.contains("records a launch into a stream capture"),
        "{stderr}"
    );
    let records = read_json_counter_records(dir.path().join("demo-out/demo_results.json")).unwrap();
    assert!(records.iter().any(|r| r.replay_pass == Some(1)));
    let passes_of = |id: u64| -> Vec<u32> {
        let mut passes: Vec<u32> = records
            .iter()
            .filter(|r| r.dispatch_id == id)
            .map(|r| r.replay_pass.unwrap())
            .collect();
        passes.sort();
        passes
    };
    for id in records.iter().map(|r| r.dispatch_id) {
        assert_eq!(passes_of(id), vec![0, 1], "dispatch {id}");
    }
}

#[test]
fn a_bad_child_wait_is_refused_before_the_app_starts() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let out = kreplay_command(
        dir.path(),
        &["--pmc", W, "-d", "DIR", "--", app.to_str().unwrap()],
    )
    .env("KREPLAY_CHILD_WAIT_S", "forever")
    .output()
    .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("KREPLAY_CHILD_WAIT_S=\"forever\" is not a number of seconds"),
        "{stderr}"
    );
    assert!(
        !text(&out.stdout).contains("verification"),
        "the app must not start"
    );
    assert!(!dir.path().join("DIR").exists());
}

#[test]
fn a_configuration_too_long_for_the_environment_reaches_the_app_through_a_file() {
    // 700 groups: ≈ 40 KiB of configuration JSON, more than kreplay puts in KREPLAY_CONFIG.
    let dir = tempfile::tempdir().unwrap();
    let mut args = Vec::new();
    for g in 0..700 {
        args.extend(["--pmc", if g % 2 == 0 { W } else { I }]);
    }
    args.extend([
        "--replay-mode",
        "kernel",
        "--kernel-replay-beta-enabled",
        "-d",
        "out",
        "-o",
        "big",
        "--",
    ]);
    let app = sim_app();
    args.extend([app.to_str().unwrap(), "--iterations", "1"]);
    // Unpacked: the 700 groups share two counters, which one execution would measure at once.
    let out = kreplay_command(dir.path(), &args)
        .env("KREPLAY_PACK_GROUPS", "0")
        .output()
        .unwrap();
    assert_ok_and_verified(&out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("passes 8-699") && stderr.lines().all(|l| l.len() < 2000),
        "the summary names a few passes, then sums the rest up: {stderr}"
    );
    let run = read_databases(&[dir.path().join("out/big_results.db")]).unwrap();
    let groups: BTreeSet<u32> = run.processes[0]
        .dispatches
        .iter()
        .filter_map(|d| d.replay_pass)
        .collect();
    assert_eq!(groups.len(), 700, "every group was collected: {groups:?}");
}

/// One process with two devices, a thread on each: both right, every dispatch measured in both
/// passes on the device it ran on, and the summary per device.
#[test]
fn two_devices_of_one_process_are_each_replayed_and_summarised() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let args = two_groups_replay(&[
        "-d",
        "DIR",
        "-o",
        "out",
        "--",
        app.to_str().unwrap(),
        "--threads",
        "2",
        "--devices",
        "2",
        "--iterations",
        "3",
    ]);
    let out = kreplay(dir.path(), &args);
    assert_ok_and_verified(&out);
    let stderr = text(&out.stderr);
    for gpu in ["GPU 0 (", "GPU 1 ("] {
        assert!(
            stderr
                .lines()
                .any(|l| l.contains(gpu) && l.contains(" replayed")),
            "no summary line for {gpu}: {stderr}"
        );
    }
    let run = read_databases(&[dir.path().join("DIR/out_results.db")]).unwrap();
    let mut passes: BTreeMap<(u64, u64), BTreeSet<u32>> = BTreeMap::new();
    for d in &run.processes[0].dispatches {
        if let Some(pass) = d.replay_pass {
            passes
                .entry((d.agent_id, d.dispatch_id))
                .or_default()
                .insert(pass);
        }
    }
    let agents: BTreeSet<u64> = passes.keys().map(|(agent, _)| *agent).collect();
    assert_eq!(agents, [0, 1].into(), "dispatches replayed on both devices");
    assert!(passes.values().all(|p| p == &[0, 1].into()), "{passes:?}");
}

#[test]
fn processes_a_launcher_ranks_get_their_own_files_by_rank() {
    // The application is a launcher (as torchrun or mpirun under kreplay would be): it starts
    // two ranks of the sim app with RANK set; `%rank%` names each one's files by its own rank.
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let script = format!(
        "RANK=0 WORLD_SIZE=2 '{0}' --iterations 1 & RANK=1 WORLD_SIZE=2 '{0}' --iterations 1; wait",
        app.display()
    );
    let out = shell_app_command(dir.path(), "rank_%rank%_of_%size%", &script)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for rank in [0, 1] {
        let run = read_databases(&[dir.path().join(format!("out/rank_{rank}_of_2_results.db"))])
            .unwrap_or_else(|e| panic!("rank {rank}: {e}; {stderr}"));
        assert_eq!(run.processes.len(), 1);
        assert_eq!(
            run.processes[0].process.rank.as_deref(),
            Some(&*rank.to_string())
        );
        assert!(!run.processes[0].dispatches.is_empty());
    }
}

/// kreplay with the two sim groups in kernel replay, output `out/<name>`, profiling a shell
/// running `script` (which starts the sim app itself; the shell needs no injection library).
fn shell_app_command(dir: &Path, name: &str, script: &str) -> std::process::Command {
    let fake = dir.join("libfake_inject.so");
    std::fs::write(&fake, b"").unwrap();
    let args = [
        "--pmc",
        W,
        "--pmc",
        I,
        "--replay-mode",
        "kernel",
        "--kernel-replay-beta-enabled",
        "-d",
        "out",
        "-o",
        name,
        "--",
        "sh",
        "-c",
        script,
    ];
    let mut command = kreplay_command(dir, &args);
    command.env("KREPLAY_INJECT_LIB", fake);
    command
}

#[test]
fn a_child_that_outlives_the_application_keeps_its_records() {
    // The application (a shell) starts the sim app in the background and exits at once; the
    // sim app records for a while after that.
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let script = format!(
        "(sleep 1; exec '{}' --iterations 2) & exit 0",
        app.display()
    );
    let out = shell_app_command(dir.path(), "orphan", &script)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("waiting up to"), "{stderr}");
    let run = read_databases(&[dir.path().join("out/orphan_results.db")]).unwrap();
    assert_eq!(run.processes.len(), 1, "{stderr}");
    // The same app, waited for by the shell: the orphan recorded every dispatch and pass it would.
    let waited = format!("exec '{}' --iterations 2", app.display());
    let out = shell_app_command(dir.path(), "waited", &waited)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let expected = read_databases(&[dir.path().join("out/waited_results.db")]).unwrap();
    let passes = |run: &RunData| -> Vec<(u64, Option<u32>)> {
        let mut passes: Vec<_> = run.processes[0]
            .dispatches
            .iter()
            .map(|d| (d.dispatch_id, d.replay_pass))
            .collect();
        passes.sort();
        passes
    };
    assert!(!passes(&expected).is_empty());
    assert_eq!(passes(&run), passes(&expected), "{stderr}");
}

#[test]
fn an_application_ended_by_abort_or_sigterm_keeps_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let profile = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "--pmc",
            W,
            "--pmc",
            I,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "-d",
            "out",
            "-o",
            name,
            "--",
            app.to_str().unwrap(),
            "--iterations",
            "3",
        ];
        args.extend(extra);
        let out = kreplay(dir.path(), &args);
        let run = read_databases(&[dir.path().join(format!("out/{name}_results.db"))]).unwrap();
        (out, run)
    };
    let (out, whole) = profile("whole", &[]);
    assert_ok_and_verified(&out);
    let passes = |run: &RunData| -> BTreeSet<(u64, Option<u32>)> {
        run.processes[0]
            .dispatches
            .iter()
            .map(|d| (d.dispatch_id, d.replay_pass))
            .collect()
    };
    for signal in ["6", "15"] {
        let (out, ended) = profile(&format!("signal{signal}"), &["--end-by-signal", signal]);
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains(&format!("signal {signal}")), "{stderr}");
        // The workload's dispatches and the two left in an open window, every pass of each.
        let kept = passes(&ended);
        let last = whole.processes[0]
            .dispatches
            .iter()
            .map(|d| d.dispatch_id)
            .max()
            .unwrap();
        let mut expected = passes(&whole);
        for id in [last + 1, last + 2] {
            expected.extend([(id, Some(0)), (id, Some(1))]);
        }
        assert_eq!(
            kept, expected,
            "signal {signal}: every pass of every dispatch is kept"
        );
        assert!(
            ended.processes[0].process.end_ns > 0,
            "the process end is recorded"
        );
    }
}

#[test]
fn ctrl_c_ends_the_wait_for_processes_the_application_left_running() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    // The sim app records, then its parent shell's other child sleeps on for a minute.
    let script = format!(
        "'{}' --iterations 1; (sleep 60 >/dev/null 2>&1 </dev/null) & exit 0",
        app.display()
    );
    let mut child = shell_app_command(dir.path(), "waited", &script)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // kreplay's stderr line by line: the wait has begun once its message is printed (polled,
    // never timed: a loaded machine runs the app late). A failing case's guard is `HUNG`.
    let pipe = child.stderr.take().unwrap();
    let (lines, heard) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        use std::io::BufRead;
        let mut all = String::new();
        for line in std::io::BufReader::new(pipe).lines() {
            let Ok(line) = line else { break };
            if line.contains("Ctrl-C stops waiting") {
                let _ = lines.send(());
            }
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    if heard.recv_timeout(HUNG).is_err() {
        let _ = child.kill();
        panic!("the wait never began: {}", reader.join().unwrap());
    }
    let began = std::time::Instant::now();
    // SAFETY: a signal to our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    let stderr = reader.join().unwrap();
    assert!(
        began.elapsed().as_secs() < 20,
        "Ctrl-C did not end the wait: {stderr}"
    );
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("still run"), "{stderr}");
    assert!(
        dir.path().join("out/waited_results.db").is_file(),
        "{stderr}"
    );
}

/// `--cache-control`: recorded in every output; with `all` (the default) every measured
/// dispatch's replay cost says its executions started from a flushed cache, with `none` that
/// they found it as left.
#[test]
fn the_cache_control_is_recorded_in_every_output() {
    for (given, control, state) in [
        (None, "all", CacheState::Flushed),
        (Some("none"), "none", CacheState::AsLeft),
        (Some("all"), "all", CacheState::Flushed),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let mut more = vec!["-f", "json", "csv", "rocpd", "-d", "DIR", "-o", "out"];
        if let Some(given) = given {
            more.extend(["--cache-control", given]);
        }
        let out = run_sim(dir.path(), &two_groups_replay(&more));
        assert_ok_and_verified(&out);
        let d = dir.path().join("DIR");
        let db = read_databases(&[d.join("out_results.db")]).unwrap();
        assert_eq!(db.processes[0].process.cache_control.as_str(), control);
        let replayed: Vec<ReplayCost> = costs(&db)
            .into_iter()
            .filter(|c| c.outcome == ReplayOutcome::Replayed)
            .collect();
        assert!(replayed.len() >= 5, "{replayed:?}");
        assert!(
            replayed.iter().all(|c| c.cache == state),
            "{given:?}: {replayed:?}"
        );

        let json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("out_results.json")).unwrap())
                .unwrap();
        let process = &json["rocprofiler-sdk-tool"][0];
        assert_eq!(process["metadata"]["cache_control"], control);
        assert_eq!(process["metadata"]["clock_control"], "none");
        let json_states: BTreeSet<String> = process["kreplay"]["replay_costs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["outcome"] == "replayed")
            .map(|c| c["cache"].as_str().unwrap().to_string())
            .collect();
        assert_eq!(json_states, BTreeSet::from([state.as_str().to_string()]));

        let mut csv = csv::Reader::from_path(d.join("out_replay_cost.csv")).unwrap();
        let headers = csv.headers().unwrap().clone();
        let column = |name: &str| headers.iter().position(|h| h == name).unwrap();
        let (outcome, cache) = (column("Outcome"), column("Cache"));
        let csv_states: BTreeSet<String> = csv
            .records()
            .map(Result::unwrap)
            .filter(|r| &r[outcome] == "replayed")
            .map(|r| r[cache].to_string())
            .collect();
        assert_eq!(csv_states, BTreeSet::from([state.as_str().to_string()]));
    }
}
