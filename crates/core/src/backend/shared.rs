//! A device that application threads share, reached one call at a time: implementing
//! [`SharedDevice`] gives a view the three jobs, each call taking the lock for itself alone.
//! The lock is never held between two calls, so never while the engine waits for another
//! thread's replay window (which would deadlock); a view adds to that only what its device
//! needs around a unit (the hooks).

use crate::backend::error::BackendError;
use crate::backend::jobs::{Backend, Measurement, Memory, Relaunch, ReplayBackend};
use crate::backend::memory::{DeviceId, Region};
use crate::backend::results::{PassCounters, Timing, UnitConditions, UnitPlan};
use kreplay_format::Staging;
use std::ops::DerefMut;
use std::time::Duration;

/// The launches of the device behind `V`.
pub type LaunchOf<V> = <<V as SharedDevice>::Device as Backend>::Launch;
/// The snapshots of the device behind `V`.
pub type SnapshotOf<V> = <<V as SharedDevice>::Device as Backend>::Snapshot;
/// The captures of the device behind `V`.
pub type CaptureOf<V> = <<V as SharedDevice>::Device as Backend>::Capture;

/// A view of a device that application threads share (the CUDA backend behind its mutex, the
/// reference devices behind one mutex each): every call of the engine locks it through
/// [`SharedDevice::lock`] for that call alone.
pub trait SharedDevice {
    /// The device behind the lock.
    type Device: ReplayBackend;
    /// The device, locked until dropped.
    type Locked<'a>: DerefMut<Target = Self::Device>
    where
        Self: 'a;

    /// The device that serves calls about `device`, locked for one call.
    fn lock(&self, device: DeviceId) -> Self::Locked<'_>;

    /// The device that made `launch` (calls about it go there). A view with one lock for all
    /// its devices routes nothing: the default says device 0.
    fn launch_device(&self, launch: &LaunchOf<Self>) -> DeviceId {
        let _ = launch;
        0
    }

    /// The device that took `snapshot` (as [`SharedDevice::launch_device`]).
    fn snapshot_device(&self, snapshot: &SnapshotOf<Self>) -> DeviceId {
        let _ = snapshot;
        0
    }

    /// The device that took `capture` (as [`SharedDevice::launch_device`]).
    fn capture_device(&self, capture: &CaptureOf<Self>) -> DeviceId {
        let _ = capture;
        0
    }

    // The hooks: calls a view may surround with more than the lock. The defaults lock and call.

    /// [`Memory::drain`]; a view may wait with the device unlocked, so that other devices'
    /// replays go on meanwhile.
    fn drain_shared(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        self.lock(device).drain(device, deadline)
    }

    /// [`Measurement::plan_unit`], where a view may first wait for its turn on the device.
    fn plan_unit_shared(
        &mut self,
        device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        self.lock(device).plan_unit(device, groups)
    }

    /// [`Measurement::unit_counters`], which ends the unit: a view may hand over what the unit
    /// saw and give up its turn.
    fn unit_counters_shared(&mut self, device: DeviceId) -> Result<PassCounters, BackendError> {
        self.lock(device).unit_counters(device)
    }

    /// [`Measurement::abandon_unit`], as [`SharedDevice::unit_counters_shared`].
    fn abandon_unit_shared(&mut self, device: DeviceId) {
        self.lock(device).abandon_unit(device)
    }

    /// [`Measurement::take_unit_conditions`], which a view may answer from what it was handed.
    fn take_unit_conditions_shared(&mut self, device: DeviceId) -> UnitConditions {
        self.lock(device).take_unit_conditions(device)
    }
}

impl<V: SharedDevice + ?Sized> Backend for V {
    type Launch = LaunchOf<V>;
    type Snapshot = SnapshotOf<V>;
    type Capture = CaptureOf<V>;
}

impl<V: SharedDevice + ?Sized> Memory for V {
    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        self.drain_shared(device, deadline)
    }

    fn device_free_bytes(&mut self, device: DeviceId) -> u64 {
        self.lock(device).device_free_bytes(device)
    }

    fn snapshot(
        &mut self,
        device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<Self::Snapshot, BackendError> {
        self.lock(device).snapshot(device, regions, place)
    }

    fn restore(&mut self, snapshot: &Self::Snapshot) -> Result<u64, BackendError> {
        self.lock(self.snapshot_device(snapshot)).restore(snapshot)
    }

    fn release(&mut self, snapshot: Self::Snapshot) {
        self.lock(self.snapshot_device(&snapshot)).release(snapshot)
    }
}

