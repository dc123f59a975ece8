//! A process's dispatch passes and replay costs, held in memory or read from where they are
//! stored a page at a time: a run of millions of dispatches is written without ever being held
//! whole (the writers make one pass over [`Records`], holding one page).

use super::watch::{Watch, WatchedRecord};
use crate::error::FormatError;
use crate::records::{DispatchRecord, ReplayCost};
use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

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
    /// Whether every agent, kernel and counter the records mention is one the process
    /// describes (then a writer need not read the records to find the others).
    fn mentions_only_described(&self) -> bool {
        false
    }
    /// The source as itself, for a writer that can copy it whole (`db::bulk`); None: it cannot.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
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

/// The pages of `source` that `fetch` reads, read ahead by a thread of their own: the next page
/// is read from the database while the writer formats this one (on a second core, the reading
/// costs no time). The thread starts at the first page and holds at most two pages besides the
/// one being written; it stops at the end, at an error, or when the pages are no longer wanted.
pub(crate) fn read_ahead<T: Send + 'static>(
    source: &Source,
    fetch: fn(&dyn RecordSource, i64) -> Result<Page<T>, FormatError>,
) -> NextPage<'static, T> {
    let source = Arc::clone(&source.0);
    let mut pages: Option<crossbeam_channel::Receiver<Result<Page<T>, FormatError>>> = None;
    Box::new(move |after| {
        let receiver = pages.get_or_insert_with(|| {
            let (sender, receiver) = crossbeam_channel::bounded(1);
            let source = Arc::clone(&source);
            let spawned = std::thread::Builder::new()
                .name("kreplay-read".into())
                .spawn(move || {
                    let mut after = after;
                    loop {
                        let page = fetch(&*source, after);
                        let last = match &page {
                            Ok((records, last)) if !records.is_empty() => Some(*last),
                            _ => None,
                        };
                        if sender.send(page).is_err() {
                            return;
                        }
                        match last {
                            Some(last) => after = last,
                            None => return,
                        }
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
        match receiver.recv() {
            Ok(page) => page,
            // The thread could not start, or ended without its page (it panicked): read here.
            Err(_) => fetch(&*source, after),
        }
    })
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
