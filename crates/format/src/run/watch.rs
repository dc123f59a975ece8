//! An observer that sees every dispatch pass and replay cost of a run once, as the writers read
//! them: what the end of a run reports (its summary, `--stats`) is gathered in the writers' own
//! pass over the records instead of a second read of the databases.
//!
//! Each [`super::Records`] iterator of a watched process hands the observer the records it reads,
//! a page at a time, by their position in the process's stream: a position is handed over once,
//! however many times the records are read (a writer that stops at the first record, two writers,
//! a copy of the run read into memory), in record order.

use super::RunData;
use crate::records::{DispatchRecord, ReplayCost};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// Sees the records of a watched run ([`RunData::watch`]), each once, in record order within a
/// process (`process`: its position in the run that was watched).
pub trait RecordObserver: Send + 'static {
    fn dispatches(&mut self, process: usize, records: &[DispatchRecord]);
    fn costs(&mut self, process: usize, records: &[ReplayCost]);
}

/// How far one stream (a process's dispatches or costs) has been handed over.
#[derive(Clone, Copy, Default)]
struct Seen {
    /// Records handed over: positions `0..count`.
    count: usize,
    /// Whether a reader reached the stream's end.
    complete: bool,
}

/// The observer and how far each stream has been handed to it.
struct State<O> {
    observer: O,
    /// Per process: its dispatches' and its costs'.
    seen: Vec<[Seen; 2]>,
}

/// The type-erased [`State`] a process's records feed.
trait Feed: Send {
    fn seen(&mut self, process: usize, stream: usize) -> &mut Seen;
    fn observer(&mut self) -> &mut dyn RecordObserver;
}

impl<O: RecordObserver> Feed for State<O> {
    fn seen(&mut self, process: usize, stream: usize) -> &mut Seen {
        &mut self.seen[process][stream]
    }

    fn observer(&mut self) -> &mut dyn RecordObserver {
        &mut self.observer
    }
}

/// A kind of record a watched stream holds (dispatch passes, replay costs).
pub trait WatchedRecord: Sized {
    /// Its stream's index in [`State::seen`].
    const STREAM: usize;
    fn hand(observer: &mut dyn RecordObserver, process: usize, records: &[Self]);
}

impl WatchedRecord for DispatchRecord {
    const STREAM: usize = 0;
    fn hand(observer: &mut dyn RecordObserver, process: usize, records: &[Self]) {
        observer.dispatches(process, records);
    }
}

impl WatchedRecord for ReplayCost {
    const STREAM: usize = 1;
    fn hand(observer: &mut dyn RecordObserver, process: usize, records: &[Self]) {
        observer.costs(process, records);
    }
}

/// A watched process's link to its observer ([`super::ProcessRun::watch`]); copies of the
/// process share it.
#[derive(Clone)]
pub struct Watch {
    feed: Arc<Mutex<dyn Feed>>,
    process: usize,
}

impl Watch {
    fn feed(&self) -> MutexGuard<'_, dyn Feed + 'static> {
        // A panic while observing leaves counts that are still whole: go on with them.
        self.feed.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Hands the observer those of `records` (positions `from..`) it has not seen.
    pub(crate) fn hand<T: WatchedRecord>(&self, from: usize, records: &[T]) {
        let mut feed = self.feed();
        let seen = feed.seen(self.process, T::STREAM).count;
        // A reader hands its records in order from position 0: those before `from` were handed.
        let new = records.get(seen.saturating_sub(from)..).unwrap_or_default();
        if new.is_empty() {
            return;
        }
        T::hand(feed.observer(), self.process, new);
        feed.seen(self.process, T::STREAM).count = from + records.len();
    }

    /// A reader read the stream of `T` to its end.
    pub(crate) fn complete<T: WatchedRecord>(&self) {
        self.feed().seen(self.process, T::STREAM).complete = true;
    }

    fn is_complete(&self, stream: usize) -> bool {
        self.feed().seen(self.process, stream).complete
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Watch(process {})", self.process)
    }
}

/// Two processes are watched alike when they feed the same observer as the same process.
impl PartialEq for Watch {
    fn eq(&self, other: &Watch) -> bool {
        Arc::ptr_eq(&self.feed, &other.feed) && self.process == other.process
    }
}

/// The observer of a watched run, with what it has seen.
pub struct Watcher<O> {
    state: Arc<Mutex<State<O>>>,
}

impl<O: RecordObserver> Watcher<O> {
    /// Reads, of `run`'s watched processes (the watched run, or a part or copy of it), the
    /// streams no reader read to their end, so that the observer has seen every record (none
    /// to read after writers that read them all). A stream that cannot be read ends where it
    /// fails (the writers said why).
    pub fn complete(&self, run: &RunData) {
        for process in &run.processes {
            let Some(watch) = &process.watch else {
                continue;
            };
            if !watch.is_complete(DispatchRecord::STREAM) {
                process.each_dispatch().map_while(Result::ok).for_each(drop);
            }
            if !watch.is_complete(ReplayCost::STREAM) {
                process.each_cost().map_while(Result::ok).for_each(drop);
            }
        }
    }

    /// The observer, to read or take what it gathered.
    pub fn observer(&self) -> impl std::ops::DerefMut<Target = O> + '_ {
        Observer(self.state.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

impl<O> fmt::Debug for Watcher<O> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Watcher")
    }
}

/// [`Watcher::observer`]'s guard.
struct Observer<'a, O>(MutexGuard<'a, State<O>>);

impl<O> std::ops::Deref for Observer<'_, O> {
    type Target = O;
    fn deref(&self) -> &O {
        &self.0.observer
    }
}

impl<O> std::ops::DerefMut for Observer<'_, O> {
    fn deref_mut(&mut self) -> &mut O {
        &mut self.0.observer
    }
}

impl RunData {
    /// Has `observer` see every dispatch pass and replay cost of the run once, as they are read
    /// (by the writers, and by [`Watcher::complete`] for what they did not read), process `i`
    /// as `i`. Copies of the run, or of its processes, read afterwards feed it too.
    pub fn watch<O: RecordObserver>(&mut self, observer: O) -> Watcher<O> {
        let state = Arc::new(Mutex::new(State {
            observer,
            seen: vec![[Seen::default(); 2]; self.processes.len()],
        }));
        for (index, process) in self.processes.iter_mut().enumerate() {
            process.watch = Some(Watch {
                feed: state.clone(),
                process: index,
            });
        }
        Watcher { state }
    }
}
