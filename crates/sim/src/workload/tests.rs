use super::*;
use crate::SimDevice;
use kreplay_core::config::{CounterGroup, CounterSpec, InProcessMode, ReplayWindow, ToolConfig};
use kreplay_core::notice::SilentLogger;
use kreplay_core::{CounterGroupsPolicy, Engine, EngineOptions};
use kreplay_format::{Record, RecordSink, ReplayOutcome};
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

#[test]
fn verification_names_the_first_difference_of_every_buffer_that_differs() {
    let outcome = |a: Vec<u32>, managed: Vec<u32>| WorkloadOutcome {
        tracked: vec![("a", a), ("g_launches", vec![3])],
        managed,
    };
    let reference = outcome(vec![1, 2, 3], vec![7, 8]);
    let same = verify(&outcome(vec![1, 2, 3], vec![7, 8]), &reference);
    assert!(same.passed, "{}", same.line);
    let differ = verify(&outcome(vec![1, 9, 3], vec![7, 0]), &reference);
    assert!(!differ.passed);
    assert_eq!(
        differ.line,
        "kreplay-sim-app: verification FAILED (2 differ from a single execution: a[1] = 9 instead of 2, managed[1] = 0 instead of 8)"
    );
}

#[derive(Default)]
struct MemorySink(Mutex<Vec<Record>>);
impl RecordSink for MemorySink {
    fn send(&self, record: Record) {
        self.0.lock().unwrap().push(record);
    }
    fn flush(&self) {}
}

/// An engine with kreplay's own tool that records into `sink` and turns a fatal condition
/// into a test failure.
fn engine(config: &ToolConfig, sink: Arc<MemorySink>) -> crate::SimEngine {
    let options = EngineOptions {
        logger: Arc::new(SilentLogger),
        abort: Arc::new(|m: &str| panic!("{m}")),
        staging_reserve_bytes: 0,
        window_spans_calls: true,
    };
    Engine::with_options(
        config.clone(),
        sink,
        Box::new(CounterGroupsPolicy::new(config)),
        options,
    )
    .unwrap()
}

fn profiled(mode: InProcessMode, groups: usize) -> (WorkloadOutcome, Vec<Record>) {
    profiled_with(mode, groups, |_| ())
}

/// As [`profiled`], with the configuration changed by `change`.
fn profiled_with(
    mode: InProcessMode,
    groups: usize,
    change: impl FnOnce(&mut ToolConfig),
) -> (WorkloadOutcome, Vec<Record>) {
    let metrics = ["sim__warps_launched.sum", "sim__bytes_written.sum"];
    let config = ToolConfig {
        groups: (0..groups)
            .map(|g| CounterGroup {
                counters: vec![CounterSpec {
                    requested: metrics[g % 2].into(),
                    metric: metrics[g % 2].into(),
                }],
            })
            .collect(),
        mode,
        ..ToolConfig::default()
    };
    let mut config = config;
    change(&mut config);
    let sink = Arc::new(MemorySink::default());
    let engine = engine(&config, sink.clone());
    let mut runtime = SimRuntime::new(SimDevice::new(&config.groups), Some(Arc::new(engine)));
    let outcome = run(&mut runtime, WorkloadOptions::default()).unwrap();
    // The end of the process: launches timed without waiting are read then at the latest.
    runtime.finish();
    let records = sink.0.lock().unwrap().clone();
    (outcome, records)
}

fn reference() -> WorkloadOutcome {
    let mut runtime = SimRuntime::new(SimDevice::new(&[]), None);
    run(&mut runtime, WorkloadOptions::default()).unwrap()
}

/// A kernel's id and the passes its dispatch recorded.
type KernelPasses = (u64, Vec<Option<u32>>);

