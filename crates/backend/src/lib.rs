//! The CUDA implementation of the engine's [`kreplay_core::backend::ReplayBackend`].
//!
//! The injected library calls [`CudaBackend::begin_dispatch`] with the launch's context, device
//! and stream before it hands a dispatch to the engine; the engine then calls the trait methods
//! from application threads, inside their CUPTI callbacks. Its driver calls go through
//! [`drv!`](kreplay_cuda::drv), inside a [`ToolScope`](kreplay_cuda::guard::ToolScope), so the callbacks they
//! fire are ignored; its streams, events and log memory are [`kreplay_cuda::handles`].
//!
//! - drain: `cuCtxSynchronize` on the tool's drain thread, waited for until the deadline
//!   ([`kreplay_cuda::drain`]), so a device that never finishes hits the deadline instead of blocking
//!   forever.
//! - snapshots: staging buffers per device, kept for reuse after release (device memory
//!   (`cuMemAlloc`) first, pinned host memory (`cuMemHostAlloc`) when the engine falls back);
//!   several may be alive at once (a unit's start and the application's view). Copies run on a
//!   non-blocking stream of the tool's own and are waited for.
//! - captures: bytes written by a call a unit stays open across, copied device-to-device into
//!   a log arena (chunks of device memory reused across units).
//! - timestamps: a pair of events around each measured launch (execution 0 on the launch's
//!   stream, later executions on the tool stream). Events give durations; they are placed on
//!   the host clock (nanoseconds since the Unix epoch) through an anchor event recorded on the
//!   tool's idle stream and synchronised, re-anchored every second.
//! - counters: [`RangeProfiler`], hardware passes scheduled by CUPTI.
//! - relaunch: on the tool's stream, with the application's parameter block (valid while the
//!   launch's callback runs) or a kept copy.
//!
//! With counters on, the events also enclose CUPTI's range work around the launch (≈ 1 ms per
//! kernel in a pass that reads hardware counters on an H200), so a replayed unit's records take
//! their durations from its timing execution, which starts no range (docs/kernel-replay.md,
//! "Timestamps"). Submodules:
//! `replay` (the engine's trait on this backend), `dispatch` (the engine's per-dispatch view of
//! it, and the gate serialising measurements between threads) and `staging` (how much pinned
//! host memory a snapshot may take).

use kreplay_core::backend::{
    AllocKind, Backend, BackendError, DeviceId, Measurement, Memory, PassCounters, Region,
    Relaunch, Timing, UnitPlan,
};
use kreplay_core::engine::DEFAULT_STAGING_RESERVE_BYTES;
use kreplay_counters::profiler::{RangeProfiler, MAX_RANGES};
use kreplay_counters::setup::CounterSetup;
use kreplay_cuda::drv;
use kreplay_cuda::error::CudaError;
use kreplay_cuda::handles::{DeviceMemory, Event, Stream};
use kreplay_cuda::launch::LaunchApi;
use kreplay_cuda::launch::{callback_addresses, LaunchParams, OwnedLaunch};
use kreplay_cuda::ContextGuard;
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext, CUdeviceptr, CUevent, CUstream};
use kreplay_format::{CounterSample, Staging};
use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

pub mod flush;
pub mod graphs;
pub mod module_symbols;
pub mod modules;

mod conditions;
mod copies;
mod dispatch;
mod replay;
mod staging;

use copies::free_buffer;
pub use dispatch::{DispatchBackend, MeasureGate};
use staging::host_staging_limit;

/// `CU_STREAM_PER_THREAD`: the per-thread default stream's handle (`cuda.h` defines it as 0x2).
pub const STREAM_PER_THREAD: CUstream = 0x2 as CUstream;
/// `CU_STREAM_LEGACY`: the legacy default stream's explicit handle.
pub const STREAM_LEGACY: CUstream = 0x1 as CUstream;

pub use kreplay_cuda::launch::CudaLaunch;

