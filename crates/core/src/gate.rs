//! The replay gate: while one thread replays a dispatch, the other application threads must
//! not touch the device (a copy or launch from another thread between two passes would be
//! undone by the restore, or would see restored memory).
//!
//! It is a reader–writer gate, one per device (the engine's lanes): a replay holds its device's
//! gate exclusively (an [`ExclusiveHold`]); every other CUDA API call of an application thread
//! holds shared (a *fence*) the gates of the devices it may touch for the duration of the call, so
//! a replay waits for calls already in flight on its device and new calls wait for the replay,
//! while calls on other devices go on. Waiting writers block new readers, so a busy process cannot
//! starve a replay. The exclusive holder passes through its own fences, and a thread that already
//! holds a fence may take another (the runtime API nests driver calls).
//!
//! Holds own an `Arc` of the gate rather than borrowing it: a backend takes a hold in an
//! API-enter callback and drops it in the matching API-exit callback.
//!
//! A replay unit of several launches (a *replay window*, `--replay-window`) keeps the exclusive
//! hold across them. Between them its owner runs user code, so the hold is *parked*: a thread
//! that would wait for it (a fence or another exclusive hold) is told so instead ([`Parked`],
//! [`ExclusiveRefused::Parked`]) and adopts the unit, finishing its passes itself. No thread ever
//! waits for a thread that is in user code.

use std::sync::Arc;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

mod holds;
mod state;

pub(crate) use holds::{ExclusiveHold, GateFence};
pub(crate) use state::ReplayGate;

/// The exclusive hold a fence would wait for is parked: close its unit (adopt it), then fence
/// again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parked;

/// Why the exclusive hold could not be taken.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ExclusiveRefused {
    /// This thread already holds it: a launch from inside a replay (a tool callback),
    /// which is run once, never replayed.
    Reentrant,
    /// Other threads kept their fences past the deadline.
    Timeout,
    /// It is held by a parked replay window: adopt and close it, then ask again.
    Parked,
    /// This thread holds a fence and another thread holding one already waits for the hold:
    /// waiting would deadlock (each waits for the other's fence), so this launch runs once.
    Contended,
}

impl ReplayGate {
    /// Takes a shared hold; blocks while another thread holds or awaits the exclusive hold
    /// (also a parked one, which is why only tests use it: the engine closes parked windows
    /// instead).
    #[cfg(test)]
    pub(crate) fn fence(self: &Arc<Self>) -> GateFence {
        self.fence_until(false, false)
            .unwrap_or_else(|Parked| unreachable_parked())
    }

    /// As [`ReplayGate::fence`], but returns [`Parked`] instead of waiting for a parked window
    /// (also the caller's own). `nested`: the caller holds a fence of another gate already; it
    /// then waits only for a replay that holds this gate, not for one waiting to (which may wait
    /// for a thread that waits for the caller's other gate).
    pub(crate) fn fence_unless_parked(self: &Arc<Self>, nested: bool) -> Result<GateFence, Parked> {
        self.fence_until(true, nested)
    }

    fn fence_until(
        self: &Arc<Self>,
        stop_on_parked: bool,
        nested: bool,
    ) -> Result<GateFence, Parked> {
        let me = thread::current().id();
        let mut state = self.lock();
        if stop_on_parked && state.writer.is_some() && state.parked {
            return Err(Parked);
        }
        if state.writer == Some(me) {
            return Ok(GateFence {
                gate: None,
                owner: me,
            });
        }
        if let Some(depth) = state.readers.get_mut(&me) {
            *depth += 1;
            return Ok(GateFence {
                gate: Some(self.clone()),
                owner: me,
            });
        }
        while state.writer.is_some() || (state.writers_waiting > 0 && !nested) {
            if stop_on_parked && state.writer.is_some() && state.parked {
                return Err(Parked);
            }
            state = self.sleep(state, None);
        }
        state.readers.insert(me, 1);
        Ok(GateFence {
            gate: Some(self.clone()),
            owner: me,
        })
    }