#[test]
fn kernel_replay_matches_a_single_execution_managed_memory_included() {
    let reference = reference();
    let (outcome, records) = profiled(InProcessMode::KernelReplay, 3);
    let verification = verify(&outcome, &reference);
    assert!(verification.passed, "{}", verification.line);
    assert_eq!(
        outcome.managed, reference.managed,
        "managed memory is restored"
    );
    assert_eq!(
        outcome.tracked[4].1,
        vec![3],
        "module variable counts launches once"
    );
    assert!(
        !records.iter().any(|r| matches!(r,
            Record::ReplayCost(c) if c.outcome == ReplayOutcome::DeclinedGraphLaunch)),
        "no graph launch is declined"
    );
    // The graph's two kernel nodes (scale_add, then accumulate): dispatches of their own under
    // the graph launch's one correlation id, each with every pass.
    let mut passes: BTreeMap<(u64, u64, u64), Vec<Option<u32>>> = BTreeMap::new();
    for r in &records {
        if let Record::Dispatch(d) = r {
            passes
                .entry((d.correlation_id, d.dispatch_id, d.kernel_id))
                .or_default()
                .push(d.replay_pass);
        }
    }
    let mut by_correlation: BTreeMap<u64, Vec<KernelPasses>> = BTreeMap::new();
    for ((correlation, _, kernel), mut seen) in passes {
        seen.sort();
        by_correlation
            .entry(correlation)
            .or_default()
            .push((kernel, seen));
    }
    let graph: Vec<_> = by_correlation.values().filter(|d| d.len() > 1).collect();
    assert_eq!(graph.len(), 1, "one graph launch: {by_correlation:?}");
    let every_pass = vec![Some(0), Some(1), Some(2)];
    assert_eq!(
        *graph[0],
        vec![(1, every_pass.clone()), (2, every_pass)],
        "scale_add and accumulate, every pass"
    );
}

/// With `KREPLAY_GRAPH_NODES=0` the graph runs whole, as on a GPU: one launch of
/// `cuGraphLaunch`, run once with timestamps only. With `KREPLAY_GRAPH_WINDOW_SPANS=0` the
/// window its kernel nodes joined closes after them. Either way the results are a single
/// execution's.
#[test]
fn a_graph_run_whole_runs_once_unmeasured_and_results_stay_exact() {
    let reference = reference();
    let (outcome, records) = profiled_with(InProcessMode::KernelReplay, 2, |c| {
        c.switches.graph_nodes = false
    });
    assert!(verify(&outcome, &reference).passed);
    let declined: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::ReplayCost(c) if c.outcome == ReplayOutcome::DeclinedGraphLaunch => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(declined.len(), 1, "{declined:?}");
    let graph: Vec<_> = records
        .iter()
        .filter_map(|r| match r {
            Record::Dispatch(d) if d.dispatch_id == declined[0].dispatch_id => Some(d),
            _ => None,
        })
        .collect();
    assert_eq!(graph.len(), 1);
    assert!(graph[0].counters.is_empty() && graph[0].replay_pass.is_none());
    let named = records.iter().any(|r| {
        matches!(r, Record::KernelSymbol(k) if k.kernel_id == graph[0].kernel_id && k.mangled_name == "cuGraphLaunch")
    });
    assert!(named, "the graph launch is a launch of cuGraphLaunch");

    let (outcome, records) = profiled_with(InProcessMode::KernelReplay, 2, |c| {
        c.replay_window = ReplayWindow::Count(64);
        c.switches.graph_window_spans = false;
    });
    assert!(verify(&outcome, &reference).passed);
    assert!(!records.iter().any(|r| matches!(r,
        Record::ReplayCost(c) if c.outcome == ReplayOutcome::DeclinedGraphLaunch)));
}

/// Four threads at once on `devices` devices of one process, three groups in three passes:
/// each thread's outcome against one unprofiled execution, and every record.
fn four_threads_on(devices: usize, iterations: u32) -> (Verification, Vec<Record>) {
    let config = ToolConfig {
        groups: (0..3).map(|_| CounterGroup::default()).collect(),
        mode: InProcessMode::KernelReplay,
        ..ToolConfig::default()
    };
    let sink = Arc::new(MemorySink::default());
    let engine = engine(&config, sink.clone());
    let devices = (0..devices)
        .map(|_| SimDevice::new(&config.groups))
        .collect();
    let runtime = SimRuntime::with_devices(devices, Some(Arc::new(engine)));
    let options = WorkloadOptions {
        iterations,
        elements: 32,
        ..WorkloadOptions::default()
    };
    let reference = {
        let mut r = SimRuntime::new(SimDevice::new(&[]), None);
        run(&mut r, options).unwrap()
    };
    let outcomes = run_threads(&runtime, options, 4).unwrap();
    let records = sink.0.lock().unwrap().clone();
    (verify_all(&outcomes, &reference), records)
}

#[test]
fn threads_replaying_on_one_device_each_see_a_single_execution() {
    let (verification, _) = four_threads_on(1, 150);
    assert!(verification.passed, "{}", verification.line);
    assert!(
        verification.line.contains("(4 threads; "),
        "{}",
        verification.line
    );
}

