//! Lanes for intervals that may overlap (start/end ranges, the copies of a stream): each interval
//! on the first lane free at its start, the intervals taken in start order. They are put in
//! start order by an external sort and their lanes given back in the intervals' order by a
//! second one ([`crate::spill`]): a run's millions of copies are not held (issue 49).

use crate::spill::{Key, Sorted, Sorter};
use std::io;
use std::path::Path;

/// The memory each of the two sorts holds before it spills: a few MB, beside the trace's own
/// sorts.
const BUDGET: usize = 4 << 20;

/// The lanes of a sequence of intervals, in the intervals' order.
pub(super) struct Lanes {
    sorted: Sorted,
    count: usize,
}

/// The big-endian integer at `at` of `bytes`.
fn be(bytes: &[u8], at: usize) -> u64 {
    u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

impl Lanes {
    /// The lanes of `intervals` (start, end), sorted through files in `spill_dir`.
    pub(super) fn of(
        intervals: impl Iterator<Item = io::Result<(u64, u64)>>,
        spill_dir: &Path,
    ) -> io::Result<Lanes> {
        let mut by_start = Sorter::with_budget(16, spill_dir, BUDGET);
        let mut count = 0;
        for (index, interval) in intervals.enumerate() {
            count += 1;
            let (start, end) = interval?;
            let key = Key::new().u64(start).u64(index as u64);
            by_start.push_bytes(key.bytes(), &end.to_be_bytes())?;
        }
        let mut by_index = Sorter::with_budget(8, spill_dir, BUDGET);
        // When each lane is free again.
        let mut free_from: Vec<u64> = Vec::new();
        by_start.drain(|key, end| {
            let (start, end) = (be(key, 0), be(end, 0));
            let lane = match free_from.iter().position(|&f| f <= start) {
                Some(lane) => lane,
                None => {
                    free_from.push(0);
                    free_from.len() - 1
                }
            };
            free_from[lane] = end.max(start);
            by_index.push_bytes(&key[8..], &(lane as u64).to_be_bytes())
        })?;
        Ok(Lanes {
            sorted: by_index.into_sorted()?,
            count,
        })
    }

    /// The next interval's lane (0 past the last).
    pub(super) fn next_lane(&mut self) -> io::Result<usize> {
        Ok(self
            .sorted
            .next_with(|item| be(item, 8) as usize)?
            .unwrap_or(0))
    }

    /// Whether there were no intervals.
    pub(super) fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::Lanes;

    #[test]
    fn overlapping_intervals_take_separate_lanes_and_later_ones_reuse_them() {
        let dir = tempfile::tempdir().unwrap();
        let intervals = [(0, 10), (5, 8), (10, 12), (9, 20)];
        let mut lanes = Lanes::of(intervals.into_iter().map(Ok), dir.path()).unwrap();
        let got: Vec<usize> = (0..4).map(|_| lanes.next_lane().unwrap()).collect();
        assert_eq!(got, [0, 1, 0, 1]);
    }
}
