//! The tracing domains' tracks and events: NVTX markers and CUDA API calls on a track per
//! thread (push/pop ranges and calls nest as they were made; start/end ranges, which may overlap
//! and end on another thread, on lanes of their own), copies on a track per stream (lanes where
//! copies overlap), and the bytes the application holds allocated as a counter track. A launch
//! call starts a flow (its correlation id) that its dispatches' slices end.
//!
//! These records are read as they are stored (a page at a time), once for their tracks and once
//! for their events, their lanes found each time by external sorts (`lanes`) and their tracks
//! looked up by name; only the allocations (a few per run) are sorted by time in memory. Their
//! events go into the same sort by
//! time as the dispatches', keyed alike (see `order`): at one time ends, then zero-length
//! slices, then begins, the longest-lasting begin first and the latest-begun end first, so that
//! slices at one time nest.

use super::lanes::Lanes;
use super::{write_track, DebugAnnotation, EventType, TrackEvent, BEGIN, EMPTY, END};
use crate::api::{ApiDomain, ApiRecord};
use crate::error::FormatError;
use crate::markers::{MarkerKind, MarkerRecord};
use crate::memory::{AllocationOperation, MemoryCopyRecord};
use crate::run::{ProcessRun, TraceKind};
use crate::spill::{Key, Sorter};
use roaring::RoaringTreemap;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Category of marker slices (rocprofv3's name for its marker records).
const MARKER_CATEGORY: &str = "marker_api";
const API_CATEGORY: &str = "cuda_api";
const COPY_CATEGORY: &str = "memory_copy";

/// The tracks of a process's tracing records: by name (a marker's and a copy's named as
/// [`marker_track`] and [`copy_track`] name them, their lanes found again for the events), by
/// thread for API calls.
pub(super) struct TraceTracks {
    named: BTreeMap<String, u64>,
    api: HashMap<u64, u64>,
    allocated: Option<u64>,
    /// Where the lanes' sorts spill.
    spill_dir: PathBuf,
    /// Whether there are start/end ranges (whose lanes the events need again).
    start_end: bool,
    /// Correlation ids of the launch calls with a dispatch: flows to their dispatches.
    launches: RoaringTreemap,
    /// Added to a correlation id: flow ids unique in the file.
    flow_base: u64,
    /// The first uuid after these tracks'.
    pub(super) next_uuid: u64,
}

impl TraceTracks {
    /// The flow a dispatch's slice ends, when its launch call was recorded.
    pub(super) fn flow_to(&self, correlation_id: u64) -> Option<u64> {
        self.launches
            .contains(correlation_id)
            .then_some(self.flow_base + correlation_id)
    }
}

/// The lanes of the process's start/end ranges, in their order among its markers.
fn start_end_lanes(process: &ProcessRun, spill_dir: &Path) -> io::Result<Lanes> {
    let ranges = read(process.each_marker()).filter_map(|m| match m {
        Ok(m) if m.kind == MarkerKind::StartEnd => Some(Ok((m.start_ns, m.end_ns))),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    });
    Lanes::of(ranges, spill_dir)
}

/// The lanes of the process's copies, in their order.
fn copy_lanes(process: &ProcessRun, spill_dir: &Path) -> io::Result<Lanes> {
    let copies = read(process.each_copy()).map(|c| c.map(|c| (c.start_ns, c.end_ns)));
    Lanes::of(copies, spill_dir)
}

/// The name of a marker's track: its thread's, or for a start/end range its lane's (the next
/// of `lanes`).
fn marker_track(m: &MarkerRecord, lanes: &mut Lanes) -> io::Result<String> {
    Ok(match m.kind == MarkerKind::StartEnd {
        true => format!("NVTX start/end ranges, lane {}", lanes.next_lane()?),
        false => format!("NVTX thread {}", m.tid),
    })
}

/// The name of a copy's track: its stream's lane (the next of `lanes`).
fn copy_track(c: &MemoryCopyRecord, lanes: &mut Lanes) -> io::Result<String> {
    Ok(match lanes.next_lane()? {
        0 => format!("Memory copies stream {}", c.stream_id),
        lane => format!("Memory copies stream {}, lane {lane}", c.stream_id),
    })
}

/// The uuid of the track named `name`.
fn named_track(tracks: &TraceTracks, name: &str) -> io::Result<u64> {
    (tracks.named.get(name).copied())
        .ok_or_else(|| io::Error::other(format!("no track {name:?} was written")))
}

/// What one read of the application's API calls gives the trace: the correlation ids of its
/// launch calls, and the threads that made calls, in the order of their first.
pub(super) struct ApiCalls {
    pub(super) launch_ids: RoaringTreemap,
    pub(super) threads: Vec<u64>,
}

/// Reads the process's API calls once (without their arguments) for [`ApiCalls`].
pub(super) fn api_calls(process: &ProcessRun) -> io::Result<ApiCalls> {
    let mut launch_ids = RoaringTreemap::default();
    let mut threads = Vec::new();
    let mut seen = HashSet::new();
    for call in process.each_api_call_without_args() {
        let call = call.map_err(io::Error::other)?;
        if is_launch(&call) {
            launch_ids.insert(call.correlation_id);
        }
        if seen.insert(call.tid) {
            threads.push(call.tid);
        }
    }
    Ok(ApiCalls {
        launch_ids,
        threads,
    })
}

/// Each record of `records`, or the error that read it as an I/O error.
fn read<'a, T: Clone + 'a>(
    records: impl Iterator<Item = Result<Cow<'a, T>, FormatError>>,
) -> impl Iterator<Item = io::Result<Cow<'a, T>>> {
    records.map(|r| r.map_err(io::Error::other))
}

