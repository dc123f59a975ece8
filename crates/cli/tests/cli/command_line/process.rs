//! kreplay as a process: help and version, closed output streams, Ctrl-C while it writes, and
//! the drain deadline it passes on.

use super::stand_in::*;
use crate::common::*;
use kreplay_core::config::ToolConfig;

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

/// The stand-in app under kreplay with `args`, its outputs held 1.5 s before they are written;
/// returned once the app has run, with `sigints` Ctrl-Cs sent 50 ms apart 0.3 s later (while
/// kreplay holds), and kreplay's exit status and stderr.
fn ctrl_c_while_writing(
    dir: &std::path::Path,
    args: &[&str],
    sigints: usize,
) -> (Option<i32>, String) {
    let marker = dir.join("app-ran");
    let child = stand_in_command(dir, args, 0)
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
    for _ in 0..sigints {
        // SAFETY: a signal to our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    (out.status.code(), text(&out.stderr))
}

#[test]
fn ctrl_c_while_the_outputs_are_written_neither_stops_nor_silences_kreplay() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--pmc", W, "-d", "D", "-o", "out", "-f", "json"];
    let (status, stderr) = ctrl_c_while_writing(dir.path(), &args, 2);
    assert_eq!(status, Some(0), "{stderr}");
    assert_eq!(
        stderr.matches("writing the recorded outputs").count(),
        1,
        "{stderr}"
    );
    assert!(dir.path().join("D/out_results.json").is_file(), "{stderr}");
}

#[test]
fn ctrl_c_while_the_first_of_two_runs_is_written_keeps_it_and_starts_no_second() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["--pmc", W, "--pmc", I, "-d", "D", "-o", "out", "-f", "json"];
    let (status, stderr) = ctrl_c_while_writing(dir.path(), &args, 1);
    assert_eq!(status, Some(0), "{stderr}");
    assert!(stderr.contains("pass 1/2"), "{stderr}");
    assert!(!stderr.contains("pass 2/2"), "{stderr}");
    assert!(
        stderr.contains("the last 1 of 2 passes were not run"),
        "{stderr}"
    );
    assert!(
        dir.path().join("D/pass_1/out_results.json").is_file(),
        "{stderr}"
    );
    assert!(!dir.path().join("D/pass_2").exists(), "{stderr}");
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
