//! A reference device shared by several threads, as a replay backend behind one lock.

use super::*;

/// A device shared by several application threads: each thread's runtime holds one, and every
/// call locks the device for its duration (a kernel executes atomically).
#[derive(Clone)]
pub struct SharedSimDevice {
    device: Arc<Mutex<SimDevice>>,
}

impl SharedSimDevice {
    pub fn new(device: SimDevice) -> Self {
        SharedSimDevice {
            device: Arc::new(Mutex::new(device)),
        }
    }

    pub fn lock(&self) -> MutexGuard<'_, SimDevice> {
        self.device.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl ReplayBackend for SharedSimDevice {
    type Launch = SimLaunch;
    type Snapshot = SimSnapshot;
    type Capture = SimCapture;

    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        self.lock().drain(device, deadline)
    }
    fn device_free_bytes(&mut self, device: DeviceId) -> u64 {
        self.lock().device_free_bytes(device)
    }
    fn snapshot(
        &mut self,
        device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<SimSnapshot, BackendError> {
        self.lock().snapshot(device, regions, place)
    }
    fn restore(&mut self, snapshot: &SimSnapshot) -> Result<u64, BackendError> {
        self.lock().restore(snapshot)
    }
    fn release(&mut self, snapshot: SimSnapshot) {
        self.lock().release(snapshot)
    }
    fn max_window(&mut self, device: DeviceId) -> usize {
        self.lock().max_window(device)
    }
    fn graph_launch_unmeasurable(&mut self, device: DeviceId) -> Option<&'static str> {
        self.lock().graph_launch_unmeasurable(device)
    }
    fn plan_unit(
        &mut self,
        device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        self.lock().plan_unit(device, groups)
    }
    fn start_execution(
        &mut self,
        device: DeviceId,
        execution: usize,
        ranges: usize,
    ) -> Result<(), BackendError> {
        self.lock().start_execution(device, execution, ranges)
    }
    fn launch_starts(&mut self, device: DeviceId) -> Result<(), BackendError> {
        self.lock().launch_starts(device)
    }
    fn launch_ends(&mut self, device: DeviceId) -> Result<(), BackendError> {
        self.lock().launch_ends(device)
    }
    fn launch_abandoned(&mut self, device: DeviceId) {
        self.lock().launch_abandoned(device)
    }
    fn stop_execution(&mut self, device: DeviceId) -> Result<Vec<Timing>, BackendError> {
        self.lock().stop_execution(device)
    }
    fn runs_timing_executions(&mut self, device: DeviceId) -> bool {
        self.lock().runs_timing_executions(device)
    }
    fn start_timing_execution(
        &mut self,
        device: DeviceId,
        ranges: usize,
    ) -> Result<(), BackendError> {
        self.lock().start_timing_execution(device, ranges)
    }
    fn unit_counters(&mut self, device: DeviceId) -> Result<PassCounters, BackendError> {
        self.lock().unit_counters(device)
    }
    fn abandon_unit(&mut self, device: DeviceId) {
        self.lock().abandon_unit(device)
    }
    fn take_unit_conditions(&mut self, device: DeviceId) -> UnitConditions {
        self.lock().take_unit_conditions(device)
    }
    fn relaunch(&mut self, launch: &SimLaunch) -> Result<(), BackendError> {
        self.lock().relaunch(launch)
    }
    fn retain_launch(&mut self, launch: &SimLaunch) -> Result<SimLaunch, BackendError> {
        self.lock().retain_launch(launch)
    }
    fn launch_addresses(&mut self, launch: &SimLaunch) -> Vec<u64> {
        self.lock().launch_addresses(launch)
    }
    fn capture(
        &mut self,
        device: DeviceId,
        base: u64,
        bytes: u64,
    ) -> Result<SimCapture, BackendError> {
        self.lock().capture(device, base, bytes)
    }
    fn apply(&mut self, capture: &SimCapture) -> Result<(), BackendError> {
        self.lock().apply(capture)
    }
}