/// Writes the tracks' descriptors under `parent`, numbered from `next_uuid`; `launched`: the
/// launch calls whose dispatches were recorded (a launch captured into a graph has none);
/// `api_threads`: the threads that made API calls, in the order of their first.
pub(super) fn write_tracks(
    out: &mut impl Write,
    process: &ProcessRun,
    (parent, mut next_uuid): (u64, u64),
    (launched, api_threads, spill_dir): (RoaringTreemap, &[u64], &Path),
    first: &mut bool,
) -> io::Result<TraceTracks> {
    let mut named: BTreeMap<String, u64> = BTreeMap::new();
    let mut track = |out: &mut _, name: String, counter: bool| -> io::Result<u64> {
        if let Some(&uuid) = named.get(&name) {
            return Ok(uuid);
        }
        write_track(out, first, next_uuid, parent, name.clone(), counter)?;
        named.insert(name, next_uuid);
        next_uuid += 1;
        Ok(next_uuid - 1)
    };
    let mut lanes = start_end_lanes(process, spill_dir)?;
    let start_end = !lanes.is_empty();
    for m in read(process.each_marker()) {
        track(out, marker_track(&*m?, &mut lanes)?, false)?;
    }
    let mut api = HashMap::new();
    for &tid in api_threads {
        api.insert(tid, track(out, format!("CUDA API thread {tid}"), false)?);
    }
    let mut lanes = copy_lanes(process, spill_dir)?;
    for c in read(process.each_copy()) {
        track(out, copy_track(&*c?, &mut lanes)?, false)?;
    }
    let allocated = match process.has_traced(TraceKind::Allocations) {
        false => None,
        true => Some(track(out, "Memory allocated (bytes)".to_string(), true)?),
    };
    Ok(TraceTracks {
        named,
        api,
        allocated,
        spill_dir: spill_dir.to_path_buf(),
        start_end,
        launches: launched,
        flow_base: parent,
        next_uuid,
    })
}

/// A call of the application that launches work (`cudaLaunchKernel`, `cuLaunchKernel`,
/// `cudaGraphLaunch`, ...): its dispatches carry its correlation id.
fn is_launch(call: &ApiRecord) -> bool {
    call.parent_id == 0 && call.function.contains("Launch")
}

/// Where the events go: each at (time, class, track, order), whether it is not a begin, its
/// place; `None` when the events of another kind of record come next.
pub(super) type Push<'a> =
    dyn FnMut((u64, u8, u64, u64), bool, u64, Option<TrackEvent>) -> io::Result<()> + 'a;

/// Tells `push` that the events of another kind of record come next.
fn next_kind(push: &mut Push) -> io::Result<()> {
    push((0, 0, 0, 0), false, 0, None)
}

/// A slice from `start` to `end` on `track`: its begin and end events.
fn slice(
    push: &mut Push,
    (track, seq): (u64, u64),
    (start, end): (u64, u64),
    begin: TrackEvent,
) -> io::Result<()> {
    let end = end.max(start);
    let (rise, fall, first, last) = if end == start {
        (EMPTY, EMPTY, seq, seq)
    } else {
        (BEGIN, END, u64::MAX - end, u64::MAX - start)
    };
    let begin = TrackEvent {
        r#type: Some(EventType::SliceBegin as i32),
        track_uuid: Some(track),
        ..begin
    };
    push((start, rise, track, first), false, seq, Some(begin))?;
    let end_event = TrackEvent {
        r#type: Some(EventType::SliceEnd as i32),
        track_uuid: Some(track),
        ..Default::default()
    };
    push((end, fall, track, last), true, seq, Some(end_event))
}

fn named(name: &str, category: &str, args: Vec<DebugAnnotation>) -> TrackEvent {
    TrackEvent {
        name: Some(name.to_string()),
        categories: vec![category.to_string()],
        debug_annotations: args,
        ..Default::default()
    }
}

