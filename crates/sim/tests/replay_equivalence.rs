//! The replay contract as a property: for random sequences of random in-place kernels (some
//! launched together as graphs, with memset nodes between them) over random allocations, a
//! random number of counter groups, a random mode (kernel replay, rotation, single) and either
//! staging place, memory after the profiled run equals memory after one execution, every
//! replayed dispatch (a graph's kernel nodes included: a dispatch each, as on a GPU) has passes
//! 0..N-1 exactly once under one id (non-replay modes: one record without a pass), and
//! deterministic counters are equal across passes. Window replay (random window sizes and
//! device caps, with host copies between kernels closing windows early) gives the same memory,
//! the same passes and the same deterministic counter values as per-dispatch replay. Between
//! kernels the application reads and writes memory from the host, copies and fills it on the
//! device and synchronises: windows that restore stay open across those calls, and every value
//! the host reads is the one a run without kreplay reads. Allocations are on one of two devices
//! of the process, each step runs on its allocation's device (as `cudaSetDevice` before it), a
//! copy between the two is a peer copy, and each device keeps its own replay window.

use kreplay_core::backend::{AllocKind, DeviceId};
use kreplay_core::config::{CounterGroup, CounterSpec, InProcessMode, ReplayWindow, ToolConfig};
use kreplay_core::notice::SilentLogger;
use kreplay_core::{CounterGroupsPolicy, Engine, EngineOptions};
use kreplay_format::{DispatchRecord, Record, RecordSink, ReplayOutcome};
use kreplay_sim::device::KernelContext;
use kreplay_sim::{GraphNode, SimDevice, SimKernel, SimLaunch, SimMetric, SimRuntime};
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
    /// The device it is on (a process with two devices when any allocation is on device 1).
    device: DeviceId,
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
        // Its work depends on the value it reads (a loop bound read from memory): its
        // instruction count shows any pass that ran on memory other than the application's.
        SimKernel::new(5, "bump", "bump", |k: &mut KernelContext<'_>| {
            let x = k.arg(0);
            let v = k.read_u32(x);
            k.write_u32(x, v.wrapping_add(1));
            k.count_instructions(1 + u64::from(v % 4));
        }),
    ]
}

