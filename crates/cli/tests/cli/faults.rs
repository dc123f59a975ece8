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
    run_signal_case_with(dir, case, replay_args())
}

/// [`run_signal_case`] with kreplay's options `args` (ending in `--`).
fn run_signal_case_with(dir: &Path, case: &SignalCase, args: Vec<String>) -> (Option<i32>, String) {
    let (child, _group) = start_launching(dir, args, Stdio::piped(), case.name);
    let pid = child.id() as libc::pid_t;
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

/// kreplay (options `args`, ending in `--`) running the app until a signal, in a process group
/// of its own, once some windows closed and one is open; `stderr` where kreplay's goes. The
/// guard kills the group (the app launches until a signal: a case that fails or hangs must not
/// leave it running).
fn start_launching(
    dir: &Path,
    mut args: Vec<String>,
    stderr: Stdio,
    case: &str,
) -> (Child, KillGroupOnDrop) {
    let app = sim_app();
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
        .stderr(stderr)
        .process_group(0);
    // The cases' signals with their default actions, however the tests were started: a job
    // started with `&` by a script ignores SIGINT and SIGQUIT, one under `nohup` SIGHUP, and
    // kreplay's application inherits that, as it would without kreplay (the case then hung).
    // SAFETY: `signal` is async-signal-safe; the child runs nothing else before exec.
    unsafe {
        command.pre_exec(|| {
            for signal in [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP] {
                libc::signal(signal, libc::SIG_DFL);
            }
            Ok(())
        });
    }
    let mut child = command.spawn().expect("kreplay starts");
    let group = KillGroupOnDrop(child.id() as libc::pid_t);
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
        .unwrap_or_else(|_| panic!("{case}: the app never said it launches"));
    // Some windows close and one is open when the signal comes.
    std::thread::sleep(Duration::from_millis(300));
    (child, group)
}

/// Kills a process group when dropped (after the run ended, the group is gone and this does
/// nothing).
struct KillGroupOnDrop(libc::pid_t);

impl Drop for KillGroupOnDrop {
    fn drop(&mut self) {
        // SAFETY: a signal to the process group of our own child.
        unsafe {
            libc::kill(-self.0, libc::SIGKILL);
        }
    }
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

/// `kill -9` of kreplay while the application runs: the application does not run on without it
/// (its records never written, the GPU's counters held): it gets SIGTERM, and its last words
/// store its records in the staging folder, which stays for `kreplay convert`.
#[test]
fn a_killed_kreplay_ends_the_application_which_keeps_its_records() {
    let dir = tempfile::tempdir().unwrap();
    // Without the change the app would launch on: the guard kills the group whatever happens.
    let (mut child, _group) = start_launching(dir.path(), replay_args(), Stdio::null(), "kill -9");
    let pid = child.id() as libc::pid_t;
    // SAFETY: SIGKILL to our own child, kreplay alone.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let _ = child.wait();
    // The app's database in the staging folder kreplay left: out/.kreplay-staging-PID-RUN/APP.db.
    let entries = |path: &Path| -> Vec<std::path::PathBuf> {
        std::fs::read_dir(path)
            .map(|d| d.filter_map(|e| e.ok().map(|e| e.path())).collect())
            .unwrap_or_default()
    };
    let prefix = format!(".kreplay-staging-{pid}-");
    let db = entries(&dir.path().join("out"))
        .into_iter()
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&prefix)
        })
        .flat_map(|staging| entries(&staging))
        .find(|p| p.extension().is_some_and(|x| x == "db"))
        .expect("the app's database in the staging folder");
    let app_pid: libc::pid_t = db.file_stem().unwrap().to_str().unwrap().parse().unwrap();
    // Gone (or a zombie waiting for a reaper that may not reap) within the bound.
    let ended = |pid: libc::pid_t| {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let state = stat
            .rsplit(") ")
            .next()
            .and_then(|rest| rest.chars().next());
        state.is_none_or(|s| s == 'Z' || s == 'X')
    };
    let began = Instant::now();
    while !ended(app_pid) && began.elapsed() < HUNG {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(ended(app_pid), "the app ran on after kreplay was killed");
    let run = kreplay_format::read_databases(&[db]).unwrap();
    let dispatches: usize = run.processes.iter().map(|p| p.dispatches.len()).sum();
    assert!(
        dispatches > 0,
        "the app's records are in the staging folder"
    );
    assert!(
        run.processes.iter().all(|p| p.process.end_ns > 0),
        "its last words closed its records"
    );
}

