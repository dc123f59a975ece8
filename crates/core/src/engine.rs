//! The replay engine: one per process, shared by every application thread.
//!
//! A backend (CUDA through CUPTI callbacks, or the reference software device) calls the engine
//! around each launch of the application, in two halves because with CUDA the application's
//! own launch happens between the API-enter and API-exit callbacks:
//!
//! ```text
//! launch_enter   reserve the dispatch id; filter; ask the tool for the pass count;
//!                decline (graph, stream capture, multi-device) or, for N>1 passes:
//!                take the replay window (other threads fenced), drain the device,
//!                snapshot the tracked allocations (device staging while free memory
//!                minus a reserve allows, else host, else decline), start pass 0
//! ---- the application's own launch executes: pass 0 ----
//! launch_exit    stop pass 0; for each further pass: restore, start, relaunch, stop
//!                (never a restore after the last executed pass); records of every pass
//!                under one dispatch id; the ReplayCost record; release snapshot and window
//! ```
//!
//! Every other CUDA API call of an application thread holds [`Engine::fence`] for its duration,
//! so that nothing reaches the device while another thread replays.
//!
//! The pass loop works on a *replay unit*: the dispatches executed between a snapshot and the
//! next restore. By default a unit is one dispatch. On NVIDIA GPUs the cost of a pass is
//! changing the counter configuration, not running the kernel (reference nvidia-cupti.md §10),
//! so `replay_window` (`--replay-window K|auto`) forms units of up to K consecutive dispatches
//! and runs the whole window once per group: see the `windowed` module.

use crate::backend::{BackendError, DeviceId, DispatchInfo, LaunchKind, PassResult, ReplayBackend};
use crate::config::ToolConfig;
use crate::filter::{FilterError, KernelSelector};
use crate::inventory::Inventory;
use crate::notice::{Logger, Notices, StderrLogger};
use crate::sdk::{CounterGroupsTool, PassCount, ReplayTool, ToolDispatch};
use crate::window::{ReplayGate, WindowHold, WindowRefused};
use kreplay_format::{
    AgentInfo, CounterInfo, DispatchRecord, KernelSymbol, ProcessInfo, Record, RecordSink,
    ReplayCost, ReplayOutcome, Staging,
};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub use crate::window::FenceGuard;

/// Device memory left free after staging a snapshot on the device, unless configured otherwise:
/// the application (and the CUDA runtime's own allocations during a pass) must still fit.
pub const DEFAULT_STAGING_RESERVE_BYTES: u64 = 256 << 20;

/// What happens on a fatal condition (a drain past its deadline, a failed restore), after every
/// record has been stored and the sink closed. The default prints the one-line message and
/// aborts the process; tests inject one that records the message and returns, after which the
/// engine declines the dispatch and carries on (records sent after the close may be lost).
pub type AbortAction = Arc<dyn Fn(&str) + Send + Sync>;

/// The default [`AbortAction`].
pub fn abort_process(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "kreplay: fatal: {message}");
    std::process::abort();
}

/// Engine settings that are not part of the user's configuration.
#[derive(Clone)]
pub struct EngineOptions {
    pub logger: Arc<dyn Logger>,
    pub abort: AbortAction,
    /// Device staging is used only while free device memory minus this reserve holds the snapshot.
    pub staging_reserve_bytes: u64,
    /// A replay window measured by one execution stays open across its owner's calls that
    /// [`Engine::fence_in_window`] is asked for (`KREPLAY_WINDOW_SPANS=0` switches it off).
    pub window_spans_calls: bool,
}

/// Environment variable: `0` closes every replay window at its owner's next API call, as
/// windows that need several executions always do.
pub const ENV_WINDOW_SPANS: &str = "KREPLAY_WINDOW_SPANS";

