//! Launches that run once: dispatch ids, declines and why they are said, graph launches.

use super::*;

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
    assert!(warnings
        .iter()
        .any(|w| w.contains("graph launch that runs whole")));
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
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::StreamCapture);
    launch(&h, &mut backend, LaunchKind::DevicePrintf);
    assert!(h.sink.warnings().is_empty(), "{:?}", h.sink.warnings());
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
fn graph_launches_run_whole_are_unmeasured_in_every_mode() {
    // A graph launch reaches the engine only when it runs whole. On the H200 one measured with a
    // group left CUPTI in error (one range per kernel node where one was planned), and no later
    // dispatch got counters.
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
        assert!(
            warnings[0]
                .starts_with("a graph launch that runs whole is neither replayed nor measured"),
            "{warnings:?}"
        );
    }
}
