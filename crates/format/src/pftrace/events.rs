//! A process's events, each encoded as its packet and handed with its key in the order by time
//! (see [`super::order`]) to a [`Sink`]: the external sort, or the reorder window that writes
//! them out.

use super::args::SliceArgs;
use super::interned::Interner;
use super::records::{self, DispatchKey};
use super::spilled::{decode_record_into, CostFacts, Names, Pass};
use super::traced_runs::TracedEvents;
use super::traces::{self, TraceTracks};
use super::{
    encode_packet, track_name, wire, write_packet, write_track, EventType, TracePacket, BEGIN,
    EMPTY, END, SEQ_NEEDS_INCREMENTAL_STATE,
};
use crate::progress::Ticker;
use crate::run::ProcessRun;
use crate::spill::Sorter;
use rustc_hash::FxHashMap as IdMap;
use std::io;

/// Key of the order by time: time, class, track, dispatch id (or the order of a tracing
/// record's event), not a begin, place in the run.
pub(super) type TimeKey = (u64, u8, u64, u64, u8, u64);

/// A [`TimeKey`]'s length in bytes, big-endian: compared as bytes, keys sort as the tuples do.
pub(super) const BY_TIME_KEY: usize = 8 + 1 + 8 + 8 + 1 + 8;

/// The key of an event at (time, class, track, order), `not_begin`, `seq`.
pub(super) fn time_key(
    (time, class, uuid, order): (u64, u8, u64, u64),
    not_begin: bool,
    seq: u64,
) -> TimeKey {
    (time, class, uuid, order, u8::from(not_begin), seq)
}

pub(super) fn key_bytes(
    &(time, class, uuid, order, not_begin, seq): &TimeKey,
) -> [u8; BY_TIME_KEY] {
    let mut key = [0u8; BY_TIME_KEY];
    key[..8].copy_from_slice(&time.to_be_bytes());
    key[8] = class;
    key[9..17].copy_from_slice(&uuid.to_be_bytes());
    key[17..25].copy_from_slice(&order.to_be_bytes());
    key[25] = not_begin;
    key[26..].copy_from_slice(&seq.to_be_bytes());
    key
}

/// The key [`key_bytes`] wrote (the first [`BY_TIME_KEY`] bytes of `bytes`).
pub(super) fn time_key_of(bytes: &[u8]) -> TimeKey {
    let u64_at = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    (
        u64_at(0),
        bytes[8],
        u64_at(9),
        u64_at(17),
        bytes[25],
        u64_at(26),
    )
}

/// Where the dispatches' events go, each its key and the event at its time; and the packets
/// their events need before them (a track's descriptor, interned names), in the order given.
pub(super) trait Sink {
    fn event(&mut self, key: &TimeKey, event: &wire::Event) -> io::Result<()>;

    /// `packet` (a `Trace.packet` field) is written before every event handed after it.
    fn before(&mut self, packet: &[u8]) -> io::Result<()>;
}

/// The events through an external sort by time, after the packets they need.
pub(super) struct SortedEvents<'a> {
    pub(super) sorter: &'a mut Sorter,
    /// The packets given to [`Sink::before`], in order: written before the sorted events.
    pub(super) before: Vec<u8>,
}

impl Sink for SortedEvents<'_> {
    fn event(&mut self, key: &TimeKey, event: &wire::Event) -> io::Result<()> {
        let mut packet = Vec::new();
        event.packet(key.0, &mut packet);
        self.sorter.push_bytes(&key_bytes(key), &packet)
    }

    fn before(&mut self, packet: &[u8]) -> io::Result<()> {
        self.before.extend_from_slice(packet);
        Ok(())
    }
}

/// The dispatches' tracks, each described and numbered when its first event is made (numbers
/// from `next_uuid`, under the process's track): slices by (agent, stream, pass), counters by
/// (agent, counter number).
struct Tracks {
    parent: u64,
    next_uuid: u64,
    slices: IdMap<(u64, u64, u32), u64>,
    counters: IdMap<(u64, u32), u64>,
    /// A descriptor's packet, written into again for each track.
    packet: Vec<u8>,
}

impl Tracks {
    /// The track of `key` in `tracks`; a new one is described to `sink` first, named `name()`.
    fn uuid<K: Eq + std::hash::Hash>(
        &mut self,
        which: fn(&mut Tracks) -> &mut IdMap<K, u64>,
        key: K,
        (name, counter): (impl FnOnce() -> io::Result<String>, bool),
        sink: &mut dyn Sink,
    ) -> io::Result<u64> {
        if let Some(&uuid) = which(self).get(&key) {
            return Ok(uuid);
        }
        let uuid = self.next_uuid;
        self.packet.clear();
        write_track(
            &mut self.packet,
            &mut false,
            uuid,
            self.parent,
            name()?,
            counter,
        )?;
        sink.before(&self.packet)?;
        which(self).insert(key, uuid);
        self.next_uuid += 1;
        Ok(uuid)
    }
}

