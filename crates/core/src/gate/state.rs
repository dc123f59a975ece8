//! The gate's shared state: who holds it, who waits, and whether the holder is parked.

use std::collections::HashMap;
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::Duration;

#[derive(Debug, Default)]
pub(super) struct GateState {
    pub(super) writer: Option<ThreadId>,
    pub(super) writers_waiting: usize,
    /// Threads waiting for the exclusive hold while holding a fence of their own.
    pub(super) fenced_writers_waiting: Vec<ThreadId>,
    pub(super) readers: HashMap<ThreadId, u32>,
    /// The writer's hold is parked between launches of its owner: anyone may adopt it.
    pub(super) parked: bool,
    /// Threads asleep on the condition variable: a change wakes them only when there are some
    /// (a wake is a system call, and every launch and API call releases a fence).
    pub(super) sleepers: usize,
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

    /// Sleeps until the gate changes (or `timeout` passes), counted among the sleepers.
    pub(super) fn sleep<'a>(
        &self,
        mut state: MutexGuard<'a, GateState>,
        timeout: Option<Duration>,
    ) -> MutexGuard<'a, GateState> {
        state.sleepers += 1;
        let mut state = match timeout {
            None => self.changed.wait(state).unwrap_or_else(|e| e.into_inner()),
            Some(timeout) => {
                self.changed
                    .wait_timeout(state, timeout)
                    .unwrap_or_else(|e| e.into_inner())
                    .0
            }
        };
        state.sleepers -= 1;
        state
    }

    /// Releases `state` after a change, waking the sleepers if there are any.
    pub(super) fn notify_change(&self, state: MutexGuard<'_, GateState>) {
        let sleepers = state.sleepers > 0;
        drop(state);
        if sleepers {
            self.changed.notify_all();
        }
    }
}