/// Two threads on each of two devices of one process, each on its own buffers.
#[test]
fn threads_on_two_devices_of_one_process_each_see_a_single_execution() {
    let (verification, records) = four_threads_on(2, 40);
    assert!(verification.passed, "{}", verification.line);
    let agents: std::collections::BTreeSet<u64> = records
        .iter()
        .filter_map(|r| match r {
            Record::Dispatch(d) => Some(d.agent_id),
            _ => None,
        })
        .collect();
    assert_eq!(agents, [0, 1].into(), "dispatches recorded on both devices");
}

/// One thread launching on two devices in turn (as `cudaSetDevice` between launches), with
/// host reads and writes in between, two groups in two passes: both devices' memory as one
/// execution leaves it, every dispatch measured in both passes on the device it ran on.
#[test]
fn one_thread_alternating_two_devices_sees_a_single_execution_on_each() {
    let units = alternate_two_devices(ReplayWindow::Dispatch);
    assert_eq!(units, 24, "a unit per dispatch");
}

/// As above with replay windows of 8: each device keeps its own window open while the
/// thread launches, reads and writes on the other (12 dispatches per device in 2 windows
/// each); one window per process would close at every device switch (12 windows).
#[test]
fn each_device_keeps_its_replay_window_open_across_the_other_devices_work() {
    let units = alternate_two_devices(ReplayWindow::Count(8));
    assert_eq!(units, 4, "two windows per device");
}

/// A launch that may reach another device's memory (here a kernel passing device 1's
/// address, `LaunchKind::PeerMemory`) runs once after every device's window has closed;
/// before it, device 1's window stayed open across device 0's ordinary launch.
#[test]
fn a_launch_reaching_another_device_closes_every_window_first() {
    let config = ToolConfig {
        groups: (0..2).map(|_| CounterGroup::default()).collect(),
        mode: InProcessMode::KernelReplay,
        replay_window: ReplayWindow::Count(8),
        ..ToolConfig::default()
    };
    let sink = Arc::new(MemorySink::default());
    let engine = Arc::new(engine(&config, sink.clone()));
    let devices = (0..2).map(|_| SimDevice::new(&config.groups)).collect();
    let mut runtime = SimRuntime::with_devices(devices, Some(engine));
    let n = 16u32;
    let scale_add = scale_add_kernel();
    let mut buffers = Vec::new();
    for device in 0..2 {
        runtime.set_device(device);
        let x = runtime.alloc(AllocKind::Device, u64::from(n) * 4).unwrap();
        runtime
            .write_u32s(x, &vec![device + 1; n as usize])
            .unwrap();
        buffers.push(x);
    }
    let step = |x: u64| launch(&scale_add, n, vec![x, u64::from(n), 3, 1]);
    runtime.set_device(1);
    runtime.launch(&step(buffers[1])).unwrap();
    runtime.set_device(0);
    runtime.launch(&step(buffers[0])).unwrap();
    let costs = |sink: &MemorySink| -> Vec<(u64, ReplayOutcome)> {
        sink.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Record::ReplayCost(c) => Some((c.agent_id, c.outcome)),
                _ => None,
            })
            .collect()
    };
    assert!(costs(&sink).is_empty(), "both windows open");
    runtime
        .launch_as(
            kreplay_core::backend::LaunchKind::PeerMemory,
            &step(buffers[0]),
        )
        .unwrap();
    let seen = costs(&sink);
    assert_eq!(seen.len(), 3, "{seen:?}");
    assert_eq!(seen[2], (0, ReplayOutcome::DeclinedPeerMemory), "{seen:?}");
    let mut closed: Vec<(u64, ReplayOutcome)> = seen[..2].to_vec();
    closed.sort_by_key(|c| c.0);
    assert_eq!(
        closed,
        vec![(0, ReplayOutcome::Replayed), (1, ReplayOutcome::Replayed)],
        "both windows closed before it"
    );
    runtime.finish();
    // Every kernel ran as once: 1 -> 1*3+1 -> (1*3+1)*3+1 on device 0, 2 -> 7 on device 1.
    runtime.set_device(0);
    assert_eq!(runtime.read_u32s(buffers[0], 1).unwrap(), vec![13]);
    runtime.set_device(1);
    assert_eq!(runtime.read_u32s(buffers[1], 1).unwrap(), vec![7]);
}

