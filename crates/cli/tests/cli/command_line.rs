//! The command line through the real binary: every rejection (exact text, exit 2), every
//! accepted run shape (printed with the hidden `--echo`), and the launcher's work around an
//! application (placeholders, exit status, merging, convert) with a stand-in application that
//! copies a prepared database to where kreplay tells it to write.

use crate::common::*;
use kreplay_core::config::{InProcessMode, ToolConfig};
use kreplay_format::*;
use std::path::Path;

const BETA: &str = "--replay-mode kernel requires acknowledgement that kernel replay is a beta feature via --kernel-replay-beta-enabled";
const NO_COUNTERS: &str =
    "--replay-mode kernel requires counter collection (--pmc, input-file pmc, or pmc_groups)";
const CONFLICT_TAIL: &str = ". Kernel replay only varies counter groups from one pass to the next; every other service stays on for all of the passes and would report each kernel once per pass. Collect them in a separate run.";

fn replay_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec!["--pmc", W, I, "--pmc", W, C, "--replay-mode", "kernel"];
    args.extend_from_slice(extra);
    args
}

#[test]
fn replay_without_beta_flag_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay(
        dir.path(),
        &[
            "--pmc",
            "A",
            "--pmc",
            "B",
            "--replay-mode",
            "kernel",
            "--",
            "true",
        ],
    );
    assert_usage_error(&out, BETA);
    let out = kreplay(
        dir.path(),
        &replay_args(&["--kernel-replay-beta-enabled", "false", "--", "true"]),
    );
    assert_usage_error(&out, BETA);
}

#[test]
fn replay_without_counters_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay(
        dir.path(),
        &[
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--",
            "true",
        ],
    );
    assert_usage_error(&out, NO_COUNTERS);
}

#[test]
fn replay_with_other_services_is_refused_in_a_stable_order() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 4] = [
        (&["--att"], "--att"),
        (&["--pc-sampling-beta-enabled"], "PC sampling"),
        (&["--spm"], "--spm"),
        (
            &["--spm", "--pc-sampling-beta-enabled", "--att"],
            "--att or PC sampling or --spm",
        ),
    ];
    for (flags, joined) in cases {
        let mut args = replay_args(&["--kernel-replay-beta-enabled"]);
        args.extend_from_slice(flags);
        args.extend_from_slice(&["--", "true"]);
        let out = kreplay(dir.path(), &args);
        assert_usage_error(
            &out,
            &format!("--replay-mode kernel cannot be combined with {joined}{CONFLICT_TAIL}"),
        );
    }
}

#[test]
fn pc_sampling_variable_set_to_anything_conflicts_with_replay() {
    let dir = tempfile::tempdir().unwrap();
    for value in ["0", "", "ON"] {
        let out = kreplay_command(
            dir.path(),
            &replay_args(&["--kernel-replay-beta-enabled", "--", "true"]),
        )
        .env("ROCPROFILER_PC_SAMPLING_BETA_ENABLED", value)
        .output()
        .unwrap();
        assert_usage_error(
            &out,
            &format!("--replay-mode kernel cannot be combined with PC sampling{CONFLICT_TAIL}"),
        );
    }
}

#[test]
fn empty_pmc_group_is_refused_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay(dir.path(), &["--pmc", W, "--pmc", "--pmc", I, "--", "true"]);
    assert_usage_error(
        &out,
        "Empty counter group in --pmc flag 2. Each --pmc must specify at least one counter.",
    );
}

#[test]
fn pmc_with_input_file_pmc_groups_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("in.yaml"),
        format!("jobs:\n  - pmc_groups: [[{W}], [{I}]]\n    pmc_group_interval: 2\n"),
    )
    .unwrap();
    let out = kreplay(dir.path(), &["--pmc", W, "-i", "in.yaml", "--", "true"]);
    assert_usage_error(
        &out,
        "Cannot specify both --pmc and (input file) pmc_groups",
    );
}

