//! The replay contract as a property: for random sequences of random in-place kernels (some
//! launched together as graphs) over random allocations, a random number of counter groups, a
//! random mode (kernel replay, rotation, single) and either staging place, memory after the
//! profiled run equals memory after one execution, every replayed dispatch has passes 0..N-1
//! exactly once under one id (graphs and non-replay modes: one record without a pass), and
//! deterministic counters are equal across passes. Window replay (random window sizes and
//! device caps, with host copies between kernels closing windows early) gives the same memory,
//! the same passes and the same deterministic counter values as per-dispatch replay.

use kreplay_core::backend::AllocKind;
use kreplay_core::config::{CounterGroup, CounterSpec, InProcessMode, ReplayWindow, ToolConfig};
use kreplay_core::notice::SilentLogger;
use kreplay_core::{CounterGroupsTool, Engine, EngineOptions};
use kreplay_format::{DispatchRecord, Record, RecordSink, ReplayOutcome};
use kreplay_sim::device::KernelContext;
use kreplay_sim::{SimDevice, SimKernel, SimLaunch, SimMetric, SimRuntime};
use proptest::prelude::*;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
struct MemorySink {
    records: Mutex<Vec<Record>>,
}

impl RecordSink for MemorySink {
    fn send(&self, record: Record) {
        self.records.lock().unwrap().push(record);
    }
    fn flush(&self) {}
}

#[derive(Debug, Clone)]
struct Allocation {
    kind: AllocKind,
    init: Vec<u32>,
}

#[derive(Debug, Clone)]
enum Op {
    ScaleAdd { target: usize, mul: u32, add: u32 },
    Accumulate { target: usize, source: usize },
    PrefixSum { target: usize },
    Rotate { target: usize },
    Bump { target: usize },
}

fn kernels() -> Vec<SimKernel> {
    let len = |k: &KernelContext<'_>| k.arg(1);
    vec![
        SimKernel::new(
            1,
            "scale_add",
            "scale_add",
            move |k: &mut KernelContext<'_>| {
                let (x, mul, add) = (k.arg(0), k.arg(2) as u32, k.arg(3) as u32);
                for i in 0..len(k) {
                    let v = k.read_u32(x + 4 * i);
                    k.write_u32(x + 4 * i, v.wrapping_mul(mul).wrapping_add(add));
                }
                k.count_instructions(len(k) * 2 + 1);
            },
        ),
        SimKernel::new(
            2,
            "accumulate",
            "accumulate",
            move |k: &mut KernelContext<'_>| {
                let (x, y) = (k.arg(0), k.arg(2));
                for i in 0..len(k) {
                    let a = k.read_u32(x + 4 * i);
                    let b = k.read_u32(y + 4 * i);
                    k.write_u32(x + 4 * i, a.wrapping_add(b) ^ 0x5bd1_e995);
                }
                k.count_instructions(len(k) * 3);
            },
        ),
        SimKernel::new(
            3,
            "prefix_sum",
            "prefix_sum",
            move |k: &mut KernelContext<'_>| {
                let x = k.arg(0);
                let mut sum = 0u32;
                for i in 0..len(k) {
                    sum = sum.wrapping_add(k.read_u32(x + 4 * i));
                    k.write_u32(x + 4 * i, sum);
                }
                k.count_instructions(len(k) * 2);
            },
        ),
        SimKernel::new(4, "rotate", "rotate", move |k: &mut KernelContext<'_>| {
            let x = k.arg(0);
            let n = len(k);
            let old: Vec<u32> = (0..n).map(|i| k.read_u32(x + 4 * i)).collect();
            for i in 0..n as usize {
                k.write_u32(x + 4 * i as u64, old[(i + 1) % old.len()].rotate_left(3));
            }
            k.count_instructions(n * 2);
        }),
        SimKernel::new(5, "bump", "bump", |k: &mut KernelContext<'_>| {
            let x = k.arg(0);
            let v = k.read_u32(x);
            k.write_u32(x, v.wrapping_add(1));
            k.count_instructions(1);
        }),
    ]
}

