//! The tracing records' events in time order with little sorting: each kind of record (markers,
//! API calls, copies, allocations) comes nearly in time order as recorded, so its events go
//! through a reorder window ([`super::window`]) into a sorted run of their own, written once;
//! the few a window refuses (a thread's long call, recorded at its end after thousands of other
//! threads' calls) go to the external sort, with whose items the runs are merged when read.
//! One external sort of every event instead wrote each about twice at 10^7 dispatches (17 GB).

use super::events::{key_bytes, TimeKey};
use super::window::{is_not_ordered, Window};
use crate::spill::{RunWriter, Sorted, Sorter};
use std::io;
use std::path::{Path, PathBuf};

/// Events of one kind after another, each its key and its packet; read back in key order.
pub(super) struct TracedEvents {
    window: Window<TimeKey>,
    capacity: usize,
    /// This kind's events that left the window, once it was full.
    run: Option<RunWriter>,
    /// The refused events, and the finished kinds' runs.
    sorter: Sorter,
    dir: PathBuf,
}

impl TracedEvents {
    /// Events merged, when read, with `sorter`'s items (of [`super::events::BY_TIME_KEY`]-byte
    /// keys); runs written into `dir`; each kind through a window as large as the dispatches'
    /// events' (16384 events).
    pub(super) fn new(sorter: Sorter, dir: &Path) -> TracedEvents {
        TracedEvents::with_window(sorter, dir, super::fast::windows().1)
    }

    pub(super) fn with_window(sorter: Sorter, dir: &Path, capacity: usize) -> TracedEvents {
        TracedEvents {
            window: Window::new(capacity),
            capacity,
            run: None,
            sorter,
            dir: dir.to_path_buf(),
        }
    }

    /// Adds an event of the current kind: `packet`, at `key`.
    pub(super) fn push(&mut self, key: TimeKey, packet: &[u8]) -> io::Result<()> {
        let mut item = self.window.buffer();
        item.extend_from_slice(packet);
        match self.window.push(key, item) {
            Ok(()) => {}
            Err(e) if is_not_ordered(&e) => {
                return self.sorter.push_bytes(&key_bytes(&key), packet);
            }
            Err(e) => return Err(e),
        }
        if self.window.is_full() {
            if let Some((key, item)) = self.window.pop() {
                let run = match &mut self.run {
                    Some(run) => run,
                    None => self.run.insert(RunWriter::new(&self.dir)?),
                };
                run.push(&key_bytes(&key), &item)?;
                self.window.recycle(item);
            }
        }
        Ok(())
    }

    /// The events of another kind come next: this kind's are complete (in its run, or, if they
    /// all fit the window, handed to the sort).
    pub(super) fn next_kind(&mut self) -> io::Result<()> {
        match self.run.take() {
            Some(mut run) => {
                while let Some((key, item)) = self.window.pop() {
                    run.push(&key_bytes(&key), &item)?;
                }
                self.sorter.add_sorted_run(run.finish()?);
            }
            None => {
                while let Some((key, item)) = self.window.pop() {
                    self.sorter.push_bytes(&key_bytes(&key), &item)?;
                }
            }
        }
        self.window = Window::new(self.capacity);
        Ok(())
    }

    /// Every event, in key order.
    pub(super) fn into_sorted(mut self) -> io::Result<Sorted> {
        self.next_kind()?;
        self.sorter.into_sorted()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pftrace::events::BY_TIME_KEY;

    #[test]
    fn kinds_nearly_in_order_and_events_far_out_of_it_come_back_in_key_order() {
        let dir = tempfile::tempdir().unwrap();
        let key = |time: u64, seq: u64| (time, 0, 0, 0, 0, seq);
        // Three kinds over the same times, each a little out of order, one with events far
        // behind (a long call recorded at its end), one that fits the window.
        let mut kinds: Vec<Vec<TimeKey>> = Vec::new();
        kinds.push((0..5_000).map(|t| key(t ^ 3, 0)).collect());
        let mut far: Vec<TimeKey> = (0..5_000).map(|t| key(t, 1)).collect();
        for at in [700, 2_500, 4_999] {
            far.insert(at, key(at as u64 / 7, 9));
        }
        kinds.push(far);
        kinds.push((0..20).rev().map(|t| key(t * 250, 2)).collect());
        let mut expected: Vec<TimeKey> = kinds.concat();
        expected.sort();
        for (window, budget) in [(64, usize::MAX), (16, 2_000), (1, 500)] {
            let sorter = Sorter::with_budget(BY_TIME_KEY, dir.path(), budget);
            let mut events = TracedEvents::with_window(sorter, dir.path(), window);
            for kind in &kinds {
                for k in kind {
                    events.push(*k, &k.0.to_le_bytes()).unwrap();
                }
                events.next_kind().unwrap();
            }
            let mut sorted = events.into_sorted().unwrap();
            let mut got = Vec::new();
            while let Some((k, payload)) = sorted
                .next_with(|item| {
                    let (k, payload) = item.split_at(BY_TIME_KEY);
                    (super::super::events::time_key_of(k), payload.to_vec())
                })
                .unwrap()
            {
                assert_eq!(payload, k.0.to_le_bytes());
                got.push(k);
            }
            assert_eq!(got, expected, "window {window}, budget {budget}");
        }
    }
}