#[test]
fn a_stopped_run_of_several_passes_starts_no_further_pass() {
    // Application replay: one run of the app per group. The first run is stopped (Ctrl-C, or a
    // signal to kreplay); its outputs are written and the second is not started.
    for case in SIGNAL_CASES
        .iter()
        .filter(|c| ["ctrl_c", "sigterm_to_kreplay"].contains(&c.name))
    {
        let dir = tempfile::tempdir().unwrap();
        let args = ["--pmc", W, "--pmc", I, "-d", "out", "-o", "r", "--"]
            .map(String::from)
            .to_vec();
        let (status, stderr) = run_signal_case_with(dir.path(), case, args);
        let name = case.name;
        assert_eq!(status, Some(1), "{name}: {stderr}");
        assert!(stderr.contains("pass 1/2"), "{name}: {stderr}");
        assert!(!stderr.contains("pass 2/2"), "{name}: {stderr}");
        assert!(
            stderr.contains("the last 1 of 2 passes were not run"),
            "{name}: {stderr}"
        );
        assert!(
            dir.path().join("out/pass_1/r_results.db").is_file(),
            "{name}"
        );
        assert!(!dir.path().join("out/pass_2").exists(), "{name}");
        read_back(dir.path());
    }
}

/// One row: the app ends itself by `signal` after its workload, with two dispatches in an open
/// replay window.
struct AppSignalCase {
    signal: &'static str,
    /// Said on stderr, first when the app ends and last in the run's account.
    ended_by: &'static str,
    /// The tool runs its last words (a caught signal): the open window is kept. Otherwise
    /// (SIGKILL, a crash) every closed window is kept and the open one is said lost.
    finishes: bool,
}

const APP_SIGNAL_CASES: &[AppSignalCase] = &[
    AppSignalCase {
        signal: "15",
        ended_by: "ended by signal 15 (SIGTERM)",
        finishes: true,
    },
    AppSignalCase {
        signal: "6",
        ended_by: "ended by signal 6 (SIGABRT)",
        finishes: true,
    },
    AppSignalCase {
        signal: "9",
        ended_by: "ended by signal 9 (SIGKILL)",
        finishes: false,
    },
    AppSignalCase {
        signal: "11",
        ended_by: "ended by signal 11 (SIGSEGV)",
        finishes: false,
    },
];

