//! How a dispatch's passes map onto executions: snapshots and restores per group, packed groups,
//! the ordinary path, the timing execution, a group over several executions.

use super::*;

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