/// Staging memory: device (`cuMemAlloc`) or pinned host (`cuMemHostAlloc`).
#[derive(Debug, Clone, Copy)]
struct Buffer {
    address: u64,
    bytes: u64,
    place: Staging,
}

/// Where a snapshot's bytes are: its buffer and each region's offset in it.
#[derive(Debug)]
pub struct CudaSnapshot {
    device: DeviceId,
    buffer: Buffer,
    entries: Vec<(Region, u64)>,
    bytes: u64,
}

/// Bytes a call wrote into device memory, copied into the device's log arena.
#[derive(Debug)]
pub struct CudaCapture {
    device: DeviceId,
    target: CUdeviceptr,
    staged: CUdeviceptr,
    bytes: u64,
}

pub use kreplay_counters::MetricGroups;

impl CounterOptions {
    /// The options of a run whose replay window holds `window` dispatches (1 for per-dispatch
    /// replay): ranges for each launch and, under `--cache-control all` with the flush in the
    /// application's context, for its flush, at most [`MAX_RANGES`] (a window then holds
    /// fewer dispatches than asked for where they would need more).
    pub fn for_window(
        window: usize,
        single_group_schedules: bool,
        cache_control: kreplay_format::CacheControl,
        switches: kreplay_core::config::Switches,
    ) -> CounterOptions {
        let flush = if cache_control == kreplay_format::CacheControl::All {
            crate::flush::ApplicationContextFlusher::RANGES
        } else {
            0
        };
        CounterOptions {
            max_ranges: window.max(1).saturating_mul(1 + flush).min(MAX_RANGES),
            single_group_schedules,
            cache_control,
            switches,
        }
    }
}

/// How the backend uses the counters of a run.
#[derive(Debug, Clone)]
pub struct CounterOptions {
    /// The ranges the counters are set up for: a unit's launches, each with the ranges of the
    /// flush before it in the application's context ([`CounterOptions::for_window`]).
    pub max_ranges: usize,
    /// Dispatches measure single groups in turn (rotation, application replay): reprogramming
    /// the counters for a group alone is expected. Off (kernel replay), a dispatch that runs
    /// once while a schedule of several passes is programmed keeps timestamps only.
    pub single_group_schedules: bool,
    /// `--cache-control`: `All` flushes L2 before every measured launch.
    pub cache_control: kreplay_format::CacheControl,
    /// The diagnostic switches (batched copies, packing, the profiler's sequence and set-up).
    pub switches: kreplay_core::config::Switches,
}

/// Staging buffers kept per place for the next snapshots (a unit's start and, for a unit that
/// stayed open across calls, the application's view).
const SPARE_BUFFERS: usize = 2;

/// Log chunks are at least this large (captures are mostly small).
const LOG_CHUNK_BYTES: u64 = 64 << 20;

/// The measurement of the unit in progress on a device.
#[derive(Debug)]
struct UnitState {
    groups: Vec<Option<usize>>,
    plan: UnitPlan,
    counters: bool,
    /// The running execution.
    execution: Option<usize>,
    /// Event pairs used by the running execution.
    used: usize,
    /// The running execution is the timing one (no counters, after the planned ones).
    timing: bool,
    /// The stream of the launch between `launch_starts` and `launch_ends`.
    pending: Option<CUstream>,
    /// Launches measured by each execution stopped so far.
    launches: Vec<usize>,
    /// The running execution's ranges in order: `true` for a launch of the unit's, `false`
    /// for a flush kernel in the application's context (the default flush).
    ranges: Vec<bool>,
    /// The same for each execution stopped so far.
    ranges_of: Vec<Vec<bool>>,
}

