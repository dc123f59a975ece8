//! The marker entry point: ranges recorded when they end, and every dispatch carrying the range
//! stack its thread had at launch, replayed passes included.

use super::*;
use crate::markers::{MarkerCall, MarkerText};

fn text(message: &str) -> MarkerText<'_> {
    MarkerText {
        operation: "nvtxRangePushA",
        message,
        ..MarkerText::default()
    }
}

fn markers(h: &Harness) -> Vec<kreplay_format::MarkerRecord> {
    h.sink
        .records
        .lock()
        .unwrap()
        .iter()
        .filter_map(|r| match r {
            Record::Marker(m) => Some(m.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn every_pass_of_a_dispatch_carries_the_range_stack_at_launch() {
    let h = harness_with(
        ToolConfig {
            marker_trace: true,
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    h.engine.marker(MarkerCall::Push(text("step 0")), 100);
    h.engine.marker(MarkerCall::Push(text("forward")), 110);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.marker(MarkerCall::Pop { domain: "" }, 200);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.marker(MarkerCall::Pop { domain: "" }, 300);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.finish_with(&mut backend);
    let stacks: Vec<(u64, Option<u32>, Vec<String>)> = h
        .sink
        .dispatches()
        .into_iter()
        .map(|d| (d.dispatch_id, d.replay_pass, d.ranges))
        .collect();
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    assert_eq!(
        stacks,
        [
            (1, Some(0), s(&["step 0", "forward"])),
            (1, Some(1), s(&["step 0", "forward"])),
            (2, Some(0), s(&["step 0"])),
            (2, Some(1), s(&["step 0"])),
            (3, Some(0), s(&[])),
            (3, Some(1), s(&[])),
        ]
    );
    let recorded: Vec<(String, u64, u64)> = markers(&h)
        .into_iter()
        .map(|m| (m.message, m.start_ns, m.end_ns))
        .collect();
    assert_eq!(
        recorded,
        [
            ("forward".to_string(), 110, 200),
            ("step 0".to_string(), 100, 300)
        ]
    );
}

#[test]
fn without_marker_trace_nothing_is_recorded_nor_carried() {
    let h = harness(1, InProcessMode::Single);
    let mut backend = MockBackend::new();
    assert!(!h.engine.markers_enabled());
    h.engine.marker(MarkerCall::Push(text("step 0")), 100);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.marker(MarkerCall::Pop { domain: "" }, 200);
    h.engine.marker(MarkerCall::Mark(text("here")), 250);
    assert!(markers(&h).is_empty());
    assert!(h.sink.dispatches().iter().all(|d| d.ranges.is_empty()));
}
