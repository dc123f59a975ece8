//! An external sort with bounded memory, for writers that must reorder a run's records (the
//! Perfetto trace orders its events by time; the records come in the order they were recorded):
//! items are kept in memory up to a budget, each full buffer is sorted and written to an
//! anonymous temporary file (a "run"), and the runs are merged when the items are read back.
//!
//! An item is bytes whose first `key_len` bytes are its key, compared as bytes: a key made of
//! big-endian unsigned integers (see [`Key`]) sorts as the tuple of those integers. Keys are
//! unique (the writers end them with a sequence number), so the order is total.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};

/// How many bytes of items a sorter keeps in memory before it writes them to a run.
pub(crate) const MEMORY_BUDGET: usize = 16 << 20;
/// The key length of a sorter whose items are compared whole: each item its own key, so
/// equal items may come in any order.
pub(crate) const WHOLE_ITEM: usize = usize::MAX;
/// How many runs are merged at once: as many runs of one level are merged into one run of the
/// next, so each item is written once per level (log base `MAX_RUNS` of the runs' count), not
/// once per merge.
const MAX_RUNS: usize = 64;
/// The read buffer of each run while they are merged.
const RUN_BUFFER: usize = 64 << 10;

/// How many bytes of items a sorter made by [`Sorter::new`] keeps in memory.
#[cfg(not(test))]
pub(crate) fn budget() -> usize {
    MEMORY_BUDGET
}

#[cfg(test)]
thread_local! {
    /// The budget of the sorters this thread makes: tests make them spill at once.
    pub(crate) static TEST_BUDGET: std::cell::Cell<usize> = const { std::cell::Cell::new(MEMORY_BUDGET) };
}

#[cfg(test)]
pub(crate) fn budget() -> usize {
    TEST_BUDGET.with(|b| b.get())
}

/// A key built from unsigned integers, most significant first, each big-endian.
#[derive(Default)]
pub(crate) struct Key(Vec<u8>);

impl Key {
    pub(crate) fn new() -> Key {
        Key(Vec::with_capacity(48))
    }

    pub(crate) fn u64(mut self, value: u64) -> Key {
        self.0.extend_from_slice(&value.to_be_bytes());
        self
    }

    pub(crate) fn u8(mut self, value: u8) -> Key {
        self.0.push(value);
        self
    }

    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }
}

/// Items pushed in any order and read back sorted by key.
pub(crate) struct Sorter {
    key_len: usize,
    budget: usize,
    /// Where the runs are written (next to the file being written).
    dir: PathBuf,
    /// The items in memory, back to back, and where each one is.
    arena: Vec<u8>,
    items: Vec<(usize, usize)>,
    /// The runs, each with its level (0: written from memory; n + 1: merged from `MAX_RUNS`
    /// runs of level n), levels never rising towards the end.
    runs: Vec<(File, u32)>,
}

