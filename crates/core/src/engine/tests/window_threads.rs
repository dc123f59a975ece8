//! Replay windows shared between threads (a mock behind a mutex, as the CUDA backend is):
//! parked windows closed by others, abandoned members, stopping a window, a device without
//! tracked memory, the window summary.

use super::*;

/// A mock shared by threads, as the CUDA backend is.
#[derive(Clone)]
struct Shared(Arc<Mutex<MockBackend>>);

impl crate::backend::SharedDevice for Shared {
    type Device = MockBackend;
    type Locked<'a> = std::sync::MutexGuard<'a, MockBackend>;

    fn lock(&self, _device: DeviceId) -> std::sync::MutexGuard<'_, MockBackend> {
        self.0.lock().unwrap()
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