struct DeviceState {
    ctx: CUcontext,
    tool_stream: Stream,
    /// Staging buffers not in use, kept for the next snapshots.
    spare: Vec<Buffer>,
    /// The capture log: chunks, the chunk being filled and its fill, and live captures.
    log: Vec<DeviceMemory>,
    log_at: (usize, u64),
    log_live: usize,
    /// Kept across dispatches; `None` until the first pass with counters.
    profiler: Option<RangeProfiler>,
    anchor: Event,
    anchor_host_ns: u64,
    anchored_at: Option<Instant>,
    /// Start and end events of each measured launch, reused across executions.
    events: Vec<(Event, Event)>,
    unit: Option<UnitState>,
    /// Recorded before an L2 flush, which waits for it (made at the first flush).
    flush_ready: Option<Event>,
    /// The flusher in this context (the default flush), made at the first flush.
    app_flusher: Option<Result<crate::flush::ApplicationContextFlusher, String>>,
}

/// The dispatch in progress: its context, device and stream (from [`CudaBackend::begin_dispatch`]).
#[derive(Debug, Clone, Copy)]
pub struct CurrentDispatch {
    ctx: CUcontext,
    cu_device: sys::CUdevice,
    stream: CUstream,
    /// Not a launch (another API call closing a replay window): no stream of its own.
    passive: bool,
}

// SAFETY: CUDA handles, valid on any thread of the process.
unsafe impl Send for CurrentDispatch {}

impl CurrentDispatch {
    /// A dispatch the backend must not touch the device for (a launch being stream-captured:
    /// the engine passes it through, and tool calls could invalidate the capture).
    pub fn passive(ctx: CUcontext, stream: CUstream) -> Self {
        CurrentDispatch {
            ctx,
            cu_device: 0,
            stream,
            passive: true,
        }
    }

    /// Whether this dispatch is one the backend must not touch the device for.
    pub fn is_passive(&self) -> bool {
        self.passive
    }
}

pub struct CudaBackend {
    driver: &'static Driver,
    cupti: Option<&'static Cupti>,
    groups: MetricGroups,
    options: CounterOptions,
    devices: HashMap<DeviceId, DeviceState>,
    current: Option<CurrentDispatch>,
    /// Set when counters cannot be collected on a device (one message, then timestamps only).
    counters_broken: HashMap<DeviceId, String>,
    /// The device identity the CLI checked the groups with (see [`Self::set_identity_check`]).
    checked_identity: Option<String>,
    /// Says a warning once (stderr and a record): a stale identity, an L2 flush given up.
    warn: Option<WarnFn>,
    /// Counter set-ups begun at context creation (none without counters).
    setup: Option<CounterSetup>,
    /// Each device's L2 flusher, made at its first flush (or why it could not be).
    flushers: HashMap<DeviceId, Result<crate::flush::L2Flusher, String>>,
    /// Flushers given up after a failed flush, destroyed at the next dispatch (the failure may
    /// have happened inside a resource callback or the exit handler, where nothing is destroyed).
    retired_flushers: Vec<crate::flush::L2Flusher>,
    /// The same for flushers in an application's context.
    retired_app_flushers: Vec<crate::flush::ApplicationContextFlusher>,
    /// Whether the warning that the flush cannot run in the application's context was given.
    said_flush_in_application: bool,
    /// Each device's clock reader (`None`: no NVML, or NVML does not know the device).
    clock_readers: HashMap<DeviceId, Option<kreplay_cuda::clocks::ClockReader>>,
    /// What each device's unit ran under so far.
    seen: HashMap<DeviceId, conditions::Seen>,
}

/// Says a warning once (stderr and a record).
pub type WarnFn = Box<dyn Fn(&str) + Send>;

// SAFETY: the raw handles are CUDA objects usable from any thread; the backend lives behind
// the injected library's lock.
unsafe impl Send for CudaBackend {}

fn host_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

