//! The CUDA implementation of the engine's [`ReplayBackend`].
//!
//! The injected library calls [`CudaBackend::begin_dispatch`] with the launch's context, device
//! and stream before it hands a dispatch to the engine; the engine then calls the trait methods
//! from the same (application) thread, inside the launch's CUPTI callbacks. Every method runs
//! its driver calls inside a [`ToolScope`], so the callbacks they fire are ignored.
//!
//! - drain: polls `cuStreamQuery` on every stream the application has used (and the legacy and
//!   per-thread default streams) until all are idle or the deadline passes, then
//!   `cuCtxSynchronize`, which returns at once when the device is idle. A device that never
//!   finishes therefore hits the deadline instead of blocking forever.
//! - snapshot/restore: one staging arena per device, reused across dispatches and grown on
//!   demand: device memory (`cuMemAlloc`) first, pinned host memory (`cuMemHostAlloc`) when the
//!   engine falls back; copies run on a non-blocking stream of the tool's own and are waited for.
//! - timestamps: `cuEventRecord` on the launch's stream around each execution. Events give
//!   durations; they are placed on the host clock (nanoseconds since the Unix epoch) through an
//!   anchor event recorded on the tool's idle stream and synchronised, re-anchored every second,
//!   so a pass's `start_ns` is `anchor_host_ns + elapsed(anchor, start)` and its `end_ns` is
//!   `start_ns + elapsed(start, end)`.
//! - counters: [`RangeProfiler`], one hardware pass per group.
//! - relaunch: the original API with the original parameter block, valid while the launch's
//!   callback runs.

use crate::classify::LaunchApi;
use crate::drv;
use crate::error::CudaError;
use crate::guard::ToolScope;
use crate::profiler::{GroupValues, RangeProfiler};
use kreplay_core::backend::{BackendError, DeviceId, PassResult, Region, ReplayBackend};
use kreplay_core::engine::DEFAULT_STAGING_RESERVE_BYTES;
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext, CUdeviceptr, CUevent, CUstream};
use kreplay_format::{CounterSample, Staging};
use std::collections::{HashMap, HashSet};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// `CU_STREAM_PER_THREAD`: the per-thread default stream's handle (`cuda.h` defines it as 0x2).
pub const STREAM_PER_THREAD: CUstream = 0x2 as CUstream;
/// `CU_STREAM_LEGACY`: the legacy default stream's explicit handle.
pub const STREAM_LEGACY: CUstream = 0x1 as CUstream;

pub use crate::launch::CudaLaunch;
use crate::launch::OwnedLaunch;

/// Where a snapshot's bytes are: regions and their offsets in the device's arena.
#[derive(Debug)]
pub struct CudaSnapshot {
    device: DeviceId,
    place: Staging,
    entries: Vec<(Region, u64)>,
    bytes: u64,
}

/// Counter groups as metric names, group i = pass i.
pub type MetricGroups = Vec<Vec<String>>;

struct DeviceState {
    ctx: CUcontext,
    tool_stream: CUstream,
    device_arena: Option<(CUdeviceptr, u64)>,
    host_arena: Option<(*mut std::ffi::c_void, u64)>,
    /// Kept across dispatches; `None` until the first pass with counters.
    profiler: Option<RangeProfiler>,
    pass_start: CUevent,
    pass_end: CUevent,
    anchor: CUevent,
    anchor_host_ns: u64,
    anchored_at: Option<Instant>,
    /// Events ending each execution of a window pass, reused across windows.
    window_events: Vec<CUevent>,
}

/// The most kernels one window pass collects (each is one range of the counter-data image).
pub const MAX_WINDOW_RANGES: usize = 128;

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
}

pub struct CudaBackend {
    driver: &'static Driver,
    cupti: Option<&'static Cupti>,
    groups: MetricGroups,
    devices: HashMap<DeviceId, DeviceState>,
    current: Option<CurrentDispatch>,
    /// Streams the application created or launched on (handles as integers).
    streams: HashSet<usize>,
    /// Set when counters cannot be collected on a device (one message, then timestamps only).
    counters_broken: HashMap<DeviceId, String>,
    /// Results of groups measured together with another group in one hardware pass, kept for
    /// the later passes of the same replay (one per execution).
    held: HashMap<(DeviceId, usize), Vec<PassResult>>,
    /// The pass started and not yet stopped: device and group.
    open_pass: Option<(DeviceId, Option<usize>)>,
    /// The window pass in progress, if any.
    window: Option<WindowPass>,
    /// The window pass in progress holds the [`MeasureGate`] (released at its stop, whichever
    /// thread stops it).
    window_holds_gate: bool,
    /// The device identity the CLI checked the groups with (see [`Self::set_identity_check`]).
    checked_identity: Option<String>,
    /// Says a warning once (stderr and a record); set with the identity check.
    warn: Option<WarnFn>,
    /// Range profilers being set up off the application's threads, by context (see
    /// [`Self::prepare_counters`]).
    preparing: HashMap<usize, Preparation>,
}

/// A range profiler set up on a thread of its own, and the process that started the thread
/// (a child forked meanwhile has no such thread: it must not wait for it).
type Preparation = (
    u32,
    std::thread::JoinHandle<Result<RangeProfiler, CudaError>>,
);

/// The set-up's result, or `None` when the thread belongs to another process (see
/// [`Preparation`]).
fn join_preparation((pid, handle): Preparation) -> Option<Result<RangeProfiler, CudaError>> {
    if pid != std::process::id() {
        return None;
    }
    Some(
        handle
            .join()
            .unwrap_or_else(|_| Err(CudaError::Load("the counter set-up thread panicked".into()))),
    )
}