impl<V: SharedDevice + ?Sized> Measurement for V {
    fn collectable_groups(&mut self, device: DeviceId, configured: usize) -> usize {
        self.lock(device).collectable_groups(device, configured)
    }

    fn executions_of_group(&mut self, device: DeviceId, group: usize) -> usize {
        self.lock(device).executions_of_group(device, group)
    }

    fn max_window(&mut self, device: DeviceId) -> usize {
        self.lock(device).max_window(device)
    }

    fn plan_unit(
        &mut self,
        device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        self.plan_unit_shared(device, groups)
    }

    fn start_execution(
        &mut self,
        device: DeviceId,
        execution: usize,
        ranges: usize,
    ) -> Result<(), BackendError> {
        self.lock(device).start_execution(device, execution, ranges)
    }

    fn launch_starts(&mut self, device: DeviceId) -> Result<(), BackendError> {
        self.lock(device).launch_starts(device)
    }

    fn launch_ends(&mut self, device: DeviceId) -> Result<(), BackendError> {
        self.lock(device).launch_ends(device)
    }

    fn launch_abandoned(&mut self, device: DeviceId) {
        self.lock(device).launch_abandoned(device)
    }

    fn stop_execution(&mut self, device: DeviceId) -> Result<Vec<Timing>, BackendError> {
        self.lock(device).stop_execution(device)
    }

    fn runs_timing_executions(&mut self, device: DeviceId) -> bool {
        self.lock(device).runs_timing_executions(device)
    }

    fn start_timing_execution(
        &mut self,
        device: DeviceId,
        ranges: usize,
    ) -> Result<(), BackendError> {
        self.lock(device).start_timing_execution(device, ranges)
    }

    fn unit_counters(&mut self, device: DeviceId) -> Result<PassCounters, BackendError> {
        self.unit_counters_shared(device)
    }

    fn abandon_unit(&mut self, device: DeviceId) {
        self.abandon_unit_shared(device)
    }

    fn take_unit_conditions(&mut self, device: DeviceId) -> UnitConditions {
        self.take_unit_conditions_shared(device)
    }

    fn trace_starts(&mut self, device: DeviceId) -> Result<Option<u64>, BackendError> {
        self.lock(device).trace_starts(device)
    }

    fn trace_ends(&mut self, device: DeviceId, tag: u64) -> Result<(), BackendError> {
        self.lock(device).trace_ends(device, tag)
    }

    fn trace_abandoned(&mut self, device: DeviceId, tag: u64) {
        self.lock(device).trace_abandoned(device, tag)
    }

    fn traced_times(
        &mut self,
        device: DeviceId,
        at_least: usize,
    ) -> Vec<(u64, Result<Timing, BackendError>)> {
        self.lock(device).traced_times(device, at_least)
    }
}

impl<V: SharedDevice + ?Sized> Relaunch for V {
    fn relaunch(&mut self, launch: &Self::Launch) -> Result<(), BackendError> {
        self.lock(self.launch_device(launch)).relaunch(launch)
    }

    fn retain_launch(&mut self, launch: &Self::Launch) -> Result<Self::Launch, BackendError> {
        self.lock(self.launch_device(launch)).retain_launch(launch)
    }

    fn launch_addresses(&mut self, launch: &Self::Launch) -> Vec<u64> {
        self.lock(self.launch_device(launch))
            .launch_addresses(launch)
    }

    fn capture(
        &mut self,
        device: DeviceId,
        base: u64,
        bytes: u64,
    ) -> Result<Self::Capture, BackendError> {
        self.lock(device).capture(device, base, bytes)
    }

    fn apply(&mut self, capture: &Self::Capture) -> Result<(), BackendError> {
        self.lock(self.capture_device(capture)).apply(capture)
    }

    fn release_capture(&mut self, capture: Self::Capture) {
        self.lock(self.capture_device(&capture))
            .release_capture(capture)
    }
}
