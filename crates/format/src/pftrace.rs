//! `<name>_results.pftrace`: the run as a Perfetto trace (protobuf), to open in
//! <https://ui.perfetto.dev> or query with Perfetto's trace processor.
//!
//! Layout: one process track per profiled process; under it one track per device stream
//! ("GPU 0 stream 7") holding each dispatch's application execution (pass 0, or the one
//! execution of a dispatch run once) as a slice named after the kernel; and, for kernel replay,
//! one track per stream and later pass ("GPU 0 stream 7, replay pass 2") holding that pass's
//! re-executions. Slices have rocprofv3's category (`kernel_dispatch`) and arguments
//! (`begin_ns`, `corr_id`, `grid_size` in work-items, `LDS_Block_Size`, ...), plus kreplay's
//! (`dispatch_id`, `replay_pass`: 0 for a dispatch that ran once in a kernel-replay run, the cache
//! and clocks) and the counters its pass measured. As rocprofv3 does, every counter also has a
//! counter track per agent ("Agent [0] PMC SQ_WAVES"): the dispatch's value over its application
//! execution, 0 between dispatches (the value of the lowest pass that measured it, as the
//! database's `counters_collection` gives it).
//!
//! The messages below are the subset of Perfetto's trace schema (`protos/perfetto/trace/
//! perfetto_trace.proto`) that this writer needs, with the schema's field numbers, encoded by
//! prost. The file is streamed: `Trace` is a sequence of `packet = 1` fields, written one at a
//! time. The CLI tests read it back with Perfetto's own Python bindings of the full schema.

use crate::error::FormatError;
use crate::files::write_file;
use crate::records::{CounterSample, DispatchRecord, KernelSymbol, ReplayCost};
use crate::run::{ProcessRun, RunData};
use prost::Message;
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::Path;

/// `TracePacket` (the fields used here).
#[derive(Clone, PartialEq, Message)]
struct TracePacket {
    #[prost(uint64, optional, tag = "8")]
    timestamp: Option<u64>,
    #[prost(uint32, optional, tag = "10")]
    trusted_packet_sequence_id: Option<u32>,
    #[prost(uint32, optional, tag = "13")]
    sequence_flags: Option<u32>,
    #[prost(message, optional, tag = "11")]
    track_event: Option<TrackEvent>,
    #[prost(message, optional, tag = "60")]
    track_descriptor: Option<TrackDescriptor>,
}

/// Order of events at one timestamp (see `write_process`).
const END: u8 = 0;
const EMPTY: u8 = 1;
const BEGIN: u8 = 2;

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// The one packet sequence this writer uses.
const SEQUENCE_ID: u32 = 1;

#[derive(Clone, PartialEq, Message)]
struct TrackDescriptor {
    #[prost(uint64, optional, tag = "1")]
    uuid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    name: Option<String>,
    #[prost(message, optional, tag = "3")]
    process: Option<ProcessDescriptor>,
    #[prost(uint64, optional, tag = "5")]
    parent_uuid: Option<u64>,
    #[prost(message, optional, tag = "8")]
    counter: Option<CounterDescriptor>,
}

/// `CounterDescriptor`: present (even empty) on a counter track.
#[derive(Clone, PartialEq, Message)]
struct CounterDescriptor {
    #[prost(bool, optional, tag = "5")]
    is_incremental: Option<bool>,
}

#[derive(Clone, PartialEq, Message)]
struct ProcessDescriptor {
    #[prost(int32, optional, tag = "1")]
    pid: Option<i32>,
    #[prost(string, repeated, tag = "2")]
    cmdline: Vec<String>,
    #[prost(string, optional, tag = "6")]
    process_name: Option<String>,
}

/// `TrackEvent.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, prost::Enumeration)]
#[repr(i32)]
enum EventType {
    SliceBegin = 1,
    SliceEnd = 2,
    Counter = 4,
}

#[derive(Clone, PartialEq, Message)]
struct TrackEvent {
    #[prost(message, repeated, tag = "4")]
    debug_annotations: Vec<DebugAnnotation>,
    #[prost(enumeration = "EventType", optional, tag = "9")]
    r#type: Option<i32>,
    #[prost(uint64, optional, tag = "11")]
    track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    categories: Vec<String>,
    #[prost(string, optional, tag = "23")]
    name: Option<String>,
    #[prost(double, optional, tag = "44")]
    double_counter_value: Option<f64>,
}

#[derive(Clone, PartialEq, Message)]
struct DebugAnnotation {
    #[prost(int64, optional, tag = "4")]
    int_value: Option<i64>,
    #[prost(uint64, optional, tag = "3")]
    uint_value: Option<u64>,
    #[prost(double, optional, tag = "5")]
    double_value: Option<f64>,
    #[prost(string, optional, tag = "6")]
    string_value: Option<String>,
    #[prost(string, optional, tag = "10")]
    name: Option<String>,
}

