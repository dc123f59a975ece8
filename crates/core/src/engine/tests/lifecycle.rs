//! Launches the driver refused, the end of a run, registrations.

use super::*;

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

/// The end of the process closes the sink: held to the end by a static or the lifecycle's
/// finisher, it is closed by no one else, and a database writer left open keeps its last rows
/// in its WAL file (issue 49).
#[test]
fn finish_sends_process_end_and_closes_the_sink() {
    let h = harness(0, InProcessMode::Single);
    h.engine.finish();
    assert!(matches!(
        h.sink.records.lock().unwrap().last(),
        Some(Record::ProcessEnd { .. })
    ));
    assert_eq!(h.sink.closes.load(Ordering::SeqCst), 1);
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
