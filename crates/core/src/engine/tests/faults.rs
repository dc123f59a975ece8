//! Staging fallbacks and the failures that end a replay: a drain past its deadline, a failed
//! restore or relaunch, a first execution that cannot start.

use super::*;

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
fn host_staging_max_bounds_the_host_only() {
    let mut config = config(2, InProcessMode::KernelReplay);
    config.host_staging_max_bytes = 4; // below the mock's 8 tracked bytes
    let h = harness_with(config, None);
    // Device staging has room: the bound is not asked.
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    let cost = &h.sink.costs()[0];
    assert_eq!(
        (cost.outcome, cost.staging),
        (ReplayOutcome::Replayed, Staging::Device)
    );
    // Device staging full: the host is not tried, the dispatch runs once, said once.
    let mut backend = MockBackend::new();
    backend.device_staging_full = true;
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.value, 2, "each launch ran once");
    assert_eq!(backend.count(&Op::Snapshot(Staging::Host)), 0);
    assert_eq!(backend.count(&Op::Relaunch), 0);
    let costs = h.sink.costs();
    assert_eq!(costs[1].outcome, ReplayOutcome::DeclinedSnapshotTooLarge);
    assert_eq!(costs[2].outcome, ReplayOutcome::DeclinedSnapshotTooLarge);
    let said: Vec<String> = h
        .sink
        .warnings()
        .into_iter()
        .filter(|w| w.contains("above --host-staging-max"))
        .collect();
    assert_eq!(said.len(), 1, "{said:?}");
    assert!(!said[0].contains("did not fit"), "{}", said[0]);
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