/// Puts every tracing record's events in the sort by time.
pub(super) fn push_events(
    process: &ProcessRun,
    tracks: &TraceTracks,
    push: &mut Push,
) -> io::Result<()> {
    let mut lanes = match tracks.start_end {
        true => start_end_lanes(process, &tracks.spill_dir)?,
        false => Lanes::of(std::iter::empty(), &tracks.spill_dir)?,
    };
    for m in read(process.each_marker()) {
        let m = m?;
        let track = named_track(tracks, &marker_track(&m, &mut lanes)?)?;
        let mut args = vec![
            DebugAnnotation::text("operation", m.operation.clone()),
            DebugAnnotation::uint("corr_id", m.id),
            DebugAnnotation::uint("tid", m.tid),
        ];
        if !m.domain.is_empty() {
            args.push(DebugAnnotation::text("domain", m.domain.clone()));
        }
        if m.category != 0 {
            args.push(DebugAnnotation::uint("category", u64::from(m.category)));
        }
        let event = named(m.function(), MARKER_CATEGORY, args);
        slice(push, (track, m.id), (m.start_ns, m.end_ns), event)?;
    }
    next_kind(push)?;
    for call in read(process.each_api_call_without_args()) {
        let call = call?;
        let track = tracks.api[&call.tid];
        let domain = match call.domain {
            ApiDomain::Runtime => "CUDA_RUNTIME_API",
            ApiDomain::Driver => "CUDA_DRIVER_API",
        };
        let mut args = vec![
            DebugAnnotation::text("domain", domain.to_string()),
            DebugAnnotation::uint("corr_id", call.correlation_id),
            DebugAnnotation::uint("tid", call.tid),
        ];
        if call.parent_id != 0 {
            args.push(DebugAnnotation::uint("parent_corr_id", call.parent_id));
        }
        let mut event = named(&call.function, API_CATEGORY, args);
        if tracks.launches.contains(call.correlation_id) {
            event.flow_ids = vec![tracks.flow_base + call.correlation_id];
        }
        let at = (track, call.correlation_id);
        slice(push, at, (call.start_ns, call.end_ns), event)?;
    }
    next_kind(push)?;
    let mut lanes = copy_lanes(process, &tracks.spill_dir)?;
    for c in read(process.each_copy()) {
        let c = c?;
        let track = named_track(tracks, &copy_track(&c, &mut lanes)?)?;
        let args = vec![
            DebugAnnotation::text("operation", c.operation.clone()),
            DebugAnnotation::uint("corr_id", c.id),
            DebugAnnotation::uint("bytes", c.bytes),
            DebugAnnotation::uint("src_address", c.src_address),
            DebugAnnotation::uint("dst_address", c.dst_address),
            DebugAnnotation::uint("stream_ID", c.stream_id),
            DebugAnnotation::uint("tid", c.tid),
        ];
        let event = named(c.direction.as_str(), COPY_CATEGORY, args);
        slice(push, (track, c.id), (c.start_ns, c.end_ns), event)?;
    }
    next_kind(push)?;
    if let Some(track) = tracks.allocated {
        allocated_bytes(process, track, &tracks.spill_dir, push)?;
    }
    Ok(())
}

/// The bytes allocated and not yet freed, after each allocation or free (at its end), in time
/// order; a free takes away its address's allocation. The allocations are put in that order by
/// the external sort (a program may allocate at every step).
fn allocated_bytes(
    process: &ProcessRun,
    track: u64,
    spill_dir: &Path,
    push: &mut Push,
) -> io::Result<()> {
    let mut order = Sorter::new(16, spill_dir);
    for a in read(process.each_allocation()) {
        let a = a?;
        let freed = matches!(
            a.operation,
            AllocationOperation::Free | AllocationOperation::VmemFree
        );
        let mut payload = [0u8; 17];
        payload[0] = u8::from(freed);
        payload[1..9].copy_from_slice(&a.address.to_le_bytes());
        payload[9..].copy_from_slice(&a.size.to_le_bytes());
        order.push_bytes(Key::new().u64(a.end_ns).u64(a.id).bytes(), &payload)?;
    }
    let mut live: HashMap<u64, u64> = HashMap::new();
    let mut total: u64 = 0;
    let mut index = 0;
    order.drain(|key, payload| {
        let u64_at = |bytes: &[u8], at: usize| {
            u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
        };
        let end_ns = u64::from_be_bytes(key[..8].try_into().expect("8 bytes"));
        let id = u64::from_be_bytes(key[8..16].try_into().expect("8 bytes"));
        let (address, size) = (u64_at(payload, 1), u64_at(payload, 9));
        if payload[0] == 0 {
            total += size;
            if let Some(old) = live.insert(address, size) {
                total -= old;
            }
        } else {
            total -= live.remove(&address).unwrap_or(0);
        }
        let point = TrackEvent {
            r#type: Some(EventType::Counter as i32),
            track_uuid: Some(track),
            double_counter_value: Some(total as f64),
            ..Default::default()
        };
        index += 1;
        push((end_ns, EMPTY, track, index - 1), true, id, Some(point))
    })
}
