//! The application running: started, waited for with kreplay's signals forwarded to it, then the
//! processes it left running waited for (kreplay is their subreaper).

use super::application::Prepared;
use super::launcher::Launcher;
use super::signals::{SignalGuard, STOP_WAITING};
use crate::clock::since_start_ms;
use crate::env::{hold_outputs, ENV_CHILD_WAIT_S};
use crate::placeholders::PlaceholderValues;
use crate::progress::{Progress, APP_DELAY, WRITE_DELAY};
use anyhow::{bail, Context};
use std::sync::atomic::Ordering;

/// The application ended (and the processes it left running, or the wait for them did).
pub(super) struct Ended {
    pub(super) exit_code: i32,
    /// The signal that ended the application, in words, if one did.
    pub(super) ended_by: Option<String>,
    /// Ended by a signal nothing can run at (SIGKILL) or a crash: the tool had no last words.
    pub(super) killed: bool,
    /// Ended by a crash ([`kreplay_core::lifecycle::CRASH_SIGNALS`]): the crashing thread
    /// waited a while for the database writer.
    pub(super) crashed: bool,
    /// A signal that stops a program (Ctrl-C's SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGKILL) ended
    /// the application: the plan's remaining runs are not started (nor where a signal reached
    /// kreplay itself, `signals::stop_asked`).
    pub(super) interrupted: bool,
    pub(super) root_pid: u32,
    pub(super) orphans_running: usize,
    pub(super) exited: std::time::Instant,
    /// The output names' placeholder values of the application's process.
    pub(super) placeholders: PlaceholderValues,
    pub(super) writing: Progress,
}

/// Runs the application; returns how it ended, and kreplay's signal handling from then on (a
/// signal says the outputs are being written instead of ending kreplay), to hold until the run's
/// account is printed.
pub(super) fn run_application(
    prepared: &mut Prepared,
    launcher: &Launcher,
) -> anyhow::Result<(Ended, SignalGuard)> {
    // Processes the application starts and leaves running are re-parented to kreplay, which
    // waits for them (their databases are complete only when they end).
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let mut child = match prepared.command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&prepared.staging);
            bail!(
                "cannot start '{}': {e}; check the application path after `--`",
                prepared.program
            );
        }
    };
    let spawned = std::time::Instant::now();
    tracing::debug!(
        "the application started {:.1} ms after kreplay",
        since_start_ms()
    );
    let root_pid = child.id();
    let signals = SignalGuard::install(root_pid);
    // While the application runs: its process group and session are read from it.
    let placeholders =
        PlaceholderValues::for_process(root_pid, &launcher.app, &launcher.launch_time);
    let running = Progress::start("the application is running", APP_DELAY);
    let status = child.wait().context("waiting for the application");
    running.finish();
    let status = status?;
    signals.waiting_for_descendants();
    let orphans_running = wait_for_descendants(launcher.child_wait);
    signals.writing_outputs();
    let writing = Progress::start("reading the recorded data", WRITE_DELAY);
    if let Some(pause) = hold_outputs() {
        std::thread::sleep(pause);
    }
    let exited = std::time::Instant::now();
    tracing::debug!(
        "the application ran {:.1} ms",
        exited.duration_since(spawned).as_secs_f64() * 1e3
    );

    let signal = {
        use std::os::unix::process::ExitStatusExt;
        status.signal()
    };
    let ended_by = signal.map(signal_in_words);
    // The tool finishes on the signals it catches; on the others it ends with the process.
    let killed = signal.is_some_and(|s| !kreplay_core::lifecycle::SIGNALS.contains(&s));
    let crashed = signal.is_some_and(|s| kreplay_core::lifecycle::CRASH_SIGNALS.contains(&s));
    if let Some(signal) = &ended_by {
        say!("kreplay: the application was ended by {signal}; writing what it recorded");
    }
    let stops = [
        libc::SIGINT,
        libc::SIGQUIT,
        libc::SIGTERM,
        libc::SIGHUP,
        libc::SIGKILL,
    ];
    let interrupted = signal.is_some_and(|s| stops.contains(&s));
    let ended = Ended {
        // A signal's end is said in words; the status is then 1.
        exit_code: status.code().unwrap_or(1),
        ended_by,
        killed,
        crashed,
        interrupted,
        root_pid,
        orphans_running,
        exited,
        placeholders,
        writing,
    };
    Ok((ended, signals))
}

/// "signal 15 (SIGTERM)": the number, and the name a user knows it by.
fn signal_in_words(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return format!("signal {signal}"),
    };
    format!("signal {signal} ({name})")
}

/// Reaps the application's processes that outlived it (kreplay is their subreaper), for up to
/// `limit`; returns how many still run then.
fn wait_for_descendants(limit: std::time::Duration) -> usize {
    let began = std::time::Instant::now();
    let mut said = false;
    loop {
        let mut status = 0;
        // SAFETY: waitpid on any child, not blocking.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            continue;
        }
        if pid < 0 {
            return 0; // ECHILD: none left
        }
        if began.elapsed() >= limit || STOP_WAITING.load(Ordering::SeqCst) {
            let running = running_children();
            say!(
                "kreplay: warning: {running} process(es) the application started still run after {:.0} s; what they recorded so far is written and their databases are kept ({ENV_CHILD_WAIT_S} sets the wait)",
                began.elapsed().as_secs_f64()
            );
            return running.max(1);
        }
        if !said && began.elapsed() >= std::time::Duration::from_millis(500) {
            say!(
                "kreplay: the application ended; waiting up to {:.0} s for {} process(es) it started that still run (Ctrl-C stops waiting)",
                limit.as_secs_f64(),
                running_children()
            );
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// kreplay's child processes, from /proc (0 if it cannot be read).
fn running_children() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_to_string(format!("/proc/{me}/task/{me}/children"))
        .map(|text| text.split_whitespace().count())
        .unwrap_or(0)
}
