//! Pass-loop tests against a backend that logs every call and models memory as one counter
//! that each execution increments (so a missing or extra restore shows in the final value).

use super::*;
use crate::backend::{AllocKind, PassCounters, Region, UnitPlan};
use crate::config::{CounterGroup, CounterSpec, InProcessMode, KernelFilter};
use crate::notice::SilentLogger;
use kreplay_format::{CounterSample, Warning};
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

#[derive(Debug, Clone, PartialEq)]
enum Op {
    Drain,
    Snapshot(Staging),
    Restore,
    Release,
    /// A unit planned for these groups.
    Plan(Vec<Option<usize>>),
    /// An execution started for up to this many launches.
    Start(usize, usize),
    /// An execution stopped, with this many measured launches.
    Stop(usize),
    /// The timing execution started for up to this many launches.
    StartTiming(usize),
    Relaunch,
    Execute,
    Capture,
    Apply,
}

/// The unit the mock measures.
#[derive(Debug, Default)]
struct MockUnit {
    groups: Vec<Option<usize>>,
    plan: Option<UnitPlan>,
    running: Option<usize>,
    pending: bool,
    launches: usize,
    measured: Vec<Option<usize>>,
}

/// Where the mock device's memory lives.
const VALUE_BASE: u64 = 0x1000;

/// The value when the snapshot covers its region, and the bytes covered.
type MockSnapshot = (Option<u64>, u64);

#[derive(Default)]
struct MockBackend {
    ops: Vec<Op>,
    /// Device memory: incremented by every execution; it lives in the region at `value_base`
    /// ([`VALUE_BASE`] unless a test says otherwise; a snapshot holds it only when it covers
    /// that region).
    value: u64,
    value_base: u64,
    free_bytes: u64,
    device_staging_full: bool,
    host_staging_full: bool,
    drain_times_out: bool,
    restore_fails: bool,
    relaunch_fails: bool,
    /// How long every relaunch takes.
    relaunch_takes: Duration,
    /// The timing execution cannot start (its launches still run).
    timing_start_fails: bool,
    /// Relaunches that succeed before every later one fails.
    relaunches_before_failing: Option<usize>,
    collectable: Option<usize>,
    /// Calls of the query methods (free memory, collectable groups).
    queries: usize,
    /// Launches a unit may hold (0 or 1: no windows).
    max_window: usize,
    retain_fails: bool,
    /// Executions cannot be started (counters cannot be programmed).
    start_fails: bool,
    /// One execution measures every group (a packing backend).
    packed: bool,
    /// The next stop fails (the counters did not match the launches).
    stop_fails: bool,
    /// What every launch's parameters hold.
    addresses: Vec<u64>,
    /// Executions group 0 alone needs (a metric over several hardware passes; 0 means 1).
    span: usize,
    /// A graph launch can be measured as one dispatch.
    measures_graphs: bool,
    unit: MockUnit,
    /// Measured launches begun since the unit's conditions were last taken (a backend that
    /// flushes before each would report them as flushed).
    launches_since_conditions: usize,
    /// The next `unit_counters` fails (after ending the unit, as the trait says).
    counters_fail: bool,
    /// `unit_counters` calls to let through before `counters_fail` applies.
    counters_fail_after: usize,
    /// Calls of `abandon_unit`.
    abandons: usize,
    /// Runs timing executions (whose launches last 2 ns, against 5 for measured ones).
    timing_executions: bool,
}

/// The mock's index for the timing execution.
const TIMING: usize = usize::MAX;

impl MockBackend {
    fn new() -> Self {
        MockBackend {
            free_bytes: u64::MAX / 2,
            value_base: VALUE_BASE,
            ..MockBackend::default()
        }
    }

    /// The application's own execution of the launch.
    fn execute(&mut self) {
        self.ops.push(Op::Execute);
        self.value += 1;
    }

    fn count(&self, op: &Op) -> usize {
        self.ops.iter().filter(|o| *o == op).count()
    }
}

impl ReplayBackend for MockBackend {
    type Launch = ();
    type Snapshot = MockSnapshot;
    type Capture = u64;

    fn executions_of_group(&mut self, _device: DeviceId, group: usize) -> usize {
        if group == 0 {
            self.span.max(1)
        } else {
            1
        }
    }

    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        self.ops.push(Op::Drain);
        if self.drain_times_out {
            return Err(BackendError::DrainTimeout { device, deadline });
        }
        Ok(())
    }

    fn device_free_bytes(&mut self, _device: DeviceId) -> u64 {
        self.queries += 1;
        self.free_bytes
    }

    fn snapshot(
        &mut self,
        _device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<MockSnapshot, BackendError> {
        let bytes = regions.iter().map(|r| r.bytes).sum();
        let full = match place {
            Staging::Device => self.device_staging_full,
            Staging::Host => self.host_staging_full,
            Staging::None => true,
        };
        if full {
            return Err(BackendError::OutOfStagingMemory(place, bytes));
        }
        self.ops.push(Op::Snapshot(place));
        let value = regions
            .iter()
            .any(|r| r.base == self.value_base)
            .then_some(self.value);
        Ok((value, bytes))
    }

    fn restore(&mut self, snapshot: &MockSnapshot) -> Result<u64, BackendError> {
        self.ops.push(Op::Restore);
        if self.restore_fails {
            return Err(BackendError::Failed("copy failed".into()));
        }
        let (value, bytes) = *snapshot;
        if let Some(value) = value {
            self.value = value;
        }
        Ok(bytes)
    }

    fn release(&mut self, _snapshot: MockSnapshot) {
        self.ops.push(Op::Release);
    }

    fn collectable_groups(&mut self, _device: DeviceId, configured: usize) -> usize {
        self.queries += 1;
        self.collectable.unwrap_or(configured)
    }

    fn max_window(&mut self, _device: DeviceId) -> usize {
        self.max_window.max(1)
    }

    fn graph_launch_unmeasurable(&mut self, _device: DeviceId) -> Option<&'static str> {
        (!self.measures_graphs).then_some("the mock cannot")
    }

    fn plan_unit(
        &mut self,
        _device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        self.ops.push(Op::Plan(groups.to_vec()));
        let plan = if self.span > 1 && groups == [Some(0)] {
            UnitPlan {
                executions: self.span,
                execution_of_pass: vec![0],
            }
        } else if self.packed {
            UnitPlan {
                executions: 1,
                execution_of_pass: vec![0; groups.len()],
            }
        } else {
            UnitPlan::one_per_pass(groups.len())
        };
        self.unit = MockUnit {
            groups: groups.to_vec(),
            measured: vec![None; plan.executions],
            plan: Some(plan.clone()),
            ..MockUnit::default()
        };
        Ok(plan)
    }

    fn start_execution(
        &mut self,
        _device: DeviceId,
        execution: usize,
        ranges: usize,
    ) -> Result<(), BackendError> {
        assert!(self.unit.running.is_none(), "start while running");
        assert!(self.unit.plan.is_some(), "start without a plan");
        if self.start_fails {
            return Err(BackendError::Failed("counters busy".into()));
        }
        self.ops.push(Op::Start(execution, ranges));
        self.unit.running = Some(execution);
        self.unit.launches = 0;
        Ok(())
    }

    fn launch_starts(&mut self, _device: DeviceId) -> Result<(), BackendError> {
        assert!(
            self.unit.running.is_some(),
            "launch_starts outside an execution"
        );
        self.unit.pending = true;
        self.launches_since_conditions += 1;
        Ok(())
    }

    fn take_unit_conditions(&mut self, _device: DeviceId) -> UnitConditions {
        UnitConditions {
            cache: if std::mem::take(&mut self.launches_since_conditions) > 0 {
                kreplay_format::CacheState::Flushed
            } else {
                kreplay_format::CacheState::AsLeft
            },
            ..UnitConditions::default()
        }
    }

    fn launch_ends(&mut self, _device: DeviceId) -> Result<(), BackendError> {
        assert!(
            std::mem::take(&mut self.unit.pending),
            "launch_ends without start"
        );
        self.unit.launches += 1;
        Ok(())
    }

    fn launch_abandoned(&mut self, _device: DeviceId) {
        self.unit.pending = false;
    }

    fn stop_execution(&mut self, _device: DeviceId) -> Result<Vec<Timing>, BackendError> {
        let execution = self.unit.running.take().expect("stop without start");
        self.ops.push(Op::Stop(self.unit.launches));
        if std::mem::take(&mut self.stop_fails) {
            return Err(BackendError::Failed(
                "measured 3 kernels for 2 launches".into(),
            ));
        }
        let duration = if execution == TIMING {
            2
        } else {
            self.unit.measured[execution] = Some(self.unit.launches);
            5
        };
        Ok((0..self.unit.launches)
            .map(|i| Timing {
                start_ns: 10 * i as u64,
                end_ns: 10 * i as u64 + duration,
            })
            .collect())
    }

    fn runs_timing_executions(&mut self, _device: DeviceId) -> bool {
        self.timing_executions
    }

    fn start_timing_execution(
        &mut self,
        _device: DeviceId,
        ranges: usize,
    ) -> Result<(), BackendError> {
        assert!(self.unit.running.is_none(), "start while running");
        self.ops.push(Op::StartTiming(ranges));
        if self.timing_start_fails {
            return Err(BackendError::Failed("timing execution refused".into()));
        }
        self.unit.running = Some(TIMING);
        self.unit.launches = 0;
        Ok(())
    }

    fn unit_counters(&mut self, _device: DeviceId) -> Result<PassCounters, BackendError> {
        let unit = std::mem::take(&mut self.unit);
        let due = self.counters_fail_after == 0;
        self.counters_fail_after = self.counters_fail_after.saturating_sub(1);
        if due && std::mem::take(&mut self.counters_fail) {
            return Err(BackendError::Failed(
                "the counters could not be decoded".into(),
            ));
        }
        let plan = unit.plan.expect("counters without a plan");
        Ok(unit
            .groups
            .iter()
            .zip(&plan.execution_of_pass)
            .map(|(group, execution)| {
                let launches = unit.measured[*execution]?;
                Some(
                    (0..launches)
                        .map(|_| {
                            group
                                .map(|g| {
                                    vec![CounterSample {
                                        name: format!("group{g}"),
                                        value: 32.0,
                                    }]
                                })
                                .unwrap_or_default()
                        })
                        .collect(),
                )
            })
            .collect())
    }

    fn abandon_unit(&mut self, _device: DeviceId) {
        self.abandons += 1;
        self.unit = MockUnit::default();
    }

    fn relaunch(&mut self, _launch: &()) -> Result<(), BackendError> {
        self.ops.push(Op::Relaunch);
        std::thread::sleep(self.relaunch_takes);
        if let Some(left) = self.relaunches_before_failing.as_mut() {
            if *left == 0 {
                return Err(BackendError::Failed("launch failed".into()));
            }
            *left -= 1;
        }
        if self.relaunch_fails {
            return Err(BackendError::Failed("launch failed".into()));
        }
        self.value += 1;
        Ok(())
    }

    fn retain_launch(&mut self, _launch: &()) -> Result<(), BackendError> {
        if self.retain_fails {
            return Err(BackendError::Failed("parameters unknown".into()));
        }
        Ok(())
    }

    fn launch_addresses(&mut self, _launch: &()) -> Vec<u64> {
        self.addresses.clone()
    }

    fn capture(&mut self, _device: DeviceId, _base: u64, _bytes: u64) -> Result<u64, BackendError> {
        self.ops.push(Op::Capture);
        Ok(self.value)
    }

    fn apply(&mut self, capture: &u64) -> Result<(), BackendError> {
        self.ops.push(Op::Apply);
        self.value = *capture;
        Ok(())
    }
}

