//! A process's tracks and events, from its records read once, in bounded memory.
//!
//! Layout: one track per (device, stream, pass) and one counter track per (device, counter), each
//! described before its first event; every event of every track in time order. At one time: ends of
//! earlier slices, then zero-length slices (each begin just before its end), then begins, so
//! back-to-back slices stay apart and none ends before it begins; then by track and dispatch.
//!
//! The replay costs and the records are read once, side by side, and two orders are made from
//! them as they come, without holding the run:
//! 1. by dispatch: each dispatch's records and its replay cost come together, so that a slice
//!    gets its dispatch's cache state and clocks, and a counter track its dispatch's value (the
//!    lowest pass that measured the counter) over its application execution (its lowest pass);
//! 2. by time: the events, already encoded as packets, keyed as above (then by the record's
//!    place in the run, so that the order is the one a stable sort of them all would give).
//!
//! Records come nearly in both orders (a dispatch's passes close together, dispatches in time
//! order), so reorder windows ([`super::fast`]) make both and write the events as they come out
//! (the ordering and the file's writes on a thread of their own, [`super::in_time`]). Records
//! further out of order than a window holds make the process's events be written again, the records
//! and costs read again, through two external sorts ([`crate::spill`]): the same events, more
//! slowly (the tracks' descriptors and interned names, written as met by the windows, come before
//! them).
//!
//! Tracks are numbered as met: the process's, its tracing records' tracks, then each dispatch
//! track as its first event is made (in the order by dispatch), described just before it.

use super::args::SliceArgs;
use super::events::{self, Context, Dispatch, Events, SortedEvents, BY_TIME_KEY};
use super::interned::Interner;
use super::records::{self, key_bytes, Keyed};
use super::spilled::{encode_record, CostFacts, Names};
use super::traced_runs::TracedEvents;
use super::traces;
use super::window::is_not_ordered;
use super::{fast, write_process_track, PACKET_FIELD};
use crate::files::OutputFile;
use crate::progress::Ticker;
use crate::records::{DispatchRecord, ReplayCost};
use crate::run::ProcessRun;
use crate::spill::Sorter;
use roaring::RoaringTreemap;
use std::io::{self, BufWriter, Seek, SeekFrom, Write};
use std::path::Path;

/// Key of the order by dispatch: dispatch id, cost (0) or record (1), place in the run.
pub(super) const BY_DISPATCH_KEY: usize = 8 + 1 + 8;

/// Writes `process`'s tracks (its own, the `index`th of the file, and those of its tracing
/// records) and its events (each dispatch track described before its first event, each name
/// interned before its first use: `interner` holds the file's).
pub(super) fn write_events(
    out: &mut BufWriter<OutputFile>,
    (process, index): (&ProcessRun, u64),
    replay: bool,
    (spill_dir, ticker): (&Path, &Ticker),
    (interner, first): (&mut Interner, &mut bool),
) -> io::Result<()> {
    let calls = traces::api_calls(process)?;
    let launched = launched(process, &calls.launch_ids)?;
    let process_uuid = write_process_track(out, process, index, first)?;
    let traced = traces::write_tracks(
        out,
        process,
        (process_uuid, process_uuid + 1),
        (launched, &calls.threads, spill_dir),
        first,
    )?;
    let context = Context {
        process,
        traced: &traced,
        uuids: (process_uuid, traced.next_uuid),
    };
    let args = SliceArgs::new(process, replay, interner);
    let (args_before, interner_before) = (args.clone(), interner.clone());
    out.flush()?;
    let start = out.stream_position()?;
    let mut costs = records::costs(process, ticker);
    let mut passes = records::passes(process, ticker);
    let windowed = fast::write_events(
        out.get_mut(),
        &context,
        (&mut costs, &mut passes),
        (args, &mut *interner),
        (spill_dir, ticker),
    );
    match windowed {
        Err(e) if is_not_ordered(&e) => {
            #[cfg(test)]
            fast::FELL_BACK.with(|n| n.set(n.get() + 1));
            out.seek(SeekFrom::Start(start))?;
            out.get_mut().file().set_len(start)?;
            *interner = interner_before;
            let mut costs = records::costs(process, ticker);
            let mut passes = records::passes(process, ticker);
            write_sorted(
                out,
                &context,
                (&mut costs, &mut passes),
                (args_before, interner),
                spill_dir,
                ticker,
            )
        }
        done => done,
    }
}

/// The events through two external sorts: by dispatch, then by time (after the tracks'
/// descriptors and the interned names they need).
fn write_sorted(
    out: &mut impl Write,
    context: &Context,
    (costs, records): (&mut Keyed<ReplayCost>, &mut Keyed<DispatchRecord>),
    (args, interner): (SliceArgs, &mut Interner),
    spill_dir: &Path,
    ticker: &Ticker,
) -> io::Result<()> {
    let mut by_dispatch = Sorter::new(BY_DISPATCH_KEY, spill_dir);
    let mut payload = Vec::new();
    let mut names = Names::default();
    while let Some(key) = costs.next_with(|cost| {
        CostFacts::of(&cost).encode(&mut payload);
        cost.dispatch_id
    })? {
        by_dispatch.push_bytes(&key_bytes(key), &payload)?;
        payload.clear();
    }
    while let Some(key) = records.next_with(|record| {
        encode_record(&record, &mut names, &mut payload);
        record.dispatch_id
    })? {
        by_dispatch.push_bytes(&key_bytes(key), &payload)?;
        payload.clear();
    }
    let mut by_time = Sorter::new(BY_TIME_KEY, spill_dir);
    let mut sink = SortedEvents {
        sorter: &mut by_time,
        before: Vec::new(),
    };
    let mut events = Events::new(context, &mut sink, (args, interner));
    let mut dispatch = Dispatch::default();
    let names = &names;
    by_dispatch.drain(|key, payload| dispatch.add((key, payload), (&mut events, names), ticker))?;
    dispatch.finish(&mut events, names)?;
    drop(events);
    out.write_all(&sink.before)?;
    let mut traced = TracedEvents::new(by_time, spill_dir);
    events::trace_events(context, &mut traced)?;
    let mut sorted = traced.into_sorted()?;
    while let Some(written) = sorted.next_with(|item| {
        out.write_all(&[PACKET_FIELD])?;
        out.write_all(&item[BY_TIME_KEY..])
    })? {
        written?;
    }
    Ok(())
}

/// The launch calls (of `launches`) whose correlation id a dispatch's application execution
/// carries: flows from call to dispatch start only at those. A read of the records of its own,
/// made only for a process whose API calls were traced (their events are made before the
/// dispatches').
fn launched(process: &ProcessRun, launches: &RoaringTreemap) -> io::Result<RoaringTreemap> {
    let mut launched = RoaringTreemap::default();
    if launches.is_empty() {
        return Ok(launched);
    }
    for record in process.each_dispatch() {
        let record = record.map_err(io::Error::other)?;
        if record.replay_pass.unwrap_or(0) == 0 && launches.contains(record.correlation_id) {
            launched.insert(record.correlation_id);
        }
    }
    Ok(launched)
}