fn allocation() -> impl Strategy<Value = Allocation> {
    (
        prop_oneof![
            Just(AllocKind::Device),
            Just(AllocKind::Pitched),
            Just(AllocKind::ModuleVariable)
        ],
        prop::collection::vec(any::<u32>(), 1..48),
    )
        .prop_map(|(kind, init)| Allocation { kind, init })
}

fn op(allocations: usize) -> impl Strategy<Value = Op> {
    let a = 0..allocations;
    prop_oneof![
        (a.clone(), any::<u32>(), any::<u32>()).prop_map(|(target, mul, add)| Op::ScaleAdd {
            target,
            mul,
            add
        }),
        (a.clone(), a.clone()).prop_map(|(target, source)| Op::Accumulate { target, source }),
        a.clone().prop_map(|target| Op::PrefixSum { target }),
        a.clone().prop_map(|target| Op::Rotate { target }),
        a.prop_map(|target| Op::Bump { target }),
    ]
}

/// One launch of the application: a kernel, or a graph of kernels (never replayed); or a host
/// read-modify-write of an allocation (an API call that closes an open replay window).
#[derive(Debug, Clone)]
enum Step {
    Kernel(Op),
    Graph(Vec<Op>),
    HostBump(usize),
}

impl Step {
    fn is_launch(&self) -> bool {
        !matches!(self, Step::HostBump(_))
    }
}

fn step(allocations: usize) -> impl Strategy<Value = Step> {
    prop_oneof![
        8 => op(allocations).prop_map(Step::Kernel),
        2 => prop::collection::vec(op(allocations), 1..4).prop_map(Step::Graph),
        1 => (0..allocations).prop_map(Step::HostBump),
    ]
}

fn window() -> impl Strategy<Value = ReplayWindow> {
    prop_oneof![
        1 => Just(ReplayWindow::Dispatch),
        3 => (2u32..7).prop_map(ReplayWindow::Count),
        1 => Just(ReplayWindow::Auto),
    ]
}

fn mode() -> impl Strategy<Value = InProcessMode> {
    prop_oneof![
        4 => Just(InProcessMode::KernelReplay),
        1 => (1u64..4).prop_map(|interval| InProcessMode::Rotation { interval }),
        1 => Just(InProcessMode::Single),
    ]
}

/// Everything one case varies.
#[derive(Debug, Clone)]
struct Scenario {
    allocations: Vec<Allocation>,
    steps: Vec<Step>,
    metrics: Vec<Vec<SimMetric>>,
    mode: InProcessMode,
    /// Stage snapshots in host memory (a reserve larger than the device) instead of the device.
    host_staging: bool,
    window: ReplayWindow,
    /// The device's cap on a window (1: no windows at all).
    max_window: usize,
}

fn scenario() -> impl Strategy<Value = Scenario> {
    let metrics = prop::sample::subsequence(
        vec![
            SimMetric::WarpsLaunched,
            SimMetric::InstExecuted,
            SimMetric::CyclesElapsed,
            SimMetric::BytesWritten,
            SimMetric::BytesRead,
        ],
        1..=2,
    );
    prop::collection::vec(allocation(), 1..6).prop_flat_map(move |allocations| {
        let n = allocations.len();
        (
            Just(allocations),
            prop::collection::vec(step(n), 1..16),
            prop::collection::vec(metrics.clone(), 1..5),
            mode(),
            any::<bool>(),
            window(),
            1usize..9,
        )
            .prop_map(
                |(allocations, steps, metrics, mode, host_staging, window, max_window)| Scenario {
                    allocations,
                    steps,
                    metrics,
                    mode,
                    host_staging,
                    window,
                    max_window,
                },
            )
    })
}

