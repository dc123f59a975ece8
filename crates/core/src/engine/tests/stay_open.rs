//! Windows that stay open across the application's calls: captured writes, the application's
//! view saved and put back, what closes them first, switching it off.

use super::*;

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
