//! Where a caught signal may run the finish: with every replay window parked.
//!
//! A signal lands on whatever application thread the kernel picks, while another (or the same)
//! thread may be inside the tool: between a launch's two halves, or inside a call its replay
//! window stays open across. Its window is not *parked* then: the finish could not close it (its
//! passes would race the launch under way), and a lock the thread holds would stall the finish
//! until [`FINISH_LIMIT`](super::FINISH_LIMIT). So the engine marks the span of every launch and
//! call with an [`InsideTool`], and:
//! - a signal that lands on a thread inside the tool is *deferred*: the handler notes it and
//!   returns, the thread finishes the launch it was in (its window parked), and the signal is
//!   delivered when the thread leaves the tool, as if it had arrived then. A third signal while
//!   one is deferred is delivered at once (a thread stuck inside the tool must not make Ctrl-C
//!   useless);
//! - once a signal's finish has begun, an application thread that comes to the tool's door waits
//!   there until the process ends: the windows stay parked while the finish closes them
//!   (`Engine::finish_with` waits, bounded, for a window whose owner is still inside a launch).
//!   The thread that runs the finish passes (its own calls may come back into the tool).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};
use std::time::Duration;

thread_local! {
    /// How deep the thread is inside the tool (a launch inside a call counts twice). Const
    /// initialised and without a destructor, so a signal handler may read it.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread runs the finish (it passes the door).
    static FINISHER: Cell<bool> = const { Cell::new(false) };
}

/// The signal deferred until its thread leaves the tool (0: none).
static DEFERRED: AtomicI32 = AtomicI32::new(0);
/// Signals deferred so far, to escalate the third.
static DEFERRALS: AtomicU32 = AtomicU32::new(0);
/// A signal's finish has begun: application threads wait at the door.
static STOPPING: AtomicBool = AtomicBool::new(false);

/// The span of one launch or call inside the tool, on the thread that entered it; a signal
/// deferred meanwhile is delivered when the thread's last span ends.
#[must_use = "the span ends when this is dropped"]
pub struct InsideTool(());

impl InsideTool {
    /// The calling thread enters the tool (or, while a signal's finish runs, waits at the door
    /// until the process ends).
    pub fn enter() -> InsideTool {
        let depth = DEPTH.with(|depth| depth.get());
        if depth == 0 && STOPPING.load(Ordering::SeqCst) && !FINISHER.with(|f| f.get()) {
            loop {
                std::thread::sleep(Duration::from_secs(1));
            }
        }
        DEPTH.with(|d| d.set(depth + 1));
        InsideTool(())
    }
}

impl Drop for InsideTool {
    fn drop(&mut self) {
        let outside = DEPTH.with(|depth| {
            let now = depth.get().saturating_sub(1);
            depth.set(now);
            now == 0
        });
        if outside {
            let signal = DEFERRED.swap(0, Ordering::SeqCst);
            if signal != 0 {
                super::signals::deliver(signal);
            }
        }
    }
}

/// From the signal handler: whether `signal` waits for this thread to leave the tool
/// (async-signal-safe: a thread-local read and atomics).
pub(super) fn defer(signal: libc::c_int) -> bool {
    let inside = DEPTH.try_with(|depth| depth.get() > 0).unwrap_or(false);
    if !inside || DEFERRALS.fetch_add(1, Ordering::SeqCst) >= 2 {
        return false;
    }
    let _ = DEFERRED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    true
}

/// A signal's finish begins: application threads stop at the door from now on
/// (async-signal-safe: one store).
pub(super) fn stop_at_the_door() {
    STOPPING.store(true, Ordering::SeqCst);
}

/// The calling thread runs the finish: the door lets it through.
pub(super) fn mark_finisher() {
    FINISHER.with(|f| f.set(true));
}