fn allocation() -> impl Strategy<Value = Allocation> {
    (
        prop_oneof![
            Just(AllocKind::Device),
            Just(AllocKind::Pitched),
            Just(AllocKind::ModuleVariable),
            Just(AllocKind::Managed)
        ],
        prop::collection::vec(any::<u32>(), 1..48),
        prop_oneof![3 => Just(0), 1 => Just(1)],
    )
        .prop_map(|(kind, init, device)| Allocation { kind, init, device })
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

impl Op {
    /// The allocation it writes.
    fn target(&self) -> usize {
        match *self {
            Op::ScaleAdd { target, .. }
            | Op::Accumulate { target, .. }
            | Op::PrefixSum { target }
            | Op::Rotate { target }
            | Op::Bump { target } => target,
        }
    }

    /// The same operation with its allocation indices taken modulo the `live` allocations.
    fn resolved(&self, live: usize) -> Op {
        let at = |i: usize| i % live;
        match *self {
            Op::ScaleAdd { target, mul, add } => Op::ScaleAdd {
                target: at(target),
                mul,
                add,
            },
            Op::Accumulate { target, source } => Op::Accumulate {
                target: at(target),
                source: at(source),
            },
            Op::PrefixSum { target } => Op::PrefixSum { target: at(target) },
            Op::Rotate { target } => Op::Rotate { target: at(target) },
            Op::Bump { target } => Op::Bump { target: at(target) },
        }
    }
}

/// One step of the application: a kernel, or a graph (its kernel nodes replayed, its memset
/// nodes run once); or a call a
/// replay window may stay open across: a host read-modify-write of an allocation, a host read,
/// a device-to-device copy (a peer copy between two devices), a memset, a synchronisation.
#[derive(Debug, Clone)]
enum Step {
    Kernel(Op),
    Graph(Vec<Node>),
    HostBump(usize),
    HostRead(usize),
    /// The host stores into managed memory directly, with no CUDA call (a no-op on other
    /// kinds): what NVIDIA's systemWideAtomics does while its kernel runs.
    HostStore {
        target: usize,
        value: u32,
    },
    Copy {
        dst: usize,
        src: usize,
    },
    Fill {
        target: usize,
        value: u32,
    },
    Sync,
    /// A new allocation in the middle of the run (the application's allocator growing), its
    /// initial values copied in when `write`; later steps' indices reach it (taken modulo the
    /// allocations made so far).
    Alloc {
        allocation: Allocation,
        write: bool,
    },
}

/// A node of a graph: a kernel node, or a memset node over an allocation.
#[derive(Debug, Clone)]
enum Node {
    Kernel(Op),
    Fill { target: usize, value: u32 },
}

fn node(allocations: usize) -> impl Strategy<Value = Node> {
    prop_oneof![
        3 => op(allocations).prop_map(Node::Kernel),
        1 => (0..allocations, any::<u32>()).prop_map(|(target, value)| Node::Fill { target, value }),
    ]
}

fn step(allocations: usize) -> impl Strategy<Value = Step> {
    // Room for the allocations made by the steps themselves.
    let allocations = allocations + 2;
    let a = 0..allocations;
    prop_oneof![
        8 => op(allocations).prop_map(Step::Kernel),
        2 => prop::collection::vec(node(allocations), 1..5).prop_map(Step::Graph),
        1 => a.clone().prop_map(Step::HostBump),
        1 => a.clone().prop_map(Step::HostRead),
        1 => (a.clone(), any::<u32>()).prop_map(|(target, value)| Step::HostStore { target, value }),
        1 => (a.clone(), a.clone()).prop_map(|(dst, src)| Step::Copy { dst, src }),
        1 => (a, any::<u32>()).prop_map(|(target, value)| Step::Fill { target, value }),
        1 => Just(Step::Sync),
        2 => (allocation(), any::<bool>()).prop_map(|(allocation, write)| Step::Alloc { allocation, write }),
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

/// The launch of `op` over the allocations (`devices[i]`: allocation `i`'s device); a kernel
/// reaches only its own device's memory, so a source on another device is the target itself.
fn launch_for(
    op: &Op,
    kernels: &[SimKernel],
    bases: &[u64],
    lens: &[u64],
    devices: &[DeviceId],
) -> SimLaunch {
    let op = &match op.resolved(bases.len()) {
        Op::Accumulate { target, source } if devices[target] != devices[source] => Op::Accumulate {
            target,
            source: target,
        },
        op => op,
    };
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
        device: 0,
    }
}

/// What a run of the scenario left: every allocation's bytes, every value the host read, and
/// the kernels each launch step launched (1 for a kernel, a graph's kernel nodes on its device).
#[derive(Debug, PartialEq)]
struct Outcome {
    memory: Vec<Vec<u8>>,
    reads: Vec<Vec<u32>>,
    kernels: Vec<usize>,
}

/// Runs the scenario.
fn run(allocations: &[Allocation], steps: &[Step], mut runtime: SimRuntime) -> Outcome {
    let kernels = kernels();
    let mut bases = Vec::new();
    let mut lens = Vec::new();
    let mut reads = Vec::new();
    let mut launched = Vec::new();
    let mut kinds = Vec::new();
    let mut devices = Vec::new();
    let allocate = |runtime: &mut SimRuntime, allocation: &Allocation, write: bool| {
        runtime.set_device(allocation.device);
        let base = runtime
            .alloc(allocation.kind, allocation.init.len() as u64 * 4)
            .unwrap();
        if write {
            runtime.write_u32s(base, &allocation.init).unwrap();
        }
        (base, allocation.init.len() as u64, allocation.kind)
    };
    for allocation in allocations {
        let (base, len, kind) = allocate(&mut runtime, allocation, true);
        bases.push(base);
        lens.push(len);
        kinds.push(kind);
        devices.push(allocation.device);
    }
    for step in steps {
        if let Step::Alloc { allocation, write } = step {
            let (base, len, kind) = allocate(&mut runtime, allocation, *write);
            bases.push(base);
            lens.push(len);
            kinds.push(kind);
            devices.push(allocation.device);
            continue;
        }
        let at = |i: usize| i % bases.len();
        // The step runs on the device of the allocation it works on (a graph: its first
        // kernel's, its kernels on other devices left out; a copy: both must be on one).
        let target = match step {
            Step::Kernel(op) => op.resolved(bases.len()).target(),
            Step::Graph(nodes) => match &nodes[0] {
                Node::Kernel(op) => op.resolved(bases.len()).target(),
                Node::Fill { target, .. } => at(*target),
            },
            Step::HostBump(t) | Step::HostRead(t) => at(*t),
            Step::HostStore { target, .. } | Step::Fill { target, .. } => at(*target),
            Step::Copy { dst, .. } => at(*dst),
            Step::Sync | Step::Alloc { .. } => 0,
        };
        runtime.set_device(devices[target]);
        match step {
            Step::Kernel(op) => {
                launched.push(1);
                runtime.launch(&launch_for(op, &kernels, &bases, &lens, &devices))
            }
            Step::Graph(nodes) => {
                let nodes: Vec<GraphNode> = nodes
                    .iter()
                    .filter_map(|node| match node {
                        Node::Kernel(op) => {
                            let here =
                                devices[op.resolved(bases.len()).target()] == devices[target];
                            here.then(|| {
                                GraphNode::Kernel(launch_for(op, &kernels, &bases, &lens, &devices))
                            })
                        }
                        Node::Fill { target: t, value } => {
                            let t = at(*t);
                            (devices[t] == devices[target]).then(|| GraphNode::Fill {
                                dst: bases[t],
                                value: *value,
                                count: lens[t] as usize,
                            })
                        }
                    })
                    .collect();
                launched.push(
                    nodes
                        .iter()
                        .filter(|n| matches!(n, GraphNode::Kernel(_)))
                        .count(),
                );
                runtime.launch_graph(&nodes)
            }
            Step::HostBump(target) => {
                let target = at(*target);
                let value = runtime.read_u32s(bases[target], 1).unwrap()[0];
                reads.push(vec![value]);
                runtime
                    .write_u32s(bases[target], &[value ^ 0xa5a5])
                    .map(|_| ())
            }
            Step::HostRead(target) => {
                let target = at(*target);
                reads.push(
                    runtime
                        .read_u32s(bases[target], lens[target] as usize)
                        .unwrap(),
                );
                Ok(())
            }
            Step::HostStore { target, value } if kinds[at(*target)] == AllocKind::Managed => {
                runtime.host_store_u32(bases[at(*target)], *value)
            }
            Step::HostStore { .. } => Ok(()),
            // Between two devices: a peer copy, which closes the windows of both.
            Step::Copy { dst, src } if devices[at(*dst)] != devices[at(*src)] => {
                let (dst, src) = (at(*dst), at(*src));
                let n = lens[dst].min(lens[src]) * 4;
                runtime.copy_peer(bases[dst], devices[src], bases[src], n)
            }
            Step::Copy { dst, src } => {
                let (dst, src) = (at(*dst), at(*src));
                let n = lens[dst].min(lens[src]) * 4;
                runtime.copy(bases[dst], bases[src], n)
            }
            Step::Fill { target, value } => {
                let target = at(*target);
                runtime.fill_u32s(bases[target], *value, lens[target] as usize)
            }
            Step::Sync => {
                runtime.synchronize();
                Ok(())
            }
            Step::Alloc { .. } => unreachable!("allocated above"),
        }
        .unwrap();
    }
    runtime.finish();
    let memory = bases
        .iter()
        .zip(&devices)
        .map(|(b, &device)| {
            runtime.set_device(device);
            runtime.device().bytes(*b).unwrap().to_vec()
        })
        .collect();
    Outcome {
        memory,
        reads,
        kernels: launched,
    }
}

/// The devices a scenario's process has: two when an allocation is on device 1.
fn device_count(allocations: &[Allocation], steps: &[Step]) -> usize {
    let made_in_steps = steps.iter().filter_map(|s| match s {
        Step::Alloc { allocation, .. } => Some(allocation),
        _ => None,
    });
    let last = allocations
        .iter()
        .chain(made_in_steps)
        .map(|a| a.device)
        .max();
    last.map_or(1, |d| d as usize + 1)
}

/// An unprofiled run of the scenario (the reference), on as many devices.
fn alone(allocations: &[Allocation], steps: &[Step]) -> Outcome {
    let devices = (0..device_count(allocations, steps))
        .map(|_| SimDevice::new(&[]))
        .collect();
    run(allocations, steps, SimRuntime::with_devices(devices, None))
}

/// A profiled run of the scenario: memory afterwards and every record.
fn profiled(
    allocations: &[Allocation],
    steps: &[Step],
    config: &ToolConfig,
    host_staging: bool,
    max_window: usize,
) -> (Outcome, Vec<Record>) {
    profiled_on(allocations, steps, config, host_staging, max_window, false)
}

fn profiled_on(
    allocations: &[Allocation],
    steps: &[Step],
    config: &ToolConfig,
    host_staging: bool,
    max_window: usize,
    packed: bool,
) -> (Outcome, Vec<Record>) {
    let sink = Arc::new(MemorySink::default());
    let options = EngineOptions {
        logger: Arc::new(SilentLogger),
        abort: Arc::new(|message: &str| panic!("engine aborted: {message}")),
        staging_reserve_bytes: if host_staging { u64::MAX / 2 } else { 0 },
        window_spans_calls: true,
    };
    let tool = Box::new(CounterGroupsPolicy::new(config));
    let engine =
        Arc::new(Engine::with_options(config.clone(), sink.clone(), tool, options).unwrap());
    let devices = (0..device_count(allocations, steps))
        .map(|_| {
            let mut device = SimDevice::new(&config.groups);
            device.set_max_window(max_window);
            if packed {
                device.pack_groups();
            }
            device
        })
        .collect();
    let outcome = run(
        allocations,
        steps,
        SimRuntime::with_devices(devices, Some(engine)),
    );
    let records = std::mem::take(&mut *sink.records.lock().unwrap());
    (outcome, records)
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
                .map(move |c| ((d.dispatch_id, d.replay_pass, c.name.to_string()), c.value))
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
    #![proptest_config(ProptestConfig::with_cases(1024))]

    #[test]
    fn replay_leaves_memory_as_one_execution_and_counters_agree(case in scenario()) {
        let Scenario { allocations, steps, metrics, mode, host_staging, window, max_window } = case;
        let reference = alone(&allocations, &steps);

        let config = ToolConfig {
            groups: groups(&metrics),
            mode,
            replay_window: window,
            ..ToolConfig::default()
        };
        let (replayed, records) = profiled(&allocations, &steps, &config, host_staging, max_window);
        prop_assert_eq!(&replayed, &reference);
        // The host's stores into managed memory are no call: later passes run on memory from
        // before them (docs/kernel-replay.md), so a kernel whose work depends on what it reads
        // may count differently there; memory stays exact.
        let host_stores = stores_into_managed_memory(&allocations, &steps);
        // Window replay measures what per-dispatch replay measures.
        if window != ReplayWindow::Dispatch && !host_stores {
            let per_dispatch = ToolConfig { replay_window: ReplayWindow::Dispatch, ..config.clone() };
            let (memory, baseline) = profiled(&allocations, &steps, &per_dispatch, host_staging, max_window);
            prop_assert_eq!(&memory, &reference);
            prop_assert_eq!(deterministic_values(&records), deterministic_values(&baseline));
        }
        // Groups packed into shared hardware passes: the same memory and the same values, from
        // one execution per hardware pass instead of one per group.
        let (memory, packed) = profiled_on(&allocations, &steps, &config, host_staging, max_window, true);
        prop_assert_eq!(&memory, &reference);
        if !host_stores {
            prop_assert_eq!(deterministic_values(&packed), deterministic_values(&records));
        }
        // Without the execution that times the records (on by default): the same memory and
        // the same counters.
        let mut untimed = config.clone();
        untimed.switches.timing_execution = false;
        let (memory, untimed) = profiled(&allocations, &steps, &untimed, host_staging, max_window);
        prop_assert_eq!(&memory, &reference);
        if !host_stores {
            prop_assert_eq!(deterministic_values(&untimed), deterministic_values(&records));
        }
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
        let mut passes: BTreeMap<u64, Vec<&DispatchRecord>> = BTreeMap::new();
        for record in records.iter() {
            if let Record::Dispatch(d) = record {
                passes.entry(d.dispatch_id).or_default().push(d);
            }
        }
        let n = metrics.len();
        // A dispatch per kernel and per kernel node of a graph, those of one graph launch under
        // its one correlation id.
        let dispatches: usize = replayed.kernels.iter().sum();
        prop_assert_eq!(passes.len(), dispatches);
        prop_assert_eq!(passes.keys().copied().collect::<Vec<_>>(), (1..=dispatches as u64).collect::<Vec<_>>());
        let correlations: Vec<u64> = passes.values().map(|d| d[0].correlation_id).collect();
        let mut first = 0;
        for kernels in &replayed.kernels {
            let launch = &correlations[first..first + kernels];
            prop_assert!(launch.windows(2).all(|w| w[0] == w[1]), "{:?}", launch);
            first += kernels;
        }
        for dispatch in passes.values() {
            let seen: Vec<Option<u32>> = dispatch.iter().map(|d| d.replay_pass).collect();
            let replayed = n > 1 && mode == InProcessMode::KernelReplay;
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
                    if let Some(previous) = values.insert(&sample.name, sample.value).filter(|_| !host_stores) {
                        prop_assert_eq!(previous, sample.value, "{} differs between passes", sample.name);
                    }
                }
            }
        }
    }
}

