//! A replay policy's decisions: pass callbacks, continue decisions, stopping early, opting out.

use super::*;

#[test]
fn a_stepwise_unit_that_loses_its_counters_after_pass_0_records_each_pass_once() {
    // Pass 0's records were sent before pass 1's counters failed: no second record of pass 0,
    // and no record without a pass besides it.
    let (h, _calls) = scripted(PassCount::Passes(3), true, None);
    let mut backend = MockBackend {
        counters_fail: true,
        counters_fail_after: 1,
        ..MockBackend::new()
    };
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(passes_by_dispatch(&h), vec![(1, Some(0))]);
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::DeclinedError);
    assert_eq!(backend.value, 1);
}

#[test]
fn continue_is_not_consulted_after_the_final_pass() {
    let (h, calls) = scripted(PassCount::Passes(3), true, None);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        *calls.lock().unwrap(),
        vec![
            "start 0",
            "stop 0 1",
            "continue 1 0 Some(3)",
            "start 1",
            "stop 1 1",
            "continue 1 1 Some(3)",
            "start 2",
            "stop 2 1",
        ]
    );
    assert_eq!(backend.count(&Op::Restore), 2);
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::Replayed);
}

#[test]
fn without_continue_decisions_every_pass_is_announced_once_before_its_results() {
    let (h, calls) = scripted(PassCount::Passes(3), false, None);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(
        *calls.lock().unwrap(),
        vec!["start 0", "start 1", "start 2", "stop 0 1", "stop 1 1", "stop 2 1"]
    );
}

#[test]
fn a_tool_may_stop_early_and_the_last_executed_pass_is_not_restored() {
    let (h, _calls) = scripted(PassCount::Passes(4), true, Some(1));
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::Restore), 1);
    assert_eq!(backend.value, 1);
    assert_eq!(backend.ops.last(), Some(&Op::Release));
    assert_eq!(backend.ops[backend.ops.len() - 2], Op::Stop(1));
    let cost = &h.sink.costs()[0];
    assert_eq!(
        (cost.outcome, cost.passes),
        (ReplayOutcome::StoppedEarly, 2)
    );
}

#[test]
fn until_stopped_runs_until_the_tool_says_stop() {
    let (h, calls) = scripted(PassCount::UntilStopped, true, Some(4));
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(h.sink.dispatches().len(), 5);
    assert_eq!(backend.count(&Op::Restore), 4);
    assert!(calls
        .lock()
        .unwrap()
        .contains(&"continue 1 4 None".to_string()));
    assert_eq!(h.sink.costs()[0].outcome, ReplayOutcome::Replayed);
}

#[test]
fn until_stopped_without_a_continue_decision_is_rejected_once() {
    let (h, calls) = scripted(PassCount::UntilStopped, false, None);
    let mut backend = MockBackend::new();
    launch(&h, &mut backend, LaunchKind::Kernel);
    launch(&h, &mut backend, LaunchKind::Kernel);
    assert_eq!(backend.count(&Op::Snapshot(Staging::Device)), 0);
    assert_eq!(backend.value, 2);
    assert_eq!(h.sink.warnings().len(), 1);
    assert!(
        calls.lock().unwrap().is_empty(),
        "no pass callbacks when not replayed"
    );
}

#[test]
fn opt_out_runs_once_without_pass_callbacks() {
    let (h, calls) = scripted(PassCount::OptOut, true, None);
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
    assert!(calls.lock().unwrap().is_empty());
}
