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
//! pass runs once on the ordinary path.
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
use crate::filter::{FilterError, KernelSelector};
use crate::gate::ReplayGate;
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
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use lanes::FenceGuard;
use tickets::{passthrough, Dispatch, OnceTicket, PendingWrite, TicketKind};
pub use tickets::{CallGuard, LaunchTicket};

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
    kernel_names: RwLock<HashMap<u64, String>>,
    agents: Mutex<HashSet<u64>>,
    counters: Mutex<HashSet<String>>,
    /// Each device's replay gate and open unit (see `lanes`).
    lanes: Mutex<lanes::Lanes<K>>,
    window_stats: Mutex<unit::WindowStats>,
    /// Units stay open across calls (see [`EngineOptions::window_spans_calls`]); cleared when a
    /// unit that stayed open loses its counters.
    window_spans: AtomicBool,
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
            counters: Mutex::new(HashSet::new()),
            lanes: Mutex::default(),
            window_stats: Mutex::default(),
            window_spans,
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

    /// Sends the process record (first record of a run).
    pub fn record_process(&self, process: ProcessInfo) {
        self.sink.send(Record::Process(process));
    }

    /// Records a device once per process.
    pub fn register_agent(&self, agent: AgentInfo) {
        if lock(&self.agents).insert(agent.agent_id) {
            self.sink.send(Record::Agent(agent));
        }
    }

    /// Records a kernel once per process; its demangled name is what the filters match.
    pub fn register_kernel(&self, symbol: KernelSymbol) {
        let mut names = self.kernel_names.write().unwrap_or_else(|e| e.into_inner());
        if names.contains_key(&symbol.kernel_id) {
            return;
        }
        names.insert(symbol.kernel_id, symbol.demangled_name.clone());
        drop(names);
        self.sink.send(Record::KernelSymbol(symbol));
    }

    /// Records the run's counters, each name once per process.
    pub fn register_counters(&self, counters: impl IntoIterator<Item = CounterInfo>) {
        let mut known = lock(&self.counters);
        for counter in counters {
            if known.insert(counter.name.clone()) {
                self.sink.send(Record::Counter(counter));
            }
        }
    }

    /// Every CUDA API call of an application thread other than a launch, at its start, with
    /// what the backend knows the call does and the devices it may touch: the caller's parked
    /// unit on its device stays open across it when `effect` allows (see the `unit` module),
    /// otherwise the parked units of `scope` close first; units of other devices stay open.
    /// The guard is handed to [`Engine::exit_call`] when the call returns.
    pub fn enter_call<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        call: &str,
        effect: CallEffect,
        scope: DeviceScope,
    ) -> CallGuard {
        match self.stay_in_unit(backend, effect, scope) {
            Ok((fence, capture)) => CallGuard { fence, capture },
            Err(None) => CallGuard {
                fence: self.fence_for(backend, call, scope),
                capture: None,
            },
            // The window summary says why the window could not stay open.
            Err(Some(why)) => CallGuard {
                fence: self.fence_for(backend, &format!("{call} (not deferrable: {why})"), scope),
                capture: None,
            },
        }
    }

    /// The end of a call begun with [`Engine::enter_call`]: what it wrote into device memory is
    /// captured for the open unit's later executions, then the fence is released.
    pub fn exit_call<B: DeviceOf<K>>(&self, backend: &mut B, guard: CallGuard) {
        let CallGuard { fence, capture } = guard;
        if let Some(write) = capture {
            self.capture_write(backend, write);
        }
        drop(fence);
    }

    /// Closes the open replay units of every device, if any (their remaining passes run on
    /// this thread), then flushes every record and sends the end of the process.
    pub fn finish_with<B: DeviceOf<K>>(&self, backend: &mut B) {
        for lane in self.lanes() {
            self.close_parked_unit(backend, &lane, "process exit");
        }
        self.finish();
    }

    /// Flushes every record and sends the end of the process. A backend that opens replay
    /// units of several dispatches calls [`Engine::finish_with`] instead.
    pub fn finish(&self) {
        if let Some(line) = self.window_summary() {
            self.options.logger.warn(&line);
        }
        if self.unit_is_open() {
            self.notices.once(
                "window-open-at-exit",
                "a replay window was still open at exit: its dispatches ran once and their records are lost (the backend must finish with Engine::finish_with)",
                self.sink.as_ref(),
                self.options.logger.as_ref(),
            );
        }
        self.sink.send(Record::ProcessEnd {
            end_ns: unix_now_ns(),
        });
        self.sink.flush();
    }

    /// Before the application's own launch. See the module documentation.
    pub fn launch_enter<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        info: &DispatchInfo,
    ) -> LaunchTicket {
        if info.kind == LaunchKind::StreamCapture {
            // Captured launches do not execute: nothing to measure or replay. Say so once
            // when the policy would have replayed it. The backend is not asked anything: device
            // calls during a capture could invalidate it.
            let probe = Dispatch {
                info: info.clone(),
                dispatch_id: 0,
                device_dispatch_index: 0,
                collectable_groups: self.config.groups.len() as u32,
                tid: 0,
            };
            if wants_replay(self.policy.pass_count(&probe.policy_view())) {
                self.decline_notice(ReplayOutcome::DeclinedStreamCapture);
            }
            return passthrough(self.fence_for(
                backend,
                "a stream-captured launch",
                launch_scope(info),
            ));
        }

        let dispatch_id = self.last_dispatch_id.fetch_add(1, Ordering::Relaxed) + 1;
        let name = self.kernel_name(info);
        if !self.selector.select(&name) {
            let dispatch = Dispatch {
                info: info.clone(),
                dispatch_id,
                device_dispatch_index: 0,
                collectable_groups: 0,
                tid: current_tid(),
            };
            return self.once(backend, dispatch, ReplayOutcome::Filtered, None, 0);
        }

        let device_dispatch_index = {
            let mut counts = lock(&self.device_dispatches);
            let count = counts.entry(info.device).or_insert(0);
            *count += 1;
            *count - 1
        };
        let collectable_groups = self.collectable_groups(backend, info.device);
        let dispatch = Dispatch {
            info: info.clone(),
            dispatch_id,
            device_dispatch_index,
            collectable_groups,
            tid: current_tid(),
        };
        let view = dispatch.policy_view();
        // A graph launch that would be measured (a group for its pass 0), on a backend that
        // cannot measure one: in no mode (see the notice). Without a group it goes the ordinary
        // way (timestamps with --kernel-trace, else nothing).
        let unmeasurable = (info.kind == LaunchKind::Graph
            && self.policy.pass_group(&view, 0).is_some())
        .then(|| backend.graph_launch_unmeasurable(info.device))
        .flatten();
        if let Some(why) = unmeasurable {
            self.notices.once(
                "graph-unmeasured",
                &format!("graph launches are not replayed or measured; they run once with timestamps only ({why})"),
                self.sink.as_ref(),
                self.options.logger.as_ref(),
            );
            return self.once(
                backend,
                dispatch,
                ReplayOutcome::DeclinedGraphLaunch,
                None,
                0,
            );
        }
        let total = match self.policy.pass_count(&view) {
            PassCount::Passes(1) if self.spans_executions(backend, &view) => Some(1),
            PassCount::OptOut | PassCount::Passes(0) | PassCount::Passes(1) => {
                let group = self.policy.pass_group(&view, 0);
                return self.once(backend, dispatch, ReplayOutcome::SinglePass, group, 0);
            }
            PassCount::Passes(n) => Some(n),
            PassCount::UntilStopped if !self.policy.has_continue_decision() => {
                self.notices.once(
                    "until-stopped-without-continue",
                    "a replay policy asked for passes until stopped but makes no continue decision; such dispatches are not replayed and run once",
                    self.sink.as_ref(),
                    self.options.logger.as_ref(),
                );
                let group = self.policy.pass_group(&view, 0);
                return self.once(backend, dispatch, ReplayOutcome::DeclinedError, group, 0);
            }
            PassCount::UntilStopped => None,
        };

        let declined = match info.kind {
            LaunchKind::Graph => Some(ReplayOutcome::DeclinedGraphLaunch),
            LaunchKind::MultiDevice => Some(ReplayOutcome::DeclinedMultiDevice),
            LaunchKind::DevicePrintf => Some(ReplayOutcome::DeclinedDevicePrintf),
            LaunchKind::DeviceHeap => Some(ReplayOutcome::DeclinedDeviceHeap),
            LaunchKind::Collective => Some(ReplayOutcome::DeclinedCollective),
            LaunchKind::PageableHost => Some(ReplayOutcome::DeclinedPageableHost),
            LaunchKind::PeerMemory => Some(ReplayOutcome::DeclinedPeerMemory),
            LaunchKind::Kernel | LaunchKind::StreamCapture => None,
        };
        if let Some(outcome) = declined {
            self.decline_notice(outcome);
            let group = self.policy.pass_group(&view, 0);
            return self.once(backend, dispatch, outcome, group, 0);
        }
        self.unit_member_enter(backend, dispatch, total)
    }

    /// After the application's own launch. See the module documentation.
    pub fn launch_exit<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        ticket: LaunchTicket,
        launch: &K::Launch,
    ) {
        match ticket.kind {
            TicketKind::Passthrough { .. } => {}
            TicketKind::Member(member) => self.unit_member_exit(backend, member, launch),
            TicketKind::Once(once) => self.finish_once(backend, once),
        }
    }

    /// The application's launch did not execute (the driver refused it): nothing is measured,
    /// recorded or replayed for it, and the window it held is released.
    pub fn launch_failed<B: DeviceOf<K>>(&self, backend: &mut B, ticket: LaunchTicket) {
        match ticket.kind {
            TicketKind::Passthrough { .. } => {}
            TicketKind::Once(once) => {
                let device = once.dispatch.info.device;
                if once.measuring {
                    backend.launch_abandoned(device);
                    backend.abandon_unit(device);
                }
                // Nothing ran: what the unit saw (a flush, a clock reading) is no one's.
                let _ = backend.take_unit_conditions(device);
            }
            TicketKind::Member(member) => {
                let lane = self.lane(member.device);
                if lock(&lane.open_unit).is_some() {
                    backend.launch_abandoned(member.device);
                }
                // Dropped without its exit: the unit leaves it out.
                drop(member);
                // A unit that cannot take another member ends now, on the thread that opened it.
                if self.unit_is_full(&lane) {
                    self.close_parked_unit(backend, &lane, "a launch that failed");
                }
            }
        }
    }

    /// Whether a dispatch's one pass needs several executions (its group's metrics need several
    /// hardware passes): it is replayed, not run once.
    fn spans_executions<B: DeviceOf<K>>(&self, backend: &mut B, view: &PolicyDispatch<'_>) -> bool {
        self.config.mode == crate::config::InProcessMode::KernelReplay
            && self
                .policy
                .pass_group(view, 0)
                .is_some_and(|g| backend.executions_of_group(view.info.device, g) > 1)
    }

    fn collectable_groups<B: DeviceOf<K>>(&self, backend: &mut B, device: DeviceId) -> u32 {
        let configured = self.config.groups.len();
        backend
            .collectable_groups(device, configured)
            .min(configured) as u32
    }

    fn kernel_name(&self, info: &DispatchInfo) -> String {
        let names = self.kernel_names.read().unwrap_or_else(|e| e.into_inner());
        names
            .get(&info.kernel_id)
            .cloned()
            .unwrap_or_else(|| info.kernel_name.clone())
    }

    /// Device staging first while it leaves the reserve free, host staging otherwise (only
    /// host staging with `KREPLAY_HOST_STAGING=1`).
    fn staging_order<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        bytes: u64,
    ) -> Vec<Staging> {
        if self.config.switches.host_staging {
            return vec![Staging::Host];
        }
        let free = backend.device_free_bytes(device);
        let room = free.saturating_sub(self.options.staging_reserve_bytes);
        if bytes <= room {
            vec![Staging::Device, Staging::Host]
        } else {
            vec![Staging::Host]
        }
    }

    /// A snapshot of `regions` (of `bytes` in all) in the first place of [`Self::staging_order`]
    /// that has room for it; `Ok(None)` when none has.
    fn snapshot_staged<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        regions: &[Region],
        bytes: u64,
    ) -> Result<Option<(K::Snapshot, Staging)>, BackendError> {
        for place in self.staging_order(backend, device, bytes) {
            match backend.snapshot(device, regions, place) {
                Ok(staged) => return Ok(Some((staged, place))),
                Err(BackendError::OutOfStagingMemory(..)) => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    }

    fn send_dispatch(&self, dispatch: &Dispatch, replay_pass: Option<u32>, result: PassResult) {
        let info = &dispatch.info;
        self.sink.send(Record::Dispatch(DispatchRecord {
            dispatch_id: dispatch.dispatch_id,
            replay_pass,
            correlation_id: info.correlation_id,
            agent_id: u64::from(info.device),
            stream_id: info.stream_id,
            pid: self.pid,
            tid: dispatch.tid,
            kernel_id: info.kernel_id,
            grid: info.grid,
            block: info.block,
            dynamic_shared_bytes: info.dynamic_shared_bytes,
            start_ns: result.start_ns,
            end_ns: result.end_ns,
            counters: result.counters,
        }));
    }
}

fn pass_result(timing: Timing, counters: Vec<CounterSample>) -> PassResult {
    PassResult {
        counters,
        start_ns: timing.start_ns,
        end_ns: timing.end_ns,
    }
}

fn wants_replay(count: PassCount) -> bool {
    matches!(count, PassCount::UntilStopped) || matches!(count, PassCount::Passes(n) if n > 1)
}

/// The devices a launch may touch: an ordinary kernel's own device; every device for the
/// launches that run once, which may reach other devices (a kernel reaching another device's
/// memory, a multi-device or collective launch, a graph run whole, a printf or device-heap
/// kernel, whose parameters are not checked for other devices' addresses).
fn launch_scope(info: &DispatchInfo) -> DeviceScope {
    match info.kind {
        LaunchKind::Kernel | LaunchKind::StreamCapture => DeviceScope::One(info.device),
        LaunchKind::PeerMemory
        | LaunchKind::Graph
        | LaunchKind::MultiDevice
        | LaunchKind::Collective
        | LaunchKind::DevicePrintf
        | LaunchKind::DeviceHeap
        | LaunchKind::PageableHost => DeviceScope::All,
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The OS thread id, as rocprofv3 reports `tid`.
fn current_tid() -> u64 {
    // SAFETY: gettid has no preconditions and cannot fail.
    let tid = unsafe { libc::gettid() };
    u64::try_from(tid).unwrap_or(0)
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

mod lanes;
mod notices;
mod once;
mod tickets;
mod unit;

#[cfg(test)]
mod tests;