/// What a process's events are made from, besides its records.
pub(super) struct Context<'a> {
    pub(super) process: &'a ProcessRun,
    pub(super) traced: &'a TraceTracks,
    /// The process's track, and the first uuid free for the dispatches' tracks.
    pub(super) uuids: (u64, u64),
}

/// Puts the tracing records' events (see [`traces`]) into `traced`, kind after kind.
pub(super) fn trace_events(context: &Context, traced: &mut TracedEvents) -> io::Result<()> {
    let mut packet = Vec::new();
    traces::push_events(
        context.process,
        context.traced,
        &mut |at, not_begin, seq, event| {
            let Some(event) = event else {
                return traced.next_kind();
            };
            let event = TracePacket {
                timestamp: Some(at.0),
                track_event: Some(event),
                ..Default::default()
            };
            encode_packet(event, &mut packet);
            traced.push(time_key(at, not_begin, seq), &packet)
        },
    )
}

/// One dispatch id's cost and records (with their places in the run), as the order by dispatch
/// brings them.
#[derive(Default)]
pub(super) struct Dispatch {
    id: Option<u64>,
    cost: Option<CostFacts>,
    /// The first `taken` of these (the others: room for the next dispatch's records).
    records: Vec<(u64, Pass)>,
    taken: usize,
    /// A pass as sorted bytes are decoded into.
    decoded: Pass,
}

impl Dispatch {
    /// Takes the next item in the order by dispatch as sorted (key, then [`CostFacts::encode`]'s
    /// or [`super::spilled::encode_record`]'s bytes).
    pub(super) fn add(
        &mut self,
        (key, payload): (&[u8], &[u8]),
        (events, names): (&mut Events, &Names),
        ticker: &Ticker,
    ) -> io::Result<()> {
        let key = key
            .try_into()
            .map_err(|_| io::Error::other("a short key"))?;
        let key = records::key_of(key);
        match key.1 {
            0 => self.cost(key, CostFacts::decode(payload)?, (events, names)),
            _ => {
                let mut pass = std::mem::take(&mut self.decoded);
                decode_record_into(payload, &mut pass)?;
                self.pass(key, &mut pass, (events, names), ticker)?;
                self.decoded = pass;
                Ok(())
            }
        }
    }

    /// Starts dispatch `id`: a new dispatch id makes the events of the one before.
    fn start(&mut self, id: u64, (events, names): (&mut Events, &Names)) -> io::Result<()> {
        if self.id != Some(id) {
            self.finish(events, names)?;
            self.id = Some(id);
        }
        Ok(())
    }

    /// Takes a dispatch's replay cost (`key`'s dispatch id); a later cost of the same dispatch id
    /// replaces an earlier one.
    pub(super) fn cost(
        &mut self,
        key: DispatchKey,
        cost: CostFacts,
        events: (&mut Events, &Names),
    ) -> io::Result<()> {
        self.start(key.0, events)?;
        self.cost = Some(cost);
        Ok(())
    }

    /// Takes a pass (`key`: its dispatch id and place in the run), swapped out of `pass`, which
    /// gets another to fill.
    pub(super) fn pass(
        &mut self,
        key: DispatchKey,
        pass: &mut Pass,
        events: (&mut Events, &Names),
        ticker: &Ticker,
    ) -> io::Result<()> {
        self.start(key.0, events)?;
        ticker.tick();
        if self.taken == self.records.len() {
            self.records.push((0, Pass::default()));
        }
        let (place, taken) = &mut self.records[self.taken];
        std::mem::swap(taken, pass);
        *place = key.2;
        self.taken += 1;
        Ok(())
    }

    /// Makes the events of the dispatch taken last (`names`: its counters' names by number).
    pub(super) fn finish(&mut self, events: &mut Events, names: &Names) -> io::Result<()> {
        let records = &self.records[..self.taken];
        for (seq, record) in records {
            events.slice(*seq, record, self.cost.as_ref(), names)?;
        }
        events.counter_points(records, names)?;
        self.taken = 0;
        self.cost = None;
        Ok(())
    }
}

/// Makes a dispatch's events and puts them into a sink, after the packets they need.
pub(super) struct Events<'a> {
    context: &'a Context<'a>,
    sink: &'a mut dyn Sink,
    interner: &'a mut Interner,
    tracks: Tracks,
    args: SliceArgs<'a>,
    event: wire::Event,
    /// A dispatch's devices and counter values (see [`Events::counter_points`]).
    agents: Vec<(u64, (u64, u64), u32)>,
    values: Vec<(u64, u32, u32, f64)>,
}

impl<'a> Events<'a> {
    /// `args` and `interner` as the process's events start (names interned so far written).
    pub(super) fn new(
        context: &'a Context<'a>,
        sink: &'a mut dyn Sink,
        (args, interner): (SliceArgs<'a>, &'a mut Interner),
    ) -> Self {
        let (parent, next_uuid) = context.uuids;
        Events {
            context,
            sink,
            interner,
            tracks: Tracks {
                parent,
                next_uuid,
                slices: IdMap::default(),
                counters: IdMap::default(),
                packet: Vec::new(),
            },
            args,
            event: wire::Event::default(),
            agents: Vec::new(),
            values: Vec::new(),
        }
    }