/// [`one_thread_alternating_two_devices_sees_a_single_execution_on_each`] with `window`;
/// returns how many replay units the dispatches were measured in.
fn alternate_two_devices(window: ReplayWindow) -> usize {
    fn alternate(runtime: &mut SimRuntime) -> Vec<Vec<u32>> {
        let (n, scale_add, accumulate) = (64u32, scale_add_kernel(), accumulate_kernel());
        let mut buffers = Vec::new();
        for device in 0..2 {
            runtime.set_device(device);
            let x = runtime.alloc(AllocKind::Device, u64::from(n) * 4).unwrap();
            let y = runtime.alloc(AllocKind::Device, u64::from(n) * 4).unwrap();
            let init: Vec<u32> = (0..n).map(|i| i * (device + 3)).collect();
            runtime.write_u32s(x, &init).unwrap();
            runtime.write_u32s(y, &init).unwrap();
            buffers.push((device, x, y));
        }
        for iteration in 0..6 {
            for &(device, x, y) in &buffers {
                runtime.set_device(device);
                let n64 = u64::from(n);
                runtime
                    .launch(&launch(&scale_add, n, vec![x, n64, 3, iteration]))
                    .unwrap();
                runtime
                    .launch(&launch(&accumulate, n, vec![y, x, n64]))
                    .unwrap();
                let head = runtime.read_u32s(y, 1).unwrap()[0];
                runtime.write_u32s(x, &[head ^ iteration as u32]).unwrap();
            }
        }
        let mut memory = Vec::new();
        for &(device, x, y) in &buffers {
            runtime.set_device(device);
            memory.push(runtime.read_u32s(x, n as usize).unwrap());
            memory.push(runtime.read_u32s(y, n as usize).unwrap());
        }
        runtime.finish();
        memory
    }
    let metrics = ["sim__warps_launched.sum", "sim__inst_executed.sum"];
    let config = ToolConfig {
        groups: metrics
            .iter()
            .map(|m| CounterGroup {
                counters: vec![CounterSpec {
                    requested: m.to_string(),
                    metric: m.to_string(),
                }],
            })
            .collect(),
        mode: InProcessMode::KernelReplay,
        replay_window: window,
        ..ToolConfig::default()
    };
    let reference = alternate(&mut SimRuntime::with_devices(
        vec![SimDevice::new(&[]), SimDevice::new(&[])],
        None,
    ));
    let sink = Arc::new(MemorySink::default());
    let engine = Arc::new(engine(&config, sink.clone()));
    let devices = (0..2).map(|_| SimDevice::new(&config.groups)).collect();
    let profiled = alternate(&mut SimRuntime::with_devices(devices, Some(engine)));
    assert_eq!(profiled, reference);
    let records = sink.0.lock().unwrap().clone();
    let mut passes: BTreeMap<u64, (u64, Vec<u32>)> = BTreeMap::new();
    for record in &records {
        if let Record::Dispatch(d) = record {
            let entry = passes
                .entry(d.dispatch_id)
                .or_insert((d.agent_id, Vec::new()));
            assert_eq!(entry.0, d.agent_id, "one device per dispatch");
            entry.1.extend(d.replay_pass);
        }
    }
    assert_eq!(passes.len(), 24, "6 iterations x 2 devices x 2 kernels");
    // Dispatches alternate devices in pairs: 1-2 on device 0, 3-4 on device 1, ...
    for (id, (agent, mut seen)) in passes {
        seen.sort();
        assert_eq!(seen, vec![0, 1], "dispatch {id}: both passes");
        assert_eq!(agent, ((id - 1) / 2) % 2, "dispatch {id} on its device");
    }
    // A unit's S0 is recorded on its first member's cost; the others carry none.
    records
        .iter()
        .filter(|r| matches!(r, Record::ReplayCost(c) if c.bytes_snapshotted > 0))
        .count()
}

#[test]
fn a_broken_restore_would_be_caught() {
    let reference = reference();
    let (mut outcome, _) = profiled(InProcessMode::KernelReplay, 2);
    outcome.tracked[0].1[5] ^= 1;
    let verification = verify(&outcome, &reference);
    assert!(!verification.passed);
    assert!(verification.line.contains("a[5]"), "{}", verification.line);
}

#[test]
fn rotation_and_single_modes_never_touch_memory_twice() {
    let reference = reference();
    for mode in [
        InProcessMode::Single,
        InProcessMode::Rotation { interval: 2 },
    ] {
        let (outcome, records) = profiled(mode, 2);
        assert_eq!(outcome, reference, "{mode:?}");
        let passes: Vec<Option<u32>> = records
            .iter()
            .filter_map(|r| match r {
                Record::Dispatch(d) => Some(d.replay_pass),
                _ => None,
            })
            .collect();
        // Not vacuous: the dispatches were measured, each once, with no replay pass.
        assert!(!passes.is_empty(), "{mode:?}: no dispatch was recorded");
        assert!(passes.iter().all(Option::is_none), "{mode:?}: {passes:?}");
    }
}

