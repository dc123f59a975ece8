//! The fault corpus: signals to kreplay and to the application, crashes, a killed kreplay. Every
//! case is a row (what is done, what must hold), run with the real binary against the reference
//! app in a folder of its own, and every file it wrote is read back (JSON parses, CSV has a
//! header, SQLite passes `PRAGMA integrity_check`). Conditions are polled, never timed: a test
//! waits for the app to say it launches before it signals, and for the run to end, bounded.

use crate::common::*;
use std::io::{BufRead, BufReader};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Longer than any case needs on a loaded machine; a case that takes this long has hung.
const HUNG: Duration = Duration::from_secs(120);

/// Kernel replay of two passes, every format, into `out/r_*`.
fn replay_args() -> Vec<String> {
    [
        "--pmc",
        W,
        "--pmc",
        I,
        "--replay-mode",
        "kernel",
        "--kernel-replay-beta-enabled",
        "-f",
        "csv",
        "json",
        "rocpd",
        "-d",
        "out",
        "-o",
        "r",
        "--",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect()
}

/// Waits for `child` to end, at most [`HUNG`]; its exit status and stderr.
fn wait_bounded(mut child: Child) -> (Option<i32>, String) {
    let began = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            use std::io::Read;
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            return (status.code(), stderr);
        }
        if began.elapsed() > HUNG {
            let _ = child.kill();
            panic!("the run did not end within {HUNG:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Every file under `dir` read back: JSON parses, CSV has a header, SQLite is intact.
pub fn read_back(dir: &Path) {
    for name in files_under(dir) {
        let path = dir.join(&name);
        if name.ends_with(".json") {
            let text = std::fs::read_to_string(&path).unwrap();
            serde_json::from_str::<serde_json::Value>(&text)
                .unwrap_or_else(|e| panic!("{name} is not JSON: {e}"));
        } else if name.ends_with(".csv") {
            let text = std::fs::read_to_string(&path).unwrap();
            let header = text.lines().next().unwrap_or_default();
            assert!(header.contains(','), "{name} has no CSV header: {header:?}");
        } else if name.ends_with(".db") {
            let out = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import sqlite3, sys; print(sqlite3.connect(sys.argv[1]).execute('PRAGMA integrity_check').fetchone()[0])",
                ])
                .arg(&path)
                .output()
                .expect("python3 runs");
            assert_eq!(
                text(&out.stdout).trim(),
                "ok",
                "{name}: {}",
                text(&out.stderr)
            );
        }
    }
}

/// Where a signal goes.
#[derive(Debug, Clone, Copy)]
enum To {
    /// kreplay's process group, as Ctrl-C in a terminal sends it (kreplay and the app).
    Group,
    /// kreplay alone (`kill PID`).
    Kreplay,
}

/// One row: signals sent while the app launches with a replay window open.
struct SignalCase {
    name: &'static str,
    to: To,
    signals: &'static [libc::c_int],
}

const SIGNAL_CASES: &[SignalCase] = &[
    SignalCase {
        name: "ctrl_c",
        to: To::Group,
        signals: &[libc::SIGINT],
    },
    SignalCase {
        name: "ctrl_c_twice",
        to: To::Group,
        signals: &[libc::SIGINT, libc::SIGINT],
    },
    SignalCase {
        name: "sigterm_to_kreplay",
        to: To::Kreplay,
        signals: &[libc::SIGTERM],
    },
    SignalCase {
        name: "sigterm_to_kreplay_twice",
        to: To::Kreplay,
        signals: &[libc::SIGTERM, libc::SIGTERM],
    },
    SignalCase {
        name: "sighup_to_kreplay",
        to: To::Kreplay,
        signals: &[libc::SIGHUP],
    },
];

/// Runs the app under kreplay until it launches with a window open, sends the case's signals,
/// and returns kreplay's exit status and stderr.
fn run_signal_case(dir: &Path, case: &SignalCase) -> (Option<i32>, String) {
    let app = sim_app();
    let mut args = replay_args();
    args.extend(
        [
            app.to_str().unwrap(),
            "--iterations",
            "1",
            "--elements",
            "64",
            "--until-signal",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let mut command = kreplay_command(dir, &args);
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = command.spawn().expect("kreplay starts");
    let pid = child.id() as libc::pid_t;
    // The app says when it launches on; kreplay passes its stdout through.
    let stdout = child.stdout.take().unwrap();
    let (said, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if line.contains("launching until a signal") {
                let _ = said.send(());
            }
        }
    });
    heard
        .recv_timeout(HUNG)
        .unwrap_or_else(|_| panic!("{}: the app never said it launches", case.name));
    // Some windows close and one is open when the signal comes.
    std::thread::sleep(Duration::from_millis(300));
    for &signal in case.signals {
        // SAFETY: signals to our own child (or its process group).
        unsafe {
            match case.to {
                To::Group => libc::kill(-pid, signal),
                To::Kreplay => libc::kill(pid, signal),
            };
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    wait_bounded(child)
}

/// The number before `marker` in the line of `stderr` that contains it.
fn count_before(stderr: &str, marker: &str) -> Option<u64> {
    let line = stderr.lines().find(|l| l.contains(marker))?;
    let before = &line[..line.find(marker)?];
    before.split_whitespace().last()?.parse().ok()
}

/// Dispatches of the app's workload that run once, outside any window (its graph launch): the
/// difference between the dispatches recorded and those of windows in a run that ends normally.
fn dispatches_outside_windows() -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let mut args = replay_args();
    args.extend(
        [
            app.to_str().unwrap(),
            "--iterations",
            "1",
            "--elements",
            "64",
        ]
        .map(String::from),
    );
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let out = kreplay(dir.path(), &args);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    count_before(&stderr, " dispatch(es) of ").unwrap()
        - count_before(&stderr, " dispatches in ").unwrap()
}

#[test]
fn a_signal_to_kreplay_keeps_the_open_window() {
    let outside = dispatches_outside_windows();
    for case in SIGNAL_CASES {
        let dir = tempfile::tempdir().unwrap();
        let (status, stderr) = run_signal_case(dir.path(), case);
        let name = case.name;
        assert_eq!(status, Some(1), "{name}: {stderr}");
        // Every dispatch went through a window, and every window was closed and recorded: the
        // open one by the finish the signal ran.
        let recorded = count_before(&stderr, " dispatch(es) of ");
        let in_windows = count_before(&stderr, " dispatches in ");
        assert!(recorded.is_some_and(|n| n > 0), "{name}: {stderr}");
        assert_eq!(
            recorded.zip(in_windows).map(|(all, windows)| all - windows),
            Some(outside),
            "{name}: every window's dispatches recorded: {stderr}"
        );
        assert!(!stderr.contains("no records"), "{name}: {stderr}");
        assert!(
            !stderr.contains("Engine::"),
            "{name}: no internal names: {stderr}"
        );
        read_back(dir.path());
        assert!(dir.path().join("out/r_results.db").is_file(), "{name}");
    }
}