#[derive(Default)]
struct MemorySink {
    records: Mutex<Vec<Record>>,
    flushes: AtomicUsize,
    closes: AtomicUsize,
}

impl RecordSink for MemorySink {
    fn send(&self, record: Record) {
        self.records.lock().unwrap().push(record);
    }
    fn flush(&self) {
        self.flushes.fetch_add(1, Ordering::SeqCst);
    }
    fn close(&self) {
        self.closes.fetch_add(1, Ordering::SeqCst);
    }
}

impl MemorySink {
    fn dispatches(&self) -> Vec<DispatchRecord> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Record::Dispatch(d) => Some(d.clone()),
                _ => None,
            })
            .collect()
    }
    fn costs(&self) -> Vec<ReplayCost> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Record::ReplayCost(c) => Some(c.clone()),
                _ => None,
            })
            .collect()
    }
    fn warnings(&self) -> Vec<String> {
        self.records
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Record::Warning(Warning { message }) => Some(message.clone()),
                _ => None,
            })
            .collect()
    }
}

/// What the abort action saw: the message and how many closes of the sink had happened by then.
type Aborts = Arc<Mutex<Vec<(String, usize)>>>;

struct Harness {
    engine: Engine<(), MockSnapshot, u64>,
    sink: Arc<MemorySink>,
    aborts: Aborts,
}

fn groups(n: usize) -> Vec<CounterGroup> {
    (0..n)
        .map(|g| CounterGroup {
            counters: vec![CounterSpec {
                requested: format!("group{g}"),
                metric: format!("metric{g}"),
            }],
        })
        .collect()
}

fn config(groups_n: usize, mode: InProcessMode) -> ToolConfig {
    ToolConfig {
        groups: groups(groups_n),
        mode,
        ..ToolConfig::default()
    }
}

fn harness_with(config: ToolConfig, policy: Option<Box<dyn ReplayPolicy>>) -> Harness {
    let sink = Arc::new(MemorySink::default());
    let aborts: Aborts = Arc::default();
    let options = EngineOptions {
        logger: Arc::new(SilentLogger),
        abort: {
            let aborts = aborts.clone();
            let sink = sink.clone();
            Arc::new(move |message: &str| {
                let closes = sink.closes.load(Ordering::SeqCst);
                aborts.lock().unwrap().push((message.to_string(), closes));
            })
        },
        staging_reserve_bytes: 1024,
        window_spans_calls: true,
    };
    let policy = policy.unwrap_or_else(|| Box::new(CounterGroupsPolicy::new(&config)));
    let engine = Engine::with_options(config, sink.clone(), policy, options).unwrap();
    engine.inventory().insert(Region {
        device: 0,
        base: VALUE_BASE,
        bytes: 8,
        kind: AllocKind::Device,
    });
    Harness {
        engine,
        sink,
        aborts,
    }
}

fn harness(groups_n: usize, mode: InProcessMode) -> Harness {
    harness_with(config(groups_n, mode), None)
}

fn info(kind: LaunchKind) -> DispatchInfo {
    DispatchInfo {
        device: 0,
        kind,
        kernel_name: "_Z6kernelv".into(),
        kernel_id: 7,
        stream_id: 1,
        correlation_id: 99,
        grid: [4, 1, 1],
        block: [64, 1, 1],
        dynamic_shared_bytes: 0,
    }
}

/// One launch as a backend drives it: enter, the app's execution (unless captured), exit.
fn launch(h: &Harness, backend: &mut MockBackend, kind: LaunchKind) {
    let ticket = h.engine.launch_enter(backend, &info(kind));
    if kind != LaunchKind::StreamCapture {
        backend.execute();
    }
    h.engine.launch_exit(backend, ticket, &());
}

/// A call of the application with `effect`, as a backend drives it.
fn call(h: &Harness, backend: &mut MockBackend, name: &str, effect: CallEffect) {
    let guard = h
        .engine
        .enter_call(backend, name, effect, DeviceScope::One(0));
    h.engine.exit_call(backend, guard);
}

/// A copy into the tracked allocation: the mock's memory changes by `by`.
fn write_call(h: &Harness, backend: &mut MockBackend, by: u64) {
    let guard = h.engine.enter_call(
        backend,
        "cuMemcpyHtoDAsync_v2",
        CallEffect::DeviceWrite {
            device: 0,
            base: 0x1000,
            bytes: 8,
        },
        DeviceScope::One(0),
    );
    backend.value += by;
    h.engine.exit_call(backend, guard);
}

#[test]
fn two_groups_snapshot_once_restore_once_and_keep_the_last_pass() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.ops,
        vec![
            Op::Drain,
            Op::Plan(vec![Some(0), Some(1)]),
            Op::Snapshot(Staging::Device),
            Op::Start(0, 1),
            Op::Execute,
            Op::Stop(1),
            Op::Restore,
            Op::Start(1, 1),
            Op::Relaunch,
            Op::Stop(1),
            Op::Release,
        ]
    );
    assert_eq!(backend.value, 1, "the kernel's effect is kept exactly once");
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 2);
    assert!(dispatches.iter().all(|d| d.dispatch_id == 1));
    assert_eq!(
        dispatches.iter().map(|d| d.replay_pass).collect::<Vec<_>>(),
        vec![Some(0), Some(1)]
    );
    assert_eq!(dispatches[1].counters[0].name, "group1");
    let cost = &h.sink.costs()[0];
    assert_eq!(cost.outcome, ReplayOutcome::Replayed);
    assert_eq!(cost.passes, 2);
    assert_eq!(cost.pass_ns.len(), 2);
    assert_eq!(cost.bytes_snapshotted, 8);
    assert_eq!(cost.bytes_restored, 8);
    assert_eq!(cost.staging, Staging::Device);
}

#[test]
fn a_timing_execution_gives_every_pass_its_durations_and_leaves_memory_as_one_execution() {
    let config = config(2, InProcessMode::KernelReplay);
    assert!(config.switches.timing_execution, "on by default");
    let h = harness_with(config, None);
    let mut backend = MockBackend::new();
    backend.timing_executions = true;
    backend.relaunch_takes = Duration::from_millis(5);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.ops,
        vec![
            Op::Drain,
            Op::Plan(vec![Some(0), Some(1)]),
            Op::Snapshot(Staging::Device),
            Op::Start(0, 1),
            Op::Execute,
            Op::Stop(1),
            Op::Restore,
            Op::Start(1, 1),
            Op::Relaunch,
            Op::Stop(1),
            Op::Restore,
            Op::StartTiming(1),
            Op::Relaunch,
            Op::Stop(1),
            Op::Release,
        ]
    );
    assert_eq!(backend.value, 1, "the kernel's effect is kept exactly once");
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 2, "the timing execution adds no record");
    for d in &dispatches {
        assert_eq!(
            d.end_ns - d.start_ns,
            2,
            "the duration of the execution without counters"
        );
        assert!(!d.counters.is_empty(), "the counters of the measured pass");
    }
    let cost = &h.sink.costs()[0];
    assert_eq!(cost.passes, 2);
    assert_eq!(cost.pass_ns.len(), 2, "the timing execution is not a pass");
    assert_eq!(cost.bytes_restored, 16);
    let relaunch = Duration::from_millis(5).as_nanos() as u64;
    assert!(
        cost.timing_execution_ns >= relaunch && cost.pass_ns[1] >= relaunch,
        "the timing execution's own time is recorded beside the passes': {cost:?}"
    );
}

#[test]
fn a_timing_execution_that_cannot_start_keeps_the_measured_times_and_says_so_once() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    backend.timing_executions = true;
    backend.timing_start_fails = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.value, 2, "every kernel's effect kept exactly once");
    assert!(h.aborts.lock().unwrap().is_empty());
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 4);
    for d in &dispatches {
        assert_eq!(
            d.end_ns - d.start_ns,
            5,
            "the measured execution's duration"
        );
        assert!(!d.counters.is_empty());
    }
    let costs = h.sink.costs();
    assert!(
        costs.iter().all(|c| c.outcome == ReplayOutcome::Replayed),
        "{costs:?}"
    );
    let said = h
        .sink
        .warnings()
        .iter()
        .filter(|w| w.contains("an execution without counters for the records' durations failed"))
        .count();
    assert_eq!(said, 1, "{:?}", h.sink.warnings());
}

#[test]
fn a_timing_execution_whose_relaunch_fails_is_fatal() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    backend.timing_executions = true;
    // Pass 1's relaunch succeeds, the timing execution's fails.
    backend.relaunches_before_failing = Some(1);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::StartTiming(1)), 1);
    let aborts = h.aborts.lock().unwrap().clone();
    assert_eq!(aborts.len(), 1, "{aborts:?}");
    assert!(
        aborts[0].0.contains("re-executing") && aborts[0].0.contains("execution timing"),
        "{}",
        aborts[0].0
    );
}

#[test]
fn no_timing_execution_when_switched_off_for_one_pass_or_where_the_device_runs_none() {
    let two_groups = |switch: bool, runs: bool| {
        let mut config = config(2, InProcessMode::KernelReplay);
        config.switches.timing_execution = switch;
        let h = harness_with(config, None);
        let mut backend = MockBackend::new();
        backend.timing_executions = runs;
        backend.relaunch_takes = Duration::from_millis(2);
        launch(&h, &mut backend, LaunchKind::Kernel);
        let recorded = h.sink.costs()[0].timing_execution_ns;
        assert_eq!(recorded, 0, "no timing execution ran, none is recorded");
        (backend.count(&Op::StartTiming(1)), backend.value)
    };
    assert_eq!(two_groups(false, true), (0, 1), "switched off");
    assert_eq!(two_groups(true, false), (0, 1), "the device runs none");
    let h = harness_with(config(1, InProcessMode::KernelReplay), None);
    let mut backend = MockBackend::new();
    backend.timing_executions = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.count(&Op::StartTiming(1)),
        0,
        "one execution: nothing to replay from"
    );
    assert_eq!(backend.value, 1);
}

