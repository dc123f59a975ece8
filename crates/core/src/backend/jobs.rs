//! What the engine asks of a device, in three jobs: [`Memory`] (drain, snapshots), [`Measurement`]
//! (units, executions, counters, conditions) and [`Relaunch`] (re-executing launches, captured
//! writes). [`Backend`] names the three types they share; a [`ReplayBackend`] does all three jobs.
//!
//! Calls come from application threads, inside their API calls (a unit's close may run on
//! another thread than its launches). A device that threads share implements
//! [`super::SharedDevice`] instead and gets the three jobs with one lock per call.

use crate::backend::error::BackendError;
use crate::backend::memory::{DeviceId, Region};
use crate::backend::results::{PassCounters, Timing, UnitConditions, UnitPlan};
use kreplay_format::Staging;
use std::time::Duration;

/// The types a device's three jobs share: what it re-executes, stages and captures.
pub trait Backend {
    /// Whatever the backend needs to re-execute a launch (for CUDA: the function, its
    /// configuration and a copy of its parameters).
    type Launch: Send + 'static;
    /// A staged copy of regions, in device or host memory.
    type Snapshot: Send + 'static;
    /// Bytes a non-kernel operation wrote into device memory, kept for later executions.
    type Capture: Send + 'static;
}

/// Memory: the device drained, its tracked memory staged and written back.
pub trait Memory: Backend {
    /// Waits until every piece of work already submitted to `device` has finished, or `deadline` passes.
    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError>;

    /// Free device memory now, bytes (for the staging decision).
    fn device_free_bytes(&mut self, device: DeviceId) -> u64;

    /// Copies `regions` into staging at `place` (`Device` or `Host`). Several snapshots may be
    /// alive at once (a unit's start and, while it re-executes, the application's view).
    fn snapshot(
        &mut self,
        device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<Self::Snapshot, BackendError>;

    /// Writes the staged copy back, returns the bytes written.
    fn restore(&mut self, snapshot: &Self::Snapshot) -> Result<u64, BackendError>;

    /// Frees the staging of a snapshot.
    fn release(&mut self, snapshot: Self::Snapshot);
}

/// Measurement: how a unit's passes map onto executions, the executions and their launches'
/// ranges, the counters and the conditions the executions ran under.
pub trait Measurement {
    /// How many of the configuration's `configured` counter groups `device` can collect (the
    /// pass count of a replayed dispatch). A device that cannot collect some groups says fewer.
    fn collectable_groups(&mut self, device: DeviceId, configured: usize) -> usize {
        let _ = device;
        configured
    }

    /// Executions `group` alone needs on `device`: 1, or more for a group of metrics that alone
    /// need several hardware passes (measured over that many executions of each dispatch).
    fn executions_of_group(&mut self, device: DeviceId, group: usize) -> usize {
        let _ = (device, group);
        1
    }

    /// The most launches one unit may hold on `device` (the ranges one execution measures).
    /// 1, the default: every dispatch is replayed alone.
    fn max_window(&mut self, device: DeviceId) -> usize {
        let _ = device;
        1
    }

    /// Plans the next unit on `device`, whose passes collect `groups` in pass order (`None`: a
    /// pass with timestamps only). An error: these groups cannot be measured now (the unit
    /// runs with timestamps only; the engine says why once).
    fn plan_unit(
        &mut self,
        device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        let _ = device;
        Ok(UnitPlan::one_per_pass(groups.len()))
    }

    /// Starts execution `execution` of the planned unit, for up to `ranges` launches.
    fn start_execution(
        &mut self,
        device: DeviceId,
        execution: usize,
        ranges: usize,
    ) -> Result<(), BackendError>;

    /// A measured launch of the running execution is about to be issued (execution 0: the
    /// application's own, from its launch callback; later: before [`Relaunch::relaunch`]).
    fn launch_starts(&mut self, device: DeviceId) -> Result<(), BackendError>;

    /// The launch announced by [`Measurement::launch_starts`] has been issued.
    fn launch_ends(&mut self, device: DeviceId) -> Result<(), BackendError>;

    /// The launch announced by [`Measurement::launch_starts`] did not execute (the driver
    /// refused it): it has no range and no timing.
    fn launch_abandoned(&mut self, device: DeviceId) {
        let _ = device;
    }

    /// Waits for the running execution and ends it: one timing per launch, in order.
    fn stop_execution(&mut self, device: DeviceId) -> Result<Vec<Timing>, BackendError>;

    /// Whether `device` runs timing executions ([`Measurement::start_timing_execution`]).
    fn runs_timing_executions(&mut self, device: DeviceId) -> bool {
        let _ = device;
        false
    }

    /// Starts, after the planned unit's executions and before its counters are read, an
    /// execution that measures no counters, only its launches' times (free of the counters' own
    /// work around each launch). Its launches are bracketed by `launch_starts`/`launch_ends`
    /// like a measured execution's, it is stopped with [`Measurement::stop_execution`], and
    /// it adds nothing to [`Measurement::unit_counters`].
    fn start_timing_execution(
        &mut self,
        device: DeviceId,
        ranges: usize,
    ) -> Result<(), BackendError> {
        let _ = (device, ranges);
        Err(BackendError::Failed(
            "this device runs no timing executions".into(),
        ))
    }