impl DebugAnnotation {
    fn uint(name: &str, value: u64) -> Self {
        DebugAnnotation {
            uint_value: Some(value),
            name: Some(name.to_string()),
            ..Default::default()
        }
    }

    fn int(name: &str, value: i64) -> Self {
        DebugAnnotation {
            int_value: Some(value),
            name: Some(name.to_string()),
            ..Default::default()
        }
    }

    fn text(name: &str, value: String) -> Self {
        DebugAnnotation {
            string_value: Some(value),
            name: Some(name.to_string()),
            ..Default::default()
        }
    }

    fn counter(sample: &CounterSample) -> Self {
        DebugAnnotation {
            double_value: Some(sample.value),
            name: Some(sample.name.clone()),
            ..Default::default()
        }
    }
}

/// Writes `run` to `path` (replaced atomically, see [`write_file`]).
pub fn write_pftrace(run: &RunData, path: &Path) -> Result<(), FormatError> {
    write_file(path, |out| {
        let mut first = true;
        let replay = run.is_kernel_replay();
        for (index, process) in run.processes.iter().enumerate() {
            write_process(out, process, index as u64, replay, &mut first)?;
        }
        Ok(())
    })
}

/// One track: its descriptor, and the slices on it (begin, end, and the dispatch record).
struct Track<'a> {
    name: String,
    slices: Vec<&'a DispatchRecord>,
}