#[test]
fn n_groups_restore_n_minus_one_times_never_after_the_last_pass() {
    for n in 2..=5 {
        let h = harness(n, InProcessMode::KernelReplay);
        let mut backend = MockBackend::new();
        launch(&h, &mut backend, LaunchKind::Kernel);
        launch(&h, &mut backend, LaunchKind::Kernel);
        assert_eq!(backend.count(&Op::Restore), 2 * (n - 1));
        assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 2);
        let before_release = backend
            .ops
            .iter()
            .position(|o| *o == Op::Release)
            .map(|i| &backend.ops[i - 1]);
        assert_eq!(before_release, Some(&Op::Stop(1)));
        assert_eq!(backend.value, 2);
        let passes: Vec<(u64, Option<u32>)> = h
            .sink
            .dispatches()
            .iter()
            .map(|d| (d.dispatch_id, d.replay_pass))
            .collect();
        let expected: Vec<(u64, Option<u32>)> = (1..=2)
            .flat_map(|id| (0..n as u32).map(move |p| (id, Some(p))))
            .collect();
        assert_eq!(passes, expected);
    }
}

#[test]
fn groups_packed_into_one_execution_need_no_snapshot() {
    let h = harness(3, InProcessMode::KernelReplay);
    let mut backend = MockBackend {
        packed: true,
        ..MockBackend::new()
    };
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.ops,
        vec![
            Op::Drain,
            Op::Plan(vec![Some(0), Some(1), Some(2)]),
            Op::Start(0, 1),
            Op::Execute,
            Op::Stop(1),
        ]
    );
    let names: Vec<String> = h
        .sink
        .dispatches()
        .iter()
        .map(|d| format!("{:?} {}", d.replay_pass, d.counters[0].name))
        .collect();
    assert_eq!(
        names,
        ["Some(0) group0", "Some(1) group1", "Some(2) group2"]
    );
    let cost = &h.sink.costs()[0];
    assert_eq!((cost.passes, cost.bytes_snapshotted), (1, 0));
}

#[test]
fn one_group_is_the_ordinary_path() {
    let h = harness(1, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.ops,
        vec![
            Op::Plan(vec![Some(0)]),
            Op::Start(0, 1),
            Op::Execute,
            Op::Stop(1)
        ]
    );
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 1);
    assert_eq!(dispatches[0].replay_pass, None);
    let cost = &h.sink.costs()[0];
    assert_eq!(
        (
            cost.outcome,
            cost.passes,
            cost.bytes_snapshotted,
            cost.staging
        ),
        (ReplayOutcome::SinglePass, 1, 0, Staging::None)
    );
}

#[test]
fn dispatch_ids_count_from_one_one_per_dispatch() {
    let h = harness(3, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    for _ in 0..3 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    launch(&h, &mut backend, LaunchKind::Graph);
    let mut ids: Vec<u64> = h.sink.dispatches().iter().map(|d| d.dispatch_id).collect();
    ids.dedup();
    assert_eq!(ids, vec![1, 2, 3, 4]);
}

#[test]
fn declines_run_once_and_warn_once_per_reason() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    for _ in 0..2 {
        launch(&h, &mut backend, LaunchKind::Graph);
        launch(&h, &mut backend, LaunchKind::MultiDevice);
        launch(&h, &mut backend, LaunchKind::StreamCapture);
    }
    assert_eq!(
        backend.value, 4,
        "graph and multi-device ran once each time"
    );
    assert_eq!(backend.count(&Op::Restore), 0);
    assert_eq!(backend.count(&Op::Drain), 0);
    let warnings = h.sink.warnings();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("graph launches")));
    assert!(warnings.iter().any(|w| w.contains("multi-device")));
    assert!(warnings.iter().any(|w| w.contains("stream capture")));
    let outcomes: Vec<ReplayOutcome> = h.sink.costs().iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            ReplayOutcome::DeclinedGraphLaunch,
            ReplayOutcome::DeclinedMultiDevice,
            ReplayOutcome::DeclinedGraphLaunch,
            ReplayOutcome::DeclinedMultiDevice,
        ]
    );
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 4, "each declined launch is measured once");
    assert!(dispatches.iter().all(|d| d.replay_pass.is_none()));
}

#[test]
fn kernels_that_print_or_use_the_device_heap_run_once_and_say_why() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::DevicePrintf);
    launch(&h, &mut backend, LaunchKind::DeviceHeap);
    launch(&h, &mut backend, LaunchKind::DevicePrintf);
    assert_eq!(backend.value, 3, "each ran once");
    assert_eq!(backend.count(&Op::Restore), 0);
    let outcomes: Vec<ReplayOutcome> = h.sink.costs().iter().map(|c| c.outcome).collect();
    assert_eq!(
        outcomes,
        vec![
            ReplayOutcome::DeclinedDevicePrintf,
            ReplayOutcome::DeclinedDeviceHeap,
            ReplayOutcome::DeclinedDevicePrintf,
        ]
    );
    let warnings = h.sink.warnings();
    assert_eq!(warnings.len(), 2, "once per reason: {warnings:?}");
    assert!(warnings.iter().any(|w| w.contains("call printf")));
    assert!(warnings.iter().any(|w| w.contains("device heap")));
}

#[test]
fn collective_kernels_run_once_and_say_why() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Collective);
    launch(&h, &mut backend, LaunchKind::Collective);
    assert_eq!(backend.value, 2, "each ran once");
    assert_eq!(backend.count(&Op::Restore), 0);
    let outcomes: Vec<ReplayOutcome> = h.sink.costs().iter().map(|c| c.outcome).collect();
    assert_eq!(outcomes, vec![ReplayOutcome::DeclinedCollective; 2]);
    let warnings = h.sink.warnings();
    assert_eq!(warnings.len(), 1, "once: {warnings:?}");
    assert!(warnings[0].contains("NCCL"));
}

/// Launches of `kind` between ordinary ones run once, recorded as `outcome`, with one warning
/// that contains `says`.
fn runs_once_and_says_why(kind: LaunchKind, outcome: ReplayOutcome, says: &str) {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, kind);
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, kind);
    assert_eq!(backend.value, 3, "each ran once");
    let outcomes: Vec<ReplayOutcome> = h.sink.costs().iter().map(|c| c.outcome).collect();
    assert_eq!(outcomes, vec![outcome, ReplayOutcome::Replayed, outcome]);
    let warnings = h.sink.warnings();
    assert_eq!(warnings.len(), 1, "once: {warnings:?}");
    assert!(warnings[0].contains(says), "{warnings:?}");
    assert!(h.engine.gates_idle());
}

#[test]
fn kernels_reaching_pageable_host_memory_run_once_and_say_why() {
    runs_once_and_says_why(
        LaunchKind::PageableHost,
        ReplayOutcome::DeclinedPageableHost,
        "(pageable) host memory",
    );
}

#[test]
fn kernels_reaching_another_devices_memory_run_once_and_say_why() {
    runs_once_and_says_why(
        LaunchKind::PeerMemory,
        ReplayOutcome::DeclinedPeerMemory,
        "another GPU's memory",
    );
}

#[test]
fn a_stream_capture_asks_the_backend_nothing() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::StreamCapture);
    assert!(backend.ops.is_empty(), "{:?}", backend.ops);
    assert_eq!(backend.queries, 0);
    assert!(h.sink.dispatches().is_empty());
    assert!(h.sink.costs().is_empty());
}

#[test]
fn declines_are_not_warned_when_nothing_would_be_replayed() {
    let h = harness(1, InProcessMode::KernelReplay);
    let mut backend = MockBackend {
        measures_graphs: true,
        ..MockBackend::new()
    };
    launch(&h, &mut backend, LaunchKind::Graph);
    launch(&h, &mut backend, LaunchKind::StreamCapture);
    assert!(h.sink.warnings().is_empty());
}

#[test]
fn graph_launches_without_counters_to_measure_say_nothing() {
    // A run with no groups (kernel trace only, or nothing): no notice, and a record only with
    // --kernel-trace, as for any launch.
    for trace in [false, true] {
        let mut config = config(0, InProcessMode::Single);
        config.kernel_trace = trace;
        let h = harness_with(config, None);
        let mut backend = MockBackend::new();
        launch(&h, &mut backend, LaunchKind::Graph);
        assert!(h.sink.warnings().is_empty(), "{:?}", h.sink.warnings());
        assert_eq!(h.sink.dispatches().len(), usize::from(trace));
    }
}

#[test]
fn a_graph_launch_a_backend_measures_has_room_for_a_range_per_node() {
    let h = harness(1, InProcessMode::Single);
    let mut backend = MockBackend {
        measures_graphs: true,
        ..window_backend(64)
    };
    launch(&h, &mut backend, LaunchKind::Graph);
    assert!(backend.ops.contains(&Op::Start(0, 64)), "{:?}", backend.ops);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert!(backend.ops.contains(&Op::Start(0, 1)), "{:?}", backend.ops);
}

#[test]
fn graph_launches_a_backend_cannot_measure_run_unmeasured_in_every_mode() {
    // On the H200 a graph launch measured with a group left CUPTI in error (one range per
    // kernel node where one was planned), and no later dispatch got counters.
    for (groups, mode) in [
        (1, InProcessMode::Single),
        (1, InProcessMode::KernelReplay),
        (2, InProcessMode::KernelReplay),
    ] {
        let h = harness(groups, mode);
        let mut backend = MockBackend::new();
        launch(&h, &mut backend, LaunchKind::Graph);
        assert_eq!(
            backend.ops[0],
            Op::Plan(vec![None]),
            "{mode:?}: timestamps only"
        );
        launch(&h, &mut backend, LaunchKind::Kernel);
        let dispatches = h.sink.dispatches();
        assert!(dispatches[0].counters.is_empty(), "{mode:?}");
        assert!(!dispatches[1].counters.is_empty(), "{mode:?}");
        assert_eq!(
            h.sink.costs()[0].outcome,
            ReplayOutcome::DeclinedGraphLaunch
        );
        let warnings = h.sink.warnings();
        assert_eq!(warnings.len(), 1, "{warnings:?}");
        assert!(warnings[0].starts_with("graph launches are not replayed or measured"));
    }
}

#[test]
fn staging_falls_back_to_host_then_declines_too_large() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    backend.device_staging_full = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(h.sink.costs()[0].staging, Staging::Host);

    // Free memory below snapshot + reserve: device staging is not even tried.
    let mut backend = MockBackend::new();
    backend.free_bytes = 1024 + 7;
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(h.sink.costs()[1].staging, Staging::Host);

    let mut backend = MockBackend::new();
    backend.device_staging_full = true;
    backend.host_staging_full = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.value, 2);
    assert_eq!(backend.count(&Op::Relaunch), 0);
    let costs = h.sink.costs();
    assert_eq!(costs[2].outcome, ReplayOutcome::DeclinedSnapshotTooLarge);
    assert_eq!(costs[2].bytes_tracked, 8);
    let too_large = h
        .sink
        .warnings()
        .iter()
        .filter(|w| w.contains("did not fit"))
        .count();
    assert_eq!(too_large, 1);
}

