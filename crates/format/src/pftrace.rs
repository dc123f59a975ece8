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
//! The messages below are the subset of Perfetto's trace schema
//! (`protos/perfetto/trace/perfetto_trace.proto`) that this writer needs, with the schema's field
//! numbers, encoded by prost; the dispatches' events, millions in a long run, are encoded straight
//! into a reused buffer instead, to the same bytes ([`wire`]), with what many share encoded once
//! ([`args`]) and the names they repeat interned ([`interned`]). The file is streamed: `Trace` is
//! a sequence of `packet = 1` fields, written one at a time, each track described and each name
//! interned before the first event that needs it ([`order`]). The CLI tests read it back with
//! Perfetto's own Python bindings of the full schema.

use crate::error::FormatError;
use crate::files::write_file;
#[cfg(test)]
use crate::progress::Silent;
use crate::progress::{Ticker, WriteProgress};
use crate::run::{ProcessRun, RunData};
use prost::Message;
use std::io::{self, Write};
use std::path::Path;

mod args;
mod events;
mod fast;
mod in_time;
mod interned;
mod lanes;
mod order;
mod records;
mod spilled;
mod traced_runs;
mod traces;
mod window;
mod wire;

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
    #[prost(message, optional, tag = "12")]
    interned_data: Option<InternedData>,
    #[prost(message, optional, tag = "60")]
    track_descriptor: Option<TrackDescriptor>,
}

/// Order of events at one timestamp (see `write_process`).
const END: u8 = 0;
const EMPTY: u8 = 1;
const BEGIN: u8 = 2;

/// `TracePacket.SequenceFlags.SEQ_INCREMENTAL_STATE_CLEARED`.
const SEQ_INCREMENTAL_STATE_CLEARED: u32 = 1;
/// `TracePacket.SequenceFlags.SEQ_NEEDS_INCREMENTAL_STATE`: the packet refers to interned names.
const SEQ_NEEDS_INCREMENTAL_STATE: u32 = 2;
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

/// `InternedData`: names given a number once per sequence, which events then refer to.
#[derive(Clone, PartialEq, Message)]
struct InternedData {
    #[prost(message, repeated, tag = "1")]
    event_categories: Vec<InternedString>,
    #[prost(message, repeated, tag = "2")]
    event_names: Vec<InternedString>,
    #[prost(message, repeated, tag = "3")]
    debug_annotation_names: Vec<InternedString>,
}

/// `EventCategory`, `EventName` and `DebugAnnotationName` (the same two fields).
#[derive(Clone, PartialEq, Message)]
struct InternedString {
    #[prost(uint64, optional, tag = "1")]
    iid: Option<u64>,
    #[prost(string, optional, tag = "2")]
    name: Option<String>,
}

#[derive(Clone, PartialEq, Message)]
struct TrackEvent {
    /// Interned categories (not packed, as the schema declares it).
    #[prost(uint64, repeated, packed = "false", tag = "3")]
    category_iids: Vec<u64>,
    #[prost(message, repeated, tag = "4")]
    debug_annotations: Vec<DebugAnnotation>,
    #[prost(enumeration = "EventType", optional, tag = "9")]
    r#type: Option<i32>,
    #[prost(uint64, optional, tag = "10")]
    name_iid: Option<u64>,
    #[prost(uint64, optional, tag = "11")]
    track_uuid: Option<u64>,
    #[prost(string, repeated, tag = "22")]
    categories: Vec<String>,
    #[prost(string, optional, tag = "23")]
    name: Option<String>,
    #[prost(double, optional, tag = "44")]
    double_counter_value: Option<f64>,
    /// Flows this event starts (`flow_ids`, not packed, as the schema declares it).
    #[prost(fixed64, repeated, packed = "false", tag = "47")]
    flow_ids: Vec<u64>,
    /// Flows this event ends (`terminating_flow_ids`).
    #[prost(fixed64, repeated, packed = "false", tag = "48")]
    terminating_flow_ids: Vec<u64>,
}

#[derive(Clone, PartialEq, Message)]
struct DebugAnnotation {
    #[prost(uint64, optional, tag = "1")]
    name_iid: Option<u64>,
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

    fn text(name: &str, value: String) -> Self {
        DebugAnnotation {
            string_value: Some(value),
            name: Some(name.to_string()),
            ..Default::default()
        }
    }
}

/// Writes `run` to `path` (replaced atomically, see [`write_file`]). Each process's events are
/// put in time order by reorder windows, or external sorts where the records are too far out of
/// order ([`order`]): the records are read once, a page at a time, and memory stays bounded
/// whatever the run's length.
#[cfg(test)]
pub fn write_pftrace(run: &RunData, path: &Path) -> Result<(), FormatError> {
    write_pftrace_with(run, path, &Silent)
}

/// [`write_pftrace`], telling `progress` (a step per record read, and one per dispatch pass
/// sorted into its events).
pub fn write_pftrace_with(
    run: &RunData,
    path: &Path,
    progress: &dyn WriteProgress,
) -> Result<(), FormatError> {
    let steps = run
        .processes
        .iter()
        .map(|p| 2 * p.dispatch_count() as u64 + p.cost_count() as u64)
        .sum();
    let ticker = Ticker::begin(progress, path, steps);
    let spill_dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    write_file(path, |out| {
        let mut first = true;
        let mut interner = interned::Interner::default();
        let replay = run.is_kernel_replay();
        for (index, process) in run.processes.iter().enumerate() {
            order::write_events(
                out,
                (process, index as u64),
                replay,
                (&spill_dir, &ticker),
                (&mut interner, &mut first),
            )?;
        }
        Ok(())
    })
}

/// The process's own track; returns its uuid (unique within the file: the index of the process
/// in the high bits; its other tracks follow it).
fn write_process_track(
    out: &mut impl Write,
    process: &ProcessRun,
    index: u64,
    first: &mut bool,
) -> io::Result<u64> {
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
    Ok(process_uuid)
}

/// rocprofv3's category of kernel dispatch slices.
const CATEGORY: &str = "kernel_dispatch";

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

/// Writes `packet` as one `Trace.packet` field (tag 1, length-delimited), on the writer's
/// sequence; the first packet of the file says the sequence starts there.
fn write_packet(out: &mut impl Write, first: &mut bool, mut packet: TracePacket) -> io::Result<()> {
    if std::mem::take(first) {
        packet.sequence_flags = Some(SEQ_INCREMENTAL_STATE_CLEARED);
    }
    let mut bytes = Vec::new();
    encode_packet(packet, &mut bytes);
    out.write_all(&[PACKET_FIELD])?;
    out.write_all(&bytes)
}

/// `Trace.packet`'s field tag (1, length-delimited), written before each packet's bytes.
const PACKET_FIELD: u8 = (1 << 3) | 2;

/// Sets `bytes` to `packet`, on the writer's sequence, length-delimited (what follows
/// [`PACKET_FIELD`]).
fn encode_packet(mut packet: TracePacket, bytes: &mut Vec<u8>) {
    packet.trusted_packet_sequence_id = Some(SEQUENCE_ID);
    bytes.clear();
    packet
        .encode_length_delimited(bytes)
        .expect("a Vec grows to hold any packet");
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_traces;
