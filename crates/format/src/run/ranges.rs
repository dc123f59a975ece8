//! A stored process's records read by ranges of row ids on several threads at once, each with a
//! connection of its own, and handed to the writer in order (issue 49): reading a page costs
//! more CPU than formatting it, so one reading thread bounded every writer on two cores.

use super::source::{read_ahead, NextPage, Page, RecordSource, Source};
use crate::error::FormatError;
use crossbeam_channel::Receiver;
use std::ops::RangeInclusive;
use std::sync::Arc;

/// How many threads read a process's records at once (each range of ids in turn).
pub const READERS: usize = 2;

/// Which of a process's stored records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored {
    /// Its dispatch passes.
    Passes,
    /// Its replay costs.
    Costs,
}

/// Row ids from `first` to `last`, read `width` ids at a time: range `n` is
/// `first + n * width ..= first + (n + 1) * width - 1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IdRanges {
    pub first: i64,
    pub last: i64,
    pub width: i64,
}

impl IdRanges {
    /// How many ranges there are.
    pub fn count(self) -> i64 {
        match self.last < self.first || self.width < 1 {
            true => 0,
            false => (self.last - self.first) / self.width + 1,
        }
    }

    /// Range `n`'s ids.
    pub fn nth(self, n: i64) -> RangeInclusive<i64> {
        let low = self.first + n * self.width;
        low..=(low + self.width - 1).min(self.last)
    }
}

/// The pages of a process's passes or costs (`kind`): by ranges of ids on [`READERS`] threads
/// (`fetch_in`) where the source reads them so, else one page after another on one thread
/// (`fetch_after`, [`read_ahead`]).
pub(crate) fn pages<T: Send + 'static>(
    source: &Source,
    kind: Stored,
    fetch_in: InRange<T>,
    fetch_after: fn(&dyn RecordSource, i64) -> Result<Page<T>, FormatError>,
) -> NextPage<'static, T> {
    match source.0.id_ranges(kind) {
        Some(ranges) => by_ranges(source, ranges, fetch_in),
        None => read_ahead(source, fetch_after),
    }
}

/// Reads the records of a range of ids on a reader's connection (the reader's last range or not).
pub(crate) type InRange<T> =
    fn(&dyn RecordSource, RangeInclusive<i64>, usize, bool) -> Result<Vec<T>, FormatError>;

/// The records of `ranges`, read by [`READERS`] threads (thread `r` reads ranges `r`,
/// `r + READERS`, …, one page ahead of the writer at most) and handed over in the ranges'
/// order, empty ranges skipped. A thread that could not start, or stopped (it panicked), leaves
/// its ranges to be read here.
fn by_ranges<T: Send + 'static>(
    source: &Source,
    ranges: IdRanges,
    fetch: InRange<T>,
) -> NextPage<'static, T> {
    let source = Arc::clone(&source.0);
    let count = ranges.count();
    let mut readers: Option<Vec<Option<Pages<T>>>> = None;
    let mut next = 0;
    Box::new(move |_| {
        let readers = readers.get_or_insert_with(|| {
            (0..READERS)
                .map(|reader| spawn_reader(&source, ranges, fetch, reader))
                .collect()
        });
        while next < count {
            let (n, reader) = (next, (next % READERS as i64) as usize);
            next += 1;
            let received = readers[reader].as_ref().and_then(|r| r.recv().ok());
            let page = received.unwrap_or_else(|| {
                readers[reader] = None;
                fetch(&*source, ranges.nth(n), reader, n + READERS as i64 >= count)
            });
            match page {
                Ok(records) if records.is_empty() => continue,
                Ok(records) => return Ok((records, 0)),
                Err(e) => {
                    next = count;
                    return Err(e);
                }
            }
        }
        Ok((Vec::new(), 0))
    })
}

/// Where a reading thread hands over its pages, one range each.
type Pages<T> = Receiver<Result<Vec<T>, FormatError>>;

/// Starts thread `reader` on its ranges; None if it could not start.
fn spawn_reader<T: Send + 'static>(
    source: &Arc<dyn RecordSource>,
    ranges: IdRanges,
    fetch: InRange<T>,
    reader: usize,
) -> Option<Pages<T>> {
    let (sender, receiver) = crossbeam_channel::bounded(1);
    let source = Arc::clone(source);
    let count = ranges.count();
    std::thread::Builder::new()
        .name("kreplay-read".into())
        .spawn(move || {
            let mut n = reader as i64;
            while n < count {
                let last = n + READERS as i64 >= count;
                let page = fetch(&*source, ranges.nth(n), reader, last);
                let failed = page.is_err();
                // A receiver gone: the pages are no longer wanted.
                if sender.send(page).is_err() || failed {
                    return;
                }
                n += READERS as i64;
            }
        })
        .ok()
        .map(|_| receiver)
}