#[test]
fn host_staging_switch_stages_on_the_host_only_with_the_same_results() {
    let mut config = config(2, InProcessMode::KernelReplay);
    config.switches.host_staging = true;
    let h = harness_with(config, None);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.value, 1, "the kernel's effect is kept exactly once");
    let cost = &h.sink.costs()[0];
    assert_eq!(
        (cost.outcome, cost.staging),
        (ReplayOutcome::Replayed, Staging::Host)
    );
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 0);
    assert_eq!(backend.count(&Op::Snapshot(Staging::Host)), 1);

    // No room on the host: declined as too large, device staging not tried.
    let mut config = self::config(2, InProcessMode::KernelReplay);
    config.switches.host_staging = true;
    let h = harness_with(config, None);
    let mut backend = MockBackend::new();
    backend.host_staging_full = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        h.sink.costs()[0].outcome,
        ReplayOutcome::DeclinedSnapshotTooLarge
    );
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 0);
    assert_eq!(backend.value, 1);
}

#[test]
fn drain_timeout_stores_every_record_then_aborts_with_the_fix() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    backend.drain_times_out = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    let aborts = h.aborts.lock().unwrap().clone();
    assert_eq!(aborts.len(), 1);
    let (message, closes_before_abort) = &aborts[0];
    assert_eq!(*closes_before_abort, 1, "records stored before the abort");
    assert!(message.contains("KREPLAY_DRAIN_TIMEOUT"), "{message}");
    assert!(!message.contains('\n'));
    // The records of the first dispatch were sent before the flush.
    assert_eq!(h.sink.dispatches()[0].dispatch_id, 1);
    // The injected abort returned: the dispatch ran once, unreplayed.
    assert_eq!(backend.value, 2);
}

#[test]
fn failed_restore_is_fatal() {
    let h = harness(3, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    backend.restore_fails = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    let aborts = h.aborts.lock().unwrap().clone();
    assert_eq!(aborts.len(), 1);
    assert!(aborts[0].0.contains("restoring"), "{}", aborts[0].0);
    assert_eq!(backend.count(&Op::Relaunch), 0);
    assert_eq!(backend.count(&Op::Release), 1);
}

#[test]
fn failed_relaunch_after_restore_is_fatal() {
    let h = harness(2, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    backend.relaunch_fails = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    let aborts = h.aborts.lock().unwrap().clone();
    assert_eq!(aborts.len(), 1);
    assert!(aborts[0].0.contains("re-executing"), "{}", aborts[0].0);
}

#[test]
fn a_first_pass_that_cannot_start_runs_once_unmeasured_and_releases_everything() {
    use crate::config::ReplayWindow;
    for window in [ReplayWindow::Count(1), ReplayWindow::Count(4)] {
        let h = window_harness(2, window);
        let mut backend = window_backend(64);
        backend.start_fails = true;
        launch(&h, &mut backend, LaunchKind::Kernel);
        h.engine.finish_with(&mut backend);
        assert_eq!(backend.count(&Op::Relaunch), 0, "{window:?}");
        assert_eq!(backend.count(&Op::Restore), 0, "{window:?}");
        assert_eq!(backend.count(&Op::Release), 1, "{window:?}");
        assert_eq!(backend.value, 1, "{window:?}: the launch ran exactly once");
        assert!(h.sink.dispatches().is_empty(), "{window:?}");
        let costs = h.sink.costs();
        assert_eq!(costs.len(), 1, "{window:?}");
        assert_eq!(costs[0].outcome, ReplayOutcome::DeclinedError, "{window:?}");
        assert_eq!(costs[0].bytes_tracked, 8, "{window:?}");
        assert!(h.engine.gates_idle(), "{window:?}");
    }
}

#[test]
fn backend_may_collect_fewer_groups() {
    let h = harness(3, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    backend.collectable = Some(2);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::Restore), 1);
    assert_eq!(h.sink.dispatches().len(), 2);
}

#[test]
fn rotation_switches_groups_by_dispatch_count() {
    let h = harness(3, InProcessMode::Rotation { interval: 2 });
    let mut backend = MockBackend::new();
    for _ in 0..7 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    let planned: Vec<Vec<Option<usize>>> = backend
        .ops
        .iter()
        .filter_map(|o| match o {
            Op::Plan(g) => Some(g.clone()),
            _ => None,
        })
        .collect();
    let expected: Vec<Vec<Option<usize>>> = [0, 0, 1, 1, 2, 2, 0]
        .iter()
        .map(|g| vec![Some(*g)])
        .collect();
    assert_eq!(
        planned, expected,
        "group i for 2 dispatches, then i+1, wrapping"
    );
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 0);
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 7, "one record per dispatch");
    assert!(dispatches.iter().all(|d| d.replay_pass.is_none()));
}

#[test]
fn filtered_dispatches_are_traced_only_with_kernel_trace() {
    let filter = KernelFilter {
        exclude_regex: Some("kernel".into()),
        ..KernelFilter::default()
    };
    let h = harness_with(
        ToolConfig {
            filter: filter.clone(),
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.ops, vec![Op::Execute]);
    assert!(h.sink.dispatches().is_empty());

    let h = harness_with(
        ToolConfig {
            filter,
            kernel_trace: true,
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.ops,
        vec![
            Op::Plan(vec![None]),
            Op::Start(0, 1),
            Op::Execute,
            Op::Stop(1)
        ]
    );
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 1);
    assert!(dispatches[0].counters.is_empty());
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::Filtered);
}

#[test]
fn iteration_range_selects_occurrences_of_each_kernel() {
    let h = harness_with(
        ToolConfig {
            filter: KernelFilter {
                iteration_range: Some("[2-3]".into()),
                ..KernelFilter::default()
            },
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    for _ in 0..4 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    let ids: Vec<u64> = h.sink.dispatches().iter().map(|d| d.dispatch_id).collect();
    assert_eq!(ids, vec![2, 2, 3, 3]);
    assert_eq!(backend.value, 4);
}

#[test]
fn registered_demangled_names_are_what_filters_match() {
    let h = harness_with(
        ToolConfig {
            filter: KernelFilter {
                include_regex: Some(r"^kernel\(\)$".into()),
                ..KernelFilter::default()
            },
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert!(
        h.sink.dispatches().is_empty(),
        "mangled name does not match"
    );
    h.engine.register_kernel(KernelSymbol {
        kernel_id: 7,
        mangled_name: "_Z6kernelv".into(),
        demangled_name: "kernel()".into(),
        registers: 0,
        static_shared_bytes: 0,
        local_bytes: 0,
        param_bytes: 0,
    });
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(h.sink.dispatches().len(), 2);
}

#[test]
fn untracked_memory_is_warned_once_per_kind() {
    let h = harness(2, InProcessMode::KernelReplay);
    for (base, kind) in [
        (0x10_000, AllocKind::Host),
        (0x20_000, AllocKind::Host),
        (0x30_000, AllocKind::Managed),
    ] {
        h.engine.inventory().insert(Region {
            device: 0,
            base,
            bytes: 64,
            kind,
        });
    }
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    let warnings = h.sink.warnings();
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert!(warnings[0].starts_with("host memory is not restored"));
    assert_eq!(
        h.sink.costs()[0].bytes_snapshotted,
        2 * (8 + 64),
        "host memory is not staged; device and managed memory are, at S0 and again as F (the host may write managed memory, and what kernels computed from it is the application's)"
    );
}

/// A tool that logs its callbacks, stops after `stop_after` if set, and asks for `count`.
struct ScriptedPolicy {
    count: PassCount,
    decides: bool,
    stop_after: Option<u32>,
    calls: Arc<Mutex<Vec<String>>>,
}

impl ReplayPolicy for ScriptedPolicy {
    fn pass_count(&self, _d: &PolicyDispatch<'_>) -> PassCount {
        self.count
    }
    fn pass_group(&self, _d: &PolicyDispatch<'_>, pass: u32) -> Option<usize> {
        Some(pass as usize % 2)
    }
    fn has_continue_decision(&self) -> bool {
        self.decides
    }
    fn continue_after(&self, d: &PolicyDispatch<'_>, pass: u32, total: Option<u32>) -> bool {
        self.calls
            .lock()
            .unwrap()
            .push(format!("continue {} {pass} {total:?}", d.dispatch_id));
        self.stop_after != Some(pass)
    }
    fn on_pass_start(&self, _d: &PolicyDispatch<'_>, pass: u32) {
        self.calls.lock().unwrap().push(format!("start {pass}"));
    }
    fn on_pass_stop(&self, _d: &PolicyDispatch<'_>, pass: u32, result: &PassResult) {
        self.calls
            .lock()
            .unwrap()
            .push(format!("stop {pass} {}", result.counters.len()));
    }
}

fn scripted(
    count: PassCount,
    decides: bool,
    stop_after: Option<u32>,
) -> (Harness, Arc<Mutex<Vec<String>>>) {
    let calls = Arc::new(Mutex::new(Vec::new()));
    let policy = ScriptedPolicy {
        count,
        decides,
        stop_after,
        calls: calls.clone(),
    };
    (
        harness_with(
            config(2, InProcessMode::KernelReplay),
            Some(Box::new(policy)),
        ),
        calls,
    )
}

#[test]
fn a_stepwise_unit_that_loses_its_counters_after_pass_0_records_each_pass_once() {
    // Pass 0's records were sent before pass 1's counters failed: no second record of pass 0,
    // and no record without a pass besides it.
    let (h, _calls) = scripted(PassCount::Passes(3), true, None);
    let mut backend = MockBackend {
        counters_fail: true,
        counters_fail_after: 1,
        ..MockBackend::new()
    };
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(passes_by_dispatch(&h), vec![(1, Some(0))]);
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::DeclinedError);
    assert_eq!(backend.value, 1);
}

#[test]
fn continue_is_not_consulted_after_the_final_pass() {
    let (h, calls) = scripted(PassCount::Passes(3), true, None);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        *calls.lock().unwrap(),
        vec![
            "start 0",
            "stop 0 1",
            "continue 1 0 Some(3)",
            "start 1",
            "stop 1 1",
            "continue 1 1 Some(3)",
            "start 2",
            "stop 2 1",
        ]
    );
    assert_eq!(backend.count(&Op::Restore), 2);
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::Replayed);
}

#[test]
fn without_continue_decisions_every_pass_is_announced_once_before_its_results() {
    let (h, calls) = scripted(PassCount::Passes(3), false, None);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        *calls.lock().unwrap(),
        vec!["start 0", "start 1", "start 2", "stop 0 1", "stop 1 1", "stop 2 1"]
    );
}