#[test]
fn other_usage_errors_are_one_line_with_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("in.ini"), "x").unwrap();
    let cases: [(&[&str], &str); 12] = [
        (&["--pmc", W], "no application given: put it after `--`"),
        (&["-i", "in.ini", "--", "true"], "unsupported extension"),
        (
            &["--pmc", W, "-f", "otf2", "--", "true"],
            "output format 'otf2' is not supported",
        ),
        (
            &["--cache-control", "some", "--pmc", W, "--", "true"],
            "--cache-control 'some' is not a cache control; use all",
        ),
        (
            &["--clock-control", "base", "--pmc", W, "--", "true"],
            "--clock-control base: kreplay never changes the GPU's clocks",
        ),
        (
            &["--graph-profiling", "graph", "--pmc", W, "--", "true"],
            "--graph-profiling graph: CUPTI's range profiler cannot measure a graph launch",
        ),
        (
            &["--graph-profiling", "nodes", "--pmc", W, "--", "true"],
            "--graph-profiling 'nodes' is not a graph profiling mode; use node",
        ),
        (
            &["-T", "--pmc", W, "--", "true"],
            "-T/--sys-trace: kreplay traces kernel dispatches only",
        ),
        (
            &["--memory-copy-trace", "--hip-trace", "--", "true"],
            "--hip-trace, --memory-copy-trace: kreplay traces kernel dispatches only",
        ),
        (
            &["--pmc", W, "--kernel-include-regex", "(", "--", "true"],
            "not a valid regular expression",
        ),
        (
            &["--pmc", W, "--drain-timeout", "0", "--", "true"],
            "--drain-timeout 0 is not a positive number",
        ),
        (
            &["--att", "--pmc", W, "--", "true"],
            "--att not available in kreplay",
        ),
    ];
    for (args, message) in cases {
        assert_usage_error(&kreplay(dir.path(), args), message);
    }
    // clap's own errors exit 2 as well.
    let out = kreplay(dir.path(), &["--replay-mode", "sideways", "--", "true"]);
    assert_eq!(out.status.code(), Some(2));
}

/// The diagnostic switches the application would read are checked before it starts.
#[test]
fn a_bad_diagnostic_switch_is_refused_before_the_app_starts() {
    let dir = tempfile::tempdir().unwrap();
    for (name, value, message) in [
        (
            "KREPLAY_PACK_GROUPS",
            "2",
            "KREPLAY_PACK_GROUPS=\"2\" is not 0 or 1",
        ),
        (
            "KREPLAY_TIMING_EXECUTION",
            "yes",
            "KREPLAY_TIMING_EXECUTION=\"yes\" is not 0 or 1",
        ),
        (
            "KREPLAY_WINDOW_SPANS",
            "off",
            "KREPLAY_WINDOW_SPANS=\"off\" is not 0 or 1; use 1 (the default) to turn it on, 0 to turn it off",
        ),
        (
            "KREPLAY_DEBUG",
            "yes",
            "KREPLAY_DEBUG=\"yes\" is not 0 or 1",
        ),
        (
            "KREPLAY_RANGE_PROFILER_SEQUENCE",
            "sideways",
            "KREPLAY_RANGE_PROFILER_SEQUENCE=\"sideways\" is not a range-profiler sequence",
        ),
    ] {
        let out = kreplay_command(dir.path(), &["--pmc", W, "--", "sh", "-c", "touch started"])
            .env(name, value)
            .output()
            .unwrap();
        assert_usage_error(&out, message);
        assert!(!dir.path().join("started").exists());
    }
}

#[test]
fn unknown_counter_is_refused_before_the_app_starts() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay(
        dir.path(),
        &[
            "--pmc",
            "sim__warp_launched.sum",
            "--",
            "sh",
            "-c",
            "touch started",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("sim__warps_launched.sum"),
        "{}",
        text(&out.stderr)
    );
    assert!(!dir.path().join("started").exists());
}

#[test]
fn three_counter_sim_group_is_refused_naming_the_group_and_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay(
        dir.path(),
        &replay_args(&[
            "--kernel-replay-beta-enabled",
            "--pmc",
            W,
            I,
            C,
            "--",
            "sh",
            "-c",
            "touch started",
        ]),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(&format!("{W} {I} {C}")), "{stderr}");
    assert!(stderr.contains("one pass"), "{stderr}");
    assert!(
        !dir.path().join("started").exists(),
        "the app must not start"
    );
}

