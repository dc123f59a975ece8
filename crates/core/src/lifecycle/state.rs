//! The tool's state in this process, one atomic: read by every callback, written at its
//! start, when it switches itself off, and in a forked child.

use std::sync::atomic::{AtomicU8, Ordering};

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

/// Any state → forked child, in the child right after `fork` (async-signal-safe: one store).
pub(super) fn mark_forked_child() {
    LIFE.store(Life::ForkedChild as u8, Ordering::SeqCst);
}