    /// A fence for the owner of the parked window, which stays parked: for a call the window
    /// stays open across (see `Engine::enter_call`). The owner counts as a reader while
    /// the call runs, so that should another thread close the window meanwhile, no replay
    /// starts before the call ends. `None` when this thread does not own a parked window.
    pub(crate) fn fence_in_parked_window(self: &Arc<Self>) -> Option<GateFence> {
        let me = thread::current().id();
        let mut state = self.lock();
        if state.writer != Some(me) || !state.parked {
            return None;
        }
        *state.readers.entry(me).or_insert(0) += 1;
        Some(GateFence {
            gate: Some(self.clone()),
            owner: me,
        })
    }

    /// Whether this thread holds a fence (it is inside an application API call).
    pub(crate) fn holds_fence(&self) -> bool {
        self.in_call(thread::current().id())
    }

    /// Whether `thread` holds a fence (it is inside an application API call; the owner of a
    /// parked window only while in a call the window stays open across).
    pub(crate) fn in_call(&self, thread: ThreadId) -> bool {
        self.lock().readers.contains_key(&thread)
    }

    /// Waits until the gate changes (a fence or the exclusive hold released), at most `timeout`.
    pub(crate) fn wait_for_change(&self, timeout: Duration) {
        let state = self.lock();
        drop(self.sleep(state, Some(timeout)));
    }

    /// Parks whatever exclusive hold is held (a window member's ticket dropped without its exit).
    pub(crate) fn park_writer(&self) {
        let mut state = self.lock();
        if state.writer.is_some() {
            state.parked = true;
        }
        self.notify_change(state);
    }

    /// Whether the exclusive hold is parked (its owner is in user code between launches).
    pub(crate) fn is_parked(&self) -> bool {
        let state = self.lock();
        state.writer.is_some() && state.parked
    }

    /// Takes the exclusive hold, waiting at most `deadline` for the other threads' fences.
    /// The caller's own fence (if any) does not count: it is the caller.
    pub(crate) fn exclusive(
        self: &Arc<Self>,
        deadline: Duration,
    ) -> Result<ExclusiveHold, ExclusiveRefused> {
        let me = thread::current().id();
        let give_up = Instant::now() + deadline;
        let mut state = self.lock();
        if state.writer.is_some() && state.parked {
            return Err(ExclusiveRefused::Parked);
        }
        if state.writer == Some(me) {
            return Err(ExclusiveRefused::Reentrant);
        }
        let fenced = state.readers.contains_key(&me);
        if fenced && !state.fenced_writers_waiting.is_empty() {
            return Err(ExclusiveRefused::Contended);
        }
        state.writers_waiting += 1;
        if fenced {
            state.fenced_writers_waiting.push(me);
        }
        loop {
            let others_reading = state.readers.keys().any(|t| *t != me);
            if state.writer.is_none() && !others_reading {
                break;
            }
            let now = Instant::now();
            if state.writer.is_some() && state.parked {
                state.writers_waiting -= 1;
                state.fenced_writers_waiting.retain(|t| *t != me);
                return Err(ExclusiveRefused::Parked);
            }
            if now >= give_up {
                state.writers_waiting -= 1;
                state.fenced_writers_waiting.retain(|t| *t != me);
                self.notify_change(state);
                return Err(ExclusiveRefused::Timeout);
            }
            state = self.sleep(state, Some(give_up - now));
        }
        state.writers_waiting -= 1;
        state.fenced_writers_waiting.retain(|t| *t != me);
        state.writer = Some(me);
        state.parked = false;
        Ok(ExclusiveHold { gate: self.clone() })
    }

    #[cfg(test)]
    pub(crate) fn is_idle(&self) -> bool {
        let state = self.lock();
        state.writer.is_none() && state.readers.is_empty() && state.writers_waiting == 0
    }
}

#[cfg(test)]
fn unreachable_parked() -> GateFence {
    // `fence_until(false)` never returns `Parked`; a guard that holds nothing is the harmless
    // answer should that ever change (no panic on application threads).
    GateFence {
        gate: None,
        owner: thread::current().id(),
    }
}

#[cfg(test)]
mod tests;