impl EngineOptions {
    pub fn for_config(config: &ToolConfig) -> Self {
        EngineOptions {
            logger: Arc::new(StderrLogger::for_level(&config.log_level)),
            abort: Arc::new(abort_process),
            staging_reserve_bytes: DEFAULT_STAGING_RESERVE_BYTES,
            window_spans_calls: std::env::var(ENV_WINDOW_SPANS).map_or(true, |v| v.trim() != "0"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Filter(#[from] FilterError),
}

/// The replay engine. `Send + Sync`: one instance serves every application thread.
pub struct Engine {
    config: ToolConfig,
    sink: Arc<dyn RecordSink>,
    tool: Box<dyn ReplayTool>,
    options: EngineOptions,
    inventory: Inventory,
    selector: KernelSelector,
    gate: Arc<ReplayGate>,
    notices: Notices,
    /// The last dispatch id handed out; ids start at 1.
    last_dispatch_id: AtomicU64,
    /// Profiled dispatches so far per device (the rotation clock).
    device_dispatches: Mutex<HashMap<DeviceId, u64>>,
    /// Demangled names of registered kernels, for the filters.
    kernel_names: RwLock<HashMap<u64, String>>,
    agents: Mutex<HashSet<u64>>,
    counters: Mutex<HashSet<String>>,
    /// The open replay window, type-erased (`windowed::OpenWindow` of the backend's snapshot
    /// and launch types); `None` between windows and with per-dispatch replay.
    open_window: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    window_stats: Mutex<windowed::WindowStats>,
    /// Windows measured by one execution stay open across calls (see
    /// [`EngineOptions::window_spans_calls`]); cleared when such a window loses its counters.
    window_spans: AtomicBool,
    pid: u32,
}

/// What [`Engine::launch_enter`] decided, handed back to [`Engine::launch_exit`]. A backend
/// drops a ticket without `launch_exit` when the launch did not execute (the driver refused
/// it): that releases the window and records nothing for the dispatch.
#[must_use = "pass the ticket to Engine::launch_exit after the application's launch"]
pub struct LaunchTicket<S> {
    kind: TicketKind<S>,
}

enum TicketKind<S> {
    /// Nothing to record; the engine does not touch the device.
    Passthrough { _fence: FenceGuard },
    /// Runs once (ordinary path, opt-out, declined).
    Once(OnceTicket),
    /// Replayed: pass 0 started.
    Replay(ReplayTicket<S>),
    /// A member of the open replay window (which holds the dispatch); pass 0 is running.
    Window(windowed::MemberTicket),
}

struct OnceTicket {
    dispatch: Dispatch,
    /// `start_pass` succeeded; `launch_exit` must stop it.
    measuring: bool,
    group: Option<usize>,
    outcome: ReplayOutcome,
    bytes_tracked: u64,
    started: Instant,
    _fence: FenceGuard,
}

struct ReplayTicket<S> {
    dispatch: Dispatch,
    total: Option<u32>,
    /// `None` when the device has no tracked memory: nothing to stage or restore.
    snapshot: Option<S>,
    /// False when no snapshot was taken (one execution measures every group).
    restorable: bool,
    cost: ReplayCost,
    pass0_group: Option<usize>,
    pass0_started: Instant,
    _window: WindowHold,
}

/// One dispatch as the engine carries it from enter to exit.
struct Dispatch {
    info: DispatchInfo,
    dispatch_id: u64,
    device_dispatch_index: u64,
    collectable_groups: u32,
    tid: u64,
}

impl Dispatch {
    fn tool_view(&self) -> ToolDispatch<'_> {
        ToolDispatch {
            info: &self.info,
            dispatch_id: self.dispatch_id,
            device_dispatch_index: self.device_dispatch_index,
            collectable_groups: self.collectable_groups,
        }
    }
}

impl<S> LaunchTicket<S> {
    /// The dispatch id, `None` when the launch is not recorded.
    pub fn dispatch_id(&self) -> Option<u64> {
        match &self.kind {
            TicketKind::Passthrough { .. } => None,
            TicketKind::Once(t) => Some(t.dispatch.dispatch_id),
            TicketKind::Replay(t) => Some(t.dispatch.dispatch_id),
            TicketKind::Window(t) => Some(t.dispatch_id),
        }
    }

    /// Whether `launch_exit` will re-execute the launch (the backend must keep what
    /// [`ReplayBackend::relaunch`] needs).
    pub fn will_replay(&self) -> bool {
        matches!(self.kind, TicketKind::Replay(_) | TicketKind::Window(_))
    }
}

/// What [`Engine::prepare_replay`] got: the exclusive window and a snapshot.
struct Prepared<S> {
    dispatch: Dispatch,
    window: WindowHold,
    /// `None` when the device has no tracked memory: nothing to stage or restore.
    snapshot: Option<S>,
    /// False when no snapshot was taken because the first execution measures every group:
    /// no later pass may then execute.
    restorable: bool,
    staging: Staging,
    bytes_tracked: u64,
    /// The inventory's generation when the snapshot's regions were read.
    inventory_generation: u64,
    drain_ns: u64,
    snapshot_ns: u64,
}

/// `prepare_replay` retries `Parked` until another answer comes.
fn unreachable_refusal() -> WindowHold {
    unreachable!("the window loop only ends on an answer other than Parked")
}

/// Why a replay pass after the first could not complete.
enum PassFailure {
    /// Counters could not be started or read; memory is what the last execution produced.
    Counters(String),
    /// Memory could not be put back in the state the application expects.
    Fatal(String),
}

impl Engine {
    /// An engine with kreplay's own tool ([`CounterGroupsTool`]) and default options.
    pub fn for_config(
        config: ToolConfig,
        sink: Arc<dyn RecordSink>,
    ) -> Result<Engine, EngineError> {
        let tool = Box::new(CounterGroupsTool::new(&config));
        Engine::new(config, sink, tool)
    }

    pub fn new(
        config: ToolConfig,
        sink: Arc<dyn RecordSink>,
        tool: Box<dyn ReplayTool>,
    ) -> Result<Engine, EngineError> {
        let options = EngineOptions::for_config(&config);
        Engine::with_options(config, sink, tool, options)
    }

    /// Fails only on a bad kernel filter (the CLI validates filters before starting the app).
    pub fn with_options(
        config: ToolConfig,
        sink: Arc<dyn RecordSink>,
        tool: Box<dyn ReplayTool>,
        options: EngineOptions,
    ) -> Result<Engine, EngineError> {
        let selector = KernelSelector::new(&config.filter)?;
        let window_spans = AtomicBool::new(options.window_spans_calls);
        Ok(Engine {
            config,
            sink,
            tool,
            options,
            inventory: Inventory::new(),
            selector,
            gate: Arc::new(ReplayGate::default()),
            notices: Notices::default(),
            last_dispatch_id: AtomicU64::new(0),
            device_dispatches: Mutex::new(HashMap::new()),
            kernel_names: RwLock::new(HashMap::new()),
            agents: Mutex::new(HashSet::new()),
            counters: Mutex::new(HashSet::new()),
            open_window: Mutex::new(None),
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

    /// Holds off while another thread replays; the backend keeps the guard for the duration of
    /// every CUDA API call of an application thread (launches excepted: they go through
    /// [`Engine::launch_enter`]). The replaying thread itself passes through.
    pub fn fence(&self) -> FenceGuard {
        self.gate.fence()
    }

    /// [`Engine::fence`] for backends that open replay windows: a parked window (its owner is in
    /// user code) is closed by the calling thread, all its passes run here, instead of being
    /// waited for. Every CUDA API call of an application thread other than a launch must go
    /// through this when [`ReplayBackend::max_window`] can be above 1.
    pub fn fence_with<B: ReplayBackend>(&self, backend: &mut B) -> FenceGuard
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        self.fence_for(backend, "an API call")
    }

    /// [`Engine::fence_with`] naming the call (e.g. `cuMemcpyDtoH_v2`): the end-of-run line
    /// about replay windows counts which calls closed them, which says what cuts windows short.
    pub fn fence_for<B: ReplayBackend>(&self, backend: &mut B, call: &str) -> FenceGuard
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        loop {
            match self.gate.fence_unless_parked() {
                Ok(fence) => return fence,
                Err(_parked) => {
                    if !self.close_parked_window(backend, call) {
                        std::thread::yield_now();
                    }
                }
            }
        }
    }

    /// [`Engine::fence_for`] for a call that submits no launch and leaves the current context
    /// alone (a copy, a memset, an allocation, a module load, an event or stream call): when
    /// the caller's own window is parked and one execution measures all its groups (nothing
    /// is restored or executed again), the window stays open across the call instead of
    /// closing. The device is drained first, and again before the window's next launch, so
    /// that the call's work never overlaps a measured kernel.
    pub fn fence_in_window<B: ReplayBackend>(&self, backend: &mut B, call: &str) -> FenceGuard
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        match self.stay_in_window(backend) {
            Some(fence) => fence,
            None => self.fence_for(backend, call),
        }
    }

    /// Closes the open replay window, if any (its remaining passes run on this thread), then
    /// flushes every record and sends the end of the process.
    pub fn finish_with<B: ReplayBackend>(&self, backend: &mut B)
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        self.close_parked_window(backend, "process exit");
        self.finish();
    }

    /// Flushes every record and sends the end of the process. A backend that opens replay
    /// windows calls [`Engine::finish_with`] instead.
    pub fn finish(&self) {
        if let Some(line) = self.window_summary() {
            self.options.logger.warn(&line);
        }
        if self.window_is_open() {
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
    pub fn launch_enter<B: ReplayBackend>(
        &self,
        backend: &mut B,
        info: &DispatchInfo,
    ) -> LaunchTicket<B::Snapshot>
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        if info.kind == LaunchKind::StreamCapture {
            // Captured launches do not execute: nothing to measure or replay. Say so once
            // when the tool would have replayed it. The backend is not asked anything: device
            // calls during a capture could invalidate it.
            let probe = Dispatch {
                info: info.clone(),
                dispatch_id: 0,
                device_dispatch_index: 0,
                collectable_groups: self.config.groups.len() as u32,
                tid: 0,
            };
            if wants_replay(self.tool.pass_count(&probe.tool_view())) {
                self.decline_notice(ReplayOutcome::DeclinedStreamCapture);
            }
            return passthrough(self.fence_for(backend, "a stream-captured launch"));
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
        let view = dispatch.tool_view();
        let count = self.tool.pass_count(&view);
        let total = match count {
            PassCount::OptOut | PassCount::Passes(0) | PassCount::Passes(1) => {
                let group = self.tool.pass_group(&view, 0);
                return self.once(backend, dispatch, ReplayOutcome::SinglePass, group, 0);
            }
            PassCount::Passes(n) => Some(n),
            PassCount::UntilStopped if !self.tool.has_continue_decision() => {
                self.notices.once(
                    "until-stopped-without-continue",
                    "a replay tool asked for passes until stopped but makes no continue decision; such dispatches are not replayed and run once",
                    self.sink.as_ref(),
                    self.options.logger.as_ref(),
                );
                let group = self.tool.pass_group(&view, 0);
                return self.once(backend, dispatch, ReplayOutcome::DeclinedError, group, 0);
            }
            PassCount::UntilStopped => None,
        };

        let declined = match info.kind {
            LaunchKind::Graph => Some(ReplayOutcome::DeclinedGraphLaunch),
            LaunchKind::MultiDevice => Some(ReplayOutcome::DeclinedMultiDevice),
            LaunchKind::Kernel | LaunchKind::StreamCapture => None,
        };
        if let Some(outcome) = declined {
            self.decline_notice(outcome);
            let group = self.tool.pass_group(&view, 0);
            return self.once(backend, dispatch, outcome, group, 0);
        }
        if let Some(passes) = total {
            if let Some(capacity) = self.window_capacity(backend, info.device) {
                return self.window_member_enter(backend, dispatch, passes, capacity);
            }
        }
        self.begin_replay(backend, dispatch, total)
    }

    /// After the application's own launch. See the module documentation.
    pub fn launch_exit<B: ReplayBackend>(
        &self,
        backend: &mut B,
        ticket: LaunchTicket<B::Snapshot>,
        launch: &B::Launch,
    ) where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        match ticket.kind {
            TicketKind::Passthrough { .. } => {}
            TicketKind::Window(member) => self.window_member_exit(backend, member, launch),
            TicketKind::Once(once) => self.finish_once(backend, once),
            TicketKind::Replay(replay) => self.finish_replay(backend, replay, launch),
        }
    }

    fn collectable_groups<B: ReplayBackend>(&self, backend: &mut B, device: DeviceId) -> u32 {
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

    /// The ordinary path: one execution, counters of `group` if any, a record only when there
    /// is something to say (counters, kernel trace, or a decline).
    fn once<B: ReplayBackend>(
        &self,
        backend: &mut B,
        dispatch: Dispatch,
        outcome: ReplayOutcome,
        group: Option<usize>,
        bytes_tracked: u64,
    ) -> LaunchTicket<B::Snapshot>
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        let fence = self.fence_for(backend, once_reason(outcome));
        let declined = !matches!(outcome, ReplayOutcome::SinglePass | ReplayOutcome::Filtered);
        if group.is_none() && !self.config.kernel_trace && !declined {
            return passthrough(fence);
        }
        let started = Instant::now();
        let measuring = match backend.start_pass(dispatch.info.device, group) {
            Ok(()) => true,
            Err(error) => {
                self.backend_notice("start_pass", &error);
                false
            }
        };
        LaunchTicket {
            kind: TicketKind::Once(OnceTicket {
                dispatch,
                measuring,
                group,
                outcome,
                bytes_tracked,
                started,
                _fence: fence,
            }),
        }
    }

    fn finish_once<B: ReplayBackend>(&self, backend: &mut B, once: OnceTicket) {
        let device = once.dispatch.info.device;
        let result = if once.measuring {
            match backend.stop_pass(device, once.group) {
                Ok(result) => Some(result),
                Err(error) => {
                    self.backend_notice("stop_pass", &error);
                    None
                }
            }
        } else {
            None
        };
        let pass_ns = elapsed_ns(once.started);
        drop(once._fence);
        if let Some(result) = result {
            self.send_dispatch(&once.dispatch, None, result);
        }
        self.sink.send(Record::ReplayCost(ReplayCost {
            dispatch_id: once.dispatch.dispatch_id,
            agent_id: u64::from(device),
            outcome: once.outcome,
            passes: 1,
            bytes_tracked: once.bytes_tracked,
            bytes_snapshotted: 0,
            bytes_restored: 0,
            staging: Staging::None,
            drain_ns: 0,
            snapshot_ns: 0,
            pass_ns: vec![pass_ns],
            restore_ns: 0,
        }));
    }

    /// Window, drain, snapshot, pass 0 start. Falls back to `Engine::once` with the reason
    /// when any of them cannot be had.
    fn begin_replay<B: ReplayBackend>(
        &self,
        backend: &mut B,
        dispatch: Dispatch,
        total: Option<u32>,
    ) -> LaunchTicket<B::Snapshot>
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        let view = dispatch.tool_view();
        let group0 = self.tool.pass_group(&view, 0);
        let pass_groups = self.known_pass_groups(&view, total);
        let prepared = match self.prepare_replay(
            backend,
            dispatch,
            group0,
            pass_groups.as_deref(),
            "a launch replayed alone",
        ) {
            Ok(prepared) => prepared,
            Err(ticket) => return *ticket,
        };
        let Prepared {
            dispatch,
            window,
            snapshot,
            restorable,
            staging,
            bytes_tracked,
            drain_ns,
            snapshot_ns,
            ..
        } = prepared;
        let device = dispatch.info.device;
        let cost = ReplayCost {
            dispatch_id: dispatch.dispatch_id,
            agent_id: u64::from(device),
            outcome: ReplayOutcome::Replayed,
            passes: 0,
            bytes_tracked,
            bytes_snapshotted: if restorable { bytes_tracked } else { 0 },
            bytes_restored: 0,
            staging,
            drain_ns,
            snapshot_ns,
            pass_ns: Vec::new(),
            restore_ns: 0,
        };
        let pass0_started = Instant::now();
        self.tool.on_pass_start(&dispatch.tool_view(), 0);
        backend.replay_starts(device);
        if let Err(error) = backend.start_pass(device, group0) {
            // Nothing ran yet: give up replaying this dispatch, run it once unmeasured.
            release_snapshot(backend, snapshot);
            drop(window);
            self.backend_notice("start_pass", &error);
            return self.once_unmeasured(backend, dispatch, group0, bytes_tracked, pass0_started);
        }
        LaunchTicket {
            kind: TicketKind::Replay(ReplayTicket {
                dispatch,
                total,
                snapshot,
                restorable,
                cost,
                pass0_group: group0,
                pass0_started,
                _window: window,
            }),
        }
    }

    /// A dispatch whose replay was set up but whose first pass could not be started: nothing
    /// ran yet, so it runs once, unmeasured, recorded as declined (the caller has released the
    /// snapshot and the window).
    fn once_unmeasured<B: ReplayBackend>(
        &self,
        backend: &mut B,
        dispatch: Dispatch,
        group: Option<usize>,
        bytes_tracked: u64,
        started: Instant,
    ) -> LaunchTicket<B::Snapshot>
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        let fence = self.fence_with(backend);
        LaunchTicket {
            kind: TicketKind::Once(OnceTicket {
                dispatch,
                measuring: false,
                group,
                outcome: ReplayOutcome::DeclinedError,
                bytes_tracked,
                started,
                _fence: fence,
            }),
        }
    }

    /// The group of every pass of a replay, when the pass count is fixed (a tool may still
    /// stop early, which only saves executions).
    fn known_pass_groups(
        &self,
        view: &ToolDispatch<'_>,
        total: Option<u32>,
    ) -> Option<Vec<Option<usize>>> {
        Some(
            (0..total?)
                .map(|pass| self.tool.pass_group(view, pass))
                .collect(),
        )
    }

    /// The exclusive window (closing a parked window replay first), a drained device and a
    /// snapshot of its tracked memory: what every replay unit starts with. No snapshot when
    /// `pass_groups` (every pass's group, when known) need a single execution on the backend.
    /// On failure, the ticket of the ordinary path the dispatch takes instead.
    fn prepare_replay<B: ReplayBackend>(
        &self,
        backend: &mut B,
        dispatch: Dispatch,
        group0: Option<usize>,
        pass_groups: Option<&[Option<usize>]>,
        closing_reason: &str,
    ) -> Result<Prepared<B::Snapshot>, Box<LaunchTicket<B::Snapshot>>>
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        let device = dispatch.info.device;
        let deadline = self.config.drain_timeout();
        let window = loop {
            match self.gate.window(deadline) {
                Err(WindowRefused::Parked) => {
                    if !self.close_parked_window(backend, closing_reason) {
                        std::thread::yield_now();
                    }
                }
                other => break other,
            }
        };
        let window = match window {
            Ok(window) => window,
            Err(WindowRefused::Parked) => unreachable_refusal(),
            Err(WindowRefused::Reentrant) => {
                // A launch from inside a replay (a tool's pass callback): run it once.
                return Err(Box::new(self.once(
                    backend,
                    dispatch,
                    ReplayOutcome::DeclinedError,
                    group0,
                    0,
                )));
            }
            Err(WindowRefused::Contended) => {
                self.notices.once(
                    "window-contended",
                    "a launch made inside another API call while a second thread was starting a replay ran once, unreplayed (waiting would deadlock)",
                    self.sink.as_ref(),
                    self.options.logger.as_ref(),
                );
                return Err(Box::new(self.once(
                    backend,
                    dispatch,
                    ReplayOutcome::DeclinedError,
                    group0,
                    0,
                )));
            }
            Err(WindowRefused::Timeout) => {
                self.fatal(&format!(
                    "other application threads kept the device busy for more than {deadline:?} while dispatch {} waited to be replayed; raise KREPLAY_DRAIN_TIMEOUT (seconds) or profile without --replay-mode kernel",
                    dispatch.dispatch_id
                ));
                return Err(Box::new(self.once(
                    backend,
                    dispatch,
                    ReplayOutcome::DeclinedError,
                    group0,
                    0,
                )));
            }
        };

        let drain_started = Instant::now();
        match backend.drain(device, deadline) {
            Ok(()) => {}
            Err(BackendError::DrainTimeout { device, deadline }) => {
                drop(window);
                self.fatal(&format!(
                    "device {device} did not finish its queued work within {deadline:?} before dispatch {} could be replayed; raise KREPLAY_DRAIN_TIMEOUT (seconds) or profile without --replay-mode kernel",
                    dispatch.dispatch_id
                ));
                return Err(Box::new(self.once(
                    backend,
                    dispatch,
                    ReplayOutcome::DeclinedError,
                    group0,
                    0,
                )));
            }
            Err(error) => {
                drop(window);
                self.backend_notice("drain", &error);
                return Err(Box::new(self.once(
                    backend,
                    dispatch,
                    ReplayOutcome::DeclinedError,
                    group0,
                    0,
                )));
            }
        }
        let drain_ns = elapsed_ns(drain_started);

        // Read before the regions: a change in between makes a later comparison fail, never pass.
        let inventory_generation = self.inventory.generation();
        let regions = self.inventory.tracked(device);
        let bytes_tracked: u64 = regions.iter().map(|r| r.bytes).sum();
        // One execution measures every group (the backend packs them into one hardware pass):
        // nothing will be restored, so nothing is staged. Asked before the snapshot's clock
        // starts: the backend may first finish setting up its counters.
        let single_execution =
            pass_groups.is_some_and(|groups| backend.executions_for(device, groups) == Some(1));
        let snapshot_started = Instant::now();
        let mut snapshot = None;
        // No tracked byte on the device: no kernel can write one, so there is nothing to stage
        // and every restore would be empty (untracked kinds are never restored anyway).
        let places = if regions.is_empty() || single_execution {
            snapshot = Some((None, Staging::None));
            Vec::new()
        } else {
            self.staging_order(backend, device, bytes_tracked)
        };
        for place in places {
            match backend.snapshot(device, &regions, place) {
                Ok(staged) => {
                    snapshot = Some((Some(staged), place));
                    break;
                }
                Err(BackendError::OutOfStagingMemory(..)) => continue,
                Err(error) => {
                    drop(window);
                    self.backend_notice("snapshot", &error);
                    return Err(Box::new(self.once(
                        backend,
                        dispatch,
                        ReplayOutcome::DeclinedError,
                        group0,
                        bytes_tracked,
                    )));
                }
            }
        }
        let Some((snapshot, staging)) = snapshot else {
            drop(window);
            self.decline_notice(ReplayOutcome::DeclinedSnapshotTooLarge);
            return Err(Box::new(self.once(
                backend,
                dispatch,
                ReplayOutcome::DeclinedSnapshotTooLarge,
                group0,
                bytes_tracked,
            )));
        };
        let snapshot_ns = elapsed_ns(snapshot_started);

        // Said once the replay is certain (several executions): memory that is not restored
        // matters only then.
        let untracked = if single_execution {
            Vec::new()
        } else {
            self.inventory.untracked_kinds()
        };
        for kind in untracked {
            self.notices.once(
                &format!("untracked-{kind:?}"),
                &format!(
                    "{} is not restored between replay passes; kernels that write it see their own earlier passes' writes",
                    kind.describe()
                ),
                self.sink.as_ref(),
                self.options.logger.as_ref(),
            );
        }

        Ok(Prepared {
            dispatch,
            window,
            snapshot,
            restorable: !single_execution,
            staging,
            bytes_tracked,
            inventory_generation,
            drain_ns,
            snapshot_ns,
        })
    }

