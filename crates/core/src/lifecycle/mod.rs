//! The life of a profiled process, owned here: the tool's state from initialisation on
//! ([`Life`]), a child the application forks ([`fork`]), and the ways the process ends: its exit
//! handlers ([`exit`]), a signal ([`signals`]), or the tool's own fatal abort ([`disarm`]). Each
//! ending runs the same last work once: the *finish* its owner installs with [`install`] (the
//! open replay window's passes, then the flush of every record).
//!
//! Two owners install it. The CUDA interception (`kreplay_intercept`) lives inside somebody
//! else's program: the process's exit handlers and signals finish it, and a forked child leaves
//! the parent's tool alone ([`Endings::ExitAndSignals`]). The reference device's app
//! (`kreplay-sim-app`) finishes from its own `main` on the normal path, so only a signal needs
//! the lifecycle ([`Endings::Signals`]).
//!
//! Everything here may run on a thread of the application, in an exit handler or next to a
//! signal handler: nothing panics across it, and what runs in a signal handler is
//! async-signal-safe (see [`signals`]).

pub mod exit;
pub mod fork;
mod signals;

pub use exit::at_exit;
pub use signals::{block_signals, disarm, hold_signals, FINISH_LIMIT, SIGNALS};

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Once, OnceLock};

/// The tool's state in this process: [`Life::Uninitialised`] until its owner has set it up (and
/// for good when it could not: nothing is recorded, the application runs as without kreplay);
/// then [`Life::On`]; [`Life::Off`] when it switched itself off (a panic: callbacks return at
/// once, the records so far are still flushed at exit; another CUPTI subscriber: the tool never
/// started, nothing was recorded); and in a child the application forked without exec,
/// [`Life::ForkedChild`] for good (the tool's threads, writer and device state belong to the
/// parent: the child's callbacks and exit do nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Life {
    Uninitialised = 0,
    On = 1,
    Off = 2,
    ForkedChild = 3,
}

static LIFE: AtomicU8 = AtomicU8::new(Life::Uninitialised as u8);

/// The tool's state now (one atomic read: cheap enough for every callback).
pub fn life() -> Life {
    match LIFE.load(Ordering::Relaxed) {
        0 => Life::Uninitialised,
        1 => Life::On,
        2 => Life::Off,
        _ => Life::ForkedChild,
    }
}

/// Uninitialised → on, once the tool is set up (never over a fork's or a switch-off's state).
pub fn switch_on() {
    let _ = move_from(Life::Uninitialised, Life::On);
}

/// On → off, for the rest of the process; whether the tool was on (so that its owner says why
/// once). Changes nothing in any other state.
pub fn switch_off() -> bool {
    move_from(Life::On, Life::Off)
}

fn move_from(from: Life, to: Life) -> bool {
    LIFE.compare_exchange(from as u8, to as u8, Ordering::SeqCst, Ordering::SeqCst)
        .is_ok()
}

/// Which endings of the process run the owner's finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endings {
    /// The process's exit handlers and the signals of [`SIGNALS`]; a forked child becomes
    /// [`Life::ForkedChild`]. For a tool injected into an application whose `main` is not its.
    ExitAndSignals,
    /// The signals only: the owner's `main` finishes on the normal path itself.
    Signals,
}

type Finish = Box<dyn Fn() + Send + Sync>;

static FINISH: OnceLock<Finish> = OnceLock::new();

/// Makes `finish` the last work of every ending `endings` names. Once per process; later calls
/// do nothing. Returns the signals caught (those the process left at their default action).
///
/// Registered in this order, as the interception always did: the fork handler, the exit
/// handler, then the signal handlers and their thread.
pub fn install(endings: Endings, finish: impl Fn() + Send + Sync + 'static) -> Vec<libc::c_int> {
    if FINISH.set(Box::new(finish)).is_err() {
        return Vec::new();
    }
    if endings == Endings::ExitAndSignals {
        fork::watch_forks();
        exit::finish_at_exit();
    }
    signals::install(finish_now)
}

/// Runs the installed finish, once per process and never unwinding: a second caller (an exit
/// while a signal's last words run, or the reverse) waits for the first to finish instead of
/// ending the process under it.
pub fn finish_now() {
    static FINISHED: Once = Once::new();
    FINISHED.call_once(|| {
        if let Some(finish) = FINISH.get() {
            // Inside `call_once`, so a panic neither poisons it nor crosses an exit handler.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(finish));
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_runs_the_finish_once_then_the_process_ends_as_it_asked() {
        let mut ends = [0; 2];
        // SAFETY: a pipe for the child to report through.
        assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
        // SAFETY: the child installs the lifecycle, finishes twice and exits; never returns.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            let report = ends[1];
            install(Endings::ExitAndSignals, move || {
                // SAFETY: writes one byte to the inherited pipe.
                unsafe { libc::write(report, b"F".as_ptr().cast(), 1) };
            });
            // The owner finishing early, then the exit handler: one finish.
            finish_now();
            // SAFETY: ends the child through its exit handlers.
            unsafe { libc::exit(7) };
        }
        // SAFETY: closes our copy of the write end, then reads what the child wrote.
        unsafe { libc::close(ends[1]) };
        let mut bytes = [0u8; 4];
        let n = unsafe { libc::read(ends[0], bytes.as_mut_ptr().cast(), bytes.len()) };
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert_eq!((n, bytes[0]), (1, b'F'), "one finish");
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7,
            "exited with its own status: {status:#x}"
        );
    }

    #[test]
    fn a_forked_child_is_a_forked_child_for_good() {
        fork::watch_forks();
        // SAFETY: the child only reads and writes an atomic and calls _exit.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            switch_on();
            let stays = !switch_off() && life() == Life::ForkedChild;
            // SAFETY: ends the child without the parent's exit handlers.
            unsafe { libc::_exit(if stays { 0 } else { 1 }) };
        }
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        assert_ne!(
            life(),
            Life::ForkedChild,
            "the parent is not a forked child"
        );
    }
}
