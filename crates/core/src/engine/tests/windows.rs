//! Replay windows (units of several dispatches): groups over all members, capacity, what closes
//! a window, allocations made while one is open.

use super::*;

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
        .map(|d| d.counters[0].name.to_string())
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