    /// Device staging first while it leaves the reserve free, host staging otherwise.
    fn staging_order<B: ReplayBackend>(
        &self,
        backend: &mut B,
        device: DeviceId,
        bytes: u64,
    ) -> Vec<Staging> {
        let free = backend.device_free_bytes(device);
        let room = free.saturating_sub(self.options.staging_reserve_bytes);
        if bytes <= room {
            vec![Staging::Device, Staging::Host]
        } else {
            vec![Staging::Host]
        }
    }

    fn finish_replay<B: ReplayBackend>(
        &self,
        backend: &mut B,
        replay: ReplayTicket<B::Snapshot>,
        launch: &B::Launch,
    ) {
        let ReplayTicket {
            dispatch,
            total,
            snapshot,
            restorable,
            mut cost,
            pass0_group,
            pass0_started,
            _window: window,
        } = replay;
        let device = dispatch.info.device;
        let view = dispatch.tool_view();

        match backend.stop_pass(device, pass0_group) {
            Ok(result) => {
                cost.pass_ns.push(elapsed_ns(pass0_started));
                self.tool.on_pass_stop(&view, 0, &result);
                self.send_dispatch(&dispatch, Some(0), result);
            }
            Err(error) => {
                // Pass 0 is the application's launch: memory is right, only counters are lost.
                cost.pass_ns.push(elapsed_ns(pass0_started));
                self.backend_notice("stop_pass", &error);
                cost.outcome = ReplayOutcome::DeclinedError;
                self.close_replay(backend, snapshot, cost, window);
                return;
            }
        }

        let mut pass: u32 = 1;
        loop {
            if total.is_some_and(|t| pass >= t) {
                break;
            }
            if self.tool.has_continue_decision()
                && !self.tool.continue_after(&view, pass - 1, total)
            {
                if total.is_some() {
                    cost.outcome = ReplayOutcome::StoppedEarly;
                }
                break;
            }
            if self.pass_already_collected(backend, &dispatch, pass) {
                pass += 1;
                continue;
            }
            if !restorable {
                // The backend said one execution would do, yet this pass's group was not
                // measured: without a snapshot the kernel must not run again.
                self.lost_pass_notice(pass);
                cost.outcome = ReplayOutcome::DeclinedError;
                break;
            }
            let restore_started = Instant::now();
            match restore_snapshot(backend, &snapshot) {
                Ok(bytes) => cost.bytes_restored += bytes,
                Err(error) => {
                    self.fatal(&format!(
                        "restoring device {device} memory before pass {pass} of dispatch {} failed ({error}); the application's memory can no longer be trusted",
                        dispatch.dispatch_id
                    ));
                    cost.outcome = ReplayOutcome::DeclinedError;
                    break;
                }
            }
            cost.restore_ns += elapsed_ns(restore_started);
            let pass_started = Instant::now();
            let outcome = self.run_pass(backend, &dispatch, launch, pass);
            cost.pass_ns.push(elapsed_ns(pass_started));
            match outcome {
                Ok(()) => pass += 1,
                Err(PassFailure::Counters(message)) => {
                    self.notices.once(
                        "replay-pass-counters",
                        &format!("a replay pass lost its counters and replay of that dispatch stopped ({message})"),
                        self.sink.as_ref(),
                        self.options.logger.as_ref(),
                    );
                    cost.outcome = ReplayOutcome::DeclinedError;
                    break;
                }
                Err(PassFailure::Fatal(message)) => {
                    self.fatal(&message);
                    cost.outcome = ReplayOutcome::DeclinedError;
                    break;
                }
            }
        }
        self.close_replay(backend, snapshot, cost, window);
    }