fn launch_for(op: &Op, kernels: &[SimKernel], bases: &[u64], lens: &[u64]) -> SimLaunch {
    let (kernel, target, extra) = match *op {
        Op::ScaleAdd { target, mul, add } => (0, target, vec![u64::from(mul), u64::from(add)]),
        Op::Accumulate { target, source } => (1, target, vec![bases[source]]),
        Op::PrefixSum { target } => (2, target, vec![]),
        Op::Rotate { target } => (3, target, vec![]),
        Op::Bump { target } => (4, target, vec![]),
    };
    let mut n = lens[target];
    if let Op::Accumulate { source, .. } = *op {
        n = n.min(lens[source]);
    }
    let mut args = vec![bases[target], n];
    args.extend(extra);
    SimLaunch {
        kernel: kernels[kernel].clone(),
        grid: [(n as u32).div_ceil(32), 1, 1],
        block: [32, 1, 1],
        args,
    }
}

/// Runs the scenario, returns every allocation's bytes afterwards.
fn run(allocations: &[Allocation], steps: &[Step], mut runtime: SimRuntime) -> Vec<Vec<u8>> {
    let kernels = kernels();
    let mut bases = Vec::new();
    let mut lens = Vec::new();
    for allocation in allocations {
        let base = runtime
            .alloc(allocation.kind, allocation.init.len() as u64 * 4)
            .unwrap();
        runtime.write_u32s(base, &allocation.init).unwrap();
        bases.push(base);
        lens.push(allocation.init.len() as u64);
    }
    for step in steps {
        match step {
            Step::Kernel(op) => runtime.launch(&launch_for(op, &kernels, &bases, &lens)),
            Step::Graph(ops) => {
                let nodes: Vec<SimLaunch> = ops
                    .iter()
                    .map(|op| launch_for(op, &kernels, &bases, &lens))
                    .collect();
                runtime.launch_graph(&nodes)
            }
            Step::HostBump(target) => {
                let value = runtime.read_u32s(bases[*target], 1).unwrap()[0];
                runtime
                    .write_u32s(bases[*target], &[value ^ 0xa5a5])
                    .map(|_| ())
            }
        }
        .unwrap();
    }
    runtime.finish();
    bases
        .iter()
        .map(|b| runtime.device().bytes(*b).unwrap().to_vec())
        .collect()
}

/// A profiled run of the scenario: memory afterwards and every record.
fn profiled(
    allocations: &[Allocation],
    steps: &[Step],
    config: &ToolConfig,
    host_staging: bool,
    max_window: usize,
) -> (Vec<Vec<u8>>, Vec<Record>) {
    profiled_on(allocations, steps, config, host_staging, max_window, false)
}

fn profiled_on(
    allocations: &[Allocation],
    steps: &[Step],
    config: &ToolConfig,
    host_staging: bool,
    max_window: usize,
    packed: bool,
) -> (Vec<Vec<u8>>, Vec<Record>) {
    let sink = Arc::new(MemorySink::default());
    let options = EngineOptions {
        logger: Arc::new(SilentLogger),
        abort: Arc::new(|message: &str| panic!("engine aborted: {message}")),
        staging_reserve_bytes: if host_staging { u64::MAX / 2 } else { 0 },
        window_spans_calls: true,
    };
    let tool = Box::new(CounterGroupsTool::new(config));
    let engine =
        Arc::new(Engine::with_options(config.clone(), sink.clone(), tool, options).unwrap());
    let mut device = SimDevice::new(&config.groups);
    device.set_max_window(max_window);
    if packed {
        device.pack_groups();
    }
    let memory = run(allocations, steps, SimRuntime::new(device, Some(engine)));
    let records = std::mem::take(&mut *sink.records.lock().unwrap());
    (memory, records)
}

/// Deterministic counter values by (dispatch id, pass, counter).
fn deterministic_values(records: &[Record]) -> BTreeMap<(u64, Option<u32>, String), f64> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::Dispatch(d) => Some(d),
            _ => None,
        })
        .flat_map(|d| {
            d.counters
                .iter()
                .filter(|c| SimMetric::from_name(&c.name).is_some_and(|m| m.is_deterministic()))
                .map(move |c| ((d.dispatch_id, d.replay_pass, c.name.clone()), c.value))
        })
        .collect()
}

