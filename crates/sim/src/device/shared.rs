//! Reference devices shared by several threads, as one replay backend: every call locks the
//! device it concerns for its duration (a kernel executes atomically).

use super::*;

/// A process's devices, shared by its application threads: each thread's runtime holds a
/// clone. Device `i` is the one numbered `i` ([`SimDevice::with_id`]); the backend's calls go
/// to the device they name, or that made the snapshot, capture or launch they are given.
#[derive(Clone)]
pub struct SharedSimDevice {
    devices: Arc<Vec<Mutex<SimDevice>>>,
}

impl SharedSimDevice {
    pub fn new(device: SimDevice) -> Self {
        Self::many(vec![device])
    }

    /// Several devices, numbered 0, 1, ... in order (each not yet numbered so gets its number).
    pub fn many(devices: Vec<SimDevice>) -> Self {
        SharedSimDevice {
            devices: Arc::new(
                devices
                    .into_iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let id = i as DeviceId;
                        Mutex::new(if d.id() == id { d } else { d.with_id(id) })
                    })
                    .collect(),
            ),
        }
    }

    /// Device `device`, locked. A number it does not have is a mis-routed call of the engine or
    /// the runtime, which the reference device exists to catch: it panics (it is not behind FFI).
    pub fn on(&self, device: DeviceId) -> MutexGuard<'_, SimDevice> {
        let slot = self.devices.get(device as usize).unwrap_or_else(|| {
            panic!(
                "the reference device has no device {device} (it has {})",
                self.devices.len()
            )
        });
        slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many devices.
    pub fn count(&self) -> usize {
        self.devices.len()
    }
}

impl Backend for SharedSimDevice {
    type Launch = SimLaunch;

    type Snapshot = SimSnapshot;

    type Capture = SimCapture;
}

impl Memory for SharedSimDevice {
    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        self.on(device).drain(device, deadline)
    }

    fn device_free_bytes(&mut self, device: DeviceId) -> u64 {
        self.on(device).device_free_bytes(device)
    }

    fn snapshot(
        &mut self,
        device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<SimSnapshot, BackendError> {
        self.on(device).snapshot(device, regions, place)
    }

    fn restore(&mut self, snapshot: &SimSnapshot) -> Result<u64, BackendError> {
        self.on(snapshot.device).restore(snapshot)
    }

    fn release(&mut self, snapshot: SimSnapshot) {
        self.on(snapshot.device).release(snapshot)
    }
}

impl Measurement for SharedSimDevice {
    fn max_window(&mut self, device: DeviceId) -> usize {
        self.on(device).max_window(device)
    }

    fn graph_launch_unmeasurable(&mut self, device: DeviceId) -> Option<&'static str> {
        self.on(device).graph_launch_unmeasurable(device)
    }

    fn plan_unit(
        &mut self,
        device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        self.on(device).plan_unit(device, groups)
    }

    fn start_execution(
        &mut self,
        device: DeviceId,
        execution: usize,
        ranges: usize,
    ) -> Result<(), BackendError> {
        self.on(device).start_execution(device, execution, ranges)
    }

    fn launch_starts(&mut self, device: DeviceId) -> Result<(), BackendError> {
        self.on(device).launch_starts(device)
    }

    fn launch_ends(&mut self, device: DeviceId) -> Result<(), BackendError> {
        self.on(device).launch_ends(device)
    }

    fn launch_abandoned(&mut self, device: DeviceId) {
        self.on(device).launch_abandoned(device)
    }

    fn stop_execution(&mut self, device: DeviceId) -> Result<Vec<Timing>, BackendError> {
        self.on(device).stop_execution(device)
    }

    fn runs_timing_executions(&mut self, device: DeviceId) -> bool {
        self.on(device).runs_timing_executions(device)
    }

    fn start_timing_execution(
        &mut self,
        device: DeviceId,
        ranges: usize,
    ) -> Result<(), BackendError> {
        self.on(device).start_timing_execution(device, ranges)
    }

    fn unit_counters(&mut self, device: DeviceId) -> Result<PassCounters, BackendError> {
        self.on(device).unit_counters(device)
    }

    fn abandon_unit(&mut self, device: DeviceId) {
        self.on(device).abandon_unit(device)
    }

    fn take_unit_conditions(&mut self, device: DeviceId) -> UnitConditions {
        self.on(device).take_unit_conditions(device)
    }
}

impl Relaunch for SharedSimDevice {
    fn relaunch(&mut self, launch: &SimLaunch) -> Result<(), BackendError> {
        self.on(launch.device).relaunch(launch)
    }

    fn retain_launch(&mut self, launch: &SimLaunch) -> Result<SimLaunch, BackendError> {
        self.on(launch.device).retain_launch(launch)
    }

    fn launch_addresses(&mut self, launch: &SimLaunch) -> Vec<u64> {
        self.on(launch.device).launch_addresses(launch)
    }

    fn capture(
        &mut self,
        device: DeviceId,
        base: u64,
        bytes: u64,
    ) -> Result<SimCapture, BackendError> {
        self.on(device).capture(device, base, bytes)
    }

    fn apply(&mut self, capture: &SimCapture) -> Result<(), BackendError> {
        self.on(capture.device).apply(capture)
    }
}