#[test]
fn an_application_ended_by_a_signal_keeps_what_it_finished_and_says_one_account() {
    let app = sim_app();
    let run = |signal: Option<&str>| {
        let dir = tempfile::tempdir().unwrap();
        let mut args = replay_args();
        args.push(app.to_str().unwrap().into());
        if let Some(signal) = signal {
            args.extend(["--end-by-signal".to_string(), signal.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = kreplay_command(dir.path(), &args);
        // No core file from the crash cases.
        // SAFETY: setrlimit in the child before exec.
        unsafe {
            command.pre_exec(|| {
                let none = libc::rlimit {
                    rlim_cur: 0,
                    rlim_max: 0,
                };
                libc::setrlimit(libc::RLIMIT_CORE, &none);
                Ok(())
            });
        }
        let child = command
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (status, stderr) = wait_bounded(child);
        read_back(dir.path());
        let db = dir.path().join("out/r_results.db");
        let records = kreplay_format::read_databases(&[db])
            .map(|run| {
                run.processes
                    .iter()
                    .map(|p| p.dispatches.len())
                    .sum::<usize>()
            })
            .unwrap_or(0);
        (status, stderr, records)
    };
    // Without a signal: the workload's dispatches; the signal cases add two in an open window.
    let (_, _, workload) = run(None);
    assert!(workload > 0);
    for case in APP_SIGNAL_CASES {
        let (status, stderr, records) = run(Some(case.signal));
        let signal = case.signal;
        assert_eq!(status, Some(1), "{signal}: {stderr}");
        let lines: Vec<&str> = stderr.lines().collect();
        assert!(
            lines
                .iter()
                .any(|l| l.contains(case.ended_by) && l.contains("writing what it recorded")),
            "{signal}: {stderr}"
        );
        assert!(
            lines.last().is_some_and(|l| l.contains(case.ended_by)),
            "{signal}: the last line tells the same end: {stderr}"
        );
        assert!(!stderr.contains("exited with status"), "{signal}: {stderr}");
        assert!(
            !stderr.contains("did not end the process"),
            "{signal}: {stderr}"
        );
        if case.finishes {
            assert!(!stderr.contains("could not finish"), "{signal}: {stderr}");
            assert!(
                records >= workload + 2,
                "{signal}: the open window kept: {records}"
            );
        } else {
            assert!(
                stderr
                    .contains("the replay window open then (up to 64) ran without being recorded"),
                "{signal}: what is lost is said: {stderr}"
            );
            let waited = stderr.contains("within 1 s of the crash (the crashing thread waits");
            assert_eq!(waited, case.signal == "11", "{signal}: {stderr}");
            // SIGKILL and a crash: every dispatch the workload finished (its windows closed
            // before the app went on) is kept; the open window's two are not.
            assert_eq!(
                records, workload,
                "{signal}: every closed window kept: {stderr}"
            );
        }
    }
}

#[test]
fn a_half_written_file_of_a_killed_kreplay_is_removed_by_the_next_run() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    // A pid that existed and is gone: a child already reaped.
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead = gone.id();
    gone.wait().unwrap();
    let left = out.join(format!(".r_results.db.tmp-{dead}"));
    let at_work = out.join(format!(".r_results.json.tmp-{}", std::process::id()));
    std::fs::write(&left, b"half").unwrap();
    std::fs::write(&at_work, b"another kreplay's").unwrap();
    let mut args = replay_args();
    args.push(sim_app().to_str().unwrap().into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = kreplay(dir.path(), &args);
    let stderr = text(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{stderr}");
    assert!(!left.exists(), "a dead kreplay's file is removed: {stderr}");
    assert!(
        stderr.contains(&format!("a killed kreplay (pid {dead}) left half written")),
        "{stderr}"
    );
    assert!(at_work.exists(), "a live process's file stays");
    std::fs::remove_file(&at_work).unwrap();
    read_back(dir.path());
}

/// Stdout and stderr for a child: one pipe whose read end is already closed (`kreplay … 2>&1 |
/// head -0`).
fn closed_pipe() -> (Stdio, Stdio) {
    use std::os::fd::FromRawFd;
    let mut ends = [0i32; 2];
    // SAFETY: pipe(2) into a two-element array; the read end is closed at once, the write end
    // and its duplicate are each owned by one Stdio.
    unsafe {
        assert_eq!(libc::pipe(ends.as_mut_ptr()), 0);
        libc::close(ends[0]);
        let second = libc::dup(ends[1]);
        (Stdio::from_raw_fd(ends[1]), Stdio::from_raw_fd(second))
    }
}

#[test]
fn with_its_streams_closed_a_run_still_keeps_what_a_signalled_application_recorded() {
    // (what the app does, kreplay's exit status)
    for (extra, expected) in [(None, 0), (Some("15"), 1), (Some("9"), 1), (Some("11"), 1)] {
        let dir = tempfile::tempdir().unwrap();
        let mut args = replay_args();
        args.push(sim_app().to_str().unwrap().into());
        if let Some(signal) = extra {
            args.extend(["--end-by-signal".to_string(), signal.to_string()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let (out, err) = closed_pipe();
        let child = kreplay_command(dir.path(), &args)
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap();
        let (status, _) = wait_bounded(child);
        assert_eq!(status, Some(expected), "{extra:?}: not 101, a panic");
        assert!(
            dir.path().join("out/r_results.db").is_file(),
            "{extra:?}: the outputs are written"
        );
        read_back(dir.path());
    }
}