#[test]
fn a_tool_may_stop_early_and_the_last_executed_pass_is_not_restored() {
    let (h, _calls) = scripted(PassCount::Passes(4), true, Some(1));
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::Restore), 1);
    assert_eq!(backend.value, 1);
    assert_eq!(backend.ops.last(), Some(&Op::Release));
    assert_eq!(backend.ops[backend.ops.len() - 2], Op::Stop(1));
    let cost = &h.sink.costs()[0];
    assert_eq!(
        (cost.outcome, cost.passes),
        (ReplayOutcome::StoppedEarly, 2)
    );
}

#[test]
fn until_stopped_runs_until_the_tool_says_stop() {
    let (h, calls) = scripted(PassCount::UntilStopped, true, Some(4));
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(h.sink.dispatches().len(), 5);
    assert_eq!(backend.count(&Op::Restore), 4);
    assert!(calls
        .lock()
        .unwrap()
        .contains(&"continue 1 4 None".to_string()));
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::Replayed);
}

#[test]
fn until_stopped_without_a_continue_decision_is_rejected_once() {
    let (h, calls) = scripted(PassCount::UntilStopped, false, None);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 0);
    assert_eq!(backend.value, 2);
    assert_eq!(h.sink.warnings().len(), 1);
    assert!(
        calls.lock().unwrap().is_empty(),
        "no pass callbacks when not replayed"
    );
}

#[test]
fn opt_out_runs_once_without_pass_callbacks() {
    let (h, calls) = scripted(PassCount::OptOut, true, None);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.ops,
        vec![
            Op::Plan(vec![Some(0)]),
            Op::Start(0, 1),
            Op::Execute,
            Op::Stop(1)
        ]
    );
    assert!(calls.lock().unwrap().is_empty());
}

#[test]
fn another_threads_fence_past_the_deadline_is_fatal() {
    let mut config = config(2, InProcessMode::KernelReplay);
    config.drain_timeout_ms = 30;
    let h = Arc::new(harness_with(config, None));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let h = h.clone();
        std::thread::spawn(move || {
            let _fence = h.engine.fence_with(&mut MockBackend::new());
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
        })
    };
    held_rx.recv().unwrap();
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    let aborts = h.aborts.lock().unwrap().clone();
    assert_eq!(aborts.len(), 1);
    assert!(
        aborts[0].0.contains("other application threads"),
        "{}",
        aborts[0].0
    );
    assert_eq!(backend.count(&Op::Drain), 0);
    assert_eq!(backend.value, 1);
}

#[test]
fn a_call_on_another_device_does_not_hold_off_a_replay() {
    let mut config = config(2, InProcessMode::KernelReplay);
    config.drain_timeout_ms = 30;
    let h = Arc::new(harness_with(config, None));
    let (held_tx, held_rx) = std::sync::mpsc::channel();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let holder = {
        let h = h.clone();
        std::thread::spawn(move || {
            let mut theirs = MockBackend::new();
            let guard = h.engine.enter_call(
                &mut theirs,
                "cuStreamSynchronize",
                CallEffect::NoDeviceWrite,
                DeviceScope::One(1),
            );
            held_tx.send(()).unwrap();
            release_rx.recv().unwrap();
            h.engine.exit_call(&mut theirs, guard);
        })
    };
    held_rx.recv().unwrap();
    // Device 0's replay goes on while the call on device 1 is in flight.
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    release_tx.send(()).unwrap();
    holder.join().unwrap();
    assert!(h.aborts.lock().unwrap().is_empty());
    assert_eq!(backend.value, 1, "restored between passes");
    assert_eq!(backend.count(&Op::Execute), 1);
    assert_eq!(
        h.sink.costs().iter().map(|c| c.outcome).collect::<Vec<_>>(),
        vec![ReplayOutcome::Replayed]
    );
    // A call on every device would have held it off (the test above): the scope matters.
    assert!(h.engine.gates_idle());
}

/// A launch on `device` as a backend drives it.
fn launch_on(h: &Harness, backend: &mut MockBackend, device: DeviceId, kind: LaunchKind) {
    let ticket = h.engine.launch_enter(
        backend,
        &DispatchInfo {
            device,
            ..info(kind)
        },
    );
    backend.execute();
    h.engine.launch_exit(backend, ticket, &());
}

#[test]
fn launches_inside_calls_on_each_others_devices_run_once_instead_of_waiting() {
    // Thread X is inside a call on device 1 and launches on device 0; thread Y is inside a
    // call on device 0 and launches on device 1. Each replay would wait for the other's call:
    // both launches run once, nothing waits out the deadline.
    let mut config = config(2, InProcessMode::KernelReplay);
    config.drain_timeout_ms = 300;
    let h = Arc::new(harness_with(config, None));
    let both_inside = Arc::new(std::sync::Barrier::new(2));
    let threads: Vec<_> = [(1, 0), (0, 1)]
        .into_iter()
        .map(|(call_device, launch_device)| {
            let (h, both_inside) = (h.clone(), both_inside.clone());
            std::thread::spawn(move || {
                let mut backend = MockBackend::new();
                let guard = h.engine.enter_call(
                    &mut backend,
                    "cuLaunchHostFunc",
                    CallEffect::NoDeviceWrite,
                    DeviceScope::One(call_device),
                );
                both_inside.wait();
                launch_on(&h, &mut backend, launch_device, LaunchKind::Kernel);
                h.engine.exit_call(&mut backend, guard);
                backend.value
            })
        })
        .collect();
    let values: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(
        h.aborts.lock().unwrap().is_empty(),
        "{:?}",
        h.aborts.lock().unwrap()
    );
    assert_eq!(values, vec![1, 1], "each launch ran once");
    let outcomes: Vec<ReplayOutcome> = h.sink.costs().iter().map(|c| c.outcome).collect();
    assert_eq!(outcomes, vec![ReplayOutcome::DeclinedError; 2]);
    assert!(h
        .sink
        .warnings()
        .iter()
        .any(|w| w.contains("inside a call on another device")));
    assert!(h.engine.gates_idle());
}

#[test]
fn other_threads_are_fenced_off_for_the_whole_replay() {
    use std::sync::atomic::AtomicBool;
    let h = Arc::new(harness(2, InProcessMode::KernelReplay));
    let mut backend = MockBackend::new();
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    let passed = Arc::new(AtomicBool::new(false));
    let other = {
        let (h, passed) = (h.clone(), passed.clone());
        std::thread::spawn(move || {
            let _fence = h.engine.fence_with(&mut MockBackend::new());
            passed.store(true, Ordering::SeqCst);
        })
    };
    backend.execute();
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !passed.load(Ordering::SeqCst),
        "a fence passed during pass 0"
    );
    // The replaying thread passes its own fences.
    drop(h.engine.fence_with(&mut backend));
    h.engine.launch_exit(&mut backend, ticket, &());
    other.join().unwrap();
    assert!(passed.load(Ordering::SeqCst));
}

#[test]
fn a_failed_launch_releases_the_window_and_records_nothing() {
    let h = Arc::new(harness(2, InProcessMode::KernelReplay));
    let mut backend = MockBackend::new();
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    assert!(ticket.will_replay());
    assert_eq!(ticket.dispatch_id(), Some(1));
    h.engine.launch_failed(&mut backend, ticket);
    let other = {
        let h = h.clone();
        std::thread::spawn(move || drop(h.engine.fence_with(&mut MockBackend::new())))
    };
    other.join().unwrap();
    assert!(h.sink.dispatches().is_empty());
    assert_eq!(backend.count(&Op::Relaunch), 0);
}

/// A launch that failed leaves nothing of its unit's conditions (a flush, a clock reading) to
/// the next dispatch's record.
#[test]
fn a_failed_launch_run_once_hands_its_conditions_to_no_one() {
    let h = harness(1, InProcessMode::Single);
    let mut backend = MockBackend::new();
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    assert_eq!(backend.launches_since_conditions, 1);
    h.engine.launch_failed(&mut backend, ticket);
    assert_eq!(backend.launches_since_conditions, 0);
    // The next dispatch's record says what its own launch saw.
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    backend.execute();
    h.engine.launch_exit(&mut backend, ticket, &());
    let costs = h.sink.costs();
    assert_eq!(costs.len(), 1);
    assert_eq!(costs[0].cache, kreplay_format::CacheState::Flushed);
}

/// `unit_counters` ends the unit even when it fails: the engine must not abandon "it" again,
/// which would abandon the next unit on the device (perhaps another thread's).
#[test]
fn a_run_once_dispatch_whose_counters_fail_is_not_abandoned_twice() {
    let h = harness(1, InProcessMode::Single);
    let mut backend = MockBackend {
        counters_fail: true,
        ..MockBackend::new()
    };
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    backend.execute();
    h.engine.launch_exit(&mut backend, ticket, &());
    assert_eq!(backend.abandons, 0);
    assert_eq!(
        h.sink.costs().len(),
        1,
        "the dispatch still has its cost record"
    );
    // A stop that fails is abandoned, once.
    backend.stop_fails = true;
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    backend.execute();
    h.engine.launch_exit(&mut backend, ticket, &());
    assert_eq!(backend.abandons, 1);
}

#[test]
fn finish_sends_process_end_and_flushes() {
    let h = harness(0, InProcessMode::Single);
    h.engine.finish();
    assert!(matches!(
        h.sink.records.lock().unwrap().last(),
        Some(Record::ProcessEnd { .. })
    ));
    assert_eq!(h.sink.flushes.load(Ordering::SeqCst), 1);
}

#[test]
fn registrations_are_sent_once() {
    let h = harness(0, InProcessMode::Single);
    for _ in 0..2 {
        h.engine.register_agent(AgentInfo {
            agent_id: 0,
            name: "dev".into(),
            chip: "SIM".into(),
            sm_count: 1,
            global_memory_bytes: 1,
            pci_location: String::new(),
            max_threads_per_sm: 0,
            shared_memory_per_sm_bytes: 0,
        });
        h.engine.register_counters([CounterInfo {
            name: "c".into(),
            metric: "m".into(),
            description: String::new(),
            unit: String::new(),
        }]);
    }
    assert_eq!(h.sink.records.lock().unwrap().len(), 2);
}

// ---- replay windows (units of several dispatches) ----

fn window_harness(groups_n: usize, window: crate::config::ReplayWindow) -> Harness {
    let mut config = config(groups_n, InProcessMode::KernelReplay);
    config.replay_window = window;
    harness_with(config, None)
}

/// Adds a region of device 0 to the engine's inventory.
fn insert_region(h: &Harness, base: u64, bytes: u64, kind: AllocKind) {
    h.engine.inventory().insert(Region {
        device: 0,
        base,
        bytes,
        kind,
    });
}

fn window_backend(max_window: usize) -> MockBackend {
    MockBackend {
        max_window,
        ..MockBackend::new()
    }
}

