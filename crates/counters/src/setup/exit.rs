//! The process's exit and the set-up threads: the exit (and the end of every thread that calls
//! the driver) waits, bounded, for the set-ups still running, and a set-up stops at its next step
//! once the exit has begun (see the `setup` module's documentation for why).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Set-up threads still running, for [`wait_at_exit`]: the process that counted them in the
/// high 32 bits (a child forked meanwhile has none of those threads), their number in the low.
/// An atomic, not a lock: a child forked while another thread held a lock would never get it.
pub(super) static RUNNING: AtomicU64 = AtomicU64::new(0);
/// The process's exit has begun: a set-up stops at its next step.
pub(super) static EXITING: AtomicBool = AtomicBool::new(false);
/// How long the exit waits for a set-up (one that needs a lock the exiting thread holds would
/// never finish).
pub(super) const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Set-up threads of this process still running.
pub(super) fn running_here() -> u64 {
    let running = RUNNING.load(Ordering::Acquire);
    if running >> 32 == u64::from(std::process::id()) {
        running & u64::from(u32::MAX)
    } else {
        0
    }
}

/// An exit handler, registered by each set-up thread after each of its steps (so after the
/// destructors of what the step initialised): waits up to [`EXIT_WAIT`] until no set-up of
/// this process runs.
pub(super) extern "C" fn wait_at_exit() {
    EXITING.store(true, Ordering::Release);
    wait_for_setups();
}

/// Waits up to [`EXIT_WAIT`] until no set-up of this process runs.
fn wait_for_setups() {
    let began = Instant::now();
    while running_here() > 0 && began.elapsed() < EXIT_WAIT {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Held by every application thread that calls the driver ([`guard_thread_exit`]): when the
/// thread ends, it waits for the set-ups still running. `exit()` runs the calling thread's
/// thread-local destructors before any exit handler (glibc's `__run_exit_handlers`), so an
/// application that exits while a set-up is in the middle of a step waits here, before the
/// destructors CUPTI and nvperf registered during that step run under the set-up (10 of 30
/// runs that measured nothing ended with SIGSEGV in `libnvperf_host.so` at exit, H200,
/// 2026-12-02, `bench/probes/setup_at_exit.sh`). A thread that merely ends waits the same
/// (bounded, and only while a set-up runs); the set-up is not told to stop, since the process
/// may go on.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        if running_here() > 0 {
            wait_for_setups();
        }
    }
}

thread_local! {
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

/// Makes the calling thread wait, when it ends (also by calling `exit`), for the set-ups still
/// running (see [`ExitGuard`]). Cheap after the first call on a thread.
pub fn guard_thread_exit() {
    // A thread being torn down has no thread-locals left: nothing to guard.
    let _ = EXIT_GUARD.try_with(|_| ());
}

/// Counts a set-up thread as running until dropped.
pub(super) struct RunningSetUp;

impl RunningSetUp {
    pub(super) fn start() -> RunningSetUp {
        let pid = u64::from(std::process::id());
        let _ = RUNNING.fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
            Some(if running >> 32 == pid {
                running + 1
            } else {
                (pid << 32) | 1
            })
        });
        RunningSetUp
    }
}

impl Drop for RunningSetUp {
    fn drop(&mut self) {
        let pid = u64::from(std::process::id());
        let _ = RUNNING.fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
            (running >> 32 == pid && running & u64::from(u32::MAX) > 0).then(|| running - 1)
        });
    }
}

/// After a step of a set-up: the exit waits for the set-up before anything the step set up is
/// torn down (see the module documentation).
pub(super) fn exit_waits_for_setup() {
    kreplay_core::lifecycle::at_exit(wait_at_exit);
}
