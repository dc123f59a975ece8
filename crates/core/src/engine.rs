//! The replay engine: one per process, shared by every application thread.
//!
//! A backend (CUDA through CUPTI callbacks, or the reference software device) calls the engine
//! around each launch of the application, in two halves because with CUDA the application's
//! own launch happens between the API-enter and API-exit callbacks, and around every other API
//! call ([`Engine::enter_call`] / [`Engine::exit_call`]).
//!
//! ```text
//! launch_enter   reserve the dispatch id; filter; ask the policy for the pass count;
//!                decline (graph, stream capture, multi-device) or run once (one pass), or
//!                join the thread's open replay unit, or open one: take the replay window
//!                (other threads fenced), drain the device, plan the unit's executions,
//!                snapshot the tracked allocations when it needs more than one (device
//!                staging while free memory minus a reserve allows, else host, else
//!                decline), start execution 0
//! ---- the application's own launch executes: execution 0 ----
//! launch_exit    keep a copy of the launch; park the unit (its owner returns to user code)
//!                or close it when it is full
//! ```
//!
//! Everything measured is a *replay unit* (module `unit`): up to K consecutive dispatches of
//! one thread on one device, one for `--replay-window 1`. A unit closes when it is full, when a
//! launch on its device cannot join it, when another thread or a call it cannot stay open
//! across needs the device, and at exit; its later executions (one per hardware pass the
//! groups need beyond the first) re-run it from its snapshot. A unit that stays open across the
//! application's synchronisations and copies lets the application go on with execution 0's
//! results and puts them back after the later executions (see `unit`). A dispatch with one
//! pass runs once on the ordinary path; in a run without counters its timestamps are read
//! after it completed, without waiting for it (module `traced`).
//!
//! Every other CUDA API call of an application thread holds, for its duration, the fences of
//! the replay gates of the devices it may touch (its [`DeviceScope`]), so that nothing reaches
//! a device while another thread replays on it. Each device has its own gate and open unit
//! (module `lanes`): units of several devices are open at once, and a replay on one device
//! never waits for calls on another.

use crate::backend::{
    Backend, BackendError, CallEffect, DeviceId, DeviceOf, DeviceScope, DispatchInfo, LaunchKind,
    PassResult, Region, Timing, UnitConditions,
};
use crate::config::ToolConfig;
use crate::filter::regions::RegionGate;
use crate::filter::{FilterError, KernelSelector};
use crate::inventory::Inventory;
use crate::notice::{Logger, Notices, StderrLogger};
use crate::sdk::{CounterGroupsPolicy, PassCount, PolicyDispatch, ReplayPolicy};
use kreplay_format::{
    AgentInfo, CounterInfo, CounterSample, DispatchRecord, KernelSymbol, ProcessInfo, Record,
    RecordSink, ReplayCost, ReplayOutcome, Staging,
};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

pub use tickets::{CallGuard, FenceGuard, LaunchTicket};

/// Device memory left free after staging a snapshot on the device, unless configured otherwise:
/// the application (and the CUDA runtime's own allocations during a pass) must still fit.
pub const DEFAULT_STAGING_RESERVE_BYTES: u64 = 256 << 20;

/// The most bytes a replay unit captures from the calls it stays open across (copies to the
/// device, memsets); a call that would capture more closes the unit first.
pub const CAPTURE_BUDGET_BYTES: u64 = 256 << 20;

/// What happens on a fatal condition (a drain past its deadline, a failed restore), after every
/// record has been stored and the sink closed. The default prints the one-line message and
/// aborts the process; tests inject one that records the message and returns, after which the
/// engine declines the dispatch and carries on (records sent after the close may be lost).
pub type AbortAction = Arc<dyn Fn(&str) + Send + Sync>;

/// The default [`AbortAction`].
pub fn abort_process(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "kreplay: fatal: {message}");
    // The records are stored already: the abort must not wait for last words.
    crate::lifecycle::disarm();
    std::process::abort();
}

/// Engine settings that are not part of the user's configuration.
#[derive(Clone)]
pub struct EngineOptions {
    pub logger: Arc<dyn Logger>,
    pub abort: AbortAction,
    /// Device staging is used only while free device memory minus this reserve holds the snapshot.
    pub staging_reserve_bytes: u64,
    /// A replay unit stays open across its owner's calls that [`Engine::enter_call`] is told
    /// leave it alone (`KREPLAY_WINDOW_SPANS=0` switches it off: every call closes it).
    pub window_spans_calls: bool,
}

use crate::config::ENV_WINDOW_SPANS;