    fn lost_pass_notice(&self, pass: u32) {
        self.notices.once(
            "unmeasured-single-execution-pass",
            &format!("pass {pass} was expected to be measured by the first execution (groups packed into one hardware pass) but was not; its counters are missing and the kernel is not run again (no snapshot was taken)"),
            self.sink.as_ref(),
            self.options.logger.as_ref(),
        );
    }

    /// A pass whose group an earlier pass of this dispatch already collected (the backend
    /// packed them into one hardware pass): recorded from the backend's held results, with no
    /// restore and no re-execution.
    fn pass_already_collected<B: ReplayBackend>(
        &self,
        backend: &mut B,
        dispatch: &Dispatch,
        pass: u32,
    ) -> bool {
        let view = dispatch.tool_view();
        let Some(group) = self.tool.pass_group(&view, pass) else {
            return false;
        };
        match backend.held_results(dispatch.info.device, group, 1) {
            Some(mut results) if results.len() == 1 => {
                let result = results.remove(0);
                self.tool.on_pass_start(&view, pass);
                self.tool.on_pass_stop(&view, pass, &result);
                self.send_dispatch(dispatch, Some(pass), result);
                true
            }
            _ => false,
        }
    }

    /// One further pass of a dispatch replayed alone: its group started, the launch re-executed,
    /// the counters read. (Windows of several dispatches run their passes in `windowed`.)
    fn run_pass<B: ReplayBackend>(
        &self,
        backend: &mut B,
        dispatch: &Dispatch,
        launch: &B::Launch,
        pass: u32,
    ) -> Result<(), PassFailure> {
        let device = dispatch.info.device;
        let view = dispatch.tool_view();
        let group = self.tool.pass_group(&view, pass);
        self.tool.on_pass_start(&view, pass);
        let started = backend.start_pass(device, group);
        if let Err(error) = backend.relaunch(launch) {
            return Err(PassFailure::Fatal(format!(
                "re-executing kernel {:?} for pass {pass} of dispatch {} failed after its memory was restored ({error}); the application's memory can no longer be trusted",
                dispatch.info.kernel_name, dispatch.dispatch_id
            )));
        }
        if let Err(error) = started {
            // The kernel ran (memory is right) but unmeasured; wait for it, then stop.
            let _ = backend.stop_pass(device, None);
            return Err(PassFailure::Counters(format!("start_pass: {error}")));
        }
        match backend.stop_pass(device, group) {
            Ok(result) => {
                self.tool.on_pass_stop(&view, pass, &result);
                self.send_dispatch(dispatch, Some(pass), result);
                Ok(())
            }
            Err(error) => Err(PassFailure::Counters(format!("stop_pass: {error}"))),
        }
    }

