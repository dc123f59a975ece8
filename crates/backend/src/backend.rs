//! The CUDA backend's shared state ([`CudaBackend`]): one per process, behind the injected
//! library's lock. Its life: made with the run's counter groups and options, told of each
//! dispatch's context and stream ([`CudaBackend::begin_dispatch`]), of contexts destroyed
//! ([`CudaBackend::forget_context`]), and dropped at exit. The engine's jobs on it are in
//! `memory`, `measurement` and `relaunch`.

use crate::current::CurrentDispatch;
use crate::flush::{ApplicationContextFlusher, L2Flusher};
use crate::options::CounterOptions;
use crate::seen::Seen;
use crate::snapshot::{CudaCapture, CudaSnapshot};
use crate::state::{DeviceState, UnitState};
use kreplay_core::backend::{Backend, BackendError, DeviceId, Timing};
use kreplay_counters::profiler::MAX_RANGES;
use kreplay_counters::setup::{AheadWork, CounterSetup};
use kreplay_counters::MetricGroups;
use kreplay_cuda::clocks::ClockReader;
use kreplay_cuda::device::Device;
use kreplay_cuda::error::CudaError;
use kreplay_cuda::launch::CudaLaunch;
use kreplay_cuda::Cupti;
use kreplay_cuda::{CUcontext, CUstream, Driver};
use kreplay_format::CounterName;
use std::collections::HashMap;

/// Says a warning once (stderr and a record).
pub type WarnFn = Box<dyn Fn(&str) + Send>;

/// The engine for CUDA launches.
pub type CudaEngine = kreplay_core::Engine<CudaBackend>;

pub struct CudaBackend {
    pub(crate) driver: &'static Driver,
    pub(crate) cupti: Option<&'static Cupti>,
    pub(crate) groups: MetricGroups,
    /// Each group's counter names as its samples carry them, interned once.
    pub(crate) sample_names: Vec<Vec<CounterName>>,
    pub(crate) options: CounterOptions,
    pub(crate) devices: HashMap<DeviceId, DeviceState>,
    pub(crate) current: Option<CurrentDispatch>,
    /// Set when counters cannot be collected on a device (one message, then timestamps only).
    pub(crate) counters_broken: HashMap<DeviceId, String>,
    /// The device identity the CLI checked the groups with (see [`Self::set_identity_check`]).
    pub(crate) checked_identity: Option<String>,
    /// Says a warning once (stderr and a record): a stale identity, an L2 flush given up.
    pub(crate) warn: Option<WarnFn>,
    /// Counter set-ups begun at context creation (none without counters).
    pub(crate) setup: Option<CounterSetup>,
    /// Each device's L2 flusher, made at its first flush (or why it could not be).
    pub(crate) flushers: HashMap<DeviceId, Result<L2Flusher, String>>,
    /// Flushers given up after a failed flush, destroyed at the next dispatch (the failure may
    /// have happened inside a resource callback or the exit handler, where nothing is destroyed).
    pub(crate) retired_flushers: Vec<L2Flusher>,
    /// The same for flushers in an application's context.
    pub(crate) retired_app_flushers: Vec<ApplicationContextFlusher>,
    /// Whether the warning that the flush cannot run in the application's context was given.
    pub(crate) said_flush_in_application: bool,
    /// Each device's clock reader (`None`: no NVML, or NVML does not know the device).
    pub(crate) clock_readers: HashMap<DeviceId, Option<ClockReader>>,
    /// What each device's unit ran under so far.
    pub(crate) seen: HashMap<DeviceId, Seen>,
    /// The last tag given to a launch timed without waiting (unique across contexts).
    pub(crate) next_traced_tag: u64,
    /// Launches read when their context went away, for the engine's next read of their device.
    pub(crate) traced_orphans: Vec<(DeviceId, u64, Result<Timing, BackendError>)>,
    /// Kernel launches awaiting CUPTI's records of their executions, and those come.
    pub(crate) inbox: crate::traced_activity::Inbox,
    /// Why CUPTI's records no longer time kernel launches (events do then).
    pub(crate) activity_failed: Option<String>,
}

