//! What the backend keeps per device (in the application's context there): the tool's stream,
//! spare staging, the capture log, the range profiler, the events that time launches, and the
//! measurement of the unit in progress.

use crate::flush::ApplicationContextFlusher;
use kreplay_core::backend::UnitPlan;
use kreplay_counters::profiler::RangeProfiler;
use kreplay_cuda::handles::{DeviceMemory, Event, Stream};
use kreplay_cuda::memory::StagingBuffer;
use kreplay_cuda::{CUcontext, CUstream};
use std::time::Instant;

/// Staging buffers kept per place for the next snapshots (a unit's start and, for a unit that
/// stayed open across calls, the application's view).
pub(crate) const SPARE_BUFFERS: usize = 2;

/// Log chunks are at least this large (captures are mostly small).
pub(crate) const LOG_CHUNK_BYTES: u64 = 64 << 20;

/// How a launch timed without waiting is timed.
pub(crate) enum TracedTimer {
    /// A pair of events around it on its stream, placed on the host clock with the anchor of
    /// generation `anchor` (graph and multi-device launches, or where CUPTI records no kernels).
    Events {
        anchor: u64,
        start: Event,
        end: Event,
    },
    /// CUPTI's record of its execution, found by the launch call's correlation id, its tag
    /// (`kreplay_cuda::activity`): no driver call on the launching thread.
    Activity,
}

/// A launch timed without waiting: its tag, the stream it ran on and how it is timed.
pub(crate) struct TracedLaunch {
    pub(crate) tag: u64,
    pub(crate) stream: CUstream,
    pub(crate) timer: TracedTimer,
}

/// A device's launches timed without waiting (`--kernel-trace` without counters, see `traced`).
#[derive(Default)]
pub(crate) struct Traced {
    /// Event pairs read and free for the next launches.
    pub(crate) free: Vec<(Event, Event)>,
    /// Started, not yet issued (each thread's launch between its two calls).
    pub(crate) open: Vec<TracedLaunch>,
    /// Issued, in order: read once they have completed.
    pub(crate) issued: std::collections::VecDeque<TracedLaunch>,
}

/// The measurement of the unit in progress on a device.
#[derive(Debug)]
pub(crate) struct UnitState {
    pub(crate) groups: Vec<Option<usize>>,
    pub(crate) plan: UnitPlan,
    pub(crate) counters: bool,
    /// The running execution.
    pub(crate) execution: Option<usize>,
    /// Event pairs used by the running execution.
    pub(crate) used: usize,
    /// The running execution is the timing one (no counters, after the planned ones).
    pub(crate) timing: bool,
    /// The stream of the launch between `launch_starts` and `launch_ends`.
    pub(crate) pending: Option<CUstream>,
    /// Launches measured by each execution stopped so far.
    pub(crate) launches: Vec<usize>,
    /// The running execution's ranges in order: `true` for a launch of the unit's, `false`
    /// for a flush kernel in the application's context (the default flush).
    pub(crate) ranges: Vec<bool>,
    /// The same for each execution stopped so far.
    pub(crate) ranges_of: Vec<Vec<bool>>,
}

impl UnitState {
    /// A unit of `groups` (one per pass) to run as `plan` says; `counters` when any is measured.
    pub(crate) fn new(groups: &[Option<usize>], plan: UnitPlan, counters: bool) -> Self {
        UnitState {
            groups: groups.to_vec(),
            plan,
            counters,
            execution: None,
            used: 0,
            timing: false,
            pending: None,
            launches: Vec::new(),
            ranges: Vec::new(),
            ranges_of: Vec::new(),
        }
    }
}

/// The tool's objects in a device's context. Dropped while the context lives (its destruction's
/// callback), it destroys them; at exit or when the context was replaced unseen it is forgotten
/// ([`kreplay_cuda::handles`]).
pub(crate) struct DeviceState {
    pub(crate) ctx: CUcontext,
    pub(crate) tool_stream: Stream,
    /// Staging buffers not in use, kept for the next snapshots.
    pub(crate) spare: Vec<StagingBuffer>,
    /// The capture log: chunks, the chunk being filled and its fill, and live captures.
    pub(crate) log: Vec<DeviceMemory>,
    pub(crate) log_at: (usize, u64),
    pub(crate) log_live: usize,
    /// Kept across dispatches; `None` until the first pass with counters.
    pub(crate) profiler: Option<RangeProfiler>,
    pub(crate) anchor: Event,
    pub(crate) anchor_host_ns: u64,
    pub(crate) anchored_at: Option<Instant>,
    /// Counts re-anchorings; anchors replaced while traced launches timed against them were
    /// pending are kept, with their generation and host time, until those are read.
    pub(crate) anchor_generation: u64,
    pub(crate) old_anchors: Vec<(u64, Event, u64)>,
    /// Launches timed without waiting (see `traced`).
    pub(crate) traced: Traced,
    /// Start and end events of each measured launch, reused across executions.
    pub(crate) events: Vec<(Event, Event)>,
    pub(crate) unit: Option<UnitState>,
    /// Recorded before an L2 flush, which waits for it (made at the first flush).
    pub(crate) flush_ready: Option<Event>,
    /// The flusher in this context (the default flush), made at the first flush.
    pub(crate) app_flusher: Option<Result<ApplicationContextFlusher, String>>,
}

impl DeviceState {
    /// The state of a context first seen, current on this thread: its stream and anchor event.
    pub(crate) fn new(
        driver: &'static kreplay_cuda::Driver,
        ctx: CUcontext,
    ) -> Result<Self, kreplay_cuda::error::CudaError> {
        Ok(DeviceState {
            ctx,
            tool_stream: Stream::non_blocking(driver)?,
            spare: Vec::new(),
            log: Vec::new(),
            log_at: (0, 0),
            log_live: 0,
            profiler: None,
            anchor: Event::timed(driver)?,
            anchor_host_ns: 0,
            anchored_at: None,
            anchor_generation: 0,
            old_anchors: Vec::new(),
            traced: Traced::default(),
            events: Vec::new(),
            unit: None,
            flush_ready: None,
            app_flusher: None,
        })
    }

    /// Leaves everything to the context, which frees it with itself (or has already): only the
    /// profiler is closed (its own drop).
    pub(crate) fn leave_to_context(mut self) {
        self.profiler = None;
        std::mem::forget(self);
    }
}
