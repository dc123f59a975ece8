//! A process's tracks and events, from its records read once, in bounded memory.
//!
//! Layout: one track per (device, stream, pass), in that order, then one counter track per
//! (device, counter); then every event of every track in time order. At one time: ends of
//! earlier slices, then zero-length slices (each begin just before its end), then begins, so
//! back-to-back slices stay apart and none ends before it begins; then by track and dispatch.
//!
//! Two external sorts ([`crate::spill`]) make that order without holding the run:
//! 1. by dispatch: each dispatch's records and its replay cost come together, so that a slice
//!    gets its dispatch's cache state and clocks, and a counter track its dispatch's value (the
//!    lowest pass that measured the counter) over its application execution (its lowest pass);
//! 2. by time: the events, already encoded as packets, keyed as above (then by the record's
//!    place in the run, so that the order is the one a stable sort of them all would give).

use super::spilled::{decode_record, encode_record, CostFacts, Names};
use super::traces::{self, TraceTracks};
use super::{
    annotations, encode_packet, kernel_name, track_name, write_track, EventType, TracePacket,
    TrackEvent, BEGIN, CATEGORY, EMPTY, END, PACKET_FIELD,
};
use crate::progress::Ticker;
use crate::records::DispatchRecord;
use crate::run::ProcessRun;
use crate::spill::{Key, Sorter};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::io::{self, Write};
use std::path::Path;

/// Key of the sort by dispatch: dispatch id, cost (0) or record (1), place in the run.
const BY_DISPATCH_KEY: usize = 8 + 1 + 8;
/// Key of the sort by time: time, class, track, dispatch id, not a begin, place in the run.
const BY_TIME_KEY: usize = 8 + 1 + 8 + 8 + 1 + 8;

/// Writes `process`'s tracks (under its track `process_uuid`) and its events.
pub(super) fn write_events(
    out: &mut impl Write,
    process: &ProcessRun,
    process_uuid: u64,
    replay: bool,
    (spill_dir, ticker): (&Path, &Ticker),
    first: &mut bool,
) -> io::Result<()> {
    let launches = traces::launch_ids(process);
    let mut gathered = Gathered::read(process, spill_dir, ticker, &launches)?;
    let tracks = gathered.write_tracks(out, process, process_uuid, first)?;
    let launched = std::mem::take(&mut gathered.launched);
    let traced = traces::write_tracks(
        out,
        process,
        (process_uuid, tracks.next_uuid),
        launched,
        first,
    )?;
    let mut by_time = Sorter::new(BY_TIME_KEY, spill_dir);
    let mut events = Events {
        process,
        replay,
        tracks: &tracks,
        traced: &traced,
        names: &gathered.names,
        by_time: &mut by_time,
        packet: Vec::new(),
    };
    let mut dispatch = Dispatch::default();
    gathered.by_dispatch.drain(|key, payload| {
        let dispatch_id = u64::from_be_bytes(key[..8].try_into().expect("8 bytes"));
        if dispatch.id != Some(dispatch_id) {
            events.dispatch(&std::mem::take(&mut dispatch))?;
            dispatch.id = Some(dispatch_id);
        }
        let seq = u64::from_be_bytes(key[9..17].try_into().expect("8 bytes"));
        match key[8] {
            // A later cost of the same dispatch id replaces an earlier one.
            0 => dispatch.cost = Some(CostFacts::decode(payload)?),
            _ => {
                ticker.tick();
                dispatch
                    .records
                    .push((seq, decode_record(payload, events.names)?))
            }
        }
        Ok(())
    })?;
    events.dispatch(&dispatch)?;
    traces::push_events(process, &traced, &mut |at, not_begin, seq, event| {
        events.push(at, not_begin, seq, event)
    })?;
    by_time.drain(|_, packet| {
        out.write_all(&[PACKET_FIELD])?;
        out.write_all(packet)
    })
}

/// What one read of the records gives: the tracks they need, and the records and costs sorted by
/// dispatch.
struct Gathered {
    by_dispatch: Sorter,
    names: Names,
    slice_tracks: BTreeSet<(u64, u64, u32)>,
    /// (agent, counter number) of every counter value.
    counter_tracks: HashSet<(u64, u32)>,
    /// The launch calls (of `launches`) whose correlation id a dispatch carries.
    launched: HashSet<u64>,
}