/// The replay cost records, in order.
fn replay_costs(records: &[Record]) -> Vec<&kreplay_format::ReplayCost> {
    records
        .iter()
        .filter_map(|r| match r {
            Record::ReplayCost(c) => Some(c),
            _ => None,
        })
        .collect()
}

/// Whether a step stores from the host into managed memory (its target resolved as [`run`]
/// resolves it: modulo the allocations made so far).
fn stores_into_managed_memory(allocations: &[Allocation], steps: &[Step]) -> bool {
    let mut kinds: Vec<AllocKind> = allocations.iter().map(|a| a.kind).collect();
    steps.iter().any(|step| match step {
        Step::Alloc { allocation, .. } => {
            kinds.push(allocation.kind);
            false
        }
        Step::HostStore { target, .. } => kinds[target % kinds.len()] == AllocKind::Managed,
        _ => false,
    })
}

/// A window over managed memory the host stores into between two kernels, the second of which
/// reads it into device memory (the property's shrunk case): the device memory must be what the
/// application computed from the host's store, not what a later pass computed without it. F
/// used to hold managed memory only.
#[test]
fn a_kernel_that_reads_the_hosts_store_into_managed_memory_leaves_its_own_result() {
    let allocations = vec![Allocation {
        kind: AllocKind::Managed,
        init: vec![35177343, 517608207, 4094210630, 4188568068],
        device: 0,
    }];
    let steps = vec![
        Step::Alloc {
            allocation: Allocation {
                kind: AllocKind::Device,
                init: vec![0],
                device: 0,
            },
            write: false,
        },
        Step::Kernel(Op::ScaleAdd {
            target: 0,
            mul: 0,
            add: 0,
        }),
        Step::HostStore {
            target: 0,
            value: 1,
        },
        Step::Kernel(Op::Accumulate {
            target: 1,
            source: 0,
        }),
    ];
    let reference = run(
        &allocations,
        &steps,
        SimRuntime::new(SimDevice::new(&[]), None),
    );
    let config = ToolConfig {
        groups: groups(&[
            vec![SimMetric::BytesWritten],
            vec![SimMetric::CyclesElapsed],
        ]),
        mode: InProcessMode::KernelReplay,
        replay_window: ReplayWindow::Count(2),
        ..ToolConfig::default()
    };
    let (outcome, _) = profiled(&allocations, &steps, &config, false, 2);
    assert_eq!(outcome, reference);
}

