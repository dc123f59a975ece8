//! The engine's view of the shared backend for one dispatch, and the gate that serialises
//! measurements on each device between application threads.

use crate::backend::CudaBackend;
use crate::current::CurrentDispatch;
use crate::memory::drain_context;
use crate::seen::Seen;
use kreplay_core::backend::*;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex};
use std::thread::ThreadId;
use std::time::Duration;

/// Serialises measurements on each device between application threads: a device's events and
/// range profiler serve one unit at a time. Replay units of several launches already hold the
/// engine's exclusive window of their device; dispatches that run once on several threads take
/// turns here. The thread that planned a unit holds its device until the unit's counters are
/// read (or the unit is abandoned), whichever thread does that; planning again on that thread
/// passes through. Units on different devices are measured at the same time.
#[derive(Default)]
pub struct MeasureGate {
    holders: Mutex<HashMap<DeviceId, ThreadId>>,
    freed: Condvar,
}

impl MeasureGate {
    fn acquire(&self, device: DeviceId) {
        let me = std::thread::current().id();
        let mut holders = self.holders.lock().unwrap_or_else(|e| e.into_inner());
        while holders.get(&device).is_some_and(|h| *h != me) {
            holders = self.freed.wait(holders).unwrap_or_else(|e| e.into_inner());
        }
        holders.insert(device, me);
    }

    fn release(&self, device: DeviceId) {
        self.holders
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&device);
        // Waiters of several devices share the condition variable: wake them all.
        self.freed.notify_all();
    }
}

/// The engine's view of the backend for one dispatch: every call locks the shared
/// [`CudaBackend`] only for its own duration (never while the engine waits for another thread's
/// replay window, which would deadlock), with this dispatch's context and stream.
pub struct DispatchBackend<'a> {
    shared: &'a Mutex<CudaBackend>,
    gate: &'a MeasureGate,
    current: CurrentDispatch,
    /// What this dispatch's units saw (flushes, clocks), handed over from the shared backend
    /// while the gate was still held: another thread's unit on the device may start as soon
    /// as it is released.
    seen: HashMap<DeviceId, Seen>,
}

impl<'a> DispatchBackend<'a> {
    pub fn new(
        shared: &'a Mutex<CudaBackend>,
        gate: &'a MeasureGate,
        current: CurrentDispatch,
    ) -> Self {
        DispatchBackend {
            shared,
            gate,
            current,
            seen: HashMap::new(),
        }
    }
}

/// The engine's calls lock the shared backend one at a time ([`SharedDevice`] gives the three
/// jobs); around a unit, this dispatch waits for its turn on the device (the [`MeasureGate`]),
/// and takes what the unit saw before giving it up.
impl<'a> SharedDevice for DispatchBackend<'a> {
    type Device = CudaBackend;
    type Locked<'l>
        = std::sync::MutexGuard<'a, CudaBackend>
    where
        Self: 'l;

    /// One lock for every device, with this dispatch's context and stream.
    fn lock(&self, _device: DeviceId) -> std::sync::MutexGuard<'a, CudaBackend> {
        let mut backend = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        backend.current = Some(self.current);
        backend
    }

    fn drain_shared(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        // The wait itself with the backend unlocked: another device's replay goes on meanwhile.
        let (driver, ctx) = {
            let mut backend = self.lock(device);
            (backend.driver, backend.state(device)?.ctx)
        };
        drain_context(driver, device, ctx, deadline)
    }

    fn plan_unit_shared(
        &mut self,
        device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        self.gate.acquire(device);
        let planned = self.lock(device).plan_unit(device, groups);
        if planned.is_err() {
            self.gate.release(device);
        }
        planned
    }

    fn unit_counters_shared(&mut self, device: DeviceId) -> Result<PassCounters, BackendError> {
        let (counters, seen) = {
            let mut backend = self.lock(device);
            let counters = backend.unit_counters(device);
            (counters, backend.take_seen(device))
        };
        self.seen.entry(device).or_default().merge(seen);
        self.gate.release(device);
        counters
    }

    fn abandon_unit_shared(&mut self, device: DeviceId) {
        let seen = {
            let mut backend = self.lock(device);
            backend.abandon_unit(device);
            backend.take_seen(device)
        };
        self.seen.entry(device).or_default().merge(seen);
        self.gate.release(device);
    }

    fn take_unit_conditions_shared(&mut self, device: DeviceId) -> UnitConditions {
        self.seen.remove(&device).unwrap_or_default().conditions()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_gate_admits_one_thread_at_a_time_and_its_holder_again() {
        use std::sync::atomic::{AtomicU32, Ordering};
        use std::sync::Arc;
        let gate = Arc::new(MeasureGate::default());
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (gate, inside, most) = (gate.clone(), inside.clone(), most.clone());
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        gate.acquire(0);
                        gate.acquire(0); // a holder planning again passes through
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        gate.release(0);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(most.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn measure_gate_holds_each_device_apart() {
        use std::sync::Arc;
        use std::time::Duration;
        let gate = Arc::new(MeasureGate::default());
        gate.acquire(0);
        // Another thread measures device 1 while device 0 is held, then waits for device 0.
        let (measured, measured_rx) = std::sync::mpsc::channel();
        let other = {
            let gate = gate.clone();
            std::thread::spawn(move || {
                gate.acquire(1);
                gate.release(1);
                measured.send(()).unwrap();
                gate.acquire(0);
                gate.release(0);
            })
        };
        measured_rx
            .recv_timeout(Duration::from_secs(10))
            .expect("device 1 measured while device 0 is held");
        std::thread::sleep(Duration::from_millis(30));
        assert!(!other.is_finished(), "device 0 was taken while held");
        gate.release(0);
        other.join().unwrap();
        assert!(gate.holders.lock().unwrap().is_empty());
    }
}