impl Gathered {
    fn read(
        process: &ProcessRun,
        spill_dir: &Path,
        ticker: &Ticker,
        launches: &HashSet<u64>,
    ) -> io::Result<Gathered> {
        let mut gathered = Gathered {
            by_dispatch: Sorter::new(BY_DISPATCH_KEY, spill_dir),
            names: Names::default(),
            slice_tracks: BTreeSet::new(),
            counter_tracks: HashSet::new(),
            launched: HashSet::new(),
        };
        let mut payload = Vec::new();
        for (seq, cost) in process.each_cost().enumerate() {
            let cost = cost.map_err(io::Error::other)?;
            ticker.tick();
            payload.clear();
            CostFacts::of(&cost).encode(&mut payload);
            let key = Key::new().u64(cost.dispatch_id).u8(0).u64(seq as u64);
            gathered.by_dispatch.push(&key, &payload)?;
        }
        for (seq, record) in process.each_dispatch().enumerate() {
            let record = record.map_err(io::Error::other)?;
            ticker.tick();
            let pass = record.replay_pass.unwrap_or(0);
            if pass == 0 && launches.contains(&record.correlation_id) {
                gathered.launched.insert(record.correlation_id);
            }
            gathered
                .slice_tracks
                .insert((record.agent_id, record.stream_id, pass));
            payload.clear();
            encode_record(&record, &mut gathered.names, &mut payload);
            for sample in &record.counters {
                let number = gathered.names.number(&sample.name);
                gathered.counter_tracks.insert((record.agent_id, number));
            }
            let key = Key::new().u64(record.dispatch_id).u8(1).u64(seq as u64);
            gathered.by_dispatch.push(&key, &payload)?;
        }
        Ok(gathered)
    }

    /// Writes every track's descriptor, numbered in order after the process's.
    fn write_tracks(
        &self,
        out: &mut impl Write,
        process: &ProcessRun,
        process_uuid: u64,
        first: &mut bool,
    ) -> io::Result<Tracks> {
        let mut tracks = Tracks::default();
        let mut next_uuid = process_uuid + 1;
        for &(agent, stream, pass) in &self.slice_tracks {
            let name = track_name(process, agent, stream, pass);
            write_track(out, first, next_uuid, process_uuid, name, false)?;
            tracks.slices.insert((agent, stream, pass), next_uuid);
            next_uuid += 1;
        }
        let mut counters: BTreeMap<(u64, &str), u32> = BTreeMap::new();
        for &(agent, number) in &self.counter_tracks {
            counters.insert((agent, self.names.name(number)?), number);
        }
        for ((agent, name), number) in counters {
            let track = format!("Agent [{agent}] PMC {name}");
            write_track(out, first, next_uuid, process_uuid, track, true)?;
            tracks.counters.insert((agent, number), next_uuid);
            next_uuid += 1;
        }
        tracks.next_uuid = next_uuid;
        Ok(tracks)
    }
}

/// Track uuids: slices by (agent, stream, pass), counters by (agent, counter number).
#[derive(Default)]
struct Tracks {
    slices: HashMap<(u64, u64, u32), u64>,
    counters: HashMap<(u64, u32), u64>,
    /// The first uuid after these tracks'.
    next_uuid: u64,
}

/// One dispatch id's cost and records (with their places in the run), as the sort by dispatch
/// brings them.
#[derive(Default)]
struct Dispatch {
    id: Option<u64>,
    cost: Option<CostFacts>,
    records: Vec<(u64, DispatchRecord)>,
}

/// Makes a dispatch's events and puts them in the sort by time.
struct Events<'a> {
    process: &'a ProcessRun,
    replay: bool,
    tracks: &'a Tracks,
    traced: &'a TraceTracks,
    names: &'a Names,
    by_time: &'a mut Sorter,
    packet: Vec<u8>,
}