/// The planned runs, as `--echo` prints them: (progress line, config, output line).
fn echo(dir: &Path, args: &[&str]) -> Vec<(String, ToolConfig, String)> {
    let mut all = vec!["--echo"];
    all.extend_from_slice(args);
    let out = kreplay(dir, &all);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}{stdout}", text(&out.stderr));
    let lines: Vec<&str> = stdout.lines().collect();
    lines
        .chunks(3)
        .map(|c| {
            let json = c[1]
                .trim()
                .strip_prefix("KREPLAY_CONFIG=")
                .expect("config line");
            (
                c[0].to_string(),
                ToolConfig::from_json(json).unwrap(),
                c[2].trim().to_string(),
            )
        })
        .collect()
}

fn metrics(config: &ToolConfig) -> Vec<Vec<String>> {
    config
        .groups
        .iter()
        .map(|g| g.metrics().map(str::to_string).collect())
        .collect()
}

#[test]
fn kernel_replay_runs_all_cli_groups_in_one_run() {
    let dir = tempfile::tempdir().unwrap();
    let runs = echo(
        dir.path(),
        &replay_args(&[
            "--kernel-replay-beta-enabled",
            "-d",
            "D",
            "-o",
            "out",
            "--",
            "app",
        ]),
    );
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].1.mode, InProcessMode::KernelReplay);
    assert_eq!(metrics(&runs[0].1), vec![vec![W, I], vec![W, C]]);
    assert_eq!(runs[0].2, "output: D name out formats rocpd");
}

#[test]
fn application_replay_runs_once_per_group() {
    let dir = tempfile::tempdir().unwrap();
    let runs = echo(
        dir.path(),
        &["--pmc", W, I, "--pmc", C, "-d", "D", "--", "app"],
    );
    assert_eq!(runs.len(), 2);
    assert!(runs[0].0.starts_with("kreplay: pass 1/2:"), "{}", runs[0].0);
    assert_eq!(
        runs[1].2,
        "output: D/pass_2 name %hostname%/%pid% formats rocpd"
    );
    assert_eq!(metrics(&runs[1].1), vec![vec![C]]);
    assert!(runs.iter().all(|r| r.1.mode == InProcessMode::Single));
    // One group: no sub-folder.
    let one = echo(dir.path(), &["--pmc", W, "--", "app"]);
    assert_eq!(one[0].2, "output: . name %hostname%/%pid% formats rocpd");
}

#[test]
fn yaml_json_and_text_jobs_are_runs_of_their_own() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("in.yaml"),
        format!("jobs:\n  - pmc: [{W}, {I}]\n  - pmc: \"{C}\"\n    output_file: job2\n    output_format: [csv, json]\n    kernel_include_regex: scale\n"),
    )
    .unwrap();
    let runs = echo(dir.path(), &["-i", "in.yaml", "--", "app"]);
    assert_eq!(runs.len(), 2);
    assert_eq!(
        runs[0].2,
        "output: ./pass_1 name %hostname%/%pid% formats rocpd"
    );
    assert_eq!(runs[1].2, "output: ./pass_2 name job2 formats csv,json");
    assert_eq!(runs[1].1.filter.include_regex.as_deref(), Some("scale"));

    std::fs::write(
        dir.path().join("in.json"),
        format!(r#"{{"jobs": [{{"pmc": ["{W}"], "kernel_trace": true}}]}}"#),
    )
    .unwrap();
    let runs = echo(dir.path(), &["-i", "in.json", "--", "app"]);
    assert_eq!(runs.len(), 1);
    assert!(runs[0].1.kernel_trace);
    assert_eq!(
        runs[0].2,
        "output: ./pass_1 name %hostname%/%pid% formats rocpd"
    );

    std::fs::write(
        dir.path().join("in.txt"),
        format!("pmc: {W} {I}\n# comment\npmc: {C}\n"),
    )
    .unwrap();
    let out = kreplay(dir.path(), &["--echo", "-i", "in.txt", "--", "app"]);
    assert!(
        text(&out.stderr).contains("deprecated"),
        "{}",
        text(&out.stderr)
    );
    let runs = echo(dir.path(), &["-i", "in.txt", "--", "app"]);
    assert_eq!(
        runs[1].2,
        "output: ./pmc_2 name %hostname%/%pid% formats rocpd"
    );
}

