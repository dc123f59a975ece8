//! The tracing domains in the trace: marker and API slices per thread, nested; copies per
//! stream; the bytes allocated as a counter; a flow from a launch call to its dispatch.

use super::*;
use crate::api::{ApiDomain, ApiRecord};
use crate::testdata;
use std::collections::HashMap;

fn traced_run() -> RunData {
    let mut run = RunData::from_records(testdata::recorded_with_traces());
    let call =
        |correlation_id, parent_id, domain, function: &'static str, (start_ns, end_ns)| ApiRecord {
            correlation_id,
            parent_id,
            domain,
            function: function.into(),
            pid: 3,
            tid: 4,
            start_ns,
            end_ns,
            args: Default::default(),
        };
    // Dispatch 1 carries correlation id 101 (testdata::dispatch).
    run.processes[0].api_calls = vec![
        call(
            102,
            101,
            ApiDomain::Driver,
            "cuLaunchKernel",
            (5_920, 5_940),
        ),
        call(
            101,
            0,
            ApiDomain::Runtime,
            "cudaLaunchKernel",
            (5_910, 5_950),
        ),
        call(103, 0, ApiDomain::Runtime, "cudaMalloc", (5_960, 5_960)),
    ];
    run
}

/// (track name, slice name, depth at its begin) of every slice, and the file's packets.
fn slices(run: &RunData) -> (Vec<(String, String, usize)>, Vec<TracePacket>) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    write_pftrace(run, &path).unwrap();
    let packets = super::tests::packets(&std::fs::read(&path).unwrap());
    let names: HashMap<u64, String> = packets
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .map(|d| (d.uuid.unwrap(), d.name.clone().unwrap_or_default()))
        .collect();
    let mut open: HashMap<u64, usize> = HashMap::new();
    let mut out = Vec::new();
    for event in packets.iter().filter_map(|p| p.track_event.as_ref()) {
        let track = event.track_uuid.unwrap();
        let depth = open.entry(track).or_default();
        if event.r#type == Some(EventType::SliceBegin as i32) {
            out.push((names[&track].clone(), event.name.clone().unwrap(), *depth));
            *depth += 1;
        } else if event.r#type == Some(EventType::SliceEnd as i32) {
            *depth = depth.checked_sub(1).expect("an end before its begin");
        }
    }
    assert!(open.values().all(|d| *d == 0), "a slice left open");
    (out, packets)
}

fn on<'a>(slices: &'a [(String, String, usize)], track: &str) -> Vec<(&'a str, usize)> {
    slices
        .iter()
        .filter(|(t, _, _)| t == track)
        .map(|(_, name, depth)| (name.as_str(), *depth))
        .collect()
}

#[test]
fn markers_nest_on_their_threads_track_and_start_end_ranges_have_their_own() {
    let (slices, _) = slices(&traced_run());
    assert_eq!(
        on(&slices, "NVTX thread 4"),
        [("step 0", 0), ("forward", 1), ("checkpoint", 1)]
    );
    assert_eq!(on(&slices, "NVTX start/end ranges, lane 0"), [("load", 0)]);
}

#[test]
fn api_calls_nest_per_thread_and_a_launch_flows_to_its_dispatch() {
    let run = traced_run();
    let (slices, packets) = slices(&run);
    assert_eq!(
        on(&slices, "CUDA API thread 4"),
        [
            ("cudaLaunchKernel", 0),
            ("cuLaunchKernel", 1),
            ("cudaMalloc", 0)
        ]
    );
    let events: Vec<&TrackEvent> = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .collect();
    let started: Vec<u64> = events.iter().flat_map(|e| e.flow_ids.clone()).collect();
    let ended: Vec<u64> = events
        .iter()
        .flat_map(|e| e.terminating_flow_ids.clone())
        .collect();
    assert_eq!(started.len(), 1);
    // Dispatch 1's application execution (pass 0) ends it, not its replays.
    assert_eq!(ended, started);
}

#[test]
fn copies_are_per_stream_and_allocations_a_counter_of_bytes_held() {
    let (slices, packets) = slices(&traced_run());
    assert_eq!(
        on(&slices, "Memory copies stream 0"),
        [("MEMORY_COPY_HOST_TO_DEVICE", 0)]
    );
    assert_eq!(on(&slices, "Memory copies stream 7").len(), 2);
    let track = packets
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .find(|d| d.name.as_deref() == Some("Memory allocated (bytes)"))
        .and_then(|d| d.uuid)
        .unwrap();
    let values: Vec<f64> = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .filter(|e| e.track_uuid == Some(track))
        .map(|e| e.double_counter_value.unwrap())
        .collect();
    let held = [4096.0, 4608.0, 4672.0, 4672.0 + 2097152.0];
    assert_eq!(values[..4], held);
    assert_eq!(values[4..], [4608.0 + 2097152.0, 4608.0, 4096.0]);
}

#[test]
fn a_traced_trace_is_the_same_whatever_its_windows_and_sorts_hold() {
    let run = traced_run();
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, windows: (usize, usize), budget: usize| {
        let path = dir.path().join(name);
        super::fast::TEST_WINDOWS.with(|w| w.set(windows));
        crate::spill::TEST_BUDGET.with(|b| b.set(budget));
        write_pftrace(&run, &path).unwrap();
        crate::spill::TEST_BUDGET.with(|b| b.set(crate::spill::MEMORY_BUDGET));
        super::fast::TEST_WINDOWS.with(|w| w.set((4096, 16384)));
        std::fs::read(path).unwrap()
    };
    let expected = write("a.pftrace", (4096, 16384), usize::MAX);
    // Each trace kind's events through windows of 2 into files, those refused (the copies on
    // one stream overlap) through a sort that spills; and with every process sent to the slow
    // path (windows of 1).
    for (name, windows, budget) in [
        ("b.pftrace", (4096, 2), usize::MAX),
        ("c.pftrace", (4096, 2), 64),
        ("d.pftrace", (1, 1), 64),
    ] {
        let trace = write(name, windows, budget);
        super::tests::assert_same_trace(&trace, &expected, name);
    }
}