    /// The begin and end of a pass's slice.
    fn slice(
        &mut self,
        seq: u64,
        pass: &Pass,
        cost: Option<&CostFacts>,
        names: &Names,
    ) -> io::Result<()> {
        let context = self.context;
        let record = &pass.record;
        let pass_number = record.replay_pass.unwrap_or(0);
        let (agent, stream) = (record.agent_id, record.stream_id);
        let name = || Ok(track_name(context.process, agent, stream, pass_number));
        let key = (agent, stream, pass_number);
        let uuid = self
            .tracks
            .uuid(|t| &mut t.slices, key, (name, false), self.sink)?;
        self.args.intern(pass, names, self.interner)?;
        self.write_interned()?;
        let end = record.end_ns.max(record.start_ns);
        let class = if end == record.start_ns { EMPTY } else { BEGIN };
        self.event.clear();
        self.args.write_begin(&mut self.event, pass, cost, uuid)?;
        if pass_number == 0 {
            if let Some(flow) = context.traced.flow_to(record.correlation_id) {
                self.event.terminating_flow(flow);
            }
        }
        let at = (record.start_ns, class, uuid, record.dispatch_id);
        self.push(at, false, seq)?;
        self.event.clear();
        self.event.kind(EventType::SliceEnd, None, uuid);
        let end_class = if class == EMPTY { EMPTY } else { END };
        self.push((end, end_class, uuid, record.dispatch_id), true, seq)
    }

    /// Per device and counter, the dispatch's value over its application execution (its lowest
    /// pass) and 0 from its end; the value is the lowest pass's that measured the counter. A
    /// zero-length dispatch has both at one time, the value first.
    fn counter_points(&mut self, records: &[(u64, Pass)], names: &Names) -> io::Result<()> {
        let Some(dispatch_id) = records.first().map(|(_, p)| p.record.dispatch_id) else {
            return Ok(());
        };
        // (agent, application execution's start and end, its pass), and
        // (agent, counter number, pass, value): a few of each, looked up one by one.
        let (agents, values) = (&mut self.agents, &mut self.values);
        agents.clear();
        values.clear();
        for (_, Pass { record, counters }) in records {
            let pass = record.replay_pass.unwrap_or(0);
            let times = (record.start_ns, record.end_ns.max(record.start_ns));
            match agents.iter_mut().find(|a| a.0 == record.agent_id) {
                Some(agent) if pass < agent.2 => (agent.1, agent.2) = (times, pass),
                Some(_) => {}
                None => agents.push((record.agent_id, times, pass)),
            }
            for &(number, sample) in counters {
                let at = (record.agent_id, number);
                match values.iter_mut().find(|v| (v.0, v.1) == at) {
                    Some(value) if pass < value.2 => (value.2, value.3) = (pass, sample),
                    Some(_) => {}
                    None => values.push((at.0, at.1, pass, sample)),
                }
            }
        }
        agents.sort_unstable_by_key(|a| a.0);
        values.sort_unstable_by_key(|v| (v.0, v.1));
        for index in 0..self.agents.len() {
            let (agent, (start, end), _) = self.agents[index];
            let (rise, fall) = if end == start {
                (EMPTY, EMPTY)
            } else {
                (BEGIN, END)
            };
            let first = self.values.partition_point(|v| v.0 < agent);
            let last = self.values.partition_point(|v| v.0 <= agent);
            for index in first..last {
                let (_, number, _, value) = self.values[index];
                let name = || Ok(format!("Agent [{agent}] PMC {}", names.name(number)?));
                let uuid = self.tracks.uuid(
                    |t| &mut t.counters,
                    (agent, number),
                    (name, true),
                    self.sink,
                )?;
                for (seq, time, class, value) in [(0, start, rise, value), (1, end, fall, 0.0)] {
                    self.event.clear();
                    self.event.kind(EventType::Counter, None, uuid);
                    self.event.counter_value(value);
                    self.push((time, class, uuid, dispatch_id), true, seq)?;
                }
            }
        }
        Ok(())
    }

    /// Writes the names interned since the last call before the events that use them.
    fn write_interned(&mut self) -> io::Result<()> {
        if let Some(names) = self.interner.take_new() {
            let mut packet = Vec::new();
            let interned = TracePacket {
                interned_data: Some(names),
                sequence_flags: Some(SEQ_NEEDS_INCREMENTAL_STATE),
                ..Default::default()
            };
            write_packet(&mut packet, &mut false, interned)?;
            self.sink.before(&packet)?;
        }
        Ok(())
    }

    /// Puts the event made last, encoded as its packet, into the sink.
    fn push(&mut self, at: (u64, u8, u64, u64), not_begin: bool, seq: u64) -> io::Result<()> {
        self.sink.event(&time_key(at, not_begin, seq), &self.event)
    }
}
