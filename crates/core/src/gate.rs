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

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

#[derive(Debug, Default)]
struct GateState {
    writer: Option<ThreadId>,
    writers_waiting: usize,
    /// Threads waiting for the exclusive hold while holding a fence of their own.
    fenced_writers_waiting: Vec<ThreadId>,
    readers: HashMap<ThreadId, u32>,
    /// The writer's hold is parked between launches of its owner: anyone may adopt it.
    parked: bool,
}

/// The exclusive hold a fence would wait for is parked: close its unit (adopt it), then fence
/// again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Parked;

#[derive(Debug, Default)]
pub(crate) struct ReplayGate {
    state: Mutex<GateState>,
    changed: Condvar,
}

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
    fn lock(&self) -> MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

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
            state = self.changed.wait(state).unwrap_or_else(|e| e.into_inner());
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
        let _ = self.changed.wait_timeout(state, timeout);
    }

    /// Parks whatever exclusive hold is held (a window member's ticket dropped without its exit).
    pub(crate) fn park_writer(&self) {
        let mut state = self.lock();
        if state.writer.is_some() {
            state.parked = true;
        }
        drop(state);
        self.changed.notify_all();
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
                drop(state);
                self.changed.notify_all();
                return Err(ExclusiveRefused::Timeout);
            }
            state = self
                .changed
                .wait_timeout(state, give_up - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
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

/// A shared hold of one device's replay gate (part of an [`crate::engine::FenceGuard`]).
/// Dropping it (on any thread) lets a waiting replay start.
#[derive(Debug)]
#[must_use = "the fence only holds while the guard lives"]
pub struct GateFence {
    /// `None` when the thread holds the exclusive hold itself and passed through.
    gate: Option<Arc<ReplayGate>>,
    /// The thread the hold counts for.
    owner: ThreadId,
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
        drop(state);
        gate.changed.notify_all();
    }
}

/// The exclusive hold of a replay. Released on drop (also when a ticket is dropped without
/// `launch_exit`, so a lost ticket cannot wedge the process).
#[derive(Debug)]
pub(crate) struct ExclusiveHold {
    gate: Arc<ReplayGate>,
}

