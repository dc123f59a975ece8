//! The gate's shared state: who holds it, who waits, and whether the holder is parked.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;

#[derive(Debug, Default)]
pub(super) struct GateState {
    pub(super) writer: Option<ThreadId>,
    pub(super) writers_waiting: usize,
    /// Threads waiting for the exclusive hold while holding a fence of their own.
    pub(super) fenced_writers_waiting: Vec<ThreadId>,
    pub(super) readers: HashMap<ThreadId, u32>,
    /// The writer's hold is parked between launches of its owner: anyone may adopt it.
    pub(super) parked: bool,
}

#[derive(Debug, Default)]
pub(crate) struct ReplayGate {
    pub(super) state: Mutex<GateState>,
    pub(super) changed: Condvar,
}

impl ReplayGate {
    pub(super) fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