#[test]
fn cli_groups_plus_jobs_under_replay() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("in.yaml"),
        format!("jobs:\n  - pmc: [{W}]\n  - pmc: [{I}, {C}]\n"),
    )
    .unwrap();
    let runs = echo(
        dir.path(),
        &replay_args(&["--kernel-replay-beta-enabled", "-i", "in.yaml", "--", "app"]),
    );
    assert_eq!(runs.len(), 3);
    assert_eq!(metrics(&runs[0].1), vec![vec![W, I], vec![W, C]]);
    assert_eq!(metrics(&runs[2].1), vec![vec![I, C]]);
    assert!(runs.iter().all(|r| r.1.mode == InProcessMode::KernelReplay));
    let places: Vec<&str> = runs.iter().map(|r| r.2.as_str()).collect();
    assert!(places[0].starts_with("output: ./pass_1 "), "{places:?}");
    assert!(places[2].starts_with("output: ./pass_3 "), "{places:?}");
}

#[test]
fn pmc_groups_job_rotates_without_replay_and_is_replayed_with_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("rot.yaml"),
        format!("jobs:\n  - pmc_groups: [[{W}, {I}], [{W}, {C}]]\n    pmc_group_interval: 2\n"),
    )
    .unwrap();
    let runs = echo(dir.path(), &["-i", "rot.yaml", "--", "app"]);
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0].1.mode, InProcessMode::Rotation { interval: 2 });
    let runs = echo(
        dir.path(),
        &[
            "-i",
            "rot.yaml",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--",
            "app",
        ],
    );
    assert_eq!(runs[0].1.mode, InProcessMode::KernelReplay);
    assert_eq!(metrics(&runs[0].1).len(), 2);
}

#[test]
fn metrics_flag_packs_and_prints_the_groups() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--echo",
        "--metrics",
        &format!("{W},{I},{C}"),
        "--replay-mode",
        "kernel",
        "--kernel-replay-beta-enabled",
        "--",
        "app",
    ];
    let out = kreplay(dir.path(), &args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("--metrics packed into 2 single-pass group(s)"),
        "{stderr}"
    );
    let runs = echo(dir.path(), &args[1..]);
    let packed: Vec<String> = metrics(&runs[0].1).into_iter().flatten().collect();
    assert_eq!(packed.len(), 3);
}

#[test]
fn filters_and_drain_timeout_reach_the_app_config() {
    let dir = tempfile::tempdir().unwrap();
    let runs = echo(
        dir.path(),
        &[
            "--pmc",
            W,
            "--kernel-include-regex",
            "scale.*",
            "--kernel-exclude-regex",
            "graph",
            "--kernel-iteration-range",
            "[1-2],[4]",
            "--kernel-trace",
            "--drain-timeout",
            "2.5",
            "--log-level",
            "info",
            "--",
            "app",
        ],
    );
    let config = &runs[0].1;
    assert_eq!(config.filter.include_regex.as_deref(), Some("scale.*"));
    assert_eq!(config.filter.exclude_regex.as_deref(), Some("graph"));
    assert_eq!(config.filter.iteration_range.as_deref(), Some("[1-2],[4]"));
    assert!(config.kernel_trace);
    assert_eq!(config.drain_timeout_ms, 2500);
    assert_eq!(config.log_level, "info");
}

// ---- the launcher around a stand-in application ----

/// A database as a profiled process with pid 4242 would write it: one kernel, two dispatches
/// replayed in two passes.
fn fixture_db(path: &Path) {
    fixture_db_with_units(path, "warp");
}

