use super::*;
use crate::testdata;
use std::collections::HashMap;

/// Reads `Trace.packet` fields back (prost, the same subset: a check of the framing and
/// of what was written; the CLI tests parse the file with Perfetto's full schema), with the
/// events' interned names resolved into their `name`, `categories` and arguments' `name` (each
/// defined by an earlier packet, and only events that refer to one say they need it).
pub(super) fn packets(bytes: &[u8]) -> Vec<TracePacket> {
    let mut rest = bytes;
    let mut out = Vec::new();
    let mut interned: [HashMap<u64, String>; 3] = Default::default();
    while !rest.is_empty() {
        assert_eq!(rest[0], 0x0a, "a Trace.packet field");
        rest = &rest[1..];
        let mut packet = TracePacket::decode_length_delimited(&mut rest).unwrap();
        if let Some(data) = &packet.interned_data {
            let tables = [
                &data.event_categories,
                &data.event_names,
                &data.debug_annotation_names,
            ];
            for (table, entries) in interned.iter_mut().zip(tables) {
                for entry in entries {
                    table.insert(entry.iid.unwrap(), entry.name.clone().unwrap());
                }
            }
        }
        if let Some(event) = &mut packet.track_event {
            let [categories, names, arguments] = &interned;
            let refers = !event.category_iids.is_empty() || event.name_iid.is_some();
            assert_eq!(
                packet.sequence_flags == Some(SEQ_NEEDS_INCREMENTAL_STATE),
                refers || event.debug_annotations.iter().any(|a| a.name_iid.is_some())
            );
            for iid in std::mem::take(&mut event.category_iids) {
                event.categories.push(categories[&iid].clone());
            }
            if let Some(iid) = event.name_iid.take() {
                event.name = Some(names[&iid].clone());
            }
            for argument in &mut event.debug_annotations {
                if let Some(iid) = argument.name_iid.take() {
                    argument.name = Some(arguments[&iid].clone());
                }
            }
        }
        out.push(packet);
    }
    out
}

#[test]
fn a_zero_length_slice_begins_before_it_ends_and_back_to_back_slices_stay_apart() {
    let mut run = RunData::from_records(testdata::recorded_run(42));
    let dispatches = &mut run.processes[0].dispatches;
    dispatches[0].end_ns = dispatches[0].start_ns;
    // The next slice on the same track begins where this one ends.
    let (at, pass) = (dispatches[0].start_ns, dispatches[0].replay_pass);
    let next = dispatches
        .iter_mut()
        .skip(1)
        .find(|d| d.replay_pass.unwrap_or(0) == pass.unwrap_or(0))
        .expect("a second slice on the first one's track");
    next.start_ns = at;
    next.end_ns = next.end_ns.max(at + 10);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    write_pftrace(&run, &path).unwrap();
    // Per track, begins and ends pair up as a stack that never goes below zero.
    let mut depth: std::collections::HashMap<u64, i64> = Default::default();
    for event in packets(&std::fs::read(&path).unwrap())
        .into_iter()
        .filter_map(|p| p.track_event)
        .filter(|e| e.r#type != Some(EventType::Counter as i32))
    {
        let d = depth.entry(event.track_uuid.unwrap()).or_default();
        *d += if event.r#type == Some(EventType::SliceBegin as i32) {
            1
        } else {
            -1
        };
        assert!(*d >= 0, "an end before its begin");
        assert!(
            *d <= 1,
            "slices on one track nest where they should follow each other"
        );
    }
    assert!(depth.values().all(|d| *d == 0));
}