fn failed(e: CudaError) -> BackendError {
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
        CudaBackend {
            driver,
            cupti,
            groups,
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
                (self.flush_ranges_per_launch() > 0).then_some(
                    kreplay_counters::setup::AheadWork {
                        what: "flush module compiled",
                        work: crate::flush::compile_ahead,
                    },
                ),
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
    /// default stream resolved (`STREAM_PER_THREAD` for `_ptsz` launches on stream 0).
    pub fn begin_dispatch(
        &mut self,
        ctx: CUcontext,
        device: DeviceId,
        stream: CUstream,
    ) -> Result<CurrentDispatch, BackendError> {
        // A launch's callback: contexts may be destroyed here.
        self.retired_flushers.clear();
        self.retired_app_flushers.clear();
        let mut cu_device: sys::CUdevice = 0;
        // SAFETY: writes the device ordinal of the current context.
        unsafe { drv!(self.driver, cuCtxGetDevice(&mut cu_device)) }.map_err(failed)?;
        let current = CurrentDispatch {
            ctx,
            cu_device,
            stream,
            passive: false,
        };
        self.current = Some(current);
        let stale = self.devices.get(&device).is_some_and(|s| s.ctx != ctx);
        if stale {
            // The application uses another context on this device now: start afresh there. The
            // old one may be gone already (its destruction not seen): what the tool made in it
            // went with it, and destroying or freeing those handles now could reach objects of
            // the application's that reuse them, so they are forgotten.
            if let Some(mut state) = self.devices.remove(&device) {
                state.profiler = None;
                std::mem::forget(state);
            }
        }
        if !self.devices.contains_key(&device) {
            let state = self.new_device_state(ctx).map_err(failed)?;
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
            if let Some(state) = self.devices.remove(&device) {
                self.free_device_state(state);
            }
        }
        // Freed while their context still exists: later its addresses may be another's.
        self.retired_app_flushers.retain(|f| f.context() != ctx);
    }

    /// Why counters are not collected on `device`, if they are not.
    pub fn counters_unavailable(&self, device: DeviceId) -> Option<&str> {
        self.counters_broken.get(&device).map(String::as_str)
    }

    /// One line per device that collected counters for several groups: how the groups were
    /// packed into hardware passes and how often the configuration changed.
    pub fn pass_summary(&self) -> Vec<String> {
        for (device, state) in &self.devices {
            if let Some(profiler) = &state.profiler {
                kreplay_cuda::debug::line(&format!("device {device}: {}", profiler.start_times()));
            }
        }
        if self.groups.len() < 2 {
            return Vec::new();
        }
        let mut devices: Vec<_> = self.devices.iter().collect();
        devices.sort_by_key(|(device, _)| **device);
        devices
            .into_iter()
            .filter_map(|(device, state)| {
                let profiler = state.profiler.as_ref()?;
                let packing = profiler.packing();
                let spans = profiler.pass_spans();
                let passes: Vec<String> = packing
                    .iter()
                    .zip(spans)
                    .map(|(groups, span)| {
                        let members = groups
                            .iter()
                            .map(|g| g.to_string())
                            .collect::<Vec<_>>()
                            .join("+");
                        if *span > 1 {
                            format!("{members} over {span} passes")
                        } else {
                            members
                        }
                    })
                    .collect();
                Some(format!(
                    "device {device} ({}): {} counter group(s) in {} hardware pass(es) [{}]; {} configuration change(s){}",
                    profiler.chip(),
                    self.groups.len(),
                    spans.iter().sum::<usize>(),
                    passes.join(", "),
                    profiler.config_changes,
                    if packing.len() < self.groups.len() {
                        " (groups sharing a pass were measured in one execution; KREPLAY_PACK_GROUPS=0 gives each its own)"
                    } else {
                        ""
                    }
                ))
            })
            .collect()
    }

    fn new_device_state(&self, ctx: CUcontext) -> Result<DeviceState, CudaError> {
        Ok(DeviceState {
            ctx,
            tool_stream: Stream::non_blocking(self.driver)?,
            spare: Vec::new(),
            log: Vec::new(),
            log_at: (0, 0),
            log_live: 0,
            profiler: None,
            anchor: Event::timed(self.driver)?,
            anchor_host_ns: 0,
            anchored_at: None,
            events: Vec::new(),
            unit: None,
            flush_ready: None,
            app_flusher: None,
        })
    }

    /// Closes the device's profiler and frees its staging; its stream, events and log go with
    /// the state.
    fn free_device_state(&self, mut state: DeviceState) {
        state.profiler = None;
        for buffer in state.spare.drain(..) {
            // SAFETY: staging this backend allocated, no longer used by any snapshot.
            unsafe { free_buffer(self.driver, buffer) };
        }
    }

    fn current(&self) -> Result<CurrentDispatch, BackendError> {
        self.current
            .ok_or_else(|| BackendError::Failed("no dispatch in progress (internal error)".into()))
    }

    fn state(&mut self, device: DeviceId) -> Result<&mut DeviceState, BackendError> {
        self.devices
            .get_mut(&device)
            .ok_or_else(|| BackendError::Failed(format!("device {device} has no tool state")))
    }

    fn unit(&mut self, device: DeviceId) -> Result<&mut UnitState, BackendError> {
        self.state(device)?
            .unit
            .as_mut()
            .ok_or_else(|| BackendError::Failed("no unit planned (internal error)".into()))
    }

    /// Re-anchors the event clock on the host clock when the anchor is older than a second
    /// (event times are f32 milliseconds: a young anchor keeps them precise).
    fn ensure_anchor(&mut self, device: DeviceId) -> Result<(), CudaError> {
        let d = self.driver;
        let Some(state) = self.devices.get_mut(&device) else {
            return Ok(());
        };
        if state
            .anchored_at
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return Ok(());
        }
        // SAFETY: the tool's own event on the tool's own (idle) stream.
        unsafe {
            drv!(
                d,
                cuEventRecord(state.anchor.raw(), state.tool_stream.raw())
            )?;
            drv!(d, cuEventSynchronize(state.anchor.raw()))?;
        }
        state.anchor_host_ns = host_now_ns();
        state.anchored_at = Some(Instant::now());
        Ok(())
    }

    fn elapsed_ns(&self, from: CUevent, to: CUevent) -> Result<u64, CudaError> {
        let mut ms: f32 = 0.0;
        // SAFETY: both events were recorded and have completed.
        unsafe { drv!(self.driver, cuEventElapsedTime_v2(&mut ms, from, to))? };
        Ok((f64::from(ms.max(0.0)) * 1.0e6) as u64)
    }

    fn profiler(&mut self, device: DeviceId) -> Option<&mut RangeProfiler> {
        if self.counters_broken.contains_key(&device) || self.groups.is_empty() {
            return None;
        }
        let needs_new = self
            .devices
            .get(&device)
            .is_some_and(|s| s.profiler.is_none());
        if needs_new {
            let current = self.current?;
            let prepared = self.setup.as_ref().and_then(|s| s.take(current.ctx));
            let built = match (prepared, self.cupti) {
                (Some(prepared), _) => prepared,
                (None, Some(cupti)) => RangeProfiler::new(
                    cupti,
                    current.ctx,
                    current.cu_device,
                    current.cu_device as usize,
                    &self.groups,
                    self.options.max_ranges,
                    &self.options.switches,
                ),
                (None, None) => Err(CudaError::Load("CUPTI is not loaded".into())),
            };
            match built {
                Ok(p) => {
                    self.compare_identity(current.cu_device, &p);
                    self.devices.get_mut(&device)?.profiler = Some(p)
                }
                Err(e) => {
                    self.counters_broken.insert(device, e.to_string());
                    return None;
                }
            }
        }
        self.devices.get_mut(&device)?.profiler.as_mut()
    }

    fn compare_identity(&self, cu_device: sys::CUdevice, profiler: &RangeProfiler) {
        let (Some(checked), Some(warn)) = (&self.checked_identity, &self.warn) else {
            return;
        };
        if cu_device == 0 && checked != profiler.identity_digest() {
            warn(&kreplay_counters::catalog::identity_cache::stale_warning(
                checked,
                profiler.identity_digest(),
            ));
        }
    }

    /// Counters lost on `device`: said once by the engine, timestamps only from now on.
    fn counters_lost(&mut self, device: DeviceId, e: CudaError) -> BackendError {
        self.counters_broken.insert(device, e.to_string());
        if let Some(profiler) = self
            .devices
            .get_mut(&device)
            .and_then(|s| s.profiler.as_mut())
        {
            profiler.abandon();
        }
        failed(e)
    }

    /// The tool stream and context of the device whose context is `ctx`.
    fn tool_stream_of(&self, ctx: CUcontext) -> Option<CUstream> {
        self.devices
            .values()
            .find(|s| s.ctx == ctx)
            .map(|s| s.tool_stream.raw())
    }

    /// Records the `index`-th event pair's `end` (or start) on `stream`, creating pairs as needed.
    fn record_event(
        &mut self,
        device: DeviceId,
        index: usize,
        end: bool,
        stream: CUstream,
    ) -> Result<(), CudaError> {
        let d = self.driver;
        let Some(state) = self.devices.get_mut(&device) else {
            return Err(CudaError::Load(format!(
                "device {device} has no tool state"
            )));
        };
        while state.events.len() <= index {
            state.events.push((Event::timed(d)?, Event::timed(d)?));
        }
        let (start, stop) = &state.events[index];
        let event = if end { stop.raw() } else { start.raw() };
        // SAFETY: the tool's own event on a live stream of the device's context.
        unsafe { drv!(d, cuEventRecord(event, stream)) }
    }
}