    /// After the unit's last execution (or the last one that ran): for each pass, the counters
    /// of each launch, in launch order (`None`: the pass was not measured). Ends the unit.
    fn unit_counters(&mut self, device: DeviceId) -> Result<PassCounters, BackendError>;

    /// The unit is abandoned before its counters were read (a launch that did not execute, a
    /// lost execution): forget it, so that the next unit starts cleanly.
    fn abandon_unit(&mut self, device: DeviceId) {
        let _ = device;
    }

    /// The conditions the unit's executions ran under, asked once after `unit_counters` or
    /// `abandon_unit` (and after a dispatch measured once); the next unit starts afresh.
    fn take_unit_conditions(&mut self, device: DeviceId) -> UnitConditions {
        let _ = device;
        UnitConditions::default()
    }

    /// A launch that needs its timestamps only (`--kernel-trace`, no counters) is about to be
    /// issued: `Some(tag)` when `device` times it without waiting for it (read later through
    /// [`Measurement::traced_times`]), `None` when it cannot (the engine measures it as a unit
    /// of one execution, which waits for the launch). No unit is planned for it, and it takes
    /// no turn on the device: it may be issued while another thread's unit runs.
    fn trace_starts(&mut self, device: DeviceId) -> Result<Option<u64>, BackendError> {
        let _ = device;
        Ok(None)
    }

    /// The launch announced by [`Measurement::trace_starts`] as `tag` has been issued.
    fn trace_ends(&mut self, device: DeviceId, tag: u64) -> Result<(), BackendError> {
        let _ = (device, tag);
        Err(BackendError::Failed(
            "this device times no launch without waiting".into(),
        ))
    }

    /// The launch announced as `tag` did not execute: it has no timing.
    fn trace_abandoned(&mut self, device: DeviceId, tag: u64) {
        let _ = (device, tag);
    }

    /// The timings of `device`'s traced launches that have completed, oldest first, each with
    /// its tag (an error: its timing could not be read), waiting until at least `at_least` came
    /// back or none is left (0: no waiting; `usize::MAX`: every one). A tag it no longer knows
    /// (its context went away) never comes back.
    fn traced_times(
        &mut self,
        device: DeviceId,
        at_least: usize,
    ) -> Vec<(u64, Result<Timing, BackendError>)> {
        let _ = (device, at_least);
        Vec::new()
    }
}

/// Relaunch: launches kept and re-executed, and the bytes the calls a unit stays open across
/// wrote, captured and written again.
pub trait Relaunch: Backend {
    /// Executes `launch` again, with the parameters it had the first time.
    fn relaunch(&mut self, launch: &Self::Launch) -> Result<(), BackendError>;

    /// A copy of `launch` that stays valid after its launch callback returned (a unit re-executes
    /// it later, possibly from another thread). Only asked when [`Measurement::max_window`] is
    /// above 1.
    fn retain_launch(&mut self, launch: &Self::Launch) -> Result<Self::Launch, BackendError> {
        let _ = launch;
        Err(BackendError::Failed(
            "this device cannot keep a launch for later replay".to_string(),
        ))
    }

    /// Values in `launch`'s parameters that may be addresses: a unit whose launch can reach host
    /// or managed memory does not stay open across calls (its later executions would write what
    /// the application may already have read). Default: none known.
    fn launch_addresses(&mut self, launch: &Self::Launch) -> Vec<u64> {
        let _ = launch;
        Vec::new()
    }

    /// Copies `bytes` at `base` of `device` (written by a call the unit stays open across, which
    /// has completed) so that later executions can write them again.
    fn capture(
        &mut self,
        device: DeviceId,
        base: u64,
        bytes: u64,
    ) -> Result<Self::Capture, BackendError> {
        let _ = (device, base, bytes);
        Err(BackendError::Failed(
            "this device cannot capture memory".to_string(),
        ))
    }

    /// Writes a capture back where it was taken (at its point of a later execution).
    fn apply(&mut self, capture: &Self::Capture) -> Result<(), BackendError> {
        let _ = capture;
        Err(BackendError::Failed(
            "this device cannot capture memory".to_string(),
        ))
    }

    /// Frees a capture.
    fn release_capture(&mut self, capture: Self::Capture) {
        let _ = capture;
    }
}

/// A device the engine can replay on: all three jobs.
pub trait ReplayBackend: Memory + Measurement + Relaunch {}
impl<T: Memory + Measurement + Relaunch + ?Sized> ReplayBackend for T {}

/// A device whose launches, snapshots and captures are those of `K`: what the engine's methods
/// take (a CUDA dispatch's view, the software device, a test mock).
pub trait DeviceOf<K: Backend>:
    ReplayBackend + Backend<Launch = K::Launch, Snapshot = K::Snapshot, Capture = K::Capture>
{
}
impl<K: Backend, T> DeviceOf<K> for T where
    T: ReplayBackend
        + Backend<Launch = K::Launch, Snapshot = K::Snapshot, Capture = K::Capture>
        + ?Sized
{
}