#[test]
fn every_pass_of_every_dispatch_is_one_slice_with_its_counters() {
    let run = RunData::from_records(testdata::recorded_run(42));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    write_pftrace(&run, &path).unwrap();
    let packets = packets(&std::fs::read(&path).unwrap());
    assert_eq!(
        packets[0].sequence_flags,
        Some(SEQ_INCREMENTAL_STATE_CLEARED)
    );
    assert!(packets
        .iter()
        .all(|p| p.trusted_packet_sequence_id == Some(SEQUENCE_ID)));
    let records: usize = run.processes.iter().map(|p| p.dispatches.len()).sum();
    let begins: Vec<&TrackEvent> = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .filter(|e| e.r#type == Some(EventType::SliceBegin as i32))
        .collect();
    let ends = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .filter(|e| e.r#type == Some(EventType::SliceEnd as i32))
        .count();
    assert_eq!((begins.len(), ends), (records, records));
    let counters: usize = run
        .processes
        .iter()
        .flat_map(|p| &p.dispatches)
        .map(|d| d.counters.len())
        .sum();
    let annotated: usize = begins
        .iter()
        .map(|e| {
            e.debug_annotations
                .iter()
                .filter(|a| a.double_value.is_some())
                .count()
        })
        .sum();
    assert_eq!(annotated, counters);
    // Slices with counters say how the caches were left and the clocks seen.
    let text = |e: &TrackEvent, key: &str| {
        e.debug_annotations
            .iter()
            .find(|a| a.name.as_deref() == Some(key))
            .and_then(|a| a.string_value.clone())
    };
    let with_counters: Vec<&&TrackEvent> = begins
        .iter()
        .filter(|e| e.debug_annotations.iter().any(|a| a.double_value.is_some()))
        .collect();
    assert!(!with_counters.is_empty());
    assert!(with_counters
        .iter()
        .all(|e| text(e, "cache_control").as_deref() == Some("all")));
    let caches: Vec<Option<String>> = with_counters.iter().map(|e| text(e, "cache")).collect();
    assert!(caches.contains(&Some("flushed".to_string())), "{caches:?}");
    assert!(caches.contains(&Some("as_left".to_string())), "{caches:?}");
    assert!(with_counters
        .iter()
        .any(|e| text(e, "sm_clock_mhz").as_deref() == Some("1755-1980")));
    // Timestamps never go back.
    let times: Vec<u64> = packets.iter().filter_map(|p| p.timestamp).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
}

#[test]
fn each_counter_has_a_counter_track_per_agent_with_its_value_per_dispatch() {
    let run = RunData::from_records(testdata::recorded_run(42));
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    write_pftrace(&run, &path).unwrap();
    let packets = packets(&std::fs::read(&path).unwrap());
    let counter_tracks: HashMap<u64, String> = packets
        .iter()
        .filter_map(|p| p.track_descriptor.as_ref())
        .filter(|d| d.counter.is_some())
        .map(|d| (d.uuid.unwrap(), d.name.clone().unwrap()))
        .collect();
    let mut names: Vec<&str> = counter_tracks.values().map(String::as_str).collect();
    names.sort_unstable();
    assert_eq!(
        names,
        [
            "Agent [0] PMC GRBM_GUI_ACTIVE",
            "Agent [0] PMC SQ_INSTS_VALU",
            "Agent [0] PMC SQ_WAVES"
        ]
    );
    let waves = counter_tracks
        .iter()
        .find(|(_, n)| n.ends_with("SQ_WAVES"))
        .map(|(u, _)| *u)
        .unwrap();
    let points: Vec<(u64, f64)> = packets
        .iter()
        .filter_map(|p| Some((p.timestamp?, p.track_event.as_ref()?)))
        .filter(|(_, e)| e.track_uuid == Some(waves))
        .map(|(t, e)| (t, e.double_counter_value.unwrap()))
        .collect();
    // Dispatch 1 (pass 0 at 6000-6050: 512, not 513 or 514), dispatch 2 (7000-7050: 0).
    assert_eq!(
        points,
        [(6_000, 512.0), (6_050, 0.0), (7_000, 0.0), (7_050, 0.0)]
    );
    let begin = packets
        .iter()
        .filter_map(|p| p.track_event.as_ref())
        .find(|e| e.r#type == Some(EventType::SliceBegin as i32))
        .unwrap();
    assert_eq!(begin.categories, ["kernel_dispatch"]);
    let arg = |key: &str| {
        begin
            .debug_annotations
            .iter()
            .find(|a| a.name.as_deref() == Some(key))
            .and_then(|a| a.uint_value)
    };
    assert_eq!(arg("grid_size"), Some(1024 * 2 * 256), "work-items");
    assert_eq!(arg("workgroup_size"), Some(256));
}

#[test]
fn a_trace_sorted_through_files_is_the_one_sorted_in_memory() {
    let mut run = RunData::from_records(testdata::recorded_run(42));
    // A second process, and costs recorded out of order.
    let mut other = run.processes[0].clone();
    other.process.pid += 1;
    other.costs.reverse();
    run.processes.push(other);
    let dir = tempfile::tempdir().unwrap();
    let (memory, spilled) = (dir.path().join("m.pftrace"), dir.path().join("s.pftrace"));
    write_pftrace(&run, &memory).unwrap();
    crate::spill::TEST_BUDGET.with(|b| b.set(64));
    write_pftrace(&run, &spilled).unwrap();
    crate::spill::TEST_BUDGET.with(|b| b.set(crate::spill::MEMORY_BUDGET));
    assert_same_trace(
        &std::fs::read(&memory).unwrap(),
        &std::fs::read(&spilled).unwrap(),
        "s.pftrace",
    );
    // Only the trace is left in the folder: the sort's files are gone.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
}

#[test]
fn the_reorder_windows_and_the_sorts_they_fall_back_to_write_the_same_trace() {
    let mut run = RunData::from_records(testdata::recorded_run(42));
    // A second process with costs and records out of order, a third with a zero-length slice.
    let mut other = run.processes[0].clone();
    other.process.pid += 1;
    other.costs.reverse();
    other.dispatches.swap(0, 3);
    run.processes.push(other);
    let mut zero = run.processes[0].clone();
    zero.process.pid += 2;
    zero.dispatches[1].end_ns = zero.dispatches[1].start_ns;
    run.processes.push(zero);
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, windows: (usize, usize), budget: usize| {
        let path = dir.path().join(name);
        fast::TEST_WINDOWS.with(|w| w.set(windows));
        fast::FELL_BACK.with(|n| n.set(0));
        crate::spill::TEST_BUDGET.with(|b| b.set(budget));
        write_pftrace(&run, &path).unwrap();
        crate::spill::TEST_BUDGET.with(|b| b.set(crate::spill::MEMORY_BUDGET));
        fast::TEST_WINDOWS.with(|w| w.set((4096, 16384)));
        (
            std::fs::read(path).unwrap(),
            fast::FELL_BACK.with(|n| n.get()),
        )
    };
    let (windowed, fell_back) = write("w.pftrace", (4096, 16384), usize::MAX);
    assert_eq!(fell_back, 0);
    // Windows too small for the order: every process falls back, in memory or through files.
    for (name, budget) in [("m.pftrace", usize::MAX), ("s.pftrace", 64)] {
        let (sorted, fell_back) = write(name, (1, 1), budget);
        assert_eq!(fell_back, 3, "{name}");
        assert_same_trace(&sorted, &windowed, name);
    }
    // Windows just large enough for some processes; windows small enough that the events leave
    // them among the tracks' descriptors.
    let (mixed, _) = write("x.pftrace", (3, 8), usize::MAX);
    assert_same_trace(&mixed, &windowed, "x.pftrace");
    let (early, fell_back) = write("e.pftrace", (4096, 8), usize::MAX);
    assert_eq!(fell_back, 0);
    // In the first process's packets (up to the second's track), a track described after an
    // event: the windows wrote events before all tracks were met.
    let early_packets = packets(&early);
    let is_process = |p: &TracePacket| {
        p.track_descriptor
            .as_ref()
            .is_some_and(|d| d.process.is_some())
    };
    let second = early_packets.iter().skip(1).position(is_process).unwrap() + 1;
    let first_process = &early_packets[..second];
    let first_event = first_process.iter().position(|p| p.track_event.is_some());
    let last_track = first_process
        .iter()
        .rposition(|p| p.track_descriptor.is_some());
    assert!(
        last_track > first_event,
        "a track described among the events"
    );
    assert_same_trace(&early, &windowed, "e.pftrace");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
}

/// `a` and `b` hold the same events in the same order, and the same other packets (the tracks'
/// descriptors, interned names) in the same order, each before the events that need it (which
/// [`packets`] checks of the names; the descriptors are checked here): the traces the windows
/// and the sorts write differ only in where those packets fall among the events.
pub(super) fn assert_same_trace(a: &[u8], b: &[u8], name: &str) {
    let split = |bytes: &[u8]| {
        let mut described = std::collections::HashSet::new();
        let (mut events, mut others) = (Vec::new(), Vec::new());
        for packet in packets(bytes) {
            if let Some(event) = &packet.track_event {
                let track = event.track_uuid.unwrap();
                assert!(
                    described.contains(&track),
                    "{name}: an event before its track"
                );
                events.push(packet);
            } else {
                if let Some(track) = &packet.track_descriptor {
                    described.insert(track.uuid.unwrap());
                }
                others.push(packet);
            }
        }
        (events, others)
    };
    let ((a_events, a_others), (b_events, b_others)) = (split(a), split(b));
    assert!(a_events == b_events, "{name}: not the same events");
    assert!(
        a_others == b_others,
        "{name}: not the same tracks and names"
    );
}

#[test]
fn names_are_interned_once_per_file_before_the_first_event_that_uses_them() {
    let mut run = RunData::from_records(testdata::recorded_run(42));
    let mut other = run.processes[0].clone();
    other.process.pid += 1;
    run.processes.push(other);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.pftrace");
    write_pftrace(&run, &path).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let mut raw = &bytes[..];
    // (pid of the process whose tracks come last, names interned after them).
    let mut interned: Vec<(Option<i32>, InternedData)> = Vec::new();
    let mut process = None;
    while !raw.is_empty() {
        raw = &raw[1..];
        let packet = TracePacket::decode_length_delimited(&mut raw).unwrap();
        if let Some(pid) = packet.track_descriptor.and_then(|d| d.process?.pid) {
            process = Some(pid);
        }
        if let Some(data) = packet.interned_data {
            assert_eq!(packet.sequence_flags, Some(SEQ_NEEDS_INCREMENTAL_STATE));
            interned.push((process, data));
        }
    }
    // Only the first process's events bring names: the second's slices use the same ones.
    let first_pid = Some(run.processes[0].process.pid as i32);
    assert!(!interned.is_empty());
    assert!(interned.iter().all(|(pid, _)| *pid == first_pid));
    let mut all = InternedData::default();
    for (_, data) in interned {
        all.event_categories.extend(data.event_categories);
        all.event_names.extend(data.event_names);
        all.debug_annotation_names
            .extend(data.debug_annotation_names);
    }
    let names = |v: &[InternedString]| -> Vec<String> {
        v.iter().map(|s| s.name.clone().unwrap()).collect()
    };
    assert_eq!(names(&all.event_categories), [CATEGORY]);
    let arguments = names(&all.debug_annotation_names);
    assert!(arguments.contains(&"begin_ns".to_string()));
    // Each name once.
    let unique: std::collections::HashSet<&String> = arguments.iter().collect();
    assert_eq!(unique.len(), arguments.len());
    // Every slice of both processes has its names back ([`packets`] resolves them).
    let begins: Vec<TrackEvent> = packets(&bytes)
        .into_iter()
        .filter_map(|p| p.track_event)
        .filter(|e| e.r#type == Some(EventType::SliceBegin as i32))
        .collect();
    let records: usize = run.processes.iter().map(|p| p.dispatches.len()).sum();
    assert_eq!(begins.len(), records);
    assert!(begins
        .iter()
        .all(|e| e.name.is_some() && e.categories == [CATEGORY]));
}