#[test]
fn marker_ranges_are_recorded_and_every_dispatch_carries_its_range_stack() {
    let (outcome, records) = profiled_with(InProcessMode::KernelReplay, 2, |c| {
        c.marker_trace = true;
    });
    assert!(verify(&outcome, &reference()).passed);
    let markers: Vec<(String, String)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Marker(m) => Some((m.kind.as_str().to_string(), m.function().to_string())),
            _ => None,
        })
        .collect();
    let iterations = WorkloadOptions::default().iterations;
    // Per iteration: update, mix, then the iteration itself (ranges are recorded as they end).
    assert_eq!(markers.len() as u32, 3 * iterations + 2);
    assert_eq!(markers[0], ("push_pop".into(), "update".into()));
    assert_eq!(markers[2], ("push_pop".into(), "iteration 0".into()));
    let tail = &markers[markers.len() - 2..];
    assert_eq!(tail[0], ("mark".into(), "loop done".into()));
    assert_eq!(tail[1], ("push_pop".into(), "tail".into()));
    let stacks: Vec<Vec<String>> = records
        .iter()
        .filter_map(|r| match r {
            Record::Dispatch(d) if d.replay_pass == Some(0) => Some(d.ranges.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(stacks[0], ["iteration 0", "update"]);
    assert_eq!(stacks[1], ["iteration 0", "mix"]);
    assert_eq!(
        stacks.last().unwrap(),
        &[format!("{MARKER_DOMAIN}@tail")],
        "the last kernel runs in the tail range of the workload's domain"
    );
    // Every pass of a dispatch carries the same stack.
    for r in &records {
        if let Record::Dispatch(d) = r {
            assert!(
                !d.ranges.is_empty(),
                "dispatch {} has no range",
                d.dispatch_id
            );
        }
    }
}

#[test]
fn without_marker_trace_no_marker_is_recorded() {
    let (_, records) = profiled(InProcessMode::KernelReplay, 2);
    assert!(!records.iter().any(|r| matches!(r, Record::Marker(_))));
    assert!(records
        .iter()
        .all(|r| !matches!(r, Record::Dispatch(d) if !d.ranges.is_empty())));
}

mod api;
mod memory;

/// `--kernel-trace` without counters: launches are timed without waiting for them, so their
/// records arrive after later launches (the device completes a launch once a later one is
/// issued) and the last ones at the end of the process, where every one is read: a record per
/// launch, each with the times of its own execution, in launch order.
#[test]
fn a_trace_without_counters_records_every_launch_late_and_none_lost() {
    let config = ToolConfig {
        kernel_trace: true,
        ..ToolConfig::default()
    };
    let sink = Arc::new(MemorySink::default());
    let engine = engine(&config, sink.clone());
    let mut runtime = SimRuntime::new(SimDevice::new(&[]), Some(Arc::new(engine)));
    let outcome = run(&mut runtime, WorkloadOptions::default()).unwrap();
    assert!(verify(&outcome, &reference()).passed);
    let dispatches = |sink: &MemorySink| -> Vec<(u64, u64, u64)> {
        sink.0
            .lock()
            .unwrap()
            .iter()
            .filter_map(|r| match r {
                Record::Dispatch(d) => Some((d.dispatch_id, d.start_ns, d.end_ns)),
                _ => None,
            })
            .collect()
    };
    let costs = |sink: &MemorySink| {
        sink.0
            .lock()
            .unwrap()
            .iter()
            .filter(|r| matches!(r, Record::ReplayCost(_)))
            .count()
    };
    let before = dispatches(&sink);
    assert!(!before.is_empty(), "records arrive while the program runs");
    runtime.finish();
    let after = dispatches(&sink);
    assert!(
        after.len() > before.len(),
        "the last launches are read at the end: {} then {}",
        before.len(),
        after.len()
    );
    assert_eq!(
        costs(&sink),
        after.len(),
        "a replay cost per dispatch record"
    );
    let ids: Vec<u64> = after.iter().map(|d| d.0).collect();
    assert_eq!(
        ids,
        (1..=after.len() as u64).collect::<Vec<_>>(),
        "in launch order, none lost"
    );
    for pair in after.windows(2) {
        assert!(pair[0].1 < pair[0].2, "a launch takes time: {pair:?}");
        assert!(
            pair[0].2 <= pair[1].1,
            "one device, one launch at a time: {pair:?}"
        );
    }
}