fn groups(metrics: &[Vec<SimMetric>]) -> Vec<CounterGroup> {
    metrics
        .iter()
        .map(|group| CounterGroup {
            counters: group
                .iter()
                .map(|m| CounterSpec {
                    requested: m.name().to_string(),
                    metric: m.name().to_string(),
                })
                .collect(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn replay_leaves_memory_as_one_execution_and_counters_agree(case in scenario()) {
        let Scenario { allocations, steps, metrics, mode, host_staging, window, max_window } = case;
        let reference = run(&allocations, &steps, SimRuntime::new(SimDevice::new(&[]), None));

        let config = ToolConfig {
            groups: groups(&metrics),
            mode,
            replay_window: window,
            ..ToolConfig::default()
        };
        let (replayed, records) = profiled(&allocations, &steps, &config, host_staging, max_window);
        prop_assert_eq!(&replayed, &reference);
        // Window replay measures what per-dispatch replay measures.
        if window != ReplayWindow::Dispatch {
            let per_dispatch = ToolConfig { replay_window: ReplayWindow::Dispatch, ..config.clone() };
            let (memory, baseline) = profiled(&allocations, &steps, &per_dispatch, host_staging, max_window);
            prop_assert_eq!(&memory, &reference);
            prop_assert_eq!(deterministic_values(&records), deterministic_values(&baseline));
        }
        // Groups packed into shared hardware passes: the same memory and the same values, from
        // one execution per hardware pass instead of one per group.
        let (memory, packed) = profiled_on(&allocations, &steps, &config, host_staging, max_window, true);
        prop_assert_eq!(&memory, &reference);
        prop_assert_eq!(deterministic_values(&packed), deterministic_values(&records));
        let mut device = SimDevice::new(&config.groups);
        device.pack_groups();
        let hardware = device.hardware_passes() as u32;
        for record in &packed {
            if let Record::ReplayCost(cost) = record {
                if cost.outcome == ReplayOutcome::Replayed && mode == InProcessMode::KernelReplay && metrics.len() > 1 {
                    prop_assert_eq!(cost.passes, hardware, "executions of dispatch {}", cost.dispatch_id);
                    if hardware == 1 {
                        // Nothing will be restored: nothing is staged.
                        prop_assert_eq!(cost.bytes_snapshotted, 0);
                        prop_assert_eq!(cost.bytes_restored, 0);
                    }
                }
            }
        }
        let steps: Vec<Step> = steps.into_iter().filter(Step::is_launch).collect();

        let mut passes: BTreeMap<u64, Vec<&DispatchRecord>> = BTreeMap::new();
        for record in records.iter() {
            if let Record::Dispatch(d) = record {
                passes.entry(d.dispatch_id).or_default().push(d);
            }
        }
        let n = metrics.len();
        prop_assert_eq!(passes.len(), steps.len());
        prop_assert_eq!(passes.keys().copied().collect::<Vec<_>>(), (1..=steps.len() as u64).collect::<Vec<_>>());
        for (step, dispatch) in steps.iter().zip(passes.values()) {
            let seen: Vec<Option<u32>> = dispatch.iter().map(|d| d.replay_pass).collect();
            let replayed = n > 1
                && mode == InProcessMode::KernelReplay
                && matches!(step, Step::Kernel(_));
            let expected: Vec<Option<u32>> = if replayed {
                (0..n as u32).map(Some).collect()
            } else {
                vec![None]
            };
            prop_assert_eq!(seen, expected);
            // A deterministic counter collected in several passes has one value.
            let mut values: BTreeMap<&str, f64> = BTreeMap::new();
            for pass in dispatch {
                for sample in &pass.counters {
                    let metric = SimMetric::from_name(&sample.name).unwrap();
                    if !metric.is_deterministic() {
                        continue;
                    }
                    prop_assert!(sample.value > 0.0, "{} is {}", sample.name, sample.value);
                    if let Some(previous) = values.insert(&sample.name, sample.value) {
                        prop_assert_eq!(previous, sample.value, "{} differs between passes", sample.name);
                    }
                }
            }
        }
    }
}