/// The same with every counter's unit `unit` (empty, as the injected library records them on a
/// GPU).
fn fixture_db_with_units(path: &Path, unit: &str) {
    let writer = DbWriter::create(path, || {}).unwrap();
    writer.send(Record::Process(ProcessInfo {
        pid: 4242,
        ppid: 1,
        hostname: "fixturehost".into(),
        command: vec!["app".into()],
        start_ns: 1,
        end_ns: 0,
        rank: None,
        size: None,
        cache_control: kreplay_format::CacheControl::All,
        sections: Vec::new(),
    }));
    writer.send(Record::Agent(AgentInfo {
        agent_id: 0,
        name: "Reference software device".into(),
        chip: "SIM".into(),
        sm_count: 4,
        global_memory_bytes: 1 << 30,
        pci_location: String::new(),
        max_threads_per_sm: 1024,
        shared_memory_per_sm_bytes: 65_536,
    }));
    writer.send(Record::KernelSymbol(KernelSymbol {
        kernel_id: 1,
        mangled_name: "scale".into(),
        demangled_name: "scale".into(),
        registers: 16,
        static_shared_bytes: 0,
        local_bytes: 0,
        param_bytes: 16,
    }));
    for name in [W, I] {
        writer.send(Record::Counter(CounterInfo {
            name: name.into(),
            metric: name.into(),
            description: String::new(),
            unit: unit.into(),
        }));
    }
    for id in 1..=2u64 {
        for pass in 0..2u32 {
            writer.send(Record::Dispatch(DispatchRecord {
                dispatch_id: id,
                replay_pass: Some(pass),
                correlation_id: id,
                agent_id: 0,
                stream_id: 0,
                pid: 4242,
                tid: 1,
                kernel_id: 1,
                grid: [8, 1, 1],
                block: [64, 1, 1],
                dynamic_shared_bytes: 0,
                start_ns: 10,
                end_ns: 20,
                counters: vec![CounterSample {
                    name: if pass == 0 { W } else { I }.into(),
                    value: 16.0,
                }],
            }));
        }
        writer.send(Record::ReplayCost(ReplayCost {
            dispatch_id: id,
            agent_id: 0,
            outcome: ReplayOutcome::Replayed,
            passes: 2,
            bytes_tracked: 4096,
            bytes_snapshotted: 4096,
            bytes_restored: 4096,
            staging: Staging::Device,
            drain_ns: 1,
            snapshot_ns: 1000,
            pass_ns: vec![5000, 6000],
            restore_ns: 700,
            timing_execution_ns: 0,
            cache: kreplay_format::CacheState::Flushed,
            sm_clock_mhz: [0, 0],
            memory_clock_mhz: [0, 0],
        }));
    }
    writer.send(Record::ProcessEnd { end_ns: 30 });
    writer.finish().unwrap();
}

/// A stand-in application: copies `$FIXTURE_DB` to the database path kreplay gives it in
/// KREPLAY_CONFIG, then exits with `$APP_EXIT` (or kills itself when `$APP_SIGNAL` is set).
const STAND_IN: &str = r#"p=$(printf '%s' "$KREPLAY_CONFIG" | sed -e 's/.*"database_path":"\([^"]*\)".*/\1/' -e "s/%pid%/$$/"); cp "$FIXTURE_DB" "$p"; [ -n "$APP_BLOCK" ] && echo x > "$APP_BLOCK"; [ -n "$APP_SIGNAL" ] && kill -9 $$; [ -n "$APP_SLEEP" ] && exec sleep "$APP_SLEEP"; exit ${APP_EXIT:-0}"#;

fn stand_in_command(dir: &Path, args: &[&str], app_exit: i32) -> std::process::Command {
    let fixture = dir.join("fixture.db");
    if !fixture.exists() {
        fixture_db(&fixture);
    }
    // A placeholder injection library: the stand-in never loads CUDA.
    let fake_lib = dir.join("libfake_inject.so");
    std::fs::write(&fake_lib, b"").unwrap();
    let mut all: Vec<&str> = args.to_vec();
    all.extend_from_slice(&["--", "sh", "-c", STAND_IN]);
    let mut command = kreplay_command(dir, &all);
    command
        .env("FIXTURE_DB", &fixture)
        .env("KREPLAY_INJECT_LIB", &fake_lib)
        .env("APP_EXIT", app_exit.to_string())
        .env("KREPLAY_TEST_TAG", "tagged");
    command
}

fn run_stand_in(dir: &Path, args: &[&str], app_exit: i32, signal: bool) -> std::process::Output {
    let mut command = stand_in_command(dir, args, app_exit);
    if signal {
        command.env("APP_SIGNAL", "1");
    }
    command.output().unwrap()
}