/// Environment variable: `0` leaves the counters' set-up to the first dispatch instead of a
/// thread started at context creation ([`CudaBackend::prepare_counters`]).
pub const ENV_EARLY_SETUP: &str = "KREPLAY_EARLY_SETUP";

/// Says a warning once (stderr and a record).
pub type WarnFn = Box<dyn Fn(&str) + Send>;

/// A pass over a replay window: up to `ranges` executions, each ended by an event.
#[derive(Debug)]
struct WindowPass {
    device: DeviceId,
    ctx: CUcontext,
    /// Events recorded after each execution so far, in order (from the device's pool).
    boundaries: usize,
    ranges: usize,
}

/// Makes `ctx` current on this thread for the guard's life when it is not already (a replay
/// window may be closed, and its passes run, on another application thread).
struct ContextGuard {
    driver: &'static Driver,
    pushed: bool,
}

impl ContextGuard {
    fn make_current(driver: &'static Driver, ctx: CUcontext) -> Result<ContextGuard, CudaError> {
        let mut current: CUcontext = std::ptr::null_mut();
        // SAFETY: reads and (if needed) pushes a live context handle.
        unsafe {
            drv!(driver, cuCtxGetCurrent(&mut current))?;
            if current == ctx || ctx.is_null() {
                return Ok(ContextGuard {
                    driver,
                    pushed: false,
                });
            }
            drv!(driver, cuCtxPushCurrent_v2(ctx))?;
        }
        Ok(ContextGuard {
            driver,
            pushed: true,
        })
    }
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped: CUcontext = std::ptr::null_mut();
            // SAFETY: pops the context this guard pushed.
            let _ = unsafe { drv!(self.driver, cuCtxPopCurrent_v2(&mut popped)) };
        }
    }
}

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
    ) -> Self {
        CudaBackend {
            driver,
            cupti,
            groups,
            devices: HashMap::new(),
            current: None,
            streams: HashSet::new(),
            counters_broken: HashMap::new(),
            held: HashMap::new(),
            open_pass: None,
            window: None,
            window_holds_gate: false,
            checked_identity: None,
            warn: None,
            preparing: HashMap::new(),
        }
    }

    /// Starts setting the counters up for a context the application just created, on a thread
    /// of the tool's own: CUPTI's profiler initialisation, the device's counter-availability
    /// image (≈ 130 ms on an H200), the group checks and configuration images, and the first
    /// configuration programmed into the hardware ([`RangeProfiler::warm_up`], ≈ 135–240 ms).
    /// The application's first dispatch with counters on that context takes the result
    /// (waiting for it if needed), so the set-up overlaps what the application does in between
    /// (allocations, copies, module loads, library handles). `KREPLAY_EARLY_SETUP=0` leaves
    /// it to the first dispatch.
    pub fn prepare_counters(&mut self, ctx: CUcontext) {
        let Some(cupti) = self.cupti else {
            return;
        };
        if self.groups.is_empty()
            || ctx.is_null()
            || self.preparing.contains_key(&(ctx as usize))
            || std::env::var(ENV_EARLY_SETUP).is_ok_and(|v| v.trim() == "0")
        {
            return;
        }
        let driver = self.driver;
        let groups = self.groups.clone();
        let context = ctx as usize;
        let ranges = MAX_WINDOW_RANGES;
        let spawned = std::thread::Builder::new()
            .name("kreplay-setup".into())
            .spawn(move || {
                // Its CUDA calls are the tool's own (the callbacks ignore them).
                let _scope = ToolScope::enter();
                let ctx = context as CUcontext;
                let _current = ContextGuard::make_current(driver, ctx)?;
                let mut device: sys::CUdevice = 0;
                // SAFETY: the context pushed above is current on this thread.
                unsafe { drv!(driver, cuCtxGetDevice(&mut device))? };
                let mut profiler =
                    RangeProfiler::new(cupti, ctx, device, device as usize, &groups)?;
                if let Err(e) = profiler.warm_up(ranges) {
                    // The first dispatch programs the counters itself, as without set-up.
                    crate::debug::line(&format!("counters not programmed ahead: {e}"));
                }
                Ok(profiler)
            });
        // Without a thread the first dispatch sets the counters up itself.
        if let Ok(handle) = spawned {
            self.preparing.insert(context, (std::process::id(), handle));
        }
    }

    /// Waits for the set-up started for `ctx`, if any.
    fn take_preparation(&mut self, ctx: CUcontext) -> Option<Result<RangeProfiler, CudaError>> {
        let preparation = self.preparing.remove(&(ctx as usize))?;
        let began = std::time::Instant::now();
        let result = join_preparation(preparation)?;
        crate::debug::line(&format!(
            "waited {:.1} ms for the counter set-up begun at context creation",
            crate::debug::ms(began.elapsed())
        ));
        Some(result)
    }

    /// Waits for every set-up still running (before the process or its contexts end).
    pub fn finish_preparations(&mut self) {
        for (_, preparation) in self.preparing.drain() {
            join_preparation(preparation);
        }
    }

    /// Compares device 0's identity, when its counters are set up, with `digest` (the CLI's,
    /// [`crate::catalog::identity_cache::digest`]) and calls `warn` with
    /// [`STALE_WARNING`](crate::catalog::identity_cache::STALE_WARNING) when they differ, so
    /// that the CLI drops the cached identity it used.
    pub fn set_identity_check(&mut self, digest: Option<String>, warn: WarnFn) {
        self.checked_identity = digest;
        self.warn = Some(warn);
    }

    /// The most launches one replay window may hold (the ranges one counter pass collects).
    /// Without counters there is nothing to amortise: 1.
    pub fn max_window(&self) -> usize {
        if self.groups.is_empty() {
            1
        } else {
            MAX_WINDOW_RANGES
        }
    }

    /// Starts a pass of `group` over a window of up to `ranges` executions.
    pub fn start_window_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
        ranges: usize,
    ) -> Result<(), BackendError> {
        let _scope = ToolScope::enter();
        let ctx = self.state(device)?.ctx;
        let _ctx = ContextGuard::make_current(self.driver, ctx).map_err(failed)?;
        let current = self.current()?;
        // A later pass, run by whichever thread closes the window: the restore just finished
        // synchronously, so the tool's idle stream marks the pass's start.
        let stream = if current.passive {
            self.state(device)?.tool_stream
        } else {
            current.stream
        };
        self.ensure_anchor(device).map_err(failed)?;
        if let Some(group) = group {
            match self.profiler(device) {
                Some(profiler) => {
                    if let Err(e) = profiler.start_ranges(group, ranges) {
                        self.counters_broken.insert(device, e.to_string());
                        return Err(failed(e));
                    }
                }
                None => {
                    return Err(BackendError::Failed(format!(
                        "counters unavailable: {}",
                        self.counters_unavailable(device)
                            .unwrap_or("no counter groups")
                    )))
                }
            }
        }
        self.open_pass = Some((device, group));
        self.window = Some(WindowPass {
            device,
            ctx,
            boundaries: 0,
            ranges,
        });
        let d = self.driver;
        let state = self.state(device)?;
        // SAFETY: the tool's own event on the window's first stream.
        unsafe { drv!(d, cuEventRecord(state.pass_start, stream)) }.map_err(failed)
    }

    /// Whether a window pass is in progress.
    pub fn window_active(&self) -> bool {
        self.window.is_some()
    }

    /// Records the end of one execution of the window pass in progress.
    fn mark_window_boundary(&mut self, stream: CUstream) -> Result<(), CudaError> {
        let d = self.driver;
        let Some(window) = self.window.as_ref() else {
            return Ok(());
        };
        let index = window.boundaries;
        let device = window.device;
        let Some(state) = self.devices.get_mut(&device) else {
            return Ok(());
        };
        while state.window_events.len() <= index {
            let mut event: CUevent = std::ptr::null_mut();
            // SAFETY: creates an event in the window's (current) context.
            unsafe {
                drv!(
                    d,
                    cuEventCreate(&mut event, sys::CUevent_flags_enum_CU_EVENT_DEFAULT)
                )?
            };
            state.window_events.push(event);
        }
        // SAFETY: the tool's own event on the execution's stream.
        unsafe { drv!(d, cuEventRecord(state.window_events[index], stream)) }?;
        // Counted only once its event is recorded: stop_window_pass reads that many events.
        if let Some(window) = self.window.as_mut() {
            window.boundaries += 1;
        }
        Ok(())
    }

    /// Stops the window pass: one result per execution, in execution order.
    pub fn stop_window_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
        ranges: usize,
    ) -> Result<Vec<PassResult>, BackendError> {
        let _scope = ToolScope::enter();
        self.open_pass = None;
        let window = self
            .window
            .take()
            .ok_or_else(|| BackendError::Failed("no window pass in progress".into()))?;
        let _ctx = ContextGuard::make_current(self.driver, window.ctx).map_err(failed)?;
        let d = self.driver;
        let (start_ev, anchor, anchor_ns, events) = {
            let state = self.state(device)?;
            let events: Vec<CUevent> = state
                .window_events
                .get(..window.boundaries)
                .ok_or_else(|| BackendError::Failed("window pass events missing".into()))?
                .to_vec();
            (state.pass_start, state.anchor, state.anchor_host_ns, events)
        };
        if let Some(last) = events.last() {
            // SAFETY: the tool's own event; waits for the window's last execution.
            unsafe { drv!(d, cuEventSynchronize(*last)) }.map_err(failed)?;
        }
        let mut results = Vec::with_capacity(events.len());
        let mut previous = start_ev;
        for event in &events {
            let start_ns = anchor_ns + self.elapsed_ns(anchor, previous).map_err(failed)?;
            let end_ns = start_ns + self.elapsed_ns(previous, *event).map_err(failed)?;
            results.push(PassResult {
                counters: Vec::new(),
                start_ns,
                end_ns,
            });
            previous = *event;
        }
        if let Some(group) = group {
            let profiler = self.profiler(device).ok_or_else(|| {
                BackendError::Failed(format!("counters of group {group} were not started"))
            })?;
            match profiler.stop_ranges(group, ranges.max(window.ranges)) {
                Ok(collected) => {
                    // Ranges are matched to launches by order: a count that differs (a kernel
                    // the window did not launch, or one it did that was not measured) would
                    // give launches another kernel's values.
                    let counted = collected.first().map_or(0, |(_, values)| values.len());
                    if counted != results.len() {
                        return Err(BackendError::Failed(format!(
                            "the range profiler measured {counted} kernel(s) where the window launched {}",
                            results.len()
                        )));
                    }
                    return Ok(self.distribute(device, group, results, collected));
                }
                Err(e) => {
                    self.counters_broken.insert(device, e.to_string());
                    return Err(failed(e));
                }
            }
        }
        Ok(results)
    }

    /// Names the values a hardware pass collected: returns `group`'s results (the executions'
    /// timestamps with its counters) and holds those of the other groups the pass measured.
    fn distribute(
        &mut self,
        device: DeviceId,
        group: usize,
        executions: Vec<PassResult>,
        collected: Vec<GroupValues>,
    ) -> Vec<PassResult> {
        let mut requested = Vec::new();
        for (g, ranges) in collected {
            let names = self.groups.get(g).cloned().unwrap_or_default();
            let results: Vec<PassResult> = executions
                .iter()
                .zip(ranges)
                .map(|(execution, values)| PassResult {
                    counters: names
                        .iter()
                        .cloned()
                        .zip(values)
                        .map(|(name, value)| CounterSample { name, value })
                        .collect(),
                    ..execution.clone()
                })
                .collect();
            if g == group {
                requested = results;
            } else {
                self.held.insert((device, g), results);
            }
        }
        requested
    }

    /// Executions a replay of `groups` needs on `device`; `None` when counters are off there or
    /// not set up yet (the first replay then snapshots as usual, and the profiler's one-off
    /// setup stays in its first pass's time instead of looking like snapshot time).
    pub fn executions_for(&mut self, device: DeviceId, groups: &[Option<usize>]) -> Option<usize> {
        if self.counters_broken.contains_key(&device) {
            return None;
        }
        // A set-up begun at context creation is finished now rather than at the first pass,
        // so that the first replay already knows whether it needs a snapshot.
        let pending = self
            .current
            .is_some_and(|c| self.preparing.contains_key(&(c.ctx as usize)));
        if pending {
            return self.profiler(device).map(|p| p.executions_for(groups));
        }
        let profiler = self.devices.get(&device)?.profiler.as_ref()?;
        Some(profiler.executions_for(groups))
    }

    /// Forgets the results held from an earlier replay on `device`.
    pub fn replay_starts(&mut self, device: DeviceId) {
        self.held.retain(|(d, _), _| *d != device);
    }

    /// `group`'s results for the current replay's `executions` executions, when an earlier
    /// pass measured them (packed into its hardware pass).
    pub fn held_results(
        &mut self,
        device: DeviceId,
        group: usize,
        executions: usize,
    ) -> Option<Vec<PassResult>> {
        let results = self.held.remove(&(device, group))?;
        (results.len() == executions).then_some(results)
    }

    /// A copy of the application's launch that stays valid after its callback (for a window's
    /// later passes); also marks the end of this execution in the window pass.
    pub fn retain_launch(&mut self, launch: &CudaLaunch) -> Result<CudaLaunch, BackendError> {
        let _scope = ToolScope::enter();
        let current = self.current()?;
        let owned = match launch {
            CudaLaunch::Callback { api, params } => {
                // SAFETY: the engine asks inside the launch's callback.
                unsafe {
                    OwnedLaunch::copy(self.driver, current.ctx, *api, *params, current.stream)
                }
                .map_err(failed)?
            }
            CudaLaunch::Owned(_) => {
                return Err(BackendError::Failed(
                    "the launch is already a kept copy".into(),
                ))
            }
        };
        if self.window.is_some() {
            self.mark_window_boundary(current.stream).map_err(failed)?;
        }
        Ok(CudaLaunch::Owned(Box::new(owned)))
    }

    /// Closes a pass whose execution never happened (the application's launch failed):
    /// counters are stopped and dropped, nothing is recorded.
    pub fn abandon_pass(&mut self) {
        let _scope = ToolScope::enter();
        if self.window.is_some() {
            // A window's pass spans several launches; the engine ends that window itself.
            return;
        }
        if let Some((device, Some(group))) = self.open_pass.take() {
            if let Some(profiler) = self
                .devices
                .get_mut(&device)
                .and_then(|s| s.profiler.as_mut())
            {
                profiler.abandon(group);
            }
        }
    }

    pub fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// Names the launch the engine is about to handle. `stream` is the launch's stream with the
    /// default stream resolved (`STREAM_PER_THREAD` for `_ptsz` launches on stream 0).
    pub fn begin_dispatch(
        &mut self,
        ctx: CUcontext,
        device: DeviceId,
        stream: CUstream,
    ) -> Result<CurrentDispatch, BackendError> {
        let _scope = ToolScope::enter();
        let mut cu_device: sys::CUdevice = 0;
        // SAFETY: writes the device ordinal of the current context.
        unsafe { drv!(self.driver, cuCtxGetDevice(&mut cu_device)) }.map_err(failed)?;
        self.streams.insert(stream as usize);
        let current = CurrentDispatch {
            ctx,
            cu_device,
            stream,
            passive: false,
        };
        self.current = Some(current);
        let stale = self.devices.get(&device).is_some_and(|s| s.ctx != ctx);
        if stale {
            // The application uses another context on this device now: start afresh there.
            self.devices.remove(&device);
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

    /// A stream the application created: drains wait for it too.
    pub fn note_stream(&mut self, stream: CUstream) {
        if !stream.is_null() {
            self.streams.insert(stream as usize);
        }
    }

    /// A stream is being destroyed: stop polling it.
    pub fn forget_stream(&mut self, stream: CUstream) {
        self.streams.remove(&(stream as usize));
    }

    /// A context is being destroyed: drop what the tool holds in it (its memory goes with it).
    pub fn forget_context(&mut self, ctx: CUcontext) {
        let _scope = ToolScope::enter();
        if let Some(preparation) = self.preparing.remove(&(ctx as usize)) {
            join_preparation(preparation);
        }
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
        self.streams.clear();
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
                crate::debug::line(&format!("device {device}: {}", profiler.start_times()));
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
                let passes: Vec<String> = packing
                    .iter()
                    .map(|groups| {
                        groups
                            .iter()
                            .map(|g| g.to_string())
                            .collect::<Vec<_>>()
                            .join("+")
                    })
                    .collect();
                Some(format!(
                    "device {device} ({}): {} counter group(s) in {} hardware pass(es) [{}]; {} configuration change(s){}",
                    profiler.chip(),
                    self.groups.len(),
                    packing.len(),
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
        let d = self.driver;
        let mut tool_stream: CUstream = std::ptr::null_mut();
        let mut events = [std::ptr::null_mut(); 3];
        // SAFETY: creates objects in the current context; handles are written by the driver.
        unsafe {
            drv!(
                d,
                cuStreamCreate(
                    &mut tool_stream,
                    sys::CUstream_flags_enum_CU_STREAM_NON_BLOCKING
                )
            )?;
            for event in &mut events {
                drv!(
                    d,
                    cuEventCreate(event, sys::CUevent_flags_enum_CU_EVENT_DEFAULT)
                )?;
            }
        }
        Ok(DeviceState {
            ctx,
            tool_stream,
            device_arena: None,
            host_arena: None,
            profiler: None,
            pass_start: events[0],
            pass_end: events[1],
            anchor: events[2],
            anchor_host_ns: 0,
            anchored_at: None,
            window_events: Vec::new(),
        })
    }

    fn free_device_state(&self, mut state: DeviceState) {
        let d = self.driver;
        state.profiler = None;
        // SAFETY: handles created by this backend; errors while tearing down are ignored.
        unsafe {
            if let Some((ptr, _)) = state.device_arena.take() {
                let _ = drv!(d, cuMemFree_v2(ptr));
            }
            if let Some((ptr, _)) = state.host_arena.take() {
                let _ = drv!(d, cuMemFreeHost(ptr));
            }
            for event in [state.pass_start, state.pass_end, state.anchor]
                .into_iter()
                .chain(state.window_events.drain(..))
            {
                let _ = drv!(d, cuEventDestroy_v2(event));
            }
            let _ = drv!(d, cuStreamDestroy_v2(state.tool_stream));
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
            drv!(d, cuEventRecord(state.anchor, state.tool_stream))?;
            drv!(d, cuEventSynchronize(state.anchor))?;
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
        let current = self.current?;
        let needs_new = self
            .devices
            .get(&device)
            .is_some_and(|s| s.profiler.is_none());
        if needs_new {
            let prepared = self.take_preparation(current.ctx);
            let built = match (prepared, self.cupti) {
                (Some(prepared), _) => prepared,
                (None, Some(cupti)) => RangeProfiler::new(
                    cupti,
                    current.ctx,
                    current.cu_device,
                    current.cu_device as usize,
                    &self.groups,
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
            warn(&crate::catalog::identity_cache::stale_warning(
                checked,
                profiler.identity_digest(),
            ));
        }
    }

    /// Free memory of the current context's device now, bytes (0 when it cannot be read).
    fn memory_free_now(&self) -> u64 {
        let (mut free, mut total) = (0usize, 0usize);
        // SAFETY: writes two sizes for the current context's device.
        match unsafe { drv!(self.driver, cuMemGetInfo_v2(&mut free, &mut total)) } {
            Ok(()) => free as u64,
            Err(_) => 0,
        }
    }

    fn ensure_arena(
        &mut self,
        device: DeviceId,
        place: Staging,
        bytes: u64,
    ) -> Result<u64, BackendError> {
        let d = self.driver;
        let state = self.state(device)?;
        // Grow in 2 MiB steps so that small variations reuse the arena.
        let want = bytes.div_ceil(2 << 20).max(1) * (2 << 20);
        match place {
            Staging::Device => {
                if let Some((ptr, size)) = state.device_arena {
                    if size >= bytes {
                        return Ok(ptr);
                    }
                    // SAFETY: the arena is the tool's own allocation.
                    unsafe { drv!(d, cuMemFree_v2(ptr)) }.map_err(failed)?;
                    state.device_arena = None;
                }
                let mut ptr: CUdeviceptr = 0;
                // SAFETY: writes the new allocation's address.
                match unsafe { drv!(d, cuMemAlloc_v2(&mut ptr, want as usize)) } {
                    Ok(()) => {
                        state.device_arena = Some((ptr, want));
                        Ok(ptr)
                    }
                    Err(_) => Err(BackendError::OutOfStagingMemory(Staging::Device, bytes)),
                }
            }
            Staging::Host => {
                if let Some((ptr, size)) = state.host_arena {
                    if size >= bytes {
                        return Ok(ptr as u64);
                    }
                    // SAFETY: the arena is the tool's own pinned allocation.
                    unsafe { drv!(d, cuMemFreeHost(ptr)) }.map_err(failed)?;
                    state.host_arena = None;
                }
                let mut ptr: *mut std::ffi::c_void = std::ptr::null_mut();
                // SAFETY: writes the new pinned allocation's address.
                match unsafe {
                    drv!(
                        d,
                        cuMemHostAlloc(&mut ptr, want as usize, sys::CU_MEMHOSTALLOC_PORTABLE)
                    )
                } {
                    Ok(()) => {
                        state.host_arena = Some((ptr, want));
                        Ok(ptr as u64)
                    }
                    Err(_) => Err(BackendError::OutOfStagingMemory(Staging::Host, bytes)),
                }
            }
            Staging::None => Err(BackendError::Failed("snapshot to nowhere".into())),
        }
    }

    /// Copies between tracked memory and staging on the tool stream, then waits for it.
    fn copy(&mut self, snapshot: &CudaSnapshot, to_staging: bool) -> Result<(), BackendError> {
        let d = self.driver;
        let state = self.state(snapshot.device)?;
        // A window may be closed on another thread: its copies run in the device's context.
        let _ctx = ContextGuard::make_current(d, state.ctx).map_err(failed)?;
        let stream = state.tool_stream;
        let base = match snapshot.place {
            Staging::Device => state.device_arena.map(|(p, _)| p),
            Staging::Host => state.host_arena.map(|(p, _)| p as u64),
            Staging::None => None,
        }
        .ok_or_else(|| BackendError::Failed("snapshot staging was released".into()))?;
        for (region, offset) in &snapshot.entries {
            let staged = base + offset;
            let n = region.bytes as usize;
            // SAFETY: regions are live tracked allocations; staging was sized for them.
            let result = unsafe {
                match (snapshot.place, to_staging) {
                    (Staging::Device, true) => {
                        drv!(d, cuMemcpyDtoDAsync_v2(staged, region.base, n, stream))
                    }
                    (Staging::Device, false) => {
                        drv!(d, cuMemcpyDtoDAsync_v2(region.base, staged, n, stream))
                    }
                    (_, true) => drv!(
                        d,
                        cuMemcpyDtoHAsync_v2(staged as *mut _, region.base, n, stream)
                    ),
                    (_, false) => drv!(
                        d,
                        cuMemcpyHtoDAsync_v2(region.base, staged as *const _, n, stream)
                    ),
                }
            };
            result.map_err(failed)?;
        }
        // SAFETY: the tool's own stream.
        unsafe { drv!(d, cuStreamSynchronize(stream)) }.map_err(failed)
    }
}

impl ReplayBackend for CudaBackend {
    type Launch = CudaLaunch;
    type Snapshot = CudaSnapshot;

    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        let _scope = ToolScope::enter();
        let d = self.driver;
        let ctx = self.state(device)?.ctx;
        let _ctx = ContextGuard::make_current(d, ctx).map_err(failed)?;
        let started = Instant::now();
        let mut pending: Vec<usize> = self.streams.iter().copied().collect();
        pending.push(0);
        pending.push(STREAM_PER_THREAD as usize);
        let mut sleep = Duration::from_micros(20);
        loop {
            let mut still = Vec::new();
            for stream in pending {
                // SAFETY: a stream handle the application created and has not destroyed
                // (destroyed streams are forgotten in their resource callback).
                match unsafe { drv!(d, cuStreamQuery(stream as CUstream)) } {
                    Ok(()) => {}
                    Err(e)
                        if e.driver_code()
                            == Some(sys::cudaError_enum_CUDA_ERROR_NOT_READY as i32) =>
                    {
                        still.push(stream)
                    }
                    // A handle that is no longer valid (destroyed behind our back): stop asking.
                    Err(_) => {}
                }
            }
            if still.is_empty() {
                break;
            }
            if started.elapsed() >= deadline {
                return Err(BackendError::DrainTimeout { device, deadline });
            }
            std::thread::sleep(sleep);
            sleep = (sleep * 2).min(Duration::from_millis(2));
            pending = still;
        }
        // Work on streams the tool never saw (other libraries' streams): wait for it too.
        // SAFETY: synchronises the current context.
        unsafe { drv!(d, cuCtxSynchronize()) }.map_err(failed)
    }

    fn device_free_bytes(&mut self, device: DeviceId) -> u64 {
        let _scope = ToolScope::enter();
        // The kept staging arena is free for staging: a snapshot that fits reuses it, and a
        // larger one frees it before allocating.
        let arena = self
            .devices
            .get(&device)
            .and_then(|s| s.device_arena)
            .map_or(0, |(_, size)| size);
        self.memory_free_now().saturating_add(arena)
    }

    fn snapshot(
        &mut self,
        device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<CudaSnapshot, BackendError> {
        let _scope = ToolScope::enter();
        let mut entries = Vec::with_capacity(regions.len());
        let mut offset = 0u64;
        for region in regions {
            entries.push((*region, offset));
            offset += region.bytes.div_ceil(256) * 256;
        }
        self.ensure_arena(device, place, offset.max(1))?;
        let snapshot = CudaSnapshot {
            device,
            place,
            entries,
            bytes: regions.iter().map(|r| r.bytes).sum(),
        };
        self.copy(&snapshot, true)?;
        Ok(snapshot)
    }

    fn restore(&mut self, snapshot: &CudaSnapshot) -> Result<u64, BackendError> {
        let _scope = ToolScope::enter();
        self.copy(snapshot, false)?;
        Ok(snapshot.bytes)
    }

    fn release(&mut self, snapshot: CudaSnapshot) {
        // The arena stays for the next dispatch, unless device memory has become tight: then
        // the application gets it back (a later snapshot allocates again, or stages on the host).
        if snapshot.place != Staging::Device {
            return;
        }
        let _scope = ToolScope::enter();
        let d = self.driver;
        let Some(ctx) = self.devices.get(&snapshot.device).map(|s| s.ctx) else {
            return;
        };
        let Ok(_ctx) = ContextGuard::make_current(d, ctx) else {
            return;
        };
        if self.memory_free_now() >= DEFAULT_STAGING_RESERVE_BYTES {
            return;
        }
        if let Some(state) = self.devices.get_mut(&snapshot.device) {
            if let Some((ptr, _)) = state.device_arena.take() {
                // SAFETY: the arena is the tool's own allocation and no copy uses it now (the
                // snapshot is released and copies are synchronous).
                let _ = unsafe { drv!(d, cuMemFree_v2(ptr)) };
            }
        }
    }

    fn start_pass(&mut self, device: DeviceId, group: Option<usize>) -> Result<(), BackendError> {
        let _scope = ToolScope::enter();
        let current = self.current()?;
        self.ensure_anchor(device).map_err(failed)?;
        self.open_pass = Some((device, group));
        if let Some(group) = group {
            match self.profiler(device) {
                Some(profiler) => {
                    if let Err(e) = profiler.start(group) {
                        self.counters_broken.insert(device, e.to_string());
                        return Err(failed(e));
                    }
                }
                None => {
                    let why = self
                        .counters_broken
                        .get(&device)
                        .cloned()
                        .unwrap_or_else(|| "no counter groups configured".into());
                    return Err(BackendError::Failed(format!("counters unavailable: {why}")));
                }
            }
        }
        let d = self.driver;
        let state = self.state(device)?;
        // SAFETY: the tool's own event on the launch's stream.
        unsafe { drv!(d, cuEventRecord(state.pass_start, current.stream)) }.map_err(failed)
    }

    fn stop_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
    ) -> Result<PassResult, BackendError> {
        let _scope = ToolScope::enter();
        self.open_pass = None;
        let current = self.current()?;
        let d = self.driver;
        let (start_ev, end_ev, anchor, anchor_ns) = {
            let state = self.state(device)?;
            (
                state.pass_start,
                state.pass_end,
                state.anchor,
                state.anchor_host_ns,
            )
        };
        // SAFETY: the tool's own events; the synchronize waits for this execution only.
        unsafe {
            drv!(d, cuEventRecord(end_ev, current.stream)).map_err(failed)?;
            drv!(d, cuEventSynchronize(end_ev)).map_err(failed)?;
        }
        let start_ns = anchor_ns + self.elapsed_ns(anchor, start_ev).map_err(failed)?;
        let end_ns = start_ns + self.elapsed_ns(start_ev, end_ev).map_err(failed)?;
        let execution = PassResult {
            counters: Vec::new(),
            start_ns,
            end_ns,
        };
        if let Some(group) = group {
            let started = self
                .devices
                .get(&device)
                .and_then(|s| s.profiler.as_ref())
                .is_some();
            if !started || self.counters_broken.contains_key(&device) {
                return Err(BackendError::Failed(format!(
                    "counters of group {group} were not started on device {device}"
                )));
            }
            if let Some(profiler) = self.profiler(device) {
                match profiler.stop_ranges(group, 1) {
                    Ok(collected) => {
                        let mut results =
                            self.distribute(device, group, vec![execution], collected);
                        return results.pop().ok_or_else(|| {
                            BackendError::Failed(format!(
                                "the range profiler returned no values for group {group}"
                            ))
                        });
                    }
                    Err(e) => {
                        self.counters_broken.insert(device, e.to_string());
                        return Err(failed(e));
                    }
                }
            }
        }
        Ok(execution)
    }

    fn relaunch(&mut self, launch: &CudaLaunch) -> Result<(), BackendError> {
        let _scope = ToolScope::enter();
        let d = self.driver;
        let (api, params) = match launch {
            CudaLaunch::Owned(owned) => {
                let _ctx = ContextGuard::make_current(d, owned.ctx).map_err(failed)?;
                owned.launch(d).map_err(failed)?;
                if self.window.is_some() {
                    self.mark_window_boundary(owned.stream()).map_err(failed)?;
                }
                return Ok(());
            }
            CudaLaunch::Callback { api, params } => (*api, *params),
        };
        // SAFETY: `params` is the parameter block of the launch whose callback is running;
        // CUDA keeps it valid for the callback's duration.
        let result = unsafe {
            match api {
                LaunchApi::Kernel { per_thread } => {
                    let p = &*(params as *const sys::cuLaunchKernel_params);
                    drv!(
                        d,
                        cuLaunchKernel(
                            p.f,
                            p.gridDimX,
                            p.gridDimY,
                            p.gridDimZ,
                            p.blockDimX,
                            p.blockDimY,
                            p.blockDimZ,
                            p.sharedMemBytes,
                            resolve_stream(p.hStream, per_thread),
                            p.kernelParams,
                            p.extra
                        )
                    )
                }
                LaunchApi::Cooperative { per_thread } => {
                    let p = &*(params as *const sys::cuLaunchCooperativeKernel_params);
                    drv!(
                        d,
                        cuLaunchCooperativeKernel(
                            p.f,
                            p.gridDimX,
                            p.gridDimY,
                            p.gridDimZ,
                            p.blockDimX,
                            p.blockDimY,
                            p.blockDimZ,
                            p.sharedMemBytes,
                            resolve_stream(p.hStream, per_thread),
                            p.kernelParams
                        )
                    )
                }
                LaunchApi::KernelEx { per_thread } => {
                    let p = &*(params as *const sys::cuLaunchKernelEx_params);
                    let mut config = *p.config;
                    config.hStream = resolve_stream(config.hStream, per_thread);
                    drv!(d, cuLaunchKernelEx(&config, p.f, p.kernelParams, p.extra))
                }
                LaunchApi::Graph | LaunchApi::MultiDevice => {
                    return Err(BackendError::Failed(
                        "graph and multi-device launches are never replayed".into(),
                    ))
                }
            }
        };
        result.map_err(failed)
    }
}

/// Serialises measured executions: the per-device events and the range profiler serve one
/// execution at a time, also when application threads launch concurrently with one group
/// (replayed dispatches are already serialised by the engine's replay window).
#[derive(Default)]
pub struct MeasureGate {
    busy: Mutex<bool>,
    freed: Condvar,
}

impl MeasureGate {
    fn acquire(&self) {
        let mut busy = self.busy.lock().unwrap_or_else(|e| e.into_inner());
        while *busy {
            busy = self.freed.wait(busy).unwrap_or_else(|e| e.into_inner());
        }
        *busy = true;
    }

    fn release(&self) {
        *self.busy.lock().unwrap_or_else(|e| e.into_inner()) = false;
        self.freed.notify_one();
    }
}

/// The engine's view of the backend for one dispatch: every call locks the shared
/// [`CudaBackend`] only for its own duration (never while the engine waits for another thread's
/// replay window, which would deadlock), with this dispatch's context and stream.
pub struct DispatchBackend<'a> {
    shared: &'a Mutex<CudaBackend>,
    gate: &'a MeasureGate,
    current: CurrentDispatch,
    measuring: bool,
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
            measuring: false,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'a, CudaBackend> {
        let mut backend = self.shared.lock().unwrap_or_else(|e| e.into_inner());
        backend.current = Some(self.current);
        backend
    }

    /// The application's launch failed after the engine started pass 0: stop the counters
    /// without reading them and let the next dispatch measure normally.
    pub fn abandon(&mut self) {
        if self.measuring {
            self.lock().abandon_pass();
        }
        self.end_measure();
    }

    fn end_measure(&mut self) {
        if self.measuring {
            self.measuring = false;
            self.gate.release();
        }
    }
}

impl Drop for DispatchBackend<'_> {
    fn drop(&mut self) {
        self.end_measure();
    }
}

impl ReplayBackend for DispatchBackend<'_> {
    type Launch = CudaLaunch;
    type Snapshot = CudaSnapshot;

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
    ) -> Result<CudaSnapshot, BackendError> {
        self.lock().snapshot(device, regions, place)
    }

    fn restore(&mut self, snapshot: &CudaSnapshot) -> Result<u64, BackendError> {
        self.lock().restore(snapshot)
    }

    fn release(&mut self, snapshot: CudaSnapshot) {
        self.lock().release(snapshot)
    }

    fn start_pass(&mut self, device: DeviceId, group: Option<usize>) -> Result<(), BackendError> {
        if !self.measuring {
            self.gate.acquire();
            self.measuring = true;
        }
        let result = self.lock().start_pass(device, group);
        if result.is_err() {
            self.end_measure();
        }
        result
    }

    fn stop_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
    ) -> Result<PassResult, BackendError> {
        let result = self.lock().stop_pass(device, group);
        self.end_measure();
        result
    }

    fn relaunch(&mut self, launch: &CudaLaunch) -> Result<(), BackendError> {
        self.lock().relaunch(launch)
    }

    fn max_window(&mut self, _device: DeviceId) -> usize {
        self.lock().max_window()
    }

    fn start_window_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
        ranges: usize,
    ) -> Result<(), BackendError> {
        // The window, not this handle, holds the gate: another thread may stop the pass.
        if self.measuring {
            self.measuring = false;
        } else {
            self.gate.acquire();
        }
        let mut backend = self.lock();
        let result = backend.start_window_pass(device, group, ranges);
        if result.is_ok() {
            backend.window_holds_gate = true;
        } else {
            drop(backend);
            self.gate.release();
        }
        result
    }

    fn stop_window_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
        ranges: usize,
    ) -> Result<Vec<PassResult>, BackendError> {
        if !self.lock().window_active() {
            return self.stop_pass(device, group).map(|r| vec![r]);
        }
        let (result, held) = {
            let mut backend = self.lock();
            let result = backend.stop_window_pass(device, group, ranges);
            (result, std::mem::take(&mut backend.window_holds_gate))
        };
        if held {
            self.gate.release();
        }
        result
    }

    fn retain_launch(&mut self, launch: &CudaLaunch) -> Result<CudaLaunch, BackendError> {
        self.lock().retain_launch(launch)
    }

    fn executions_for(&mut self, device: DeviceId, groups: &[Option<usize>]) -> Option<usize> {
        self.lock().executions_for(device, groups)
    }

    fn replay_starts(&mut self, device: DeviceId) {
        self.lock().replay_starts(device)
    }

    fn held_results(
        &mut self,
        device: DeviceId,
        group: usize,
        executions: usize,
    ) -> Option<Vec<PassResult>> {
        self.lock().held_results(device, group, executions)
    }
}

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
        // Device memory goes with the contexts at exit; only the profiler objects are closed,
        // which `RangeProfiler`'s own drop does.
        for state in self.devices.values_mut() {
            state.profiler = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_gate_admits_one_execution_at_a_time() {
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
                        gate.acquire();
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        std::thread::yield_now();
                        inside.fetch_sub(1, Ordering::SeqCst);
                        gate.release();
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
    fn per_thread_launches_on_stream_zero_use_the_per_thread_stream() {
        assert_eq!(
            resolve_stream(std::ptr::null_mut(), true),
            STREAM_PER_THREAD
        );
        assert!(resolve_stream(std::ptr::null_mut(), false).is_null());
        let s = 0x1234 as CUstream;
        assert_eq!(resolve_stream(s, true), s);
    }
}