impl EngineOptions {
    pub fn for_config(config: &ToolConfig) -> Self {
        EngineOptions {
            logger: Arc::new(StderrLogger::for_level(&config.log_level)),
            abort: Arc::new(abort_process),
            staging_reserve_bytes: DEFAULT_STAGING_RESERVE_BYTES,
            window_spans_calls: config.switches.window_spans,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Filter(#[from] FilterError),
}

/// The replay engine for devices whose launches, snapshots and captures are `K`'s (a
/// [`Backend`]): its methods take any [`DeviceOf<K>`].
/// `Send + Sync`: one instance serves every application thread.
pub struct Engine<K: Backend> {
    config: ToolConfig,
    sink: Arc<dyn RecordSink>,
    policy: Box<dyn ReplayPolicy>,
    options: EngineOptions,
    inventory: Inventory,
    selector: KernelSelector,
    notices: Notices,
    /// The last dispatch id handed out; ids start at 1.
    last_dispatch_id: AtomicU64,
    /// Profiled dispatches so far per device (the rotation clock).
    device_dispatches: Mutex<HashMap<DeviceId, u64>>,
    /// Demangled names of registered kernels, for the filters.
    kernel_names: RwLock<HashMap<u64, Arc<str>>>,
    agents: Mutex<HashSet<u64>>,
    /// Code objects recorded so far, by id.
    code_objects: Mutex<HashSet<u64>>,
    counters: Mutex<HashSet<String>>,
    /// Each device's replay gate and open unit (see `lanes`).
    lanes: Mutex<lane::Lanes<K>>,
    window_stats: Mutex<unit::stats::WindowStats>,
    /// Units stay open across calls (see [`EngineOptions::window_spans_calls`]); cleared when a
    /// unit that stayed open loses its counters.
    window_spans: AtomicBool,
    /// The application's marker ranges (`--marker-trace`), see [`crate::markers`].
    markers: crate::markers::Markers,
    /// The application's copies and allocations (`--memory-copy-trace`,
    /// `--memory-allocation-trace`), see [`crate::memory_trace`].
    memory_trace: crate::memory_trace::MemoryTrace,
    /// Collection between the application's profiler start and stop calls.
    regions: RegionGate,
    /// Launches timed without waiting, their timings not read yet (see `traced`).
    traced: traced::TracedLaunches,
    pid: u32,
}

/// Why a pass of a unit after the first could not complete.
enum PassFailure {
    /// Counters could not be started or read; memory is what the application expects.
    Counters(String),
    /// Memory could not be put back in the state the application expects.
    Fatal(String),
}

impl<K: Backend> Engine<K> {
    /// An engine with kreplay's own policy ([`CounterGroupsPolicy`]) and default options.
    pub fn for_config(config: ToolConfig, sink: Arc<dyn RecordSink>) -> Result<Self, EngineError> {
        let policy = Box::new(CounterGroupsPolicy::new(&config));
        Engine::new(config, sink, policy)
    }

    pub fn new(
        config: ToolConfig,
        sink: Arc<dyn RecordSink>,
        policy: Box<dyn ReplayPolicy>,
    ) -> Result<Self, EngineError> {
        let options = EngineOptions::for_config(&config);
        Engine::with_options(config, sink, policy, options)
    }

    /// Fails only on a bad kernel filter (the CLI validates filters before starting the app).
    pub fn with_options(
        config: ToolConfig,
        sink: Arc<dyn RecordSink>,
        policy: Box<dyn ReplayPolicy>,
        options: EngineOptions,
    ) -> Result<Self, EngineError> {
        let selector = KernelSelector::new(&config.filter)?;
        let window_spans = AtomicBool::new(options.window_spans_calls);
        let markers = crate::markers::Markers::new(
            config.tracks_markers(),
            config.marker_trace,
            std::process::id(),
        );
        let regions = RegionGate::new(config.filter.selected_regions);
        let memory_trace = crate::memory_trace::MemoryTrace::new(
            config.memory_copy_trace,
            config.memory_allocation_trace,
            std::process::id(),
        );
        Ok(Engine {
            config,
            sink,
            policy,
            options,
            inventory: Inventory::new(),
            selector,
            notices: Notices::default(),
            last_dispatch_id: AtomicU64::new(0),
            device_dispatches: Mutex::new(HashMap::new()),
            kernel_names: RwLock::new(HashMap::new()),
            agents: Mutex::new(HashSet::new()),
            code_objects: Mutex::new(HashSet::new()),
            counters: Mutex::new(HashSet::new()),
            lanes: Mutex::default(),
            window_stats: Mutex::default(),
            window_spans,
            markers,
            memory_trace,
            regions,
            traced: traced::TracedLaunches::default(),
            pid: std::process::id(),
        })
    }

    pub fn config(&self) -> &ToolConfig {
        &self.config
    }

    /// The allocation inventory; backends insert and remove regions as the application
    /// allocates and frees.
    pub fn inventory(&self) -> &Inventory {
        &self.inventory
    }
}

#[allow(dead_code)]
fn _assert_engine_is_send_sync() {
    fn check<T: Send + Sync>() {}
    struct Types;
    impl Backend for Types {
        type Launch = ();
        type Snapshot = u64;
        type Capture = ();
    }
    check::<Engine<Types>>();
}

mod api_trace;
mod calls;
mod lane;
mod lanes;
mod launch;
mod markers;
mod memory_trace;
mod notices;
mod once;
mod records;
mod staging;
mod sys;
mod tickets;
mod traced;
mod unit;

#[cfg(test)]
mod tests;