impl ExclusiveHold {
    /// The owner returns to user code with its replay window open: other threads may adopt it.
    pub(crate) fn park(&self) {
        self.gate.lock().parked = true;
        self.gate.changed.notify_all();
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
        drop(state);
        self.gate.changed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn holder_passes_its_own_fences_and_nested_window_is_reentrant() {
        let gate = Arc::new(ReplayGate::default());
        let outer = gate.fence();
        let inner = gate.fence();
        let window = gate.exclusive(Duration::from_secs(1)).unwrap();
        let passthrough = gate.fence();
        assert_eq!(
            gate.exclusive(Duration::from_millis(1)).unwrap_err(),
            ExclusiveRefused::Reentrant
        );
        drop(passthrough);
        drop(window);
        drop(inner);
        drop(outer);
        assert!(gate.is_idle());
    }

    #[test]
    fn two_fenced_threads_asking_for_the_window_do_not_deadlock() {
        let gate = Arc::new(ReplayGate::default());
        let fence = gate.fence();
        let first = {
            let gate = gate.clone();
            thread::spawn(move || {
                let fence = gate.fence();
                // Waits for the main thread's fence, then gets the window.
                let window = gate.exclusive(Duration::from_secs(10));
                drop(fence);
                window.is_ok()
            })
        };
        // Wait until the first thread waits for the window with its fence held.
        while gate.lock().fenced_writers_waiting.is_empty() {
            thread::sleep(Duration::from_millis(1));
        }
        assert_eq!(
            gate.exclusive(Duration::from_secs(10)).unwrap_err(),
            ExclusiveRefused::Contended
        );
        drop(fence);
        assert!(first.join().unwrap());
        assert!(gate.is_idle());
    }

    #[test]
    fn a_parked_owner_in_a_spanned_call_holds_off_new_windows_until_the_call_ends() {
        let gate = Arc::new(ReplayGate::default());
        let hold = gate.exclusive(Duration::from_secs(1)).unwrap();
        assert!(gate.fence_in_parked_window().is_none(), "not parked yet");
        hold.park();
        let call = gate.fence_in_parked_window().expect("the owner's call");
        let other = |gate: &Arc<ReplayGate>| {
            let gate = gate.clone();
            thread::spawn(move || gate.exclusive(Duration::from_millis(20)).map(drop))
                .join()
                .unwrap()
        };
        assert_eq!(
            other(&gate),
            Err(ExclusiveRefused::Parked),
            "others adopt it"
        );
        // Another thread closed the window while the owner's call goes on.
        drop(hold);
        assert_eq!(
            other(&gate),
            Err(ExclusiveRefused::Timeout),
            "the call holds"
        );
        drop(call);
        assert_eq!(other(&gate), Ok(()));
        assert!(gate.is_idle());
    }

    #[test]
    fn a_fence_dropped_on_another_thread_still_releases() {
        let gate = Arc::new(ReplayGate::default());
        let fence = gate.fence();
        thread::spawn(move || drop(fence)).join().unwrap();
        assert!(gate.is_idle());
    }

    #[test]
    fn other_threads_wait_for_the_window() {
        let gate = Arc::new(ReplayGate::default());
        let window = gate.exclusive(Duration::from_secs(1)).unwrap();
        let entered = Arc::new(AtomicBool::new(false));
        let worker = {
            let gate = gate.clone();
            let entered = entered.clone();
            thread::spawn(move || {
                let _fence = gate.fence();
                entered.store(true, Ordering::SeqCst);
            })
        };
        thread::sleep(Duration::from_millis(50));
        assert!(
            !entered.load(Ordering::SeqCst),
            "fence passed an open window"
        );
        drop(window);
        worker.join().unwrap();
        assert!(entered.load(Ordering::SeqCst));
        assert!(gate.is_idle());
    }

    #[test]
    fn a_parked_window_is_reported_instead_of_waited_for_and_can_be_adopted() {
        let gate = Arc::new(ReplayGate::default());
        let hold = gate.exclusive(Duration::from_secs(1)).unwrap();
        hold.park();
        assert!(gate.is_parked());
        // The owner itself is told too: its own API call must close its window first.
        assert_eq!(gate.fence_unless_parked(false).unwrap_err(), Parked);
        let (tx, rx) = std::sync::mpsc::channel();
        let other = {
            let gate = gate.clone();
            thread::spawn(move || {
                let refused = gate.fence_unless_parked(false).is_err();
                let window = gate.exclusive(Duration::from_secs(1)).unwrap_err();
                tx.send((refused, window)).unwrap();
                // Adopt and close: afterwards the gate is free.
                hold.adopt();
                assert!(!gate.is_parked());
                let own = gate.fence_unless_parked(false);
                assert!(own.is_ok(), "the adopter passes its own fences");
                drop(own);
                drop(hold);
            })
        };
        let (refused, window) = rx.recv().unwrap();
        assert!(refused);
        assert_eq!(window, ExclusiveRefused::Parked);
        other.join().unwrap();
        assert!(gate.is_idle());
    }

    #[test]
    fn a_fence_waiting_for_a_window_wakes_when_it_is_parked() {
        let gate = Arc::new(ReplayGate::default());
        let hold = gate.exclusive(Duration::from_secs(1)).unwrap();
        let waiter = {
            let gate = gate.clone();
            thread::spawn(move || gate.fence_unless_parked(false).is_err())
        };
        thread::sleep(Duration::from_millis(30));
        hold.park();
        assert!(
            waiter.join().unwrap(),
            "the waiter was not told of the parked window"
        );
        drop(hold);
        assert!(gate.is_idle());
    }

    #[test]
    fn window_times_out_while_another_thread_is_fenced() {
        let gate = Arc::new(ReplayGate::default());
        let (taken_tx, taken_rx) = std::sync::mpsc::channel();
        let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
        let worker = {
            let gate = gate.clone();
            thread::spawn(move || {
                let _fence = gate.fence();
                taken_tx.send(()).unwrap();
                release_rx.recv().unwrap();
            })
        };
        taken_rx.recv().unwrap();
        assert_eq!(
            gate.exclusive(Duration::from_millis(30)).unwrap_err(),
            ExclusiveRefused::Timeout
        );
        release_tx.send(()).unwrap();
        worker.join().unwrap();
        assert!(gate.exclusive(Duration::from_millis(30)).is_ok());
    }
}