#[test]
fn outputs_are_named_with_placeholders_and_staging_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(
        dir.path(),
        &[
            "--pmc",
            W,
            "-d",
            "D/%env{KREPLAY_TEST_TAG}%",
            "-o",
            "%tag%/%pid%_$env{KREPLAY_TEST_TAG}",
            "-f",
            "json",
            "csv",
            "rocpd",
        ],
        0,
        false,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let files = files_under(&dir.path().join("D"));
    assert!(
        files.contains(&"tagged/sh/4242_tagged_results.json".to_string()),
        "{files:?}"
    );
    assert!(
        files.contains(&"tagged/sh/4242_tagged_results.db".to_string()),
        "{files:?}"
    );
    assert!(
        files.contains(&"tagged/sh/4242_tagged_counter_collection.csv".to_string()),
        "{files:?}"
    );
    assert!(
        !files.iter().any(|f| f.contains(".kreplay-staging")),
        "{files:?}"
    );
    assert!(stderr.contains("kreplay: wrote "), "{stderr}");
    // The summary: per kernel, per pass, and replay cost totals.
    assert!(stderr.contains("2 dispatch(es) of 1 kernel(s)"), "{stderr}");
    assert!(stderr.contains(&format!("{W}=32")), "{stderr}");
    assert!(stderr.contains("8.0 KiB snapshotted"), "{stderr}");
    // Default name: %hostname%/%pid% with the recorded process's host and pid.
    let out = run_stand_in(dir.path(), &["--pmc", W, "-d", "E"], 0, false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        files_under(&dir.path().join("E")),
        vec!["fixturehost/4242_results.db"]
    );
}

#[test]
fn log_level_info_prints_the_configuration_given_to_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(
        dir.path(),
        &["--pmc", W, "-d", "D", "--log-level", "info"],
        0,
        false,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("kreplay: KREPLAY_CONFIG="))
        .unwrap_or_else(|| panic!("no configuration line: {stderr}"));
    let config = ToolConfig::from_json(line).unwrap();
    assert_eq!(config.log_level, "info");
    assert!(
        config.database_path.ends_with("/%pid%.db"),
        "{}",
        config.database_path
    );
    assert!(
        config.database_path.contains(".kreplay-staging-"),
        "{}",
        config.database_path
    );
}

#[test]
fn the_apps_exit_status_is_forwarded_after_writing_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(
        dir.path(),
        &["--pmc", W, "-d", "D", "-o", "out", "-f", "json"],
        3,
        false,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(dir.path().join("D/out_results.json").is_file());
    let out = run_stand_in(
        dir.path(),
        &["--pmc", W, "-d", "S", "-o", "out", "-f", "json"],
        0,
        true,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("signal 9"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        dir.path().join("S/out_results.json").is_file(),
        "crashed apps still get their output"
    );
}

#[test]
fn sigterm_to_kreplay_reaches_the_app_and_output_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let child = stand_in_command(
        dir.path(),
        &["--pmc", W, "-d", "T", "-o", "out", "-f", "json"],
        0,
    )
    .env("APP_SLEEP", "30")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Wait until the app has written its database into the staging folder.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let staged = files_under(&dir.path().join("T"))
            .iter()
            .any(|f| f.contains(".kreplay-staging") && f.ends_with(".db"));
        if staged {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the stand-in never wrote its database"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed().as_secs() < 20, "the app was not stopped");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("signal 15"), "{stderr}");
    assert!(dir.path().join("T/out_results.json").is_file(), "{stderr}");
}

#[test]
fn application_replay_writes_pass_folders_with_progress_lines() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(
        dir.path(),
        &["--pmc", W, "--pmc", I, "-d", "D", "-o", "out", "-f", "json"],
        0,
        false,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("kreplay: pass 1/2: "), "{stderr}");
    assert!(stderr.contains("kreplay: pass 2/2: "), "{stderr}");
    assert_eq!(
        files_under(&dir.path().join("D")),
        vec!["pass_1/out_results.json", "pass_2/out_results.json"]
    );
}

#[test]
fn convert_merges_databases_into_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(dir.path(), &["--pmc", W, "-d", "D", "-o", "out"], 0, false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            "D/out_results.db",
            "-f",
            "csv",
            "json",
            "-d",
            "conv",
            "-o",
            "merged",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let csv =
        std::fs::read_to_string(dir.path().join("conv/merged_counter_collection.csv")).unwrap();
    assert!(
        csv.starts_with("\"Correlation_Id\",\"Dispatch_Id\""),
        "{csv}"
    );
    let records = read_json_counter_records(dir.path().join("conv/merged_results.json")).unwrap();
    assert_eq!(records.len(), 4);
    let out = kreplay(dir.path(), &["convert", "-i", "missing.db", "-f", "csv"]);
    assert_usage_error(&out, "input database missing.db does not exist");
}