#[cfg(test)]
thread_local! {
    /// How many items the sorters of this thread wrote to runs (each time an item is written).
    static ITEMS_WRITTEN: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

/// Counts `count` items written to a run (tests).
fn written(count: usize) {
    #[cfg(test)]
    ITEMS_WRITTEN.with(|w| w.set(w.get() + count as u64));
    #[cfg(not(test))]
    let _ = count;
}

impl Sorter {
    /// A sorter of items whose keys are `key_len` bytes long, spilling into `dir`.
    pub(crate) fn new(key_len: usize, dir: &Path) -> Sorter {
        Sorter::with_budget(key_len, dir, budget())
    }

    pub(crate) fn with_budget(key_len: usize, dir: &Path, budget: usize) -> Sorter {
        Sorter {
            key_len,
            budget,
            dir: dir.to_path_buf(),
            arena: Vec::new(),
            items: Vec::new(),
            runs: Vec::new(),
        }
    }

    /// Adds an item: `key` (of the sorter's key length, any for [`WHOLE_ITEM`]), then `payload`.
    pub(crate) fn push_bytes(&mut self, key: &[u8], payload: &[u8]) -> io::Result<()> {
        debug_assert!(self.key_len == WHOLE_ITEM || key.len() == self.key_len);
        let at = self.arena.len();
        self.arena.extend_from_slice(key);
        self.arena.extend_from_slice(payload);
        self.items.push((at, self.arena.len() - at));
        if self.arena.len() + self.items.len() * 16 >= self.budget {
            self.spill()?;
        }
        Ok(())
    }

    /// The items in memory, sorted by key.
    fn sorted_in_memory(&mut self) {
        let (arena, key_len) = (&self.arena, self.key_len);
        self.items.sort_unstable_by(|a, b| {
            arena[a.0..a.0 + a.1.min(key_len)].cmp(&arena[b.0..b.0 + b.1.min(key_len)])
        });
    }

    /// Writes the items in memory, sorted, to a new run; merges the last runs while
    /// [`MAX_RUNS`] of them are of one level.
    fn spill(&mut self) -> io::Result<()> {
        self.sorted_in_memory();
        let mut run = RunWriter::new(&self.dir)?;
        for &(at, len) in &self.items {
            run.push(&self.arena[at..at + len], &[])?;
        }
        self.runs.push((run.finish()?, 0));
        self.arena.clear();
        self.items.clear();
        while let Some(&(_, level)) = self.runs.last() {
            let same = self.runs.iter().rev().take_while(|r| r.1 == level).count();
            if same < MAX_RUNS {
                break;
            }
            self.merge_last(same, level + 1)?;
        }
        Ok(())
    }

    /// Merges the last `count` runs into one of level `level`.
    fn merge_last(&mut self, count: usize, level: u32) -> io::Result<()> {
        let runs = self.runs.split_off(self.runs.len() - count);
        let mut merged = Merge::new(runs.into_iter().map(|r| r.0).collect(), self.key_len)?;
        let mut run = RunWriter::new(&self.dir)?;
        while let Some(item) = merged.next_item()? {
            run.push(&item, &[])?;
        }
        self.runs.push((run.finish()?, level));
        Ok(())
    }

    /// Adds a run its caller wrote in key order ([`RunWriter`]), merged with the sorter's items
    /// when they are read: items that came nearly in order, put in order without a sort.
    pub(crate) fn add_sorted_run(&mut self, run: File) {
        self.runs.push((run, 0));
    }

    /// Calls `each` with every item's key and payload, in key order.
    pub(crate) fn drain(
        self,
        mut each: impl FnMut(&[u8], &[u8]) -> io::Result<()>,
    ) -> io::Result<()> {
        let key_len = self.key_len;
        let mut sorted = self.into_sorted()?;
        while let Some(done) = sorted.next_with(|item| each(&item[..key_len], &item[key_len..]))? {
            done?;
        }
        Ok(())
    }

    /// The items, to be read one at a time in key order.
    pub(crate) fn into_sorted(mut self) -> io::Result<Sorted> {
        if self.runs.is_empty() {
            self.sorted_in_memory();
            return Ok(Sorted::Memory(self.arena, self.items.into_iter()));
        }
        if !self.items.is_empty() {
            self.spill()?;
        }
        // Up to MAX_RUNS - 1 runs of each level are left: the smallest are merged first.
        if self.runs.len() > MAX_RUNS {
            self.merge_last(self.runs.len() - MAX_RUNS + 1, u32::MAX)?;
        }
        let runs = std::mem::take(&mut self.runs).into_iter().map(|r| r.0);
        Ok(Sorted::Runs(Merge::new(runs.collect(), self.key_len)?))
    }
}

/// A run written item by item, in key order, into an anonymous file in a folder: each item its
/// length (u32) and its bytes (key, then payload).
pub(crate) struct RunWriter {
    file: BufWriter<File>,
    items: usize,
}

impl RunWriter {
    pub(crate) fn new(dir: &Path) -> io::Result<RunWriter> {
        Ok(RunWriter {
            file: BufWriter::with_capacity(RUN_BUFFER, tempfile::tempfile_in(dir)?),
            items: 0,
        })
    }

    /// Adds the item `key` then `payload` (after every item with a lesser key).
    pub(crate) fn push(&mut self, key: &[u8], payload: &[u8]) -> io::Result<()> {
        let len = u32::try_from(key.len() + payload.len())
            .map_err(|_| io::Error::other("a sort item longer than 4 GiB"))?;
        self.file.write_all(&len.to_le_bytes())?;
        self.file.write_all(key)?;
        self.file.write_all(payload)?;
        self.items += 1;
        Ok(())
    }

    /// The run, to be read from its start.
    pub(crate) fn finish(self) -> io::Result<File> {
        written(self.items);
        let mut file = self.file.into_inner().map_err(|e| e.into_error())?;
        file.rewind()?;
        Ok(file)
    }
}

/// A sorter's items in key order.
pub(crate) enum Sorted {
    Memory(Vec<u8>, std::vec::IntoIter<(usize, usize)>),
    Runs(Merge),
}

impl Sorted {
    /// Calls `with` with the next item (key and payload); `None` after the last.
    pub(crate) fn next_with<R>(&mut self, with: impl FnOnce(&[u8]) -> R) -> io::Result<Option<R>> {
        Ok(match self {
            Sorted::Memory(arena, items) => {
                items.next().map(|(at, len)| with(&arena[at..at + len]))
            }
            Sorted::Runs(merge) => merge.next_item()?.map(|item| with(&item)),
        })
    }
}

/// The runs' items in key order: each run's next item in a heap.
pub(crate) struct Merge {
    readers: Vec<BufReader<File>>,
    heap: BinaryHeap<Reverse<(Vec<u8>, usize)>>,
    key_len: usize,
}

impl Merge {
    fn new(runs: Vec<File>, key_len: usize) -> io::Result<Merge> {
        let mut merge = Merge {
            readers: runs
                .into_iter()
                .map(|f| BufReader::with_capacity(RUN_BUFFER, f))
                .collect(),
            heap: BinaryHeap::new(),
            key_len,
        };
        for index in 0..merge.readers.len() {
            merge.refill(index, Vec::new())?;
        }
        Ok(merge)
    }

    /// Reads run `index`'s next item (into `buffer`'s allocation) onto the heap.
    fn refill(&mut self, index: usize, mut buffer: Vec<u8>) -> io::Result<()> {
        let reader = &mut self.readers[index];
        let mut len = [0u8; 4];
        match reader.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(()),
            Err(e) => return Err(e),
        }
        buffer.resize(u32::from_le_bytes(len) as usize, 0);
        reader.read_exact(&mut buffer)?;
        if self.key_len != WHOLE_ITEM && buffer.len() < self.key_len {
            return Err(io::Error::other(
                "a sort run holds an item shorter than its key",
            ));
        }
        self.heap.push(Reverse((buffer, index)));
        Ok(())
    }

    /// The next item in key order; the caller gives it back by calling again.
    fn next_item(&mut self) -> io::Result<Option<Vec<u8>>> {
        let Some(Reverse((item, index))) = self.heap.pop() else {
            return Ok(None);
        };
        // The run's next item goes into a fresh buffer; this one is returned.
        self.refill(index, Vec::with_capacity(item.len()))?;
        Ok(Some(item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sorted_with_budget(budget: usize, values: &[u64]) -> Vec<(u64, Vec<u8>)> {
        let dir = tempfile::tempdir().unwrap();
        let mut sorter = Sorter::with_budget(16, dir.path(), budget);
        for (seq, value) in values.iter().enumerate() {
            let key = Key::new().u64(*value).u64(seq as u64);
            sorter
                .push_bytes(key.bytes(), &value.to_le_bytes()[..(value % 8) as usize])
                .unwrap();
        }
        let mut out = Vec::new();
        sorter
            .drain(|key, payload| {
                let value = u64::from_be_bytes(key[..8].try_into().unwrap());
                out.push((value, payload.to_vec()));
                Ok(())
            })
            .unwrap();
        out
    }

    #[test]
    fn items_come_back_in_key_order_in_memory_or_through_many_runs() {
        // A fixed pseudo-random sequence, with repeats.
        let values: Vec<u64> = (0..20_000u64).map(|i| (i * 7919 + 13) % 5003).collect();
        let mut expected: Vec<(usize, u64)> = values.iter().copied().enumerate().collect();
        expected.sort_by_key(|&(seq, v)| (v, seq));
        let expected: Vec<(u64, Vec<u8>)> = expected
            .into_iter()
            .map(|(_, v)| (v, v.to_le_bytes()[..(v % 8) as usize].to_vec()))
            .collect();
        // In memory; a few runs; more runs than are merged at once.
        for budget in [usize::MAX, 200_000, 4_000] {
            assert_eq!(
                sorted_with_budget(budget, &values),
                expected,
                "budget {budget}"
            );
        }
        assert!(sorted_with_budget(1_000, &[]).is_empty());
    }

    #[test]
    fn each_item_is_written_once_per_level_of_runs_not_once_per_merge() {
        // About 10 items a run: some 1,000 runs, 15 merged runs of level 1 and a few of level 0
        // left, each item written twice; merging every run into one at each MAX_RUNS-th wrote
        // each item some eight times.
        let values: Vec<u64> = (0..10_000u64).map(|i| (i * 7919 + 13) % 5003).collect();
        ITEMS_WRITTEN.with(|w| w.set(0));
        let sorted = sorted_with_budget(400, &values);
        let written = ITEMS_WRITTEN.with(|w| w.get());
        assert_eq!(sorted.len(), values.len());
        assert!(sorted.windows(2).all(|w| w[0].0 <= w[1].0));
        let n = values.len() as u64;
        assert!(
            written > n && written <= 2 * n + n / 10,
            "{written} items written for {n}"
        );
    }
}
