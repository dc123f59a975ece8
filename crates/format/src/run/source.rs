//! A process's dispatch passes and replay costs, held in memory or read from where they are
//! stored a page at a time: a run of millions of dispatches is written without ever being held
//! whole (the writers make one pass over [`Records`], holding one page).

use super::watch::{Watch, WatchedRecord};
use crate::error::FormatError;
use crate::records::{DispatchRecord, ReplayCost};
use std::borrow::Cow;
use std::fmt;
use std::ops::RangeInclusive;
use std::sync::{Arc, Mutex};

pub use super::ranges::{IdRanges, Stored};

/// One page of records and the key to ask the next page after; an empty page is the end.
pub type Page<T> = (Vec<T>, i64);

/// Where a process's records are kept when they are not in memory (its database): read in pages,
/// in the order they were recorded.
pub trait RecordSource: fmt::Debug + Send + Sync {
    /// The dispatch passes after the one `after` names (0: from the first).
    fn dispatches_after(&self, after: i64) -> Result<Page<DispatchRecord>, FormatError>;
    /// The replay costs after the one `after` names (0: from the first).
    fn costs_after(&self, after: i64) -> Result<Page<ReplayCost>, FormatError>;
    /// How many dispatch passes and replay costs there are.
    fn counts(&self) -> (usize, usize);
    /// How many records of each tracing kind there are (in [`super::TraceKind::ALL`]'s order),
    /// where it knows without reading them.
    fn trace_counts(&self) -> Option<[usize; 4]> {
        None
    }
    /// The row ids its dispatch passes (`Passes`) or replay costs (`Costs`) lie in, when it can
    /// read them by ranges of ids on several connections at once ([`Self::dispatches_in`],
    /// [`Self::costs_in`]); None: a page after another only.
    fn id_ranges(&self, _kind: Stored) -> Option<IdRanges> {
        None
    }
    /// The dispatch passes whose row ids are in `ids`, in order, read on connection `reader`
    /// (asked only where [`Self::id_ranges`] gave ranges); `last`: the reader's last range.
    fn dispatches_in(
        &self,
        _ids: RangeInclusive<i64>,
        _reader: usize,
        _last: bool,
    ) -> Result<Vec<DispatchRecord>, FormatError> {
        Ok(Vec::new())
    }
    /// The replay costs whose row ids are in `ids`, as [`Self::dispatches_in`].
    fn costs_in(
        &self,
        _ids: RangeInclusive<i64>,
        _reader: usize,
        _last: bool,
    ) -> Result<Vec<ReplayCost>, FormatError> {
        Ok(Vec::new())
    }
    /// Whether every agent, kernel and counter the records mention is one the process
    /// describes (then a writer need not read the records to find the others).
    fn mentions_only_described(&self) -> bool {
        false
    }
    /// The source as itself, for a writer that can copy it whole (`db::bulk`); None: it cannot.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }
    /// Where its tracing records are read from, if it keeps any ([`super::traces`]).
    fn traces(&self) -> Option<&dyn super::TraceSource> {
        None
    }
}

/// A stored process's records: two runs are equal when they read the same source.
#[derive(Clone, Debug)]
pub struct Source(pub Arc<dyn RecordSource>);

impl PartialEq for Source {
    fn eq(&self, other: &Source) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

pub(crate) type NextPage<'a, T> = Box<dyn FnMut(i64) -> Result<Page<T>, FormatError> + 'a>;

/// The pages of `source` that `fetch` reads, read ahead by a thread of their own
/// ([`read_ahead_with`]), from the first.
pub(crate) fn read_ahead<T: Send + 'static>(
    source: &Source,
    fetch: fn(&dyn RecordSource, i64) -> Result<Page<T>, FormatError>,
) -> NextPage<'static, T> {
    let source = Arc::clone(&source.0);
    let mut after = 0;
    read_ahead_with(move || {
        let (records, last) = fetch(&*source, after)?;
        after = last;
        Ok(records)
    })
}