#[test]
fn convert_describes_counters_the_database_names_only() {
    // On a GPU the injected library records counter names only; every output file gets the
    // description and unit from the catalog of the chip the process ran on.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bare_results.db");
    fixture_db_with_units(&db, "");
    let out = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            db.to_str().unwrap(),
            "-f",
            "json",
            "-d",
            "conv",
            "-o",
            "c",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("conv/c_results.json")).unwrap(),
    )
    .unwrap();
    fn counters<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a serde_json::Value>) {
        match value {
            serde_json::Value::Object(map) => {
                if map.contains_key("units") && map.contains_key("expression") {
                    out.push(value);
                }
                map.values().for_each(|v| counters(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| counters(v, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    counters(&json, &mut found);
    let warps = found
        .iter()
        .find(|c| c["name"] == W)
        .unwrap_or_else(|| panic!("no counter {W}: {found:?}"));
    assert_eq!(warps["units"], "warp", "{warps}");
    assert_ne!(warps["description"], "", "{warps}");
}

#[test]
fn unwritable_output_keeps_the_databases_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("D")).unwrap();
    // The application itself puts a file where the output folder should be: found only after
    // the run.
    let blocked = |app_exit| {
        stand_in_command(
            dir.path(),
            &["--pmc", W, "-d", "D", "-o", "sub/out"],
            app_exit,
        )
        .env("APP_BLOCK", dir.path().join("D/sub"))
        .output()
        .unwrap()
    };
    let out = blocked(0);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot write the output files"), "{stderr}");
    assert!(
        stderr.contains("the recorded databases are kept in"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("the application exited with status"),
        "it exited 0: {stderr}"
    );
    let staged = files_under(&dir.path().join("D"));
    assert!(
        staged
            .iter()
            .any(|f| f.contains(".kreplay-staging") && f.ends_with(".db")),
        "{staged:?}"
    );
    // The app's own failure status wins over kreplay's.
    std::fs::remove_file(dir.path().join("D/sub")).unwrap();
    let out = blocked(5);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("the application exited with status 5"));
}

#[test]
fn impossible_output_paths_are_refused_before_the_application_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain"), "a file").unwrap();
    let long = "n".repeat(300);
    for (args, expected) in [
        (vec!["-d", "plain/D", "-o", "out"], "which is a file, not a folder"),
        (vec!["-d", ".", "-o", "plain/out"], "which is a file, not a folder"),
        (vec!["-d", "D", "-o", long.as_str()], "more than the"),
        (vec!["-d", "D", "-o", "%pid%_nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"], "more than the"),
    ] {
        let mut all = vec!["--pmc", W];
        all.extend(&args);
        let out = stand_in_command(dir.path(), &all, 0)
            .env("APP_BLOCK", dir.path().join("started"))
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!dir.path().join("started").exists(), "{args:?}: the app ran");
    }
    // The longest name that fits: 255 bytes with the counter CSV's suffix and the temporary
    // name's (36 bytes), written for real.
    let longest = "n".repeat(255 - 36);
    let out = stand_in_command(
        dir.path(),
        &["--pmc", W, "-d", "L", "-o", &longest, "-f", "csv"],
        0,
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(dir
        .path()
        .join(format!("L/{longest}_counter_collection.csv"))
        .is_file());
}

#[test]
fn a_missing_application_is_named_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let fake_lib = dir.path().join("libfake_inject.so");
    std::fs::write(&fake_lib, b"").unwrap();
    let out = kreplay_command(dir.path(), &["--pmc", W, "-d", "D", "--", "./no-such-app"])
        .env("KREPLAY_INJECT_LIB", &fake_lib)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot start './no-such-app'"), "{stderr}");
    assert!(files_under(&dir.path().join("D")).is_empty());
}

#[test]
fn a_missing_injection_library_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay_command(dir.path(), &["--pmc", W, "--", "true"])
        .env("KREPLAY_INJECT_LIB", dir.path().join("nope.so"))
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("libkreplay_inject.so was not found")
            && stderr.contains("KREPLAY_INJECT_LIB"),
        "{stderr}"
    );
}

#[test]
fn help_and_version_work() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay(dir.path(), &["--help"]);
    assert_eq!(out.status.code(), Some(0));
    let help = text(&out.stdout);
    for option in [
        "--pmc",
        "--replay-mode",
        "--kernel-replay-beta-enabled",
        "--output-format",
        "--kernel-iteration-range",
    ] {
        assert!(help.contains(option), "{option} missing from help");
    }
}