fn write_process(
    out: &mut impl Write,
    process: &ProcessRun,
    index: u64,
    replay: bool,
    first: &mut bool,
) -> io::Result<()> {
    // Track ids: unique within the file (index of the process in the high bits).
    let process_uuid = (index + 1) << 40;
    let name = match process.process.program_name() {
        "" => format!("pid {}", process.process.pid),
        program => program.to_string(),
    };
    write_packet(
        out,
        first,
        TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(process_uuid),
                process: Some(ProcessDescriptor {
                    pid: Some(process.process.pid as i32),
                    cmdline: process.process.command.clone(),
                    process_name: Some(name),
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    )?;
    // (agent, stream, pass) -> track; pass 0 is the application's own execution.
    let mut tracks: BTreeMap<(u64, u64, u32), Track> = BTreeMap::new();
    for record in &process.dispatches {
        let pass = record.replay_pass.unwrap_or(0);
        let key = (record.agent_id, record.stream_id, pass);
        tracks
            .entry(key)
            .or_insert_with(|| Track {
                name: track_name(process, record.agent_id, record.stream_id, pass),
                slices: Vec::new(),
            })
            .slices
            .push(record);
    }
    let mut events: Vec<Event> = Vec::new();
    let mut next_uuid = process_uuid + 1;
    for track in tracks.values() {
        let uuid = next_uuid;
        next_uuid += 1;
        write_track(out, first, uuid, process_uuid, track.name.clone(), false)?;
        for record in &track.slices {
            // At one time: ends of earlier slices, then zero-length slices (each begin just
            // before its end), then begins: back-to-back slices stay apart, none ends before
            // it begins.
            let end = record.end_ns.max(record.start_ns);
            let class = if end == record.start_ns { EMPTY } else { BEGIN };
            events.push(Event {
                time: record.start_ns,
                class,
                uuid,
                dispatch_id: record.dispatch_id,
                kind: EventKind::Begin(record),
            });
            events.push(Event {
                time: end,
                class: if class == EMPTY { EMPTY } else { END },
                uuid,
                dispatch_id: record.dispatch_id,
                kind: EventKind::End,
            });
        }
    }
    for ((agent, counter), points) in counter_tracks(process) {
        let uuid = next_uuid;
        next_uuid += 1;
        let name = format!("Agent [{agent}] PMC {counter}");
        write_track(out, first, uuid, process_uuid, name, true)?;
        for (time, class, dispatch_id, value) in points {
            events.push(Event {
                time,
                class,
                uuid,
                dispatch_id,
                kind: EventKind::Counter(value),
            });
        }
    }
    events.sort_by_key(|e| {
        let begin = matches!(e.kind, EventKind::Begin(_));
        (e.time, e.class, e.uuid, e.dispatch_id, !begin)
    });
    let costs: HashMap<u64, &ReplayCost> =
        process.costs.iter().map(|c| (c.dispatch_id, c)).collect();
    for event in events {
        let track_uuid = Some(event.uuid);
        let track_event = match event.kind {
            EventKind::Begin(record) => {
                let cost = costs.get(&record.dispatch_id).copied();
                TrackEvent {
                    debug_annotations: annotations(process, record, replay, cost),
                    r#type: Some(EventType::SliceBegin as i32),
                    track_uuid,
                    categories: vec![CATEGORY.to_string()],
                    name: Some(kernel_name(process, record)),
                    ..Default::default()
                }
            }
            EventKind::End => TrackEvent {
                r#type: Some(EventType::SliceEnd as i32),
                track_uuid,
                ..Default::default()
            },
            EventKind::Counter(value) => TrackEvent {
                r#type: Some(EventType::Counter as i32),
                track_uuid,
                double_counter_value: Some(value),
                ..Default::default()
            },
        };
        write_packet(
            out,
            first,
            TracePacket {
                timestamp: Some(event.time),
                track_event: Some(track_event),
                ..Default::default()
            },
        )?;
    }
    Ok(())
}

/// rocprofv3's category of kernel dispatch slices.
const CATEGORY: &str = "kernel_dispatch";

/// One event of a process's tracks, sorted by time (then `class`, track, dispatch).
struct Event<'a> {
    time: u64,
    class: u8,
    uuid: u64,
    dispatch_id: u64,
    kind: EventKind<'a>,
}

enum EventKind<'a> {
    Begin(&'a DispatchRecord),
    End,
    Counter(f64),
}

/// A track's descriptor under the process's track; `counter`: a counter track.
fn write_track(
    out: &mut impl Write,
    first: &mut bool,
    uuid: u64,
    parent: u64,
    name: String,
    counter: bool,
) -> io::Result<()> {
    write_packet(
        out,
        first,
        TracePacket {
            track_descriptor: Some(TrackDescriptor {
                uuid: Some(uuid),
                name: Some(name),
                parent_uuid: Some(parent),
                counter: counter.then_some(CounterDescriptor {
                    is_incremental: Some(false),
                }),
                ..Default::default()
            }),
            ..Default::default()
        },
    )
}

/// Per (agent, counter), the points of its counter track: at each dispatch's application
/// execution (its lowest pass), the dispatch's value (the lowest pass that measured it) from the
/// start and 0 from the end. At one time a 0 comes before a value (`class`), so back-to-back
/// dispatches each show theirs.
#[allow(clippy::type_complexity)]
fn counter_tracks(process: &ProcessRun) -> BTreeMap<(u64, String), Vec<(u64, u8, u64, f64)>> {
    // (agent, dispatch) -> (application execution's start and end, pass of it, values by name
    // with the pass that measured them).
    let mut dispatches: BTreeMap<(u64, u64), ((u64, u64), u32, BTreeMap<&str, (u32, f64)>)> =
        BTreeMap::new();
    for record in &process.dispatches {
        let pass = record.replay_pass.unwrap_or(0);
        let times = (record.start_ns, record.end_ns.max(record.start_ns));
        let entry = dispatches
            .entry((record.agent_id, record.dispatch_id))
            .or_insert((times, pass, BTreeMap::new()));
        if pass < entry.1 {
            (entry.0, entry.1) = (times, pass);
        }
        for sample in &record.counters {
            let value = entry.2.entry(&sample.name).or_insert((pass, sample.value));
            if pass < value.0 {
                *value = (pass, sample.value);
            }
        }
    }
    let mut tracks: BTreeMap<(u64, String), Vec<(u64, u8, u64, f64)>> = BTreeMap::new();
    for ((agent, dispatch_id), ((start, end), _, values)) in dispatches {
        // A zero-length dispatch: its value, then 0, at one time (the sort keeps this order).
        let (rise, fall) = if end == start {
            (EMPTY, EMPTY)
        } else {
            (BEGIN, END)
        };
        for (name, (_, value)) in values {
            let points = tracks.entry((agent, name.to_string())).or_default();
            points.push((start, rise, dispatch_id, value));
            points.push((end, fall, dispatch_id, 0.0));
        }
    }
    tracks
}

fn track_name(process: &ProcessRun, agent_id: u64, stream_id: u64, pass: u32) -> String {
    let device = process
        .agents
        .iter()
        .find(|a| a.agent_id == agent_id)
        .map(|a| format!("GPU {agent_id} ({})", a.name))
        .unwrap_or_else(|| format!("GPU {agent_id}"));
    if pass == 0 {
        format!("{device} stream {stream_id}")
    } else {
        format!("{device} stream {stream_id}, replay pass {pass}")
    }
}

fn kernel_name(process: &ProcessRun, record: &DispatchRecord) -> String {
    process
        .kernel(record.kernel_id)
        .map(|k| k.demangled_name.clone())
        .unwrap_or_else(|| format!("kernel {}", record.kernel_id))
}

/// A slice's arguments: rocprofv3's (`begin_ns`, `end_ns`, `delta_ns`, `kind`, `corr_id`,
/// `queue`, `tid`, `kernel_id`, `Scratch_Size`, `LDS_Block_Size`, the register counts,
/// `workgroup_size`, `grid_size` in work-items, `stream_ID`), then kreplay's: `dispatch_id`,
/// `replay_pass` on every slice of a kernel-replay run (0 for a dispatch that ran once), with
/// counters the run's cache control and the cache state and clocks its replay cost recorded,
/// and the counters its pass measured.
fn annotations(
    process: &ProcessRun,
    record: &DispatchRecord,
    replay: bool,
    cost: Option<&ReplayCost>,
) -> Vec<DebugAnnotation> {
    let kernel = process.kernel(record.kernel_id);
    let symbol = |field: fn(&KernelSymbol) -> u32| u64::from(kernel.map_or(0, field));
    let product = |d: [u32; 3]| d.iter().map(|&n| u64::from(n)).product::<u64>();
    let threads = product(record.grid) * product(record.block);
    let end = record.end_ns.max(record.start_ns);
    let mut args = vec![
        DebugAnnotation::uint("begin_ns", record.start_ns),
        DebugAnnotation::uint("end_ns", record.end_ns),
        DebugAnnotation::uint("delta_ns", end - record.start_ns),
        DebugAnnotation::int("kind", KIND_KERNEL_DISPATCH),
        DebugAnnotation::uint("corr_id", record.correlation_id),
        DebugAnnotation::uint("queue", record.stream_id),
        DebugAnnotation::uint("tid", record.tid),
        DebugAnnotation::uint("kernel_id", record.kernel_id),
        DebugAnnotation::uint("Scratch_Size", symbol(|k| k.local_bytes)),
        DebugAnnotation::uint(
            "LDS_Block_Size",
            symbol(|k| k.static_shared_bytes) + u64::from(record.dynamic_shared_bytes),
        ),
        DebugAnnotation::uint("VGPR_Count", symbol(|k| k.registers)),
        DebugAnnotation::uint("Accum_VGPR_Count", 0),
        DebugAnnotation::uint("SGPR_Count", 0),
        DebugAnnotation::uint("workgroup_size", product(record.block)),
        DebugAnnotation::uint("grid_size", threads),
        DebugAnnotation::uint("stream_ID", record.stream_id),
        DebugAnnotation::uint("dispatch_id", record.dispatch_id),
    ];
    if replay {
        let pass = record.replay_pass.unwrap_or(0);
        args.push(DebugAnnotation::uint("replay_pass", u64::from(pass)));
    }
    if !record.counters.is_empty() {
        args.push(DebugAnnotation::text(
            "cache_control",
            process.process.cache_control.as_str().to_string(),
        ));
        if let Some(cost) = cost {
            args.push(DebugAnnotation::text(
                "cache",
                cost.cache.as_str().to_string(),
            ));
            for (name, [low, high]) in [
                ("sm_clock_mhz", cost.sm_clock_mhz),
                ("memory_clock_mhz", cost.memory_clock_mhz),
            ] {
                if high > 0 {
                    args.push(DebugAnnotation::text(name, format!("{low}-{high}")));
                }
            }
        }
    }
    args.extend(record.counters.iter().map(DebugAnnotation::counter));
    args
}

/// rocprofiler's buffer-tracing kind of kernel dispatches (`kind` of rocprofv3's slices).
const KIND_KERNEL_DISPATCH: i64 = 11;

/// Writes `packet` as one `Trace.packet` field (tag 1, length-delimited), on the writer's
/// sequence; the first packet of the file says the sequence starts there.
fn write_packet(out: &mut impl Write, first: &mut bool, mut packet: TracePacket) -> io::Result<()> {
    packet.trusted_packet_sequence_id = Some(SEQUENCE_ID);
    if std::mem::take(first) {
        packet.sequence_flags = Some(SEQ_INCREMENTAL_STATE_CLEARED);
    }
    out.write_all(&[(1 << 3) | 2])?;
    out.write_all(&packet.encode_length_delimited_to_vec())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testdata;

    /// Reads `Trace.packet` fields back (prost, the same subset: a check of the framing and
    /// of what was written; the CLI tests parse the file with Perfetto's full schema).
    fn packets(bytes: &[u8]) -> Vec<TracePacket> {
        let mut rest = bytes;
        let mut out = Vec::new();
        while !rest.is_empty() {
            assert_eq!(rest[0], 0x0a, "a Trace.packet field");
            rest = &rest[1..];
            let packet = TracePacket::decode_length_delimited(&mut rest).unwrap();
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
}
