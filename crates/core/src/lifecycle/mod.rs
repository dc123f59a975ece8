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
//! A signal waits for the thread it lands on to leave the tool ([`InsideTool`], which the
//! engine holds across every launch and call), so that the finish finds the windows parked.
//!
//! Everything here may run on a thread of the application, in an exit handler or next to a
//! signal handler: nothing panics across it, and what runs in a signal handler is
//! async-signal-safe (see [`signals`]).

mod crash_report;
mod door;
pub mod exit;
mod finish;
pub mod fork;
mod inside;
mod signals;
mod state;

pub use exit::at_exit;
pub use finish::{finish_begun, finish_now};
pub use inside::InsideTool;
pub use signals::{
    block_signals, disarm, hold_signals, CRASH_SIGNALS, CRASH_WAIT, FINISH_LIMIT, SIGNALS,
};
pub use state::{life, switch_off, switch_on, Life};

/// Which endings of the process run the owner's finish.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Endings {
    /// The process's exit handlers and the signals of [`SIGNALS`]; a forked child becomes
    /// [`Life::ForkedChild`]. For a tool injected into an application whose `main` is not its.
    ExitAndSignals,
    /// The signals only: the owner's `main` finishes on the normal path itself.
    Signals,
}

/// Makes `finish` the last work of every ending `endings` names. Once per process; later calls
/// do nothing. Returns the signals caught (those the process left at their default action).
///
/// Registered in this order, as the interception always did: the fork handler, the exit
/// handler, then the signal handlers and their thread.
pub fn install(endings: Endings, finish: impl Fn() + Send + Sync + 'static) -> Vec<libc::c_int> {
    if !finish::set(Box::new(finish)) {
        return Vec::new();
    }
    if endings == Endings::ExitAndSignals {
        fork::watch_forks();
        exit::finish_at_exit();
    }
    signals::install(finish_now)
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
                // The finish sees itself begun (what runs after it makes no CUPTI calls).
                let byte = if finish_begun() { b"F" } else { b"f" };
                // SAFETY: writes one byte to the inherited pipe.
                unsafe { libc::write(report, byte.as_ptr().cast(), 1) };
            });
            let byte = if finish_begun() { b"b" } else { b"0" };
            // SAFETY: writes one byte to the inherited pipe.
            unsafe { libc::write(report, byte.as_ptr().cast(), 1) };
            // The owner finishing early, then the exit handler: one finish.
            finish_now();
            // SAFETY: ends the child through its exit handlers.
            unsafe { libc::exit(7) };
        }
        // SAFETY: closes our copy of the write end, then reads what the child wrote.
        unsafe { libc::close(ends[1]) };
        let mut bytes = Vec::new();
        let mut byte = 0u8;
        while unsafe { libc::read(ends[0], (&mut byte as *mut u8).cast(), 1) } == 1 {
            bytes.push(byte);
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert_eq!(
            bytes, b"0F",
            "not begun before the finish, begun in it, one finish"
        );
        assert!(
            libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 7,
            "exited with its own status: {status:#x}"
        );
    }

    #[test]
    fn a_signal_inside_the_tool_waits_until_the_thread_leaves_it() {
        let mut ends = [0; 2];
        // SAFETY: a pipe for the child to report through.
        assert_eq!(unsafe { libc::pipe(ends.as_mut_ptr()) }, 0);
        // SAFETY: the child installs the lifecycle, signals itself inside the tool and never
        // returns.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            let report = ends[1];
            install(Endings::Signals, move || {
                // SAFETY: writes one byte to the inherited pipe.
                unsafe { libc::write(report, b"F".as_ptr().cast(), 1) };
            });
            let inside = InsideTool::enter();
            // SAFETY: a signal to ourselves, then one byte to the pipe.
            unsafe {
                libc::raise(libc::SIGTERM);
                // Deferred: the launch under way goes on.
                libc::write(report, b"L".as_ptr().cast(), 1);
            }
            drop(inside);
            // SAFETY: ends the child (the signal did not).
            unsafe { libc::_exit(4) };
        }
        // SAFETY: closes our copy of the write end, then reads what the child wrote.
        unsafe { libc::close(ends[1]) };
        let mut bytes = Vec::new();
        let mut byte = 0u8;
        while unsafe { libc::read(ends[0], (&mut byte as *mut u8).cast(), 1) } == 1 {
            bytes.push(byte);
        }
        let mut status = 0;
        // SAFETY: waits for our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert_eq!(
            bytes, b"LF",
            "the finish ran after the thread left the tool"
        );
        assert!(
            libc::WIFSIGNALED(status) && libc::WTERMSIG(status) == libc::SIGTERM,
            "ended by the signal: {status:#x}"
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