/// Stdout and stderr for a child: one pipe whose read end is already closed.
fn closed_pipe() -> (std::process::Stdio, std::process::Stdio) {
    use std::os::fd::FromRawFd;
    let mut ends = [0i32; 2];
    // SAFETY: pipe(2) into a two-element array; the read end is closed at once, the write end
    // and its duplicate are each owned by one Stdio.
    unsafe {
        assert_eq!(libc::pipe(ends.as_mut_ptr()), 0);
        libc::close(ends[0]);
        let second = libc::dup(ends[1]);
        (
            std::process::Stdio::from_raw_fd(ends[1]),
            std::process::Stdio::from_raw_fd(second),
        )
    }
}

#[test]
fn closed_stdout_and_stderr_neither_panic_nor_lose_output() {
    // `kreplay … 2>&1 | head -3` once head has gone: both streams are a pipe with no reader.
    let dir = tempfile::tempdir().unwrap();
    for (folder, signal, expected) in [("P", false, 3), ("Q", true, 1)] {
        let mut command = stand_in_command(
            dir.path(),
            &["--pmc", W, "-d", folder, "-o", "out", "-f", "json"],
            3,
        );
        if signal {
            command.env("APP_SIGNAL", "1");
        }
        let (out, err) = closed_pipe();
        let status = command.stdout(out).stderr(err).status().unwrap();
        assert_eq!(
            status.code(),
            Some(expected),
            "signal {signal}: not 101, a panic"
        );
        assert!(
            dir.path().join(folder).join("out_results.json").is_file(),
            "signal {signal}: the output is written"
        );
    }
}

#[test]
fn ctrl_c_while_the_outputs_are_written_neither_stops_nor_silences_kreplay() {
    let dir = tempfile::tempdir().unwrap();
    let marker = dir.path().join("app-ran");
    let child = stand_in_command(
        dir.path(),
        &["--pmc", W, "-d", "D", "-o", "out", "-f", "json"],
        0,
    )
    .env("APP_BLOCK", &marker)
    .env("KREPLAY_TEST_HOLD_OUTPUTS_MS", "1500")
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let started = std::time::Instant::now();
    while !marker.exists() {
        assert!(started.elapsed().as_secs() < 20, "the app never ran");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    std::thread::sleep(std::time::Duration::from_millis(300));
    for _ in 0..2 {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("writing the recorded outputs").count(),
        1,
        "{stderr}"
    );
    assert!(dir.path().join("D/out_results.json").is_file(), "{stderr}");
}

/// The drain deadline travels once, in the configuration: `--drain-timeout` wins over an
/// inherited `KREPLAY_DRAIN_TIMEOUT`, which is used when the flag is not given and refused before
/// the application starts when it is not a number of seconds.
#[test]
fn the_drain_timeout_flag_wins_over_the_variable_which_is_checked_before_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let drain_ms = |flag: &[&str], variable: &str| -> u64 {
        let mut args = vec!["--echo", "--pmc", W];
        args.extend_from_slice(flag);
        args.extend(["--", "true"]);
        let out = kreplay_command(dir.path(), &args)
            .env("KREPLAY_DRAIN_TIMEOUT", variable)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        let json = stdout
            .lines()
            .find_map(|l| l.trim().strip_prefix("KREPLAY_CONFIG="))
            .expect("config line");
        ToolConfig::from_json(json).unwrap().drain_timeout_ms
    };
    assert_eq!(drain_ms(&["--drain-timeout", "5"], "60"), 5000);
    assert_eq!(drain_ms(&[], "7"), 7000);
    let out = kreplay_command(dir.path(), &["--pmc", W, "--", "sh", "-c", "touch started"])
        .env("KREPLAY_DRAIN_TIMEOUT", "soon")
        .output()
        .unwrap();
    assert_usage_error(
        &out,
        "KREPLAY_DRAIN_TIMEOUT=\"soon\" is not a number of seconds",
    );
    assert!(!dir.path().join("started").exists());
    let out = kreplay(
        dir.path(),
        &["--drain-timeout", "0", "--pmc", W, "--", "true"],
    );
    assert_usage_error(
        &out,
        "--drain-timeout 0 is not a positive number of seconds",
    );
}