/// The pages `next` reads one after another (an empty one is the end), read ahead by a thread
/// of their own: the next page is read from the database while the writer formats this one (on
/// a second core, the reading costs no time). The thread starts at the first page and holds at
/// most two pages besides the one being written; it stops at the end, at an error, or when the
/// pages are no longer wanted.
pub(crate) fn read_ahead_with<T: Send + 'static>(
    next: impl FnMut() -> Result<Vec<T>, FormatError> + Send + 'static,
) -> NextPage<'static, T> {
    let next = Arc::new(Mutex::new(next));
    let mut pages: Option<crossbeam_channel::Receiver<Result<Vec<T>, FormatError>>> = None;
    Box::new(move |_| {
        let receiver = pages.get_or_insert_with(|| {
            let (sender, receiver) = crossbeam_channel::bounded(1);
            let reader = Arc::clone(&next);
            let spawned = std::thread::Builder::new()
                .name("kreplay-read".into())
                .spawn(move || loop {
                    let page = read_page(&reader);
                    let more = matches!(&page, Ok(records) if !records.is_empty());
                    if sender.send(page).is_err() || !more {
                        return;
                    }
                });
            if spawned.is_err() {
                // No thread to spare: the pages are read here, one at a time.
                let (sender, receiver) = crossbeam_channel::unbounded();
                drop(sender);
                return receiver;
            }
            receiver
        });
        let page = match receiver.recv() {
            Ok(page) => page,
            // The thread could not start, or ended without its page (it panicked): read here.
            Err(_) => read_page(&next),
        };
        page.map(|records| (records, 0))
    })
}

/// The next page `next` reads. A reader that panicked left the pages as far as it read them:
/// go on from there.
fn read_page<T, F: FnMut() -> Result<Vec<T>, FormatError>>(
    next: &Mutex<F>,
) -> Result<Vec<T>, FormatError> {
    (next.lock().unwrap_or_else(|e| e.into_inner()))()
}

/// The records held in memory, then those of the source, one page at a time; an error ends it.
/// A watched process's records are handed to its observer as they are read ([`Watch`]).
pub struct Records<'a, T: Clone> {
    memory: &'a [T],
    /// The next record of `memory` to yield.
    at: usize,
    next_page: Option<NextPage<'a, T>>,
    page: std::vec::IntoIter<T>,
    after: i64,
    watch: Option<Watch>,
    /// Records read so far, memory's and the pages': the position of the next page's first.
    read: usize,
}

impl<'a, T: Clone + WatchedRecord> Records<'a, T> {
    pub(crate) fn new(
        memory: &'a [T],
        next_page: Option<NextPage<'a, T>>,
        watch: Option<Watch>,
    ) -> Records<'a, T> {
        if let Some(watch) = &watch {
            watch.hand(0, memory);
        }
        Records {
            memory,
            at: 0,
            next_page,
            page: Vec::new().into_iter(),
            after: 0,
            watch,
            read: memory.len(),
        }
    }

    /// The end of the records is reached.
    fn ended(&mut self) {
        self.next_page = None;
        if let Some(watch) = self.watch.take() {
            watch.complete::<T>();
        }
    }
}

impl<'a, T: Clone + WatchedRecord> Iterator for Records<'a, T> {
    type Item = Result<Cow<'a, T>, FormatError>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(record) = self.memory.get(self.at) {
            self.at += 1;
            return Some(Ok(Cow::Borrowed(record)));
        }
        loop {
            if let Some(record) = self.page.next() {
                return Some(Ok(Cow::Owned(record)));
            }
            let Some(next_page) = self.next_page.as_mut() else {
                self.ended();
                return None;
            };
            match next_page(self.after) {
                Ok((records, _)) if records.is_empty() => {
                    self.ended();
                    return None;
                }
                Ok((records, last)) => {
                    self.after = last;
                    if let Some(watch) = &self.watch {
                        watch.hand(self.read, &records);
                    }
                    self.read += records.len();
                    self.page = records.into_iter();
                }
                Err(e) => {
                    self.next_page = None;
                    self.watch = None;
                    return Some(Err(e));
                }
            }
        }
    }
}