impl Events<'_> {
    fn dispatch(&mut self, dispatch: &Dispatch) -> io::Result<()> {
        for (seq, record) in &dispatch.records {
            self.slice(*seq, record, dispatch.cost.as_ref())?;
        }
        self.counter_points(&dispatch.records)
    }

    /// The begin and end of a record's slice.
    fn slice(
        &mut self,
        seq: u64,
        record: &DispatchRecord,
        cost: Option<&CostFacts>,
    ) -> io::Result<()> {
        let pass = record.replay_pass.unwrap_or(0);
        let uuid = self.tracks.slices[&(record.agent_id, record.stream_id, pass)];
        let end = record.end_ns.max(record.start_ns);
        let class = if end == record.start_ns { EMPTY } else { BEGIN };
        let begin = TrackEvent {
            debug_annotations: annotations(self.process, record, self.replay, cost),
            r#type: Some(EventType::SliceBegin as i32),
            track_uuid: Some(uuid),
            categories: vec![CATEGORY.to_string()],
            name: Some(kernel_name(self.process, record)),
            terminating_flow_ids: match pass {
                0 => self
                    .traced
                    .flow_to(record.correlation_id)
                    .into_iter()
                    .collect(),
                _ => Vec::new(),
            },
            ..Default::default()
        };
        let at = (record.start_ns, class, uuid, record.dispatch_id);
        self.push(at, false, seq, begin)?;
        let end_event = TrackEvent {
            r#type: Some(EventType::SliceEnd as i32),
            track_uuid: Some(uuid),
            ..Default::default()
        };
        let end_class = if class == EMPTY { EMPTY } else { END };
        self.push(
            (end, end_class, uuid, record.dispatch_id),
            true,
            seq,
            end_event,
        )
    }

    /// Per device and counter, the dispatch's value over its application execution (its lowest
    /// pass) and 0 from its end; the value is the lowest pass's that measured the counter. A
    /// zero-length dispatch has both at one time, the value first.
    fn counter_points(&mut self, records: &[(u64, DispatchRecord)]) -> io::Result<()> {
        // agent -> (application execution's start and end, its pass, counter -> (pass, value)).
        type Values = BTreeMap<u32, (u32, f64)>;
        let mut agents: BTreeMap<u64, ((u64, u64), u32, Values)> = BTreeMap::new();
        for (_, record) in records {
            let pass = record.replay_pass.unwrap_or(0);
            let times = (record.start_ns, record.end_ns.max(record.start_ns));
            let entry = agents
                .entry(record.agent_id)
                .or_insert((times, pass, BTreeMap::new()));
            if pass < entry.1 {
                (entry.0, entry.1) = (times, pass);
            }
            for sample in &record.counters {
                let number = self.names.known(&sample.name)?;
                let value = entry.2.entry(number).or_insert((pass, sample.value));
                if pass < value.0 {
                    *value = (pass, sample.value);
                }
            }
        }
        let Some(dispatch_id) = records.first().map(|(_, r)| r.dispatch_id) else {
            return Ok(());
        };
        for (agent, ((start, end), _, values)) in agents {
            let (rise, fall) = if end == start {
                (EMPTY, EMPTY)
            } else {
                (BEGIN, END)
            };
            for (number, (_, value)) in values {
                let uuid = self.tracks.counters[&(agent, number)];
                for (seq, time, class, value) in [(0, start, rise, value), (1, end, fall, 0.0)] {
                    let point = TrackEvent {
                        r#type: Some(EventType::Counter as i32),
                        track_uuid: Some(uuid),
                        double_counter_value: Some(value),
                        ..Default::default()
                    };
                    self.push((time, class, uuid, dispatch_id), true, seq, point)?;
                }
            }
        }
        Ok(())
    }

    /// Puts an event, encoded as its packet, in the sort by time.
    fn push(
        &mut self,
        (time, class, uuid, dispatch_id): (u64, u8, u64, u64),
        not_begin: bool,
        seq: u64,
        event: TrackEvent,
    ) -> io::Result<()> {
        let packet = TracePacket {
            timestamp: Some(time),
            track_event: Some(event),
            ..Default::default()
        };
        encode_packet(packet, &mut self.packet);
        let key = Key::new()
            .u64(time)
            .u8(class)
            .u64(uuid)
            .u64(dispatch_id)
            .u8(u8::from(not_begin))
            .u64(seq);
        self.by_time.push(&key, &self.packet)
    }
}