/// Re-issues the launch whose callback is running, on `stream`.
///
/// # Safety
/// `params` is the launch API's parameter block, inside its callback.
unsafe fn relaunch_callback(
    d: &Driver,
    api: LaunchApi,
    params: *const std::ffi::c_void,
    stream: CUstream,
) -> Result<(), CudaError> {
    let p = LaunchParams::decode(api, params);
    p.launch(d, api, stream, &p.attributes())
}

/// The engine for CUDA launches.
pub type CudaEngine = kreplay_core::Engine<CudaBackend>;

/// The stream a launch really used: stream 0 of a `_ptsz` launch is the per-thread default stream.
pub fn resolve_stream(stream: CUstream, per_thread: bool) -> CUstream {
    if stream.is_null() && per_thread {
        STREAM_PER_THREAD
    } else {
        stream
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        // Device memory, streams and events go with the contexts at exit (destroying them
        // then could reach contexts already gone): only the profiler objects are closed, which
        // `RangeProfiler`'s own drop does, and the rest is forgotten.
        for (_, mut state) in self.devices.drain() {
            state.profiler = None;
            std::mem::forget(state);
        }
        self.flushers.drain().for_each(|(_, f)| std::mem::forget(f));
        self.retired_flushers.drain(..).for_each(std::mem::forget);
        self.retired_app_flushers
            .drain(..)
            .for_each(std::mem::forget);
    }
}

