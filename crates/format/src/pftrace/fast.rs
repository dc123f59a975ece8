//! A process's events in order through reorder windows ([`super::window`]) rather than external
//! sorts: the costs and the records, read side by side, each nearly in dispatch order, through a
//! window each, merged; the events, nearly in time order, through one more on a thread of its own
//! ([`super::in_time`]), merged with the tracing records' events (sorted apart: they are in memory
//! and in an order of their own), and written out as they leave it. An item later than a window
//! allows stops it with [`super::window::NotOrdered`]; what was written is then written again the
//! slow way.

use super::args::SliceArgs;
use super::events::{self, Context, Dispatch, Events, BY_TIME_KEY};
use super::in_time;
use super::interned::Interner;
use super::order::BY_DISPATCH_KEY;
use super::records::{Items, Keyed};
use super::spilled::Names;
use super::window::Window;
use crate::progress::Ticker;
use crate::records::{DispatchRecord, ReplayCost};
use crate::spill::Sorter;
use std::cell::RefCell;
use std::io::{self, Write};
use std::path::Path;

/// How many costs, and apart how many records, wait to be put in dispatch order.
const DISPATCH_WINDOW: usize = 4096;
/// How many events wait to be put in time order.
const TIME_WINDOW: usize = 16384;

#[cfg(not(test))]
fn windows() -> (usize, usize) {
    (DISPATCH_WINDOW, TIME_WINDOW)
}

#[cfg(test)]
thread_local! {
    /// The windows of the writers this thread runs (dispatch, time): tests make them small.
    pub(super) static TEST_WINDOWS: std::cell::Cell<(usize, usize)> =
        const { std::cell::Cell::new((DISPATCH_WINDOW, TIME_WINDOW)) };
    /// How many processes' events this thread wrote again through the sorts.
    pub(super) static FELL_BACK: std::cell::Cell<usize> = const { std::cell::Cell::new(0) };
}

#[cfg(test)]
fn windows() -> (usize, usize) {
    TEST_WINDOWS.with(|w| w.get())
}

/// Writes the events of `context`'s process, from its costs and records as read, to `out` (in
/// time order on a thread of their own, [`in_time`]); `args` and `interner` name its slices.
pub(super) fn write_events(
    out: &mut (impl Write + Send),
    context: &Context,
    (costs, records, names): (
        &mut Keyed<ReplayCost>,
        &mut Keyed<DispatchRecord>,
        &RefCell<Names>,
    ),
    (args, interner): (SliceArgs, &mut Interner),
    (spill_dir, ticker): (&Path, &Ticker),
) -> io::Result<()> {
    let mut traced = Sorter::new(BY_TIME_KEY, spill_dir);
    events::trace_events(context, &mut traced)?;
    let ordering = (windows().1, traced.into_sorted()?);
    in_time::with_ordering_thread(out, ordering, |by_time| {
        let mut events = Events::new(context, by_time, (args, interner));
        let mut costs = InDispatch::new(costs);
        let mut records = InDispatch::new(records);
        let mut dispatch = Dispatch::default();
        loop {
            let from_costs = match (costs.peek()?, records.peek()?) {
                (None, None) => break,
                (Some(cost), Some(record)) => cost <= record,
                (cost, _) => cost.is_some(),
            };
            let source = if from_costs { &mut costs } else { &mut records };
            let item = source.take();
            let (key, payload) = item.split_at(BY_DISPATCH_KEY);
            let names = &names.borrow();
            dispatch.add((key, payload), (&mut events, names), ticker)?;
            source.window.recycle(item);
        }
        dispatch.finish(&mut events, &names.borrow())
    })
}

/// Dispatch id, cost (0) or record (1), place in the run.
type DispatchKey = (u64, u8, u64);

/// Items in dispatch order, through a window.
struct InDispatch<'r> {
    reader: &'r mut dyn Items,
    window: Window<DispatchKey>,
    more: bool,
    /// The next item (key and item), out of the window.
    next: Option<(DispatchKey, Vec<u8>)>,
}

impl<'r> InDispatch<'r> {
    fn new(reader: &'r mut dyn Items) -> Self {
        InDispatch {
            reader,
            window: Window::new(windows().0),
            more: true,
            next: None,
        }
    }

    /// The next item's key.
    fn peek(&mut self) -> io::Result<Option<&DispatchKey>> {
        if self.next.is_none() {
            while self.more && !self.window.is_full() {
                let mut item = self.window.buffer();
                self.more = self.reader.next_into(&mut item)?;
                if self.more {
                    let key = dispatch_key_of(&item)?;
                    self.window.push(key, item)?;
                }
            }
            self.next = self.window.pop();
        }
        Ok(self.next.as_ref().map(|(key, _)| key))
    }

    /// The item [`InDispatch::peek`] saw (key and payload).
    fn take(&mut self) -> Vec<u8> {
        self.next.take().expect("peeked").1
    }
}

fn dispatch_key_of(item: &[u8]) -> io::Result<DispatchKey> {
    let short = || io::Error::other("an item is shorter than its key");
    let key = item.get(..BY_DISPATCH_KEY).ok_or_else(short)?;
    let u64_at = |at: usize| u64::from_be_bytes(key[at..at + 8].try_into().expect("8 bytes"));
    Ok((u64_at(0), key[8], u64_at(9)))
}
