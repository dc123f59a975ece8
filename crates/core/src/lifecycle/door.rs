//! The tool's door: how deep each thread is inside the tool, the signal deferred until its thread
//! leaves, and whether a signal's finish has begun (see `inside` for what they are for). Shared
//! by the span ([`super::inside::InsideTool`]) and the signal handler (`signals`); everything the
//! handler calls here is async-signal-safe (thread-local reads and atomics).

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU32, Ordering};

thread_local! {
    /// How deep the thread is inside the tool (a launch inside a call counts twice). Const
    /// initialised and without a destructor, so a signal handler may read it.
    pub(super) static DEPTH: Cell<u32> = const { Cell::new(0) };
    /// Whether this thread runs the finish (it passes the door).
    pub(super) static FINISHER: Cell<bool> = const { Cell::new(false) };
}

/// The signal deferred until its thread leaves the tool (0: none).
pub(super) static DEFERRED: AtomicI32 = AtomicI32::new(0);
/// Signals deferred so far, to escalate the third.
static DEFERRALS: AtomicU32 = AtomicU32::new(0);
/// A signal's finish has begun: application threads wait at the door.
pub(super) static STOPPING: AtomicBool = AtomicBool::new(false);

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
