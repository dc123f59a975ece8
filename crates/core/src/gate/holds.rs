//! The two holds of a gate, each released when dropped: a call's shared fence and a replay's
//! exclusive hold.

use crate::gate::state::ReplayGate;
use std::sync::Arc;
use std::thread::{self, ThreadId};

/// A shared hold of one device's replay gate (part of an [`crate::engine::FenceGuard`]).
/// Dropping it (on any thread) lets a waiting replay start.
#[derive(Debug)]
#[must_use = "the fence only holds while the guard lives"]
pub struct GateFence {
    /// `None` when the thread holds the exclusive hold itself and passed through.
    pub(super) gate: Option<Arc<ReplayGate>>,
    /// The thread the hold counts for.
    pub(super) owner: ThreadId,
}

impl Drop for GateFence {
    fn drop(&mut self) {
        let Some(gate) = self.gate.take() else { return };
        let mut state = gate.lock();
        if let Some(depth) = state.readers.get_mut(&self.owner) {
            *depth -= 1;
            if *depth == 0 {
                state.readers.remove(&self.owner);
            }
        }
        gate.notify_change(state);
    }
}

/// The exclusive hold of a replay. Released on drop (also when a ticket is dropped without
/// `launch_exit`, so a lost ticket cannot wedge the process).
#[derive(Debug)]
pub(crate) struct ExclusiveHold {
    pub(super) gate: Arc<ReplayGate>,
}

impl ExclusiveHold {
    /// The owner returns to user code with its replay window open: other threads may adopt it.
    pub(crate) fn park(&self) {
        let mut state = self.gate.lock();
        state.parked = true;
        self.gate.notify_change(state);
    }

    /// The calling thread takes over the hold (its owner continuing, or another thread
    /// closing it): it passes its own fences again, and nobody else may adopt it.
    pub(crate) fn adopt(&self) {
        let mut state = self.gate.lock();
        state.writer = Some(thread::current().id());
        state.parked = false;
    }
}

impl Drop for ExclusiveHold {
    fn drop(&mut self) {
        let mut state = self.gate.lock();
        state.writer = None;
        state.parked = false;
        self.gate.notify_change(state);
    }
}
