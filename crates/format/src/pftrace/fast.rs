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
use super::records::{DispatchKey, Keyed};
use super::spilled::{CostFacts, Names, Pass};
use super::traced_runs::TracedEvents;
use super::window::{Payload, Window};
use crate::progress::Ticker;
use crate::records::{DispatchRecord, ReplayCost};
use crate::spill::Sorter;
use std::borrow::Cow;
use std::io::{self, Write};
use std::path::Path;

/// How many costs, and apart how many records, wait to be put in dispatch order.
const DISPATCH_WINDOW: usize = 4096;
/// How many events wait to be put in time order.
const TIME_WINDOW: usize = 16384;

/// How many items the windows hold: (in dispatch order, in time order).
#[cfg(not(test))]
pub(super) fn windows() -> (usize, usize) {
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
pub(super) fn windows() -> (usize, usize) {
    TEST_WINDOWS.with(|w| w.get())
}

/// Writes the events of `context`'s process, from its costs and records as read, to `out` (in
/// time order on a thread of their own, [`in_time`]); `args` and `interner` name its slices.
pub(super) fn write_events(
    out: &mut (impl Write + Send),
    context: &Context,
    (costs, records): (&mut Keyed<ReplayCost>, &mut Keyed<DispatchRecord>),
    (args, interner): (SliceArgs, &mut Interner),
    (spill_dir, ticker): (&Path, &Ticker),
) -> io::Result<()> {
    let mut traced = TracedEvents::new(Sorter::new(BY_TIME_KEY, spill_dir), spill_dir);
    events::trace_events(context, &mut traced)?;
    let ordering = (windows().1, traced.into_sorted()?);
    in_time::with_ordering_thread(out, ordering, |by_time| {
        let mut events = Events::new(context, by_time, (args, interner));
        let mut names = Names::default();
        let mut costs = InDispatch::new(costs, |cost, facts: &mut CostFacts, _| {
            *facts = CostFacts::of(&cost);
            cost.dispatch_id
        });
        let mut records = InDispatch::new(records, pass_of);
        let mut dispatch = Dispatch::default();
        loop {
            let from_costs = match (costs.peek(&mut names)?, records.peek(&mut names)?) {
                (None, None) => break,
                (Some(cost), Some(record)) => cost <= record,
                (cost, _) => cost.is_some(),
            };
            if from_costs {
                let (key, cost) = costs.take();
                dispatch.cost(key, cost, (&mut events, &names))?;
                costs.window.recycle(cost);
            } else {
                let (key, mut pass) = records.take();
                dispatch.pass(key, &mut pass, (&mut events, &names), ticker)?;
                records.window.recycle(pass);
            }
        }
        dispatch.finish(&mut events, &names)
    })
}

/// Sets `pass` to `record`'s (its counters numbered in `names`); returns its dispatch id.
fn pass_of(record: Cow<DispatchRecord>, pass: &mut Pass, names: &mut Names) -> u64 {
    pass.counters.clear();
    for sample in &record.counters {
        pass.counters
            .push((names.number(&sample.name), sample.value));
    }
    pass.record = record.into_owned();
    // The events take the counters from `pass.counters`, and show no ranges.
    pass.record.counters = Vec::new();
    pass.record.ranges = Vec::new();
    pass.record.dispatch_id
}

impl Payload for CostFacts {}

impl Payload for Pass {}

/// Sets an item to a record's (numbering counter names as met); returns its dispatch id.
type Fill<'a, T, P> = fn(Cow<'a, T>, &mut P, &mut Names) -> u64;

/// Records in dispatch order, through a window, each as `fill` makes it.
struct InDispatch<'r, 'a, T: Clone, P> {
    reader: &'r mut Keyed<'a, T>,
    fill: Fill<'a, T, P>,
    window: Window<DispatchKey, P>,
    more: bool,
    /// The next item (key and item), out of the window.
    next: Option<(DispatchKey, P)>,
}

impl<'r, 'a, T: Clone, P: Payload> InDispatch<'r, 'a, T, P>
where
    crate::run::Records<'a, T>: Iterator<Item = Result<Cow<'a, T>, crate::error::FormatError>>,
{
    fn new(reader: &'r mut Keyed<'a, T>, fill: Fill<'a, T, P>) -> Self {
        InDispatch {
            reader,
            fill,
            window: Window::new(windows().0),
            more: true,
            next: None,
        }
    }

    /// The next item's key.
    fn peek(&mut self, names: &mut Names) -> io::Result<Option<&DispatchKey>> {
        if self.next.is_none() {
            while self.more && !self.window.is_full() {
                let mut item = self.window.buffer();
                let fill = self.fill;
                match self
                    .reader
                    .next_with(|record| fill(record, &mut item, names))?
                {
                    Some(key) => self.window.push(key, item)?,
                    None => self.more = false,
                }
            }
            self.next = self.window.pop();
        }
        Ok(self.next.as_ref().map(|(key, _)| key))
    }

    /// The item [`InDispatch::peek`] saw.
    fn take(&mut self) -> (DispatchKey, P) {
        self.next.take().expect("peeked")
    }
}
