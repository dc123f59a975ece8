//! kreplay's signal handling while the application runs and while its outputs are written.

use std::sync::atomic::{AtomicI32, Ordering};

/// The application being waited for, for the signal forwarder (0 = none).
static CHILD_PID: AtomicI32 = AtomicI32::new(0);

/// Set when a signal reached kreplay during a run (passed on to the application, ending the wait
/// for its children, or while the outputs are written): someone asked the run to stop, and the
/// plan's remaining runs are not started.
static STOP_ASKED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether a signal reached kreplay since the current run's application started.
pub fn stop_asked() -> bool {
    STOP_ASKED.load(Ordering::SeqCst)
}

extern "C" fn forward_to_child(signal: libc::c_int) {
    STOP_ASKED.store(true, Ordering::SeqCst);
    let pid = CHILD_PID.load(Ordering::SeqCst);
    if pid > 0 {
        // SAFETY: kill is async-signal-safe.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

/// While the application runs: SIGINT/SIGQUIT are ignored (as `system(3)` does; Ctrl-C reaches
/// the application through the terminal), and SIGTERM/SIGHUP are passed on to it, so that kreplay
/// outlives the application and writes what it recorded. Installed after the spawn, because an
/// ignored disposition would be inherited by the application.
pub(super) struct SignalGuard {
    saved: Vec<(libc::c_int, libc::sighandler_t)>,
}

impl SignalGuard {
    pub(super) fn install(child: u32) -> SignalGuard {
        STOP_ASKED.store(false, Ordering::SeqCst);
        CHILD_PID.store(child as i32, Ordering::SeqCst);
        let forward = forward_to_child as extern "C" fn(libc::c_int) as libc::sighandler_t;
        let wanted = [
            (libc::SIGINT, libc::SIG_IGN),
            (libc::SIGQUIT, libc::SIG_IGN),
            (libc::SIGTERM, forward),
            (libc::SIGHUP, forward),
        ];
        // SAFETY: the handlers are SIG_IGN or an async-signal-safe function; restored on drop.
        let saved = wanted
            .iter()
            .map(|&(signal, handler)| (signal, unsafe { libc::signal(signal, handler) }))
            .collect();
        SignalGuard { saved }
    }
}

/// Said once when a signal arrives while the outputs are written.
static WRITING_NOTE: &[u8] =
    b"kreplay: writing the recorded outputs; they are complete in a moment (kill -9 ends kreplay now, keeping the recorded databases in the staging folder)\n";
static WRITING_NOTED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

extern "C" fn note_writing(_: libc::c_int) {
    STOP_ASKED.store(true, Ordering::SeqCst);
    if !WRITING_NOTED.swap(true, Ordering::SeqCst) {
        // SAFETY: write(2) is async-signal-safe; the buffer is static.
        unsafe {
            libc::write(2, WRITING_NOTE.as_ptr().cast(), WRITING_NOTE.len());
        }
    }
}

/// Set by a signal while kreplay waits for the application's remaining processes.
pub(super) static STOP_WAITING: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

extern "C" fn stop_waiting(_: libc::c_int) {
    STOP_ASKED.store(true, Ordering::SeqCst);
    STOP_WAITING.store(true, Ordering::SeqCst);
}

/// A signal once the run's account is printed: nothing is left to stop.
extern "C" fn note_stop(_: libc::c_int) {
    STOP_ASKED.store(true, Ordering::SeqCst);
}

impl SignalGuard {
    /// The application has ended and kreplay waits for the processes it left running: nothing
    /// is forwarded any more (its pid may be reused), and Ctrl-C, SIGTERM, SIGHUP or SIGQUIT end
    /// the wait.
    pub(super) fn waiting_for_descendants(&self) {
        self.handle_every_signal(stop_waiting);
    }

    /// The application has ended: until the guard drops (the outputs are written), Ctrl-C,
    /// SIGTERM, SIGHUP and SIGQUIT say once that kreplay is finishing, instead of ending it
    /// with nothing written.
    pub(super) fn writing_outputs(&self) {
        self.handle_every_signal(note_writing);
    }

    /// The run's account is printed and kreplay exits next: a signal now (a second Ctrl-C) is
    /// too late to stop anything, and would only turn a complete run's exit status into a death
    /// by that signal. The handlers stay until the process exits.
    pub(super) fn until_exit(self) {
        self.handle_every_signal(note_stop);
        std::mem::forget(self);
    }

    /// After the application ended: nothing is forwarded, every guarded signal runs `handler`.
    fn handle_every_signal(&self, handler: extern "C" fn(libc::c_int)) {
        CHILD_PID.store(0, Ordering::SeqCst);
        for &(signal, _) in &self.saved {
            // SAFETY: `handler` is async-signal-safe; `drop` restores the saved one.
            unsafe {
                libc::signal(signal, handler as libc::sighandler_t);
            }
        }
    }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for &(signal, handler) in &self.saved {
            // SAFETY: restores the handlers `install` saved.
            unsafe {
                libc::signal(signal, handler);
            }
        }
        CHILD_PID.store(0, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The handler `signal` has now.
    fn handler_of(signal: libc::c_int) -> libc::sighandler_t {
        // SAFETY: a query (no new action) into a zeroed sigaction.
        unsafe {
            let mut now: libc::sigaction = std::mem::zeroed();
            libc::sigaction(signal, std::ptr::null(), &mut now);
            now.sa_sigaction
        }
    }

    /// A second Ctrl-C after the account is printed, before kreplay exits, must not end it by
    /// the signal (its exit status would say the run was killed): the guard's handlers stay.
    #[test]
    fn a_guard_held_until_exit_keeps_every_signal_handled() {
        let guarded = [libc::SIGINT, libc::SIGQUIT, libc::SIGTERM, libc::SIGHUP];
        let before: Vec<_> = guarded.iter().map(|&s| handler_of(s)).collect();
        // Process-wide for a moment; no other test of this binary signals its children.
        let guard = SignalGuard::install(0);
        guard.writing_outputs();
        guard.until_exit();
        for signal in guarded {
            assert_eq!(
                handler_of(signal),
                note_stop as extern "C" fn(libc::c_int) as libc::sighandler_t,
                "signal {signal}"
            );
        }
        // SAFETY: a signal to this process, whose handler only sets a flag.
        unsafe { libc::raise(libc::SIGINT) };
        assert!(stop_asked());
        for (&signal, handler) in guarded.iter().zip(before) {
            // SAFETY: restores this test process's handlers.
            unsafe { libc::signal(signal, handler) };
        }
    }
}
