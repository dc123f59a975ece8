//! Every accepted run shape, as the hidden `--echo` prints it: the runs, each one's
//! configuration for the application and its outputs.

use super::refusals::replay_args;
use crate::common::*;
use kreplay_core::config::{InProcessMode, ToolConfig};
use std::path::Path;

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