#[cfg(test)]
mod tests {

    use super::*;

    #[test]
    fn per_thread_launches_on_stream_zero_use_the_per_thread_stream() {
        assert_eq!(
            resolve_stream(std::ptr::null_mut(), true),
            STREAM_PER_THREAD
        );
        assert!(resolve_stream(std::ptr::null_mut(), false).is_null());
        let s = 0x1234 as CUstream;
        assert_eq!(resolve_stream(s, true), s);
    }

    #[test]
    fn ranges_hold_each_launch_and_its_flush_in_the_application_context() {
        use kreplay_core::config::Switches;
        use kreplay_format::CacheControl;
        let ranges = |window, cache| {
            CounterOptions::for_window(window, false, cache, Switches::default()).max_ranges
        };
        // The default window (auto, 64 dispatches) keeps its dispatches beside their flushes.
        assert_eq!(ranges(64, CacheControl::All), 128);
        assert_eq!(ranges(1, CacheControl::All), 2);
        // No flush, no ranges for it.
        assert_eq!(ranges(64, CacheControl::None), 64);
        // Never more than the profiler holds.
        assert_eq!(ranges(100, CacheControl::All), MAX_RANGES);
        assert_eq!(ranges(500, CacheControl::None), MAX_RANGES);
        assert_eq!(ranges(0, CacheControl::None), 1);
    }
}