/// The deferral the property relies on, shown once: a window that restores memory stays open
/// across host writes and reads, copies, memsets and synchronisations, captures what the calls
/// wrote, and leaves reads and memory as without kreplay.
#[test]
fn a_restoring_window_stays_open_across_host_calls_and_reads_stay_exact() {
    let allocations = vec![
        Allocation {
            kind: AllocKind::Device,
            init: (0..16).collect(),
            device: 0,
        },
        Allocation {
            kind: AllocKind::Device,
            init: vec![7; 16],
            device: 0,
        },
    ];
    let steps = vec![
        Step::Kernel(Op::PrefixSum { target: 0 }),
        Step::HostBump(0),
        Step::Kernel(Op::Accumulate {
            target: 1,
            source: 0,
        }),
        Step::HostRead(1),
        Step::Copy { dst: 0, src: 1 },
        Step::Fill {
            target: 1,
            value: 3,
        },
        Step::Kernel(Op::Rotate { target: 0 }),
        Step::Sync,
        Step::HostRead(0),
    ];
    let reference = run(
        &allocations,
        &steps,
        SimRuntime::new(SimDevice::new(&[]), None),
    );
    let config = ToolConfig {
        groups: groups(&[vec![SimMetric::InstExecuted], vec![SimMetric::BytesRead]]),
        mode: InProcessMode::KernelReplay,
        replay_window: ReplayWindow::Count(8),
        ..ToolConfig::default()
    };
    let (outcome, records) = profiled(&allocations, &steps, &config, false, 8);
    assert_eq!(outcome, reference);
    let costs = replay_costs(&records);
    assert_eq!(costs.len(), 3, "three dispatches");
    assert!(costs
        .iter()
        .all(|c| c.outcome == ReplayOutcome::Replayed && c.passes == 2));
    // One window for all three: S0 and the application's view staged once each.
    let tracked: u64 = allocations.iter().map(|a| a.init.len() as u64 * 4).sum();
    assert_eq!(costs[0].bytes_snapshotted, 2 * tracked);
    let passes = records
        .iter()
        .filter(|r| matches!(r, Record::Dispatch(_)))
        .count();
    assert_eq!(passes, 6);
}

