//! Launches timed without waiting (`--kernel-trace` without counters): the backend times each
//! (the CUDA backend by CUPTI's record of its kernel, or a pair of events) and the engine records
//! the dispatch once it has completed, read by the backend's reader thread where it has one
//! ([`Engine::collect_ready_traced`]),
//! after an API call, before a launch when many are pending, and at the end of the process
//! (waiting then).
//! A launch's own thread never waits for the device, so tracing costs it only the bookkeeping.

use super::*;
use crate::engine::records::pass_result;
use crate::engine::sys::lock;
use crate::engine::tickets::Dispatch;
use std::collections::VecDeque;
use std::sync::atomic::AtomicUsize;

/// The most launches a device keeps pending before a new one waits for the oldest: bounds what
/// the backend holds for them and the records held here (a few hundred kilobytes).
pub(super) const TRACED_MOST: usize = 4096;

/// Pending launches past which a new launch first records those that completed (a backend's
/// own reader, if it has one, normally keeps them fewer).
pub(super) const TRACED_READ_AT: usize = 2048;

/// A dispatch that ran once, as recorded: its dispatch record (when timed) and replay cost.
pub(super) struct RanOnce {
    pub(super) dispatch: Dispatch,
    pub(super) outcome: ReplayOutcome,
    pub(super) bytes_tracked: u64,
    /// The tool's time on the launching thread.
    pub(super) pass_ns: u64,
    pub(super) conditions: UnitConditions,
}

/// A launch issued and timed, its timing not read yet.
pub(super) struct TracedLaunch {
    pub(super) tag: u64,
    pub(super) run: RanOnce,
}

/// Each device's pending launches, oldest first.
#[derive(Default)]
pub(super) struct TracedLaunches {
    pending: Mutex<HashMap<DeviceId, VecDeque<TracedLaunch>>>,
    /// How many are pending on all devices (read without the lock).
    count: AtomicUsize,
    /// Held by the one thread reading timings and sending their records, so that records go
    /// out in the order the backend read them.
    reading: Mutex<()>,
}

impl TracedLaunches {
    pub(super) fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    fn pending_on(&self, device: DeviceId) -> usize {
        lock(&self.pending).get(&device).map_or(0, VecDeque::len)
    }

    pub(super) fn devices(&self) -> Vec<DeviceId> {
        let mut devices: Vec<DeviceId> = lock(&self.pending)
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(d, _)| *d)
            .collect();
        devices.sort_unstable();
        devices
    }

    fn push(&self, launch: TracedLaunch) {
        lock(&self.pending)
            .entry(launch.run.dispatch.info.device)
            .or_default()
            .push_back(launch);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    fn take(&self, device: DeviceId, tag: u64) -> Option<TracedLaunch> {
        let mut pending = lock(&self.pending);
        let queue = pending.get_mut(&device)?;
        let at = queue.iter().position(|l| l.tag == tag)?;
        let launch = queue.remove(at);
        self.count.fetch_sub(1, Ordering::Relaxed);
        launch
    }

    fn take_all(&self, device: DeviceId) -> Vec<TracedLaunch> {
        let taken: Vec<TracedLaunch> = lock(&self.pending)
            .get_mut(&device)
            .map(|q| q.drain(..).collect())
            .unwrap_or_default();
        self.count.fetch_sub(taken.len(), Ordering::Relaxed);
        taken
    }
}