// SAFETY: the raw handles are CUDA objects usable from any thread; the backend lives behind
// the injected library's lock.
unsafe impl Send for CudaBackend {}

impl Backend for CudaBackend {
    type Launch = CudaLaunch;
    type Snapshot = CudaSnapshot;
    type Capture = CudaCapture;
}

/// A driver error as the engine takes it.
pub(crate) fn failed(e: CudaError) -> BackendError {
    BackendError::Failed(e.to_string())
}

impl CudaBackend {
    /// `cupti` is needed only when `groups` is not empty.
    pub fn new(
        driver: &'static Driver,
        cupti: Option<&'static Cupti>,
        groups: MetricGroups,
        options: CounterOptions,
    ) -> Self {
        let sample_names = (groups.iter())
            .map(|group| {
                group
                    .iter()
                    .map(|name| CounterName::from(name.as_str()))
                    .collect()
            })
            .collect();
        CudaBackend {
            driver,
            cupti,
            groups,
            sample_names,
            options: CounterOptions {
                max_ranges: options.max_ranges.clamp(1, MAX_RANGES),
                ..options
            },
            devices: HashMap::new(),
            current: None,
            counters_broken: HashMap::new(),
            checked_identity: None,
            warn: None,
            setup: None,
            flushers: HashMap::new(),
            retired_flushers: Vec::new(),
            retired_app_flushers: Vec::new(),
            said_flush_in_application: false,
            clock_readers: HashMap::new(),
            seen: HashMap::new(),
            next_traced_tag: 0,
            traced_orphans: Vec::new(),
            inbox: Default::default(),
            activity_failed: None,
        }
        .with_setup()
    }

    fn with_setup(mut self) -> Self {
        if let (Some(cupti), false) = (self.cupti, self.groups.is_empty()) {
            let warm = self.warm_up_groups();
            self.setup = Some(CounterSetup::new(
                self.driver,
                cupti,
                self.groups.clone(),
                warm,
                self.options.max_ranges,
                self.options.switches.clone(),
                (self.options.flush_ranges_per_launch() > 0).then_some(AheadWork {
                    what: "flush module compiled",
                    work: crate::flush::compile_ahead,
                }),
            ));
        }
        self
    }

    /// The counter set-ups begun at context creation, for the context-creation callback
    /// (which must not take the backend's lock: see [`kreplay_counters::setup`]). `None` without counters.
    pub fn counter_setup(&self) -> Option<CounterSetup> {
        self.setup.clone()
    }

    /// The groups a counter set-up programs ahead: all of them for kernel replay, the first
    /// for runs that measure one group at a time.
    fn warm_up_groups(&self) -> Vec<Option<usize>> {
        if self.options.single_group_schedules {
            vec![Some(0)]
        } else {
            (0..self.groups.len()).map(Some).collect()
        }
    }

    /// Where the backend's warnings go (each said once, on stderr and as a record).
    pub fn set_warn(&mut self, warn: WarnFn) {
        self.warn = Some(warn);
    }

    /// Compares device 0's identity, when its counters are set up, with `digest` (the CLI's,
    /// [`kreplay_counters::catalog::identity_cache::digest`]) and warns
    /// [`STALE_WARNING`](kreplay_counters::catalog::identity_cache::STALE_WARNING) when they differ, so
    /// that the CLI drops the cached identity it used.
    pub fn set_identity_check(&mut self, digest: Option<String>) {
        self.checked_identity = digest;
    }