/// An allocation made while a restoring window is open (the application's allocator growing
/// between two kernels) is taken into the window: snapshotted before the kernel that uses it,
/// restored before every later pass, so every pass of a kernel whose work depends on what it
/// reads counts the same instructions, and memory ends as without kreplay.
#[test]
fn a_window_takes_in_an_allocation_made_while_it_is_open() {
    let allocations = vec![Allocation {
        kind: AllocKind::Device,
        init: vec![1; 8],
        device: 0,
    }];
    let late = |init: Vec<u32>, write| Step::Alloc {
        allocation: Allocation {
            kind: AllocKind::Device,
            init,
            device: 0,
        },
        write,
    };
    let steps = vec![
        Step::Kernel(Op::Bump { target: 0 }),
        late(vec![5; 4], true),
        Step::Kernel(Op::Bump { target: 1 }),
        late(vec![0; 4], false),
        Step::Kernel(Op::Bump { target: 2 }),
        Step::Kernel(Op::Bump { target: 1 }),
        Step::HostRead(1),
    ];
    let reference = run(
        &allocations,
        &steps,
        SimRuntime::new(SimDevice::new(&[]), None),
    );
    let config = ToolConfig {
        groups: groups(&[
            vec![SimMetric::InstExecuted],
            vec![SimMetric::InstExecuted, SimMetric::WarpsLaunched],
        ]),
        mode: InProcessMode::KernelReplay,
        replay_window: ReplayWindow::Count(8),
        ..ToolConfig::default()
    };
    let (outcome, records) = profiled(&allocations, &steps, &config, false, 8);
    assert_eq!(outcome, reference);
    let costs = replay_costs(&records);
    assert_eq!(costs.len(), 4);
    assert!(costs
        .iter()
        .all(|c| c.outcome == ReplayOutcome::Replayed && c.passes == 2));
    // One window: S0 (8 words), the two new allocations (4 words each), then F of all three.
    assert_eq!(costs[0].bytes_tracked, 64);
    assert_eq!(costs[0].bytes_snapshotted, 2 * 64);
    assert!(costs[1..].iter().all(|c| c.bytes_snapshotted == 0));
    let mut instructions: BTreeMap<u64, Vec<f64>> = BTreeMap::new();
    for record in &records {
        if let Record::Dispatch(d) = record {
            for c in d
                .counters
                .iter()
                .filter(|c| c.name == "sim__inst_executed.sum")
            {
                instructions.entry(d.dispatch_id).or_default().push(c.value);
            }
        }
    }
    assert_eq!(instructions.len(), 4);
    for (dispatch, values) in &instructions {
        assert_eq!(values.len(), 2);
        assert_eq!(values[0], values[1], "dispatch {dispatch}: {values:?}");
    }
}