impl<K: Backend> Engine<K> {
    /// Starts timing `dispatch`'s launch without waiting for it, when the device can. With
    /// [`TRACED_READ_AT`] launches pending on the device, those whose timings are ready are
    /// recorded first (the oldest waited for when [`TRACED_MOST`] are). `None`: the device
    /// cannot, or failed to (said once); the caller measures the launch as a unit of one.
    pub(super) fn trace_launch<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
    ) -> Option<u64> {
        if self.traced.any() {
            let pending = self.traced.pending_on(device);
            if pending >= TRACED_READ_AT {
                self.collect_traced(backend, device, usize::from(pending >= TRACED_MOST));
            }
        }
        match backend.trace_starts(device) {
            Ok(tag) => tag,
            Err(error) => {
                self.backend_notice("trace_starts", &error);
                None
            }
        }
    }

    /// The traced launch was issued: its end is marked, and it is pending until its timing is
    /// read. It is pending here before the backend can hand its timing to another thread's read.
    pub(super) fn traced_issued<B: DeviceOf<K>>(&self, backend: &mut B, launch: TracedLaunch) {
        let (device, tag) = (launch.run.dispatch.info.device, launch.tag);
        self.traced.push(launch);
        if let Err(error) = backend.trace_ends(device, tag) {
            self.backend_notice("trace_ends", &error);
            backend.trace_abandoned(device, tag);
            if let Some(launch) = self.traced.take(device, tag) {
                self.send_once_results(&launch.run, None);
            }
        }
    }

    /// Records the traced launches of `device` whose timings are ready, waiting until at least
    /// `at_least` were (`usize::MAX`: every one; those the device no longer knows, after its
    /// context went away, are recorded without timestamps, said once).
    pub(super) fn collect_traced<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        at_least: usize,
    ) {
        // A read that would not wait leaves it to the thread reading now.
        let _reading = match self.traced.reading.try_lock() {
            Ok(guard) => guard,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) if at_least == 0 => return,
            Err(std::sync::TryLockError::WouldBlock) => lock(&self.traced.reading),
        };
        let read = backend.traced_times(device, at_least);
        // Asked to wait, the device had none left: what is pending here it no longer knows.
        let unknown = at_least > 0 && read.is_empty();
        for (tag, timing) in read {
            let Some(launch) = self.traced.take(device, tag) else {
                continue;
            };
            let result = match timing {
                Ok(timing) => Some(pass_result(timing, Vec::new())),
                Err(error) => {
                    self.backend_notice("traced_times", &error);
                    None
                }
            };
            self.send_once_results(&launch.run, result);
        }
        if at_least == usize::MAX || unknown {
            self.traced_lost(device);
        }
    }

    /// How many launches timed without waiting are pending, on all devices.
    pub fn traced_pending(&self) -> usize {
        self.traced.count.load(Ordering::Relaxed)
    }

    /// Records every device's launches timed without waiting that have completed, without
    /// waiting (after an API call).
    pub fn collect_ready_traced<B: DeviceOf<K>>(&self, backend: &mut B) {
        if self.traced.any() {
            for device in self.traced.devices() {
                self.collect_traced(backend, device, 0);
            }
        }
    }

    /// Records every launch timed without waiting, waiting for those still running (the end of
    /// the process; a context that goes away has its launches read by the backend itself).
    pub(super) fn collect_every_traced<B: DeviceOf<K>>(&self, backend: &mut B) {
        for device in self.traced.devices() {
            self.collect_traced(backend, device, usize::MAX);
        }
    }

    /// The launches still pending on `device` can no longer be timed: their dispatches are
    /// recorded as run, without a dispatch record, and said once.
    pub(super) fn traced_lost(&self, device: DeviceId) {
        let lost = self.traced.take_all(device);
        if lost.is_empty() {
            return;
        }
        self.notice(
            "traced-lost",
            &format!(
                "the timestamps of {} traced dispatch(es) on device {device} could not be read (their context went away before they were): they ran, and have no dispatch record",
                lost.len()
            ),
        );
        for launch in &lost {
            self.send_once_results(&launch.run, None);
        }
    }

    /// The records of a dispatch that ran once: its dispatch record when it was timed, and its
    /// replay cost.
    pub(super) fn send_once_results(&self, launch: &RanOnce, result: Option<PassResult>) {
        if let Some(result) = result {
            self.send_dispatch(&launch.dispatch, None, result);
        }
        self.sink.send(Record::ReplayCost(ReplayCost {
            dispatch_id: launch.dispatch.dispatch_id,
            agent_id: u64::from(launch.dispatch.info.device),
            outcome: launch.outcome,
            passes: 1,
            bytes_tracked: launch.bytes_tracked,
            bytes_snapshotted: 0,
            bytes_restored: 0,
            staging: Staging::None,
            drain_ns: 0,
            snapshot_ns: 0,
            pass_ns: vec![launch.pass_ns],
            restore_ns: 0,
            timing_execution_ns: 0,
            cache: launch.conditions.cache,
            sm_clock_mhz: launch.conditions.sm_clock_mhz,
            memory_clock_mhz: launch.conditions.memory_clock_mhz,
        }));
    }
}