    /// Names the launch the engine is about to handle. `stream` is the launch's stream with the
    /// default stream resolved (`STREAM_PER_THREAD` for `_ptsz` launches on stream 0);
    /// `correlation` the launch call's correlation id where CUPTI records the execution of its
    /// kernel (`kreplay_cuda::activity`), which then times it when it is traced.
    pub fn begin_dispatch(
        &mut self,
        ctx: CUcontext,
        device: DeviceId,
        stream: CUstream,
        correlation: Option<u32>,
    ) -> Result<CurrentDispatch, BackendError> {
        // A launch's callback: contexts may be destroyed here.
        self.retired_flushers.clear();
        self.retired_app_flushers.clear();
        // Only counters need the device's ordinal (a driver call a launch need not make).
        let cu_device = if self.groups.is_empty() {
            0
        } else {
            Device::current(self.driver).map_err(failed)?.raw()
        };
        let current = CurrentDispatch {
            ctx,
            cu_device,
            stream,
            passive: false,
            correlation,
        };
        self.current = Some(current);
        let stale = self.devices.get(&device).is_some_and(|s| s.ctx != ctx);
        if stale {
            // The application uses another context on this device now: start afresh there. The
            // old one may be gone already (its destruction not seen): what the tool made in it
            // went with it, and destroying or freeing those handles now could reach objects of
            // the application's that reuse them, so they are forgotten.
            if let Some(state) = self.devices.remove(&device) {
                state.leave_to_context();
            }
        }
        if !self.devices.contains_key(&device) {
            let state = DeviceState::new(self.driver, ctx).map_err(failed)?;
            self.devices.insert(device, state);
        }
        Ok(current)
    }

    /// The dispatch is over (whatever the outcome).
    pub fn end_dispatch(&mut self) {
        self.current = None;
    }

    /// A context is being destroyed: drop what the tool holds in it (its memory goes with it).
    /// Called from the context-destruction callback: waits for nothing (see [`kreplay_counters::setup`]).
    pub fn forget_context(&mut self, ctx: CUcontext) {
        let devices: Vec<DeviceId> = self
            .devices
            .iter()
            .filter(|(_, s)| s.ctx == ctx)
            .map(|(d, _)| *d)
            .collect();
        for device in devices {
            // The launches timed in it are read while their events exist.
            self.traced_orphaned(device);
            if let Some(mut state) = self.devices.remove(&device) {
                // The profiler closed and the spare staging freed first, then the stream,
                // events and log with the state.
                state.profiler = None;
                state.spare.clear();
            }
        }
        // Freed while their context still exists: later its addresses may be another's.
        self.retired_app_flushers.retain(|f| f.context() != ctx);
    }

    /// Why counters are not collected on `device`, if they are not.
    pub fn counters_unavailable(&self, device: DeviceId) -> Option<&str> {
        self.counters_broken.get(&device).map(String::as_str)
    }

    pub(crate) fn current(&self) -> Result<CurrentDispatch, BackendError> {
        self.current
            .ok_or_else(|| BackendError::Failed("no dispatch in progress (internal error)".into()))
    }

    pub(crate) fn state(&mut self, device: DeviceId) -> Result<&mut DeviceState, BackendError> {
        self.devices
            .get_mut(&device)
            .ok_or_else(|| BackendError::Failed(format!("device {device} has no tool state")))
    }

    pub(crate) fn unit(&mut self, device: DeviceId) -> Result<&mut UnitState, BackendError> {
        self.state(device)?
            .unit
            .as_mut()
            .ok_or_else(|| BackendError::Failed("no unit planned (internal error)".into()))
    }

    /// The tool stream of the device whose context is `ctx`.
    pub(crate) fn tool_stream_of(&self, ctx: CUcontext) -> Option<CUstream> {
        self.devices
            .values()
            .find(|s| s.ctx == ctx)
            .map(|s| s.tool_stream.raw())
    }

    /// Free memory of the current context's device now, bytes (0 when it cannot be read).
    pub(crate) fn memory_free_now(&self) -> u64 {
        kreplay_cuda::memory::memory_free_now(self.driver).unwrap_or(0)
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // Device memory, streams and events go with the contexts at exit (destroying them
        // then could reach contexts already gone): only the profiler objects are closed, which
        // `RangeProfiler`'s own drop does, and the rest is forgotten.
        for (_, state) in self.devices.drain() {
            state.leave_to_context();
        }
        self.flushers.drain().for_each(|(_, f)| std::mem::forget(f));
        self.retired_flushers.drain(..).for_each(std::mem::forget);
        self.retired_app_flushers
            .drain(..)
            .for_each(std::mem::forget);
    }
}
