//! A process's tracks and events, from its records read once, in bounded memory.
//!
//! Layout: one track per (device, stream, pass), in that order, then one counter track per
//! (device, counter); then every event of every track in time order. At one time: ends of
//! earlier slices, then zero-length slices (each begin just before its end), then begins, so
//! back-to-back slices stay apart and none ends before it begins; then by track and dispatch.
//!
//! The read that finds the tracks keeps the records and replay costs in spools ([`spool`]); two
//! orders are then made from them without holding the run:
//! 1. by dispatch: each dispatch's records and its replay cost come together, so that a slice
//!    gets its dispatch's cache state and clocks, and a counter track its dispatch's value (the
//!    lowest pass that measured the counter) over its application execution (its lowest pass);
//! 2. by time: the events, already encoded as packets, keyed as above (then by the record's
//!    place in the run, so that the order is the one a stable sort of them all would give).
//!
//! Records come nearly in both orders (a dispatch's passes close together, dispatches in time
//! order), so reorder windows ([`super::fast`]) make both and write the events as they come
//! out (the ordering and the file's writes on a thread of their own, [`super::in_time`]).
//! Records further out of order than a window holds make the process's events be written again,
//! from the spools, through two external sorts ([`crate::spill`]): the same bytes, more slowly.

use super::args::SliceNames;
use super::events::{self, Context, Dispatch, Events, Tracks, BY_TIME_KEY};
use super::interned::Interner;
use super::spilled::{encode_record, CostFacts, Names};
use super::spool::Spool;
use super::traces;
use super::window::is_not_ordered;
use super::{fast, track_name, write_process_track, write_track, PACKET_FIELD};
use crate::files::OutputFile;
use crate::progress::Ticker;
use crate::run::ProcessRun;
use crate::spill::{Key, Sorter};
use roaring::RoaringTreemap;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

/// Key of the order by dispatch: dispatch id, cost (0) or record (1), place in the run.
pub(super) const BY_DISPATCH_KEY: usize = 8 + 1 + 8;

/// Writes `process`'s tracks (its own, the `index`th of the file, carrying the names its slices
/// are the first to use, then those under it) and its events.
pub(super) fn write_events(
    out: &mut BufWriter<OutputFile>,
    (process, index): (&ProcessRun, u64),
    replay: bool,
    (spill_dir, ticker): (&Path, &Ticker),
    (interner, first): (&mut Interner, &mut bool),
) -> io::Result<()> {
    let calls = traces::api_calls(process)?;
    let mut gathered = Gathered::read(process, spill_dir, ticker, &calls.launch_ids)?;
    let kernels = gathered.kernels.iter().copied();
    let slice_names = SliceNames::intern(interner, process, &gathered.names, kernels);
    let interned = interner.take_new();
    let process_uuid = write_process_track(out, process, index, interned, first)?;
    let tracks = gathered.write_tracks(out, process, process_uuid, first)?;
    let launched = std::mem::take(&mut gathered.launched);
    let traced = traces::write_tracks(
        out,
        process,
        (process_uuid, tracks.next_uuid),
        (launched, &calls.threads, spill_dir),
        first,
    )?;
    let context = Context {
        process,
        replay,
        tracks: &tracks,
        traced: &traced,
        slice_names: &slice_names,
    };
    let spools = (&mut gathered.costs, &mut gathered.records);
    out.flush()?;
    let start = out.stream_position()?;
    let again = (&mut *spools.0, &mut *spools.1);
    let windowed = fast::write_events(out.get_mut(), &context, again, (spill_dir, ticker));
    match windowed {
        Err(e) if is_not_ordered(&e) => {
            #[cfg(test)]
            fast::FELL_BACK.with(|n| n.set(n.get() + 1));
            out.seek(SeekFrom::Start(start))?;
            out.get_mut().file().set_len(start)?;
            write_sorted(out, &context, spools, (spill_dir, ticker))
        }
        done => done,
    }
}

/// The events through two external sorts: by dispatch, then by time.
fn write_sorted(
    out: &mut impl Write,
    context: &Context,
    (costs, records): (&mut Spool, &mut Spool),
    (spill_dir, ticker): (&Path, &Ticker),
) -> io::Result<()> {
    let mut by_dispatch = Sorter::new(BY_DISPATCH_KEY, spill_dir);
    let mut item = Vec::new();
    for spool in [costs, records] {
        let mut reader = spool.read()?;
        while reader.next_into(&mut item)? {
            let (key, payload) = item.split_at(BY_DISPATCH_KEY);
            by_dispatch.push_bytes(key, payload)?;
        }
    }
    let mut by_time = Sorter::new(BY_TIME_KEY, spill_dir);
    let mut events = Events::new(context, &mut by_time);
    let mut dispatch = Dispatch::default();
    by_dispatch.drain(|key, payload| dispatch.add(key, payload, &mut events, ticker))?;
    dispatch.finish(&mut events)?;
    events::trace_events(context, &mut by_time)?;
    by_time.drain(|_, packet| {
        out.write_all(&[PACKET_FIELD])?;
        out.write_all(packet)
    })
}

/// What one read of the records gives: the tracks they need, and the costs and records in spools
/// (each keyed for the order by dispatch).
struct Gathered {
    costs: Spool,
    records: Spool,
    names: Names,
    slice_tracks: BTreeSet<(u64, u64, u32)>,
    /// (agent, counter number) of every counter value.
    counter_tracks: HashSet<(u64, u32)>,
    /// The launch calls (of `launches`) whose correlation id a dispatch carries.
    launched: RoaringTreemap,
    /// The kernels the records name.
    kernels: BTreeSet<u64>,
}

impl Gathered {
    fn read(
        process: &ProcessRun,
        spill_dir: &Path,
        ticker: &Ticker,
        launches: &RoaringTreemap,
    ) -> io::Result<Gathered> {
        let mut gathered = Gathered {
            costs: Spool::new(spill_dir)?,
            records: Spool::new(spill_dir)?,
            names: Names::default(),
            slice_tracks: BTreeSet::new(),
            counter_tracks: HashSet::new(),
            launched: RoaringTreemap::default(),
            kernels: BTreeSet::new(),
        };
        let mut last_kernel = None;
        let mut payload = Vec::new();
        for (seq, cost) in process.each_cost().enumerate() {
            let cost = cost.map_err(io::Error::other)?;
            ticker.tick();
            payload.clear();
            CostFacts::of(&cost).encode(&mut payload);
            let key = Key::new().u64(cost.dispatch_id).u8(0).u64(seq as u64);
            gathered.costs.push(key.bytes(), &payload)?;
        }
        for (seq, record) in process.each_dispatch().enumerate() {
            let record = record.map_err(io::Error::other)?;
            ticker.tick();
            let pass = record.replay_pass.unwrap_or(0);
            if pass == 0 && launches.contains(record.correlation_id) {
                gathered.launched.insert(record.correlation_id);
            }
            gathered
                .slice_tracks
                .insert((record.agent_id, record.stream_id, pass));
            if last_kernel != Some(record.kernel_id) {
                last_kernel = Some(record.kernel_id);
                gathered.kernels.insert(record.kernel_id);
            }
            payload.clear();
            encode_record(&record, &mut gathered.names, &mut payload);
            for sample in &record.counters {
                let number = gathered.names.number(&sample.name);
                gathered.counter_tracks.insert((record.agent_id, number));
            }
            let key = Key::new().u64(record.dispatch_id).u8(1).u64(seq as u64);
            gathered.records.push(key.bytes(), &payload)?;
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