fn passes_by_dispatch(h: &Harness) -> Vec<(u64, Option<u32>)> {
    let mut seen: Vec<(u64, Option<u32>)> = h
        .sink
        .dispatches()
        .iter()
        .map(|d| (d.dispatch_id, d.replay_pass))
        .collect();
    seen.sort();
    seen
}

#[test]
fn a_window_runs_each_group_once_over_all_its_dispatches() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(4));
    let mut backend = window_backend(64);
    for _ in 0..3 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    // Still open: nothing recorded, nothing replayed yet.
    assert!(h.sink.dispatches().is_empty());
    h.engine.finish_with(&mut backend);
    assert_eq!(
        backend.ops,
        vec![
            Op::Drain,
            Op::Plan(vec![Some(0), Some(1)]),
            Op::Snapshot(Staging::Device),
            Op::Start(0, 4),
            Op::Execute,
            Op::Execute,
            Op::Execute,
            Op::Stop(3),
            Op::Restore,
            Op::Start(1, 3),
            Op::Relaunch,
            Op::Relaunch,
            Op::Relaunch,
            Op::Stop(3),
            Op::Release,
        ]
    );
    assert_eq!(backend.value, 3, "each kernel's effect kept exactly once");
    assert_eq!(
        passes_by_dispatch(&h),
        vec![
            (1, Some(0)),
            (1, Some(1)),
            (2, Some(0)),
            (2, Some(1)),
            (3, Some(0)),
            (3, Some(1))
        ]
    );
    let pass1: Vec<String> = h
        .sink
        .dispatches()
        .iter()
        .filter(|d| d.replay_pass == Some(1))
        .map(|d| d.counters[0].name.clone())
        .collect();
    assert_eq!(pass1, vec!["group1"; 3]);
    let costs = h.sink.costs();
    assert_eq!(costs.len(), 3);
    assert!(costs
        .iter()
        .all(|c| c.outcome == ReplayOutcome::Replayed && c.passes == 2 && c.bytes_tracked == 8));
    // The window's shared costs are on its first dispatch only.
    assert_eq!(
        (costs[0].bytes_snapshotted, costs[0].bytes_restored),
        (8, 8)
    );
    assert_eq!(
        (costs[1].bytes_snapshotted, costs[1].bytes_restored),
        (0, 0)
    );
    assert_eq!(costs[2].pass_ns, vec![0, 0]);
    assert!(matches!(
        h.sink.records.lock().unwrap().last(),
        Some(Record::ProcessEnd { .. })
    ));
}

#[test]
fn a_full_window_closes_itself_and_the_next_dispatch_opens_another() {
    use crate::config::ReplayWindow;
    let h = window_harness(3, ReplayWindow::Count(2));
    let mut backend = window_backend(64);
    for _ in 0..5 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 3);
    assert_eq!(backend.count(&Op::Release), 2, "the third window is open");
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.count(&Op::Release), 3);
    // Two restores per window (3 groups), never after the last pass.
    assert_eq!(backend.count(&Op::Restore), 6);
    assert_eq!(backend.count(&Op::Relaunch), 2 * (2 + 2 + 1));
    assert_eq!(backend.value, 5);
    assert_eq!(h.sink.dispatches().len(), 15);
    assert_eq!(backend.ops.last(), Some(&Op::Release));
}

#[test]
fn the_backend_limit_caps_the_window_and_a_limit_of_one_means_per_dispatch() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Auto);
    let mut backend = window_backend(3);
    for _ in 0..3 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    // Closed on its own at the backend's limit of 3.
    assert_eq!(backend.count(&Op::Stop(3)), 2);
    assert_eq!(backend.ops[3], Op::Start(0, 3));

    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(1);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::Start(1, 1)), 1, "per-dispatch replay");
    assert!(h
        .sink
        .warnings()
        .iter()
        .any(|w| w.contains("one dispatch at a time")));
}

#[test]
fn a_call_not_known_to_be_harmless_closes_the_window_before_it_proceeds() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    let guard = h.engine.enter_call(
        &mut backend,
        "cuModuleUnload",
        CallEffect::Unknown,
        DeviceScope::All,
    );
    assert_eq!(
        backend.ops.last(),
        Some(&Op::Release),
        "window closed first"
    );
    assert_eq!(h.sink.dispatches().len(), 4);
    h.engine.exit_call(&mut backend, guard);
    // The next launch opens a new window.
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 2);
    assert_eq!(backend.value, 3);
    assert!(h
        .engine
        .window_summary()
        .unwrap()
        .contains("cuModuleUnload 1"));
}

#[test]
fn an_allocation_made_while_a_window_is_open_is_snapshotted_and_the_window_goes_on() {
    // A module variable resolved at its kernel's first launch (or the application's allocator
    // growing) enters the inventory between two launches: the window takes it in with a
    // snapshot of its own, taken after a drain and before the launch that may use it, and
    // every later execution restores it after S0.
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    insert_region(&h, 0x9000_0000, 16, AllocKind::ModuleVariable);
    let before = backend.ops.len();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.ops[before..before + 2],
        [Op::Drain, Op::Snapshot(Staging::Device)],
        "{:?}",
        backend.ops
    );
    assert_eq!(backend.count(&Op::Release), 0, "the window is still open");
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 2);
    assert_eq!(backend.count(&Op::Restore), 2, "S0 and the new region");
    assert_eq!(backend.count(&Op::Release), 2);
    assert_eq!(backend.value, 3, "each kernel's effect kept exactly once");
    let costs = h.sink.costs();
    assert_eq!(costs[0].bytes_tracked, 8 + 16, "the window covers it");
    assert_eq!(costs[0].bytes_restored, 8 + 16);
    let summary = h.engine.window_summary().unwrap();
    assert!(
        ![
            "a tracked allocation that changed",
            "new managed memory",
            "new memory that could not be staged"
        ]
        .iter()
        .any(|why| summary.contains(why)),
        "{summary}"
    );
}

#[test]
fn a_window_whose_view_no_longer_fits_the_device_after_a_new_allocation_closes_at_the_next_call() {
    // F, saved when the window closes, grows with the regions it takes in: once it would not
    // fit device staging, the window no longer stays open across calls.
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    insert_region(&h, 0x9000_0000, 1 << 20, AllocKind::Device);
    backend.free_bytes = 1024 + 4096;
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.count(&Op::Snapshot(Staging::Host)),
        1,
        "{:?}",
        backend.ops
    );
    assert_eq!(
        backend.count(&Op::Release),
        0,
        "both launches in one window"
    );
    write_call(&h, &mut backend, 100);
    assert!(
        backend.count(&Op::Release) > 0,
        "closed before the call: {:?}",
        backend.ops
    );
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.value, 102);
    assert_eq!(
        h.sink.costs()[0].staging,
        Staging::Host,
        "one of the window's snapshots is on the host"
    );
}

#[test]
fn a_window_closes_when_a_region_it_covers_changed_or_new_memory_is_managed() {
    use crate::config::ReplayWindow;
    // A region the window covers is no longer the same (an unmap seen without a free call):
    // its memory may be another allocation's now, so nothing is restored into it; the window
    // ends with execution 0 (its kernel keeps its record, without counters).
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.inventory().remove_within(0, VALUE_BASE, 8);
    insert_region(&h, VALUE_BASE, 4, AllocKind::Device);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.value, 2, "each kernel's effect kept exactly once");
    assert_eq!(
        backend.count(&Op::Restore),
        1,
        "only the second window restores: {:?}",
        backend.ops
    );
    let costs = h.sink.costs();
    assert_eq!(costs[0].outcome, ReplayOutcome::DeclinedError);
    assert_eq!(costs[1].outcome, ReplayOutcome::Replayed);
    assert!(h
        .engine
        .window_summary()
        .unwrap()
        .contains("a tracked allocation that changed 1"));

    // The same found only when the window closes (at exit here, no launch after the change).
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.inventory().remove_within(0, VALUE_BASE, 8);
    insert_region(&h, VALUE_BASE, 4, AllocKind::Device);
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.count(&Op::Restore), 0, "{:?}", backend.ops);
    assert_eq!(backend.value, 1);
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::DeclinedError);
    assert_eq!(h.sink.dispatches().len(), 1, "its launch is recorded");

    // New managed memory: the host may write it with no call, so it is never taken in.
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    insert_region(&h, 0x9000_0000, 16, AllocKind::Managed);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.count(&Op::Release),
        1,
        "closed before the second launch"
    );
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.value, 2);
    assert!(h
        .engine
        .window_summary()
        .unwrap()
        .contains("new managed memory 1"));
}

#[test]
fn launches_that_run_once_close_the_window_and_run_after_it() {
    use crate::config::ReplayWindow;
    let mut config = config(2, InProcessMode::KernelReplay);
    config.replay_window = ReplayWindow::Count(8);
    config.filter = KernelFilter {
        exclude_regex: Some("skipped".into()),
        ..KernelFilter::default()
    };
    config.kernel_trace = true;
    let h = harness_with(config, None);
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Graph);
    // The graph launch ran after the window's last pass.
    let release = backend.ops.iter().position(|o| *o == Op::Release).unwrap();
    let graph_exec = backend.ops.iter().rposition(|o| *o == Op::Execute).unwrap();
    assert!(release < graph_exec, "{:?}", backend.ops);
    // A filtered dispatch closes the next window the same way.
    launch(&h, &mut backend, LaunchKind::Kernel);
    let mut skipped = info(LaunchKind::Kernel);
    skipped.kernel_name = "skipped".into();
    skipped.kernel_id = 8;
    let ticket = h.engine.launch_enter(&mut backend, &skipped);
    assert_eq!(backend.count(&Op::Release), 2);
    backend.execute();
    h.engine.launch_exit(&mut backend, ticket, &());
    assert_eq!(backend.value, 4);
}

#[test]
fn a_launch_that_cannot_be_kept_closes_its_window_and_replays_from_its_own_parameters() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    backend.retain_fails = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::Restore), 1);
    assert_eq!(backend.count(&Op::Relaunch), 2);
    assert_eq!(backend.value, 2);
    assert_eq!(
        passes_by_dispatch(&h),
        vec![(1, Some(0)), (1, Some(1)), (2, Some(0)), (2, Some(1))]
    );
    assert!(h
        .engine
        .window_summary()
        .unwrap()
        .contains("a launch that could not be kept 1"));
}

/// A mock shared by threads, as the CUDA backend is.
#[derive(Clone)]
struct Shared(Arc<Mutex<MockBackend>>);

