//! Every rejection of the command line: the exact text and exit status 2, before any
//! application starts.

use crate::common::*;

const BETA: &str = "--replay-mode kernel requires acknowledgement that kernel replay is a beta feature via --kernel-replay-beta-enabled";
const NO_COUNTERS: &str =
    "--replay-mode kernel requires counter collection (--pmc, input-file pmc, or pmc_groups)";
const CONFLICT_TAIL: &str = ". Kernel replay only varies counter groups from one pass to the next; every other service stays on for all of the passes and would report each kernel once per pass. Collect them in a separate run.";

pub(super) fn replay_args<'a>(extra: &[&'a str]) -> Vec<&'a str> {
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
    let cases: [(&[&str], &str); 11] = [
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
            &["--memory-copy-trace", "--hip-trace", "--", "true"],
            "--hip-trace: kreplay traces CUDA, not HIP or HSA",
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

/// What clap refuses (an unknown option, a missing required argument, a bad value) is one
/// `kreplay: error:` line with its tips and the way to the refused command's help, exit 2.
#[test]
fn command_line_errors_of_the_parser_are_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--bogus", "--", "true"],
            "unexpected argument '--bogus' found; to pass '--bogus' as a value, use '-- --bogus' (`kreplay --help` lists the options)",
        ),
        (
            &["convert"],
            "the following required arguments were not provided: --input <INPUTS>... (`kreplay convert --help` lists the options)",
        ),
        (
            &["--drain-timeout", "soon", "--", "true"],
            "invalid value 'soon' for '--drain-timeout <SECONDS>'",
        ),
    ];
    for (args, message) in cases {
        let out = kreplay(dir.path(), args);
        assert_usage_error(&out, message);
        assert_eq!(
            text(&out.stderr).lines().count(),
            1,
            "{}",
            text(&out.stderr)
        );
        assert!(out.stdout.is_empty());
    }
    // Help and version stay clap's, on stdout, exit 0.
    for flag in ["--help", "--version"] {
        let out = kreplay(dir.path(), &[flag]);
        assert_eq!(out.status.code(), Some(0));
        assert!(!out.stdout.is_empty() && out.stderr.is_empty());
    }
}
