//! Lanes: each device's replay gate and open replay unit. A replay on one device holds off only
//! the application calls that may touch that device (their [`DeviceScope`]), and units of
//! different devices are open at the same time, so a program that drives several GPUs (a
//! thread per device, or one thread switching between them) keeps a window open on each and a
//! replay on one device never waits for another device's calls.
//!
//! A call scoped to [`DeviceScope::All`] fences every lane in device order, after the lanes of
//! every device that has memory in the inventory are made: a device the call may touch has
//! memory there, so its lane exists before its first unit can open. A parked unit met on the
//! way is closed with no fence held, then the fences are taken again from the first.
//!
//! No wait can go round the lanes: a thread that holds a fence and asks for another lane's
//! (a nested call) waits only for a replay that runs, never for one that merely waits, and a
//! launch inside a call on another device runs once instead of waiting for its device's
//! readers. Replays themselves wait for nothing of another lane.

use super::*;
use crate::engine::lane::Lane;
use crate::engine::sys::lock;
use crate::engine::tickets::FenceGuard;

impl<K: Backend> Engine<K> {
    /// `device`'s lane, made at its first use.
    pub(super) fn lane(&self, device: DeviceId) -> Arc<Lane<K>> {
        lock(&self.lanes)
            .entry(device)
            .or_insert_with(|| {
                Arc::new(Lane {
                    gate: Arc::default(),
                    open_unit: Mutex::new(None),
                })
            })
            .clone()
    }

    /// Every lane made so far, in device order.
    pub(super) fn lanes(&self) -> Vec<Arc<Lane<K>>> {
        lock(&self.lanes).values().cloned().collect()
    }

    /// The lanes a call of `scope` fences, in device order.
    fn lanes_of(&self, scope: DeviceScope) -> Vec<Arc<Lane<K>>> {
        match scope {
            DeviceScope::One(device) => vec![self.lane(device)],
            DeviceScope::All => {
                for device in self.inventory.devices() {
                    self.lane(device);
                }
                self.lanes()
            }
        }
    }

    /// Whether this thread holds a fence on any device (it is inside an application API call).
    pub(super) fn holds_fence(&self) -> bool {
        self.lanes().iter().any(|lane| lane.gate.holds_fence())
    }

    /// Whether this thread holds a fence on a device other than `lane`'s.
    pub(super) fn holds_fence_elsewhere(&self, lane: &Lane<K>) -> bool {
        self.lanes()
            .iter()
            .any(|other| !Arc::ptr_eq(&other.gate, &lane.gate) && other.gate.holds_fence())
    }

    /// Holds off replays on the devices of `scope` while the caller's call runs; a parked replay
    /// unit of one of them (its owner is in user code) is closed by the calling thread, all its
    /// passes run here, instead of being waited for. `call` names the call (e.g.
    /// `cuMemcpyDtoH_v2`): the end-of-run line about replay windows counts which calls closed
    /// them, which says what cuts them short.
    pub fn fence_for<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        call: &str,
        scope: DeviceScope,
    ) -> FenceGuard {
        // A call nested in a call that holds fences already (the runtime nesting driver calls)
        // does not queue behind replays that are only waiting: they may wait for its outer
        // call, on another device (see `ReplayGate::fence_unless_parked`).
        let nested = self.holds_fence();
        'again: loop {
            let lanes = self.lanes_of(scope);
            let mut fences = Vec::with_capacity(lanes.len());
            for lane in &lanes {
                match lane.gate.fence_unless_parked(nested) {
                    Ok(fence) => fences.push(fence),
                    Err(_parked) => {
                        drop(fences);
                        if !self.close_parked_unit(backend, lane, call) {
                            std::thread::yield_now();
                        }
                        continue 'again;
                    }
                }
            }
            return FenceGuard { _fences: fences };
        }
    }

    /// [`Engine::fence_for`] on every device (tests: a call of another thread).
    #[cfg(test)]
    pub(crate) fn fence_with<B: DeviceOf<K>>(&self, backend: &mut B) -> FenceGuard {
        self.fence_for(backend, "an API call", DeviceScope::All)
    }

    /// Whether no thread holds or awaits any device's gate.
    #[cfg(test)]
    pub(super) fn gates_idle(&self) -> bool {
        self.lanes().iter().all(|lane| lane.gate.is_idle())
    }
}