impl ReplayBackend for Shared {
    type Launch = ();
    type Snapshot = MockSnapshot;
    type Capture = u64;
    fn drain(&mut self, d: DeviceId, t: Duration) -> Result<(), BackendError> {
        self.0.lock().unwrap().drain(d, t)
    }
    fn device_free_bytes(&mut self, d: DeviceId) -> u64 {
        self.0.lock().unwrap().device_free_bytes(d)
    }
    fn snapshot(
        &mut self,
        d: DeviceId,
        r: &[Region],
        p: Staging,
    ) -> Result<MockSnapshot, BackendError> {
        self.0.lock().unwrap().snapshot(d, r, p)
    }
    fn restore(&mut self, s: &MockSnapshot) -> Result<u64, BackendError> {
        self.0.lock().unwrap().restore(s)
    }
    fn release(&mut self, s: MockSnapshot) {
        self.0.lock().unwrap().release(s)
    }
    fn max_window(&mut self, d: DeviceId) -> usize {
        self.0.lock().unwrap().max_window(d)
    }
    fn plan_unit(&mut self, d: DeviceId, g: &[Option<usize>]) -> Result<UnitPlan, BackendError> {
        self.0.lock().unwrap().plan_unit(d, g)
    }
    fn start_execution(&mut self, d: DeviceId, e: usize, n: usize) -> Result<(), BackendError> {
        self.0.lock().unwrap().start_execution(d, e, n)
    }
    fn launch_starts(&mut self, d: DeviceId) -> Result<(), BackendError> {
        self.0.lock().unwrap().launch_starts(d)
    }
    fn launch_ends(&mut self, d: DeviceId) -> Result<(), BackendError> {
        self.0.lock().unwrap().launch_ends(d)
    }
    fn stop_execution(&mut self, d: DeviceId) -> Result<Vec<Timing>, BackendError> {
        self.0.lock().unwrap().stop_execution(d)
    }
    fn runs_timing_executions(&mut self, d: DeviceId) -> bool {
        self.0.lock().unwrap().runs_timing_executions(d)
    }
    fn start_timing_execution(&mut self, d: DeviceId, r: usize) -> Result<(), BackendError> {
        self.0.lock().unwrap().start_timing_execution(d, r)
    }
    fn unit_counters(&mut self, d: DeviceId) -> Result<PassCounters, BackendError> {
        self.0.lock().unwrap().unit_counters(d)
    }
    fn relaunch(&mut self, l: &()) -> Result<(), BackendError> {
        self.0.lock().unwrap().relaunch(l)
    }
    fn retain_launch(&mut self, l: &()) -> Result<(), BackendError> {
        self.0.lock().unwrap().retain_launch(l)
    }
}

fn launch_shared(h: &Harness, backend: &mut Shared) {
    let ticket = h.engine.launch_enter(backend, &info(LaunchKind::Kernel));
    backend.0.lock().unwrap().execute();
    h.engine.launch_exit(backend, ticket, &());
}

#[test]
fn another_thread_closes_a_parked_window_instead_of_waiting_for_its_owner() {
    use crate::config::ReplayWindow;
    let h = Arc::new(window_harness(2, ReplayWindow::Count(8)));
    let shared = Shared(Arc::new(Mutex::new(window_backend(64))));
    let mut mine = shared.clone();
    for _ in 0..2 {
        launch_shared(&h, &mut mine);
    }
    // The owner is "in user code" from here on, waiting for the other thread: were the window
    // waited for rather than closed, this would hang.
    let other = {
        let (h, mut theirs) = (h.clone(), shared.clone());
        std::thread::spawn(move || {
            let fence = h.engine.fence_with(&mut theirs);
            let closed = theirs.0.lock().unwrap().ops.last() == Some(&Op::Release);
            drop(fence);
            // And a launch of this thread then opens its own window.
            launch_shared(&h, &mut theirs);
            closed
        })
    };
    assert!(
        other.join().unwrap(),
        "the other thread's fence ran the passes first"
    );
    // The owner's next launch cannot join the other thread's window: it closes it.
    launch_shared(&h, &mut mine);
    h.engine.finish_with(&mut mine);
    let backend = shared.0.lock().unwrap();
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 3);
    assert_eq!(backend.value, 4);
    assert_eq!(h.sink.dispatches().len(), 8);
}

#[test]
fn another_thread_waits_for_the_owner_to_leave_a_call_the_window_stays_open_across() {
    use crate::config::ReplayWindow;
    use std::sync::atomic::AtomicBool;
    let h = Arc::new(window_harness(2, ReplayWindow::Count(8)));
    let shared = Shared(Arc::new(Mutex::new(window_backend(64))));
    let mut mine = shared.clone();
    launch_shared(&h, &mut mine);
    let guard = h.engine.enter_call(
        &mut mine,
        "cuStreamQuery",
        CallEffect::NoDeviceWrite,
        DeviceScope::One(0),
    );
    let closed = Arc::new(AtomicBool::new(false));
    let other = {
        let (h, mut theirs, closed) = (h.clone(), shared.clone(), closed.clone());
        std::thread::spawn(move || {
            drop(h.engine.fence_with(&mut theirs));
            closed.store(true, Ordering::SeqCst);
        })
    };
    std::thread::sleep(Duration::from_millis(50));
    assert!(
        !closed.load(Ordering::SeqCst),
        "the window was closed while its owner's call ran"
    );
    assert_eq!(shared.0.lock().unwrap().count(&Op::Restore), 0);
    h.engine.exit_call(&mut mine, guard);
    other.join().unwrap();
    let backend = shared.0.lock().unwrap();
    assert_eq!(backend.count(&Op::Restore), 2, "S0, then the view it saved");
    assert_eq!(backend.value, 1);
}

#[test]
fn a_failed_member_parks_the_window_for_others_to_close() {
    use crate::config::ReplayWindow;
    let h = Arc::new(window_harness(2, ReplayWindow::Count(8)));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    h.engine.launch_failed(&mut backend, ticket);
    drop(h.engine.fence_with(&mut backend));
    assert_eq!(backend.count(&Op::Restore), 1);
    assert_eq!(backend.count(&Op::Relaunch), 1, "only the launch that ran");
    assert_eq!(backend.value, 1);
    assert!(h.engine.gates_idle());
}

#[test]
fn a_launch_that_did_not_execute_is_left_out_of_its_window() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    // A launch the driver refused: its ticket dropped without even launch_failed.
    let ticket = h
        .engine
        .launch_enter(&mut backend, &info(LaunchKind::Kernel));
    drop(ticket);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.finish_with(&mut backend);
    assert_eq!(
        backend.value, 2,
        "each executed launch's effect is kept once"
    );
    assert_eq!(
        backend.count(&Op::Snapshot(Staging::Device)),
        1,
        "one window"
    );
    assert_eq!(
        backend.count(&Op::Relaunch),
        2,
        "only the executed launches are replayed"
    );
    assert_eq!(
        passes_by_dispatch(&h),
        vec![(1, Some(0)), (1, Some(1)), (3, Some(0)), (3, Some(1))],
        "the refused launch (dispatch 2) has no record; the others every pass"
    );
    let costs = h.sink.costs();
    assert_eq!(costs.len(), 2);
    assert!(costs.iter().all(|c| c.outcome == ReplayOutcome::Replayed));
    assert!(h.engine.gates_idle());
}

#[test]
fn a_tool_stopping_one_member_stops_the_whole_window() {
    use crate::config::ReplayWindow;
    let mut config = config(3, InProcessMode::KernelReplay);
    config.replay_window = ReplayWindow::Count(8);
    let calls = Arc::new(Mutex::new(Vec::new()));
    let policy = ScriptedPolicy {
        count: PassCount::Passes(3),
        decides: true,
        stop_after: Some(1),
        calls: calls.clone(),
    };
    let h = harness_with(config, Some(Box::new(policy)));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.count(&Op::Restore), 1);
    assert_eq!(backend.value, 2);
    let costs = h.sink.costs();
    assert_eq!(costs.len(), 2);
    assert!(costs
        .iter()
        .all(|c| c.outcome == ReplayOutcome::StoppedEarly && c.passes == 2));
    let calls = calls.lock().unwrap();
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("stop 1")).count(),
        2,
        "{calls:?}"
    );
}

#[test]
fn a_device_without_tracked_memory_is_replayed_without_snapshot_or_restore() {
    use crate::config::ReplayWindow;
    for window in [ReplayWindow::Dispatch, ReplayWindow::Count(4)] {
        let h = window_harness(2, window);
        h.engine.inventory().remove(0, 0x1000);
        let mut backend = window_backend(64);
        launch(&h, &mut backend, LaunchKind::Kernel);
        launch(&h, &mut backend, LaunchKind::Kernel);
        h.engine.finish_with(&mut backend);
        assert_eq!(
            backend.count(&Op::Drain),
            if window == ReplayWindow::Dispatch {
                2
            } else {
                1
            }
        );
        assert!(
            !backend
                .ops
                .iter()
                .any(|o| matches!(o, Op::Snapshot(_) | Op::Restore | Op::Release)),
            "{window:?}: {:?}",
            backend.ops
        );
        assert_eq!(backend.count(&Op::Relaunch), 2, "{window:?}");
        assert_eq!(h.sink.dispatches().len(), 4);
        for cost in h.sink.costs() {
            assert_eq!(cost.outcome, ReplayOutcome::Replayed);
            assert_eq!(cost.staging, Staging::None);
            assert_eq!((cost.bytes_tracked, cost.bytes_restored), (0, 0));
            assert_eq!(cost.passes, 2);
        }
    }
}

#[test]
fn the_window_summary_counts_what_closed_the_windows() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(2));
    let mut backend = window_backend(64);
    assert_eq!(h.engine.window_summary(), None, "no windows, no line");
    launch(&h, &mut backend, LaunchKind::Kernel);
    drop(
        h.engine
            .fence_for(&mut backend, "cuMemcpyHtoD_v2", DeviceScope::One(0)),
    );
    for _ in 0..3 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    launch(&h, &mut backend, LaunchKind::Graph);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.finish_with(&mut backend);
    assert_eq!(
        h.engine.window_summary().unwrap(),
        "kreplay: replay windows closed by: a graph launch 1, cuMemcpyHtoD_v2 1, full 1, process exit 1; 5 dispatches in 4 windows (1.2 per window)"
    );
}

#[test]
fn a_window_measured_by_one_execution_stays_open_across_calls() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = MockBackend {
        packed: true,
        ..window_backend(64)
    };
    launch(&h, &mut backend, LaunchKind::Kernel);
    write_call(&h, &mut backend, 0);
    // An allocation and a free between members: no snapshot to outgrow or to lose.
    insert_region(&h, 0x9000_0000, 16, AllocKind::Device);
    launch(&h, &mut backend, LaunchKind::Kernel);
    call(&h, &mut backend, "cuMemFree_v2", CallEffect::Frees);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert!(h.sink.dispatches().is_empty(), "still open");
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.count(&Op::Start(0, 8)), 1, "one window");
    assert_eq!(backend.count(&Op::Restore), 0);
    assert_eq!(backend.count(&Op::Relaunch), 0);
    assert_eq!(backend.count(&Op::Capture), 0, "nothing runs again");
    // Opening the window, each call, and each member after a call.
    assert_eq!(backend.count(&Op::Drain), 5);
    assert_eq!(h.sink.dispatches().len(), 6, "3 dispatches x 2 groups");
    assert_eq!(backend.value, 3);
    let summary = h.engine.window_summary().unwrap();
    assert!(summary.contains("3 dispatches in 1 windows"), "{summary}");
    assert!(
        summary.contains("stayed open across 2 other call(s)"),
        "{summary}"
    );
}