    fn close_replay<B: ReplayBackend>(
        &self,
        backend: &mut B,
        snapshot: Option<B::Snapshot>,
        mut cost: ReplayCost,
        window: WindowHold,
    ) {
        release_snapshot(backend, snapshot);
        drop(window);
        cost.passes = cost.pass_ns.len() as u32;
        self.sink.send(Record::ReplayCost(cost));
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

    fn decline_notice(&self, outcome: ReplayOutcome) {
        let message = match outcome {
            ReplayOutcome::DeclinedGraphLaunch => {
                "graph launches are not replayed; they run once with the first counter group only"
            }
            ReplayOutcome::DeclinedStreamCapture => {
                "launches recorded into a stream capture do not execute and are not profiled; the graph built from them runs once, unreplayed"
            }
            ReplayOutcome::DeclinedMultiDevice => {
                "multi-device cooperative launches are not replayed; they run once with the first counter group only"
            }
            ReplayOutcome::DeclinedSnapshotTooLarge => {
                "a dispatch's tracked memory did not fit in device or host staging, so it ran once with the first counter group only; free memory or use application replay (omit --replay-mode kernel)"
            }
            _ => return,
        };
        self.notices.once(
            outcome.as_str(),
            message,
            self.sink.as_ref(),
            self.options.logger.as_ref(),
        );
    }

    fn backend_notice(&self, operation: &str, error: &BackendError) {
        self.notices.once(
            &format!("backend-{operation}"),
            &format!("{operation} failed ({error}); affected dispatches are not replayed (first occurrence shown)"),
            self.sink.as_ref(),
            self.options.logger.as_ref(),
        );
    }

    /// Stores every record (the sink is closed: the process is ending, and the database must be
    /// left complete), then runs the abort action.
    fn fatal(&self, message: &str) {
        self.sink.send(Record::Warning(kreplay_format::Warning {
            message: format!("fatal: {message}"),
        }));
        self.sink.close();
        (self.options.abort)(message);
    }
}

/// Why a launch that runs once closed a replay window, for the window summary.
fn once_reason(outcome: ReplayOutcome) -> &'static str {
    match outcome {
        ReplayOutcome::Filtered => "a filtered launch",
        ReplayOutcome::DeclinedGraphLaunch => "a graph launch",
        ReplayOutcome::DeclinedMultiDevice => "a multi-device launch",
        ReplayOutcome::SinglePass => "a single-pass launch",
        _ => "a launch that runs once",
    }
}

fn wants_replay(count: PassCount) -> bool {
    matches!(count, PassCount::UntilStopped) || matches!(count, PassCount::Passes(n) if n > 1)
}

/// Writes a unit's snapshot back; a unit without one (no tracked memory) restores nothing.
fn restore_snapshot<B: ReplayBackend>(
    backend: &mut B,
    snapshot: &Option<B::Snapshot>,
) -> Result<u64, BackendError> {
    match snapshot {
        Some(staged) => backend.restore(staged),
        None => Ok(0),
    }
}

fn release_snapshot<B: ReplayBackend>(backend: &mut B, snapshot: Option<B::Snapshot>) {
    if let Some(staged) = snapshot {
        backend.release(staged);
    }
}

fn passthrough<S>(fence: FenceGuard) -> LaunchTicket<S> {
    LaunchTicket {
        kind: TicketKind::Passthrough { _fence: fence },
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
    check::<Engine>();
}

mod windowed;

#[cfg(test)]
mod tests;
