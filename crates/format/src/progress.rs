//! What the writers say while they write a run's files: which file, how many records it has,
//! how many are written so far. The CLI shows it on a terminal; the writers report in batches,
//! so that a run of millions of records costs a few thousand calls.

use std::cell::Cell;
use std::path::Path;

/// Told as each file is written.
pub trait WriteProgress: Sync {
    /// Writing `path` begins; it will take about `records` steps (a step per record it reads,
    /// and for a file whose records are sorted first, one more per record it writes).
    fn begin(&self, path: &Path, records: u64);
    /// `steps` more steps of the file are done.
    fn advance(&self, steps: u64);
}

/// Tells nothing.
pub struct Silent;

impl WriteProgress for Silent {
    fn begin(&self, _: &Path, _: u64) {}
    fn advance(&self, _: u64) {}
}

/// How many steps a [`Ticker`] gathers before it tells them.
const BATCH: u64 = 4096;

/// Counts one file's steps and tells them in batches (the rest when dropped).
pub(crate) struct Ticker<'a> {
    progress: &'a dyn WriteProgress,
    pending: Cell<u64>,
}

impl<'a> Ticker<'a> {
    /// Tells `progress` that writing `path` (`records` steps) begins.
    pub(crate) fn begin(progress: &'a dyn WriteProgress, path: &Path, records: u64) -> Ticker<'a> {
        progress.begin(path, records);
        Ticker {
            progress,
            pending: Cell::new(0),
        }
    }

    /// One more step done.
    pub(crate) fn tick(&self) {
        let pending = self.pending.get() + 1;
        if pending >= BATCH {
            self.progress.advance(pending);
            self.pending.set(0);
        } else {
            self.pending.set(pending);
        }
    }

    /// `steps` more steps done at once.
    pub(crate) fn tick_by(&self, steps: u64) {
        self.progress.advance(self.pending.take() + steps);
    }
}

impl Drop for Ticker<'_> {
    fn drop(&mut self) {
        let pending = self.pending.take();
        if pending > 0 {
            self.progress.advance(pending);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[derive(Default)]
    struct Told(Mutex<Vec<(String, u64)>>);

    impl WriteProgress for Told {
        fn begin(&self, path: &Path, records: u64) {
            let name = path.display().to_string();
            self.0.lock().unwrap().push((name, records));
        }
        fn advance(&self, steps: u64) {
            self.0.lock().unwrap().push(("+".into(), steps));
        }
    }

    #[test]
    fn steps_are_told_in_batches_and_the_rest_at_the_end() {
        let told = Told::default();
        {
            let ticker = Ticker::begin(&told, Path::new("a.csv"), 5000);
            for _ in 0..5000 {
                ticker.tick();
            }
        }
        let told = told.0.into_inner().unwrap();
        assert_eq!(
            told,
            [
                ("a.csv".into(), 5000),
                ("+".into(), 4096),
                ("+".into(), 904)
            ]
        );
    }
}