#[test]
fn a_window_that_restores_stays_open_across_writes_and_syncs_and_puts_back_what_the_app_saw() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    write_call(&h, &mut backend, 100);
    launch(&h, &mut backend, LaunchKind::Kernel);
    call(
        &h,
        &mut backend,
        "cuCtxSynchronize",
        CallEffect::NoDeviceWrite,
    );
    assert!(h.sink.dispatches().is_empty(), "still open");
    h.engine.finish_with(&mut backend);
    assert_eq!(
        backend.ops,
        vec![
            Op::Drain,
            Op::Plan(vec![Some(0), Some(1)]),
            Op::Snapshot(Staging::Device),
            Op::Start(0, 8),
            Op::Execute,
            Op::Drain,
            Op::Drain,
            Op::Capture,
            Op::Drain,
            Op::Execute,
            Op::Drain,
            Op::Stop(2),
            // The application's view (F), then the later execution from S0 with the write
            // applied where it happened, then F back.
            Op::Snapshot(Staging::Device),
            Op::Restore,
            Op::Start(1, 2),
            Op::Relaunch,
            Op::Apply,
            Op::Relaunch,
            Op::Stop(2),
            Op::Restore,
            Op::Release,
            Op::Release,
        ]
    );
    assert_eq!(backend.value, 102, "what the application computed alone");
    assert_eq!(
        passes_by_dispatch(&h),
        vec![(1, Some(0)), (1, Some(1)), (2, Some(0)), (2, Some(1))]
    );
    let cost = &h.sink.costs()[0];
    assert_eq!(
        (cost.bytes_snapshotted, cost.bytes_restored),
        (16, 16),
        "S0 and F"
    );
    let summary = h.engine.window_summary().unwrap();
    assert!(
        summary.contains("re-applying 1 captured write(s) of 8 bytes"),
        "{summary}"
    );
}

#[test]
fn a_window_that_restores_closes_first_for_frees_unknown_calls_and_untracked_writes() {
    use crate::config::ReplayWindow;
    let untracked = Region {
        device: 0,
        base: 0x5000,
        bytes: 64,
        kind: AllocKind::Host,
    };
    let effects = [
        CallEffect::Frees,
        CallEffect::Unknown,
        CallEffect::DeviceWrite {
            device: 0,
            base: 0x5000,
            bytes: 8,
        },
        // Past the end of the tracked allocation.
        CallEffect::DeviceWrite {
            device: 0,
            base: 0x1000,
            bytes: 16,
        },
        // Another device.
        CallEffect::DeviceWrite {
            device: 1,
            base: 0x1000,
            bytes: 8,
        },
        CallEffect::DeviceWrite {
            device: 0,
            base: 0x1000,
            bytes: CAPTURE_BUDGET_BYTES + 1,
        },
    ];
    for effect in effects {
        let h = window_harness(2, ReplayWindow::Count(8));
        h.engine.inventory().insert(untracked);
        let mut backend = window_backend(64);
        launch(&h, &mut backend, LaunchKind::Kernel);
        let guard = h
            .engine
            .enter_call(&mut backend, "a call", effect, DeviceScope::One(0));
        assert_eq!(backend.ops.last(), Some(&Op::Release), "{effect:?}");
        h.engine.exit_call(&mut backend, guard);
        assert_eq!(backend.count(&Op::Capture), 0, "{effect:?}");
        assert_eq!(backend.value, 1);
    }
}

#[test]
fn a_member_reaching_host_memory_keeps_its_window_from_staying_open() {
    use crate::config::ReplayWindow;
    for (addresses, stays) in [(vec![], true), (vec![0x7010], false), (vec![0x8000], true)] {
        let h = window_harness(2, ReplayWindow::Count(8));
        h.engine.inventory().insert(Region {
            device: 0,
            base: 0x7000,
            bytes: 64,
            kind: AllocKind::Host,
        });
        let mut backend = MockBackend {
            addresses: addresses.clone(),
            ..window_backend(64)
        };
        launch(&h, &mut backend, LaunchKind::Kernel);
        call(
            &h,
            &mut backend,
            "cuCtxSynchronize",
            CallEffect::NoDeviceWrite,
        );
        assert_eq!(
            backend.count(&Op::Release) == 0,
            stays,
            "parameters {addresses:x?}"
        );
        h.engine.finish_with(&mut backend);
        assert_eq!(backend.value, 1);
        // The window summary says why such a window closed at a call that writes nothing.
        let summary = h.engine.window_summary().unwrap();
        assert_eq!(
            summary.contains(
                "cuCtxSynchronize (not deferrable: a kernel of it reaches host or managed memory) 1"
            ),
            !stays,
            "{summary}"
        );
    }
}

#[test]
fn a_view_that_cannot_be_staged_ends_the_window_with_execution_zero() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    write_call(&h, &mut backend, 100);
    backend.device_staging_full = true;
    backend.host_staging_full = true;
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.count(&Op::Relaunch), 0);
    assert_eq!(backend.count(&Op::Restore), 0);
    assert_eq!(backend.value, 101, "the application's results stand");
    let dispatches = h.sink.dispatches();
    assert_eq!(dispatches.len(), 1, "its launch is recorded");
    assert!(
        dispatches[0].counters.is_empty() && dispatches[0].replay_pass.is_none(),
        "its counters are lost"
    );
    assert!(h
        .sink
        .costs()
        .iter()
        .all(|c| c.outcome == ReplayOutcome::DeclinedError));
    assert!(h.aborts.lock().unwrap().is_empty());
}

#[test]
fn a_failed_relaunch_in_a_window_that_stayed_open_puts_back_the_view_instead_of_aborting() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    write_call(&h, &mut backend, 100);
    backend.relaunch_fails = true;
    h.engine.finish_with(&mut backend);
    assert!(h.aborts.lock().unwrap().is_empty());
    assert_eq!(backend.value, 101);
    assert!(h
        .sink
        .warnings()
        .iter()
        .any(|w| w.contains("put back from the memory saved")));
}

#[test]
fn host_writes_to_managed_memory_while_a_unit_is_open_are_kept() {
    // NVIDIA's systemWideAtomics: the host adds to managed memory while the kernel runs, with
    // no CUDA call in between; restoring S0 at the close used to undo the host's additions.
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    insert_region(&h, 0x9000, 40, AllocKind::Managed);
    // The value the host adds to is the managed memory's.
    let mut backend = MockBackend {
        value_base: 0x9000,
        ..window_backend(64)
    };
    launch(&h, &mut backend, LaunchKind::Kernel);
    backend.value += 100;
    call(&h, &mut backend, "cuMemFree_v2", CallEffect::Frees);
    assert_eq!(backend.value, 101, "{:?}", backend.ops);
    let outcomes: Vec<ReplayOutcome> = h.sink.costs().iter().map(|c| c.outcome).collect();
    assert_eq!(outcomes, vec![ReplayOutcome::Replayed]);
}

#[test]
fn staying_open_can_be_switched_off() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    h.engine.window_spans.store(false, Ordering::Relaxed);
    let mut backend = window_backend(64);
    launch(&h, &mut backend, LaunchKind::Kernel);
    call(
        &h,
        &mut backend,
        "cuCtxSynchronize",
        CallEffect::NoDeviceWrite,
    );
    assert_eq!(backend.ops.last(), Some(&Op::Release));
}

#[test]
fn a_window_that_loses_its_counters_still_records_every_launch_with_its_times() {
    // On the H200 a window whose counters could not be read left no dispatch record at all:
    // the kernel trace lost its kernels ("0 dispatch(es)", "3 not replayed: error").
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = MockBackend {
        counters_fail: true,
        ..window_backend(64)
    };
    for _ in 0..3 {
        launch(&h, &mut backend, LaunchKind::Kernel);
    }
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.value, 3, "every kernel's effect kept once");
    let dispatches = h.sink.dispatches();
    assert_eq!(
        dispatches
            .iter()
            .map(|d| (d.dispatch_id, d.replay_pass))
            .collect::<Vec<_>>(),
        vec![(1, None), (2, None), (3, None)]
    );
    assert!(dispatches
        .iter()
        .all(|d| d.counters.is_empty() && d.end_ns > d.start_ns));
    assert!(h
        .sink
        .costs()
        .iter()
        .all(|c| c.outcome == ReplayOutcome::DeclinedError));
}

#[test]
fn spanning_stops_for_the_run_once_a_spanning_window_loses_its_counters() {
    use crate::config::ReplayWindow;
    let h = window_harness(2, ReplayWindow::Count(8));
    let mut backend = MockBackend {
        packed: true,
        stop_fails: true,
        ..window_backend(64)
    };
    launch(&h, &mut backend, LaunchKind::Kernel);
    write_call(&h, &mut backend, 0);
    launch(&h, &mut backend, LaunchKind::Kernel);
    drop(h.engine.fence_with(&mut backend));
    assert!(
        h.sink
            .warnings()
            .iter()
            .any(|w| w.contains("windows now close at every call")),
        "{:?}",
        h.sink.warnings()
    );
    // From now on the call closes the window.
    launch(&h, &mut backend, LaunchKind::Kernel);
    write_call(&h, &mut backend, 0);
    assert_eq!(backend.count(&Op::Stop(2)), 1);
    assert_eq!(backend.count(&Op::Stop(1)), 1, "closed by the call");
    h.engine.finish_with(&mut backend);
    assert_eq!(backend.value, 3, "every kernel ran once");
}

#[test]
fn a_lone_group_over_several_executions_is_replayed_and_a_launch_run_once_keeps_timestamps() {
    // One group whose metric needs 3 hardware passes: every dispatch runs 3 times, memory
    // restored between; a graph launch (run once) cannot measure it and keeps timestamps only.
    let h = harness(1, InProcessMode::KernelReplay);
    let mut backend = MockBackend::new();
    backend.span = 3;
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        backend.value, 1,
        "the later executions ran on restored memory"
    );
    let costs = h.sink.costs();
    assert_eq!(costs[0].outcome, ReplayOutcome::Replayed);
    assert_eq!(costs[0].passes, 3);
    launch(&h, &mut backend, LaunchKind::Graph);
    assert!(
        backend.ops.contains(&Op::Plan(vec![None])),
        "the run-once launch plans no counters: {:?}",
        backend.ops
    );
    assert_eq!(
        h.sink.costs()[1].outcome,
        ReplayOutcome::DeclinedGraphLaunch
    );
}
