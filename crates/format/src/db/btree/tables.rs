//! Every table's rows written, each file's in turn, with their ids moved: each file read once,
//! front to back, a window of pages at a time, its leaves handed to their tables (a table's
//! leaves, which SQLite appends as the table grows, follow the file's order; a table whose
//! leaves do not is read apart). The tables are shared among threads that build their b-trees
//! side by side ([`groups`]), each window read once and handed to them all.

use super::build::{PageOut, Tree};
use super::rewrite::Rewriter;
use super::source::{self, Pages};
use super::{Move, Part, Table, Unsupported};
use crossbeam_channel::{bounded, Receiver};
use std::path::Path;
use std::sync::Arc;

/// Pages a window holds.
const WINDOW: u32 = 128;

/// Windows read ahead of the slowest thread.
const AHEAD: usize = 4;

/// How many threads build b-trees side by side: the cores there are, four at most.
pub(super) fn threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get().clamp(1, 4))
}

/// Items of `sizes` shared among `n` groups of about the same size: each, the largest first,
/// to the smallest group so far. Each group's items in order; no group is empty but where
/// there are fewer items than groups.
pub(super) fn groups(sizes: &[u64], n: usize) -> Vec<Vec<usize>> {
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    let mut groups: Vec<(u64, Vec<usize>)> = vec![(0, Vec::new()); n.clamp(1, sizes.len().max(1))];
    for i in order {
        let smallest = (groups.iter_mut())
            .min_by_key(|(size, items)| (*size, items.len()))
            .expect("one group at least");
        smallest.0 += sizes[i];
        smallest.1.push(i);
    }
    let mut groups: Vec<Vec<usize>> = groups.into_iter().map(|(_, items)| items).collect();
    groups.retain(|items| !items.is_empty());
    groups.iter_mut().for_each(|items| items.sort_unstable());
    groups
}

/// A table being written: its b-tree, its rows' rewriter, its last rowid.
struct Written {
    tree: Tree,
    rewriter: Rewriter,
    last: i64,
}

/// Writes every table's rows (see the module's notes), by `threads` threads at most.
pub(super) fn write_tables(
    out: &PageOut,
    tables: &[Table],
    threads: usize,
) -> Result<(), Unsupported> {
    let mut files: Vec<&Path> = Vec::new();
    for part in tables.iter().flat_map(|t| &t.parts) {
        if !files.contains(&part.path.as_path()) {
            files.push(&part.path);
        }
    }
    // Each table's size: its leaves in every file, read from the interior pages.
    let mut sizes = vec![0u64; tables.len()];
    for file in &files {
        let mut pages = Pages::open(file)?;
        for (table, t) in tables.iter().enumerate() {
            for part in t.parts.iter().filter(|p| p.path == *file) {
                sizes[table] += source::leaves(&mut pages, part.root)?.len() as u64;
            }
        }
    }
    let groups = groups(&sizes, threads);
    let mut written: Vec<Written> = (tables.iter())
        .map(|t| Written {
            tree: Tree::new(out, false, t.root),
            rewriter: Rewriter::default(),
            last: 0,
        })
        .collect();
    for file in files {
        let mut shares: Vec<Vec<&mut Written>> = groups.iter().map(|_| Vec::new()).collect();
        for (table, w) in written.iter_mut().enumerate() {
            if let Some(group) = groups.iter().position(|g| g.contains(&table)) {
                shares[group].push(w);
            }
        }
        let jobs = (groups.iter().zip(shares))
            .map(|(group, share)| Job::of(file, tables, group, share))
            .collect::<Result<Vec<_>, _>>()?;
        read_file(out, file, jobs)?;
    }
    for table in written {
        table.tree.finish(out)?;
    }
    Ok(())
}

/// A thread's share of a file: its tables' parts of it, the leaves to read in the file's order
/// (each part's, in order), and the parts whose leaves are out of order, read apart.
struct Job<'a> {
    readings: Vec<Reading<'a>>,
    scan: InOrder,
    apart: Vec<(usize, Vec<u32>)>,
}

/// Lists of leaves, each in ascending order and tagged, taken together in ascending order: a
/// few bytes a leaf, where a list of them all, tagged and sorted, took four times as many.
#[derive(Clone, Default)]
struct InOrder {
    lists: Vec<(Arc<[u32]>, usize)>,
    next: Vec<usize>,
}

impl InOrder {
    fn add(&mut self, list: Arc<[u32]>, tag: usize) {
        self.lists.push((list, tag));
        self.next.push(0);
    }

    /// The smallest leaf not taken yet, and its list's tag.
    fn take(&mut self) -> Option<(u32, usize)> {
        let (at, leaf) = (self.lists.iter().enumerate())
            .filter_map(|(at, (list, _))| list.get(self.next[at]).map(|leaf| (at, *leaf)))
            .min_by_key(|(_, leaf)| *leaf)?;
        self.next[at] += 1;
        Some((leaf, self.lists[at].1))
    }

    /// The smallest leaf not taken yet.
    fn peek(&self) -> Option<u32> {
        (self.lists.iter().enumerate())
            .filter_map(|(at, (list, _))| list.get(self.next[at]).copied())
            .min()
    }

    /// Takes every leaf below `end`.
    fn skip_below(&mut self, end: u32) {
        for (at, (list, _)) in self.lists.iter().enumerate() {
            self.next[at] += list[self.next[at]..].partition_point(|leaf| *leaf < end);
        }
    }

    /// The largest leaf.
    fn last(&self) -> Option<u32> {
        self.lists
            .iter()
            .filter_map(|(list, _)| list.last().copied())
            .max()
    }
}

impl<'a> Job<'a> {
    /// The tables `group` of `tables` (written into `share`, in the group's order): their
    /// parts of `file` and those parts' leaves.
    fn of(
        file: &Path,
        tables: &'a [Table],
        group: &[usize],
        share: Vec<&'a mut Written>,
    ) -> Result<Job<'a>, Unsupported> {
        let mut pages = Pages::open(file)?;
        let mut job = Job {
            readings: Vec::new(),
            scan: InOrder::default(),
            apart: Vec::new(),
        };
        for (&table, into) in group.iter().zip(share) {
            let Some(part) = tables[table].parts.iter().find(|p| p.path == file) else {
                continue;
            };
            let leaves = source::leaves(&mut pages, part.root)?;
            let at = job.readings.len();
            if leaves.windows(2).all(|pair| pair[0] < pair[1]) {
                job.scan.add(leaves.into(), at);
            } else {
                job.apart.push((at, leaves));
            }
            job.readings.push(Reading {
                into,
                part,
                rows: 0,
                kept: part.moves.iter().all(|m| matches!(m, Move::Keep)),
            });
        }
        Ok(job)
    }

    /// Reads the job's leaves: those apart from `file`, the others from `windows` (in the
    /// file's order, every leaf of the scan among them).
    fn run(
        mut self,
        out: &PageOut,
        file: &Path,
        windows: Receiver<Arc<Window>>,
    ) -> Result<(), Unsupported> {
        if !self.apart.is_empty() {
            let mut pages = Pages::open(file)?;
            for (at, leaves) in std::mem::take(&mut self.apart) {
                for leaf in leaves {
                    let page = pages.page(leaf)?;
                    let reading = &mut self.readings[at];
                    source::leaf_rows(page, leaf, |id, row| reading.add(out, id, row))?;
                }
            }
        }
        let mut window: Option<Arc<Window>> = None;
        let mut scan = std::mem::take(&mut self.scan);
        while let Some((leaf, at)) = scan.take() {
            let page = loop {
                if let Some(page) = window.as_ref().and_then(|w| w.page(leaf)) {
                    break page;
                }
                window =
                    Some((windows.recv()).map_err(|_| Unsupported("a page that cannot be read"))?);
            };
            let reading = &mut self.readings[at];
            source::leaf_rows(page, leaf, |id, row| reading.add(out, id, row))?;
        }
        if self.readings.iter().any(|r| r.rows != r.part.rows) {
            return Err(Unsupported("a table's rows not as counted"));
        }
        Ok(())
    }
}

/// Pages of a file read at once: from `first`, `count` of them.
struct Window {
    first: u32,
    count: u32,
    page_size: usize,
    usable: usize,
    bytes: Vec<u8>,
}

impl Window {
    fn page(&self, number: u32) -> Option<&[u8]> {
        if !(self.first..self.first + self.count).contains(&number) {
            return None;
        }
        let start = (number - self.first) as usize * self.page_size;
        Some(&self.bytes[start..start + self.usable])
    }
}

/// Reads `file`'s leaves of `jobs`, in the file's order, a window at a time, each window
/// handed to every job's thread; the first error of the reading or of a job.
fn read_file(out: &PageOut, file: &Path, jobs: Vec<Job>) -> Result<(), Unsupported> {
    // Every job's leaves, in the file's order.
    let mut leaves = InOrder::default();
    for job in &jobs {
        for (list, _) in &job.scan.lists {
            leaves.add(Arc::clone(list), 0);
        }
    }
    let pages = Pages::open(file)?;
    std::thread::scope(|scope| {
        let mut senders = Vec::new();
        let mut running = Vec::new();
        for job in jobs {
            let (send, receive) = bounded::<Arc<Window>>(AHEAD);
            senders.push(send);
            running.push(scope.spawn(move || job.run(out, file, receive)));
        }
        let until = leaves.last().unwrap_or(0);
        let mut read = Ok(());
        // The windows read, each taken again once every thread is done with it.
        let mut made: Vec<Arc<Window>> = Vec::new();
        while let Some(first) = leaves.peek() {
            let count = (until - first).min(WINDOW - 1) + 1;
            let free = made.iter_mut().position(|w| Arc::get_mut(w).is_some());
            let window = match free {
                Some(at) => &mut made[at],
                None => {
                    made.push(Arc::new(Window {
                        first: 0,
                        count: 0,
                        page_size: pages.page_size,
                        usable: pages.usable,
                        bytes: Vec::new(),
                    }));
                    made.last_mut().expect("just pushed")
                }
            };
            let Some(filling) = Arc::get_mut(window) else {
                break;
            };
            filling.bytes.resize(count as usize * pages.page_size, 0);
            (filling.first, filling.count) = (first, count);
            if let Err(e) = pages.read_at(first, &mut filling.bytes) {
                filling.count = 0;
                read = Err(e);
                break;
            }
            // A thread that is done (or failed) takes no more.
            for send in &senders {
                let _ = send.send(Arc::clone(window));
            }
            leaves.skip_below(first + count);
        }
        drop(senders);
        joined(read, running)
    })
}

/// `first`, then each thread's result once it ends (all are waited for): the first error.
pub(super) fn joined(
    first: Result<(), Unsupported>,
    threads: Vec<std::thread::ScopedJoinHandle<'_, Result<(), Unsupported>>>,
) -> Result<(), Unsupported> {
    threads.into_iter().fold(first, |result, thread| {
        let done = (thread.join()).unwrap_or(Err(Unsupported("a thread writing pages failed")));
        result.and(done)
    })
}

/// A file's rows of a table being read: the table it is written into, the part, the rows so
/// far, and whether its rows are kept as they are.
struct Reading<'a> {
    into: &'a mut Written,
    part: &'a Part,
    rows: i64,
    kept: bool,
}

impl Reading<'_> {
    /// Adds a row of the part to its table, its id and columns moved.
    fn add(&mut self, out: &PageOut, rowid: i64, record: &[u8]) -> Result<(), Unsupported> {
        let table = &mut *self.into;
        self.rows += 1;
        let rowid = rowid.wrapping_add(self.part.id_offset);
        if rowid <= table.last || self.rows > self.part.rows {
            return Err(Unsupported("a table's rows not as counted"));
        }
        table.last = rowid;
        if self.kept {
            return table.tree.row(out, rowid, record.len(), |cell| {
                cell.copy_from_slice(record);
                Ok(())
            });
        }
        let rewriter = &mut table.rewriter;
        let len = rewriter.prepare(record, &self.part.moves)?;
        table
            .tree
            .row(out, rowid, len, |cell| rewriter.write(record, cell))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every item is in one group, groups are within the largest item of each other, and
        /// there are as many as asked where there are items enough.
        #[test]
        fn groups_share_items_evenly(
            sizes in prop::collection::vec(0u64..1_000, 0..12),
            n in 1usize..5,
        ) {
            let groups = groups(&sizes, n);
            let mut all: Vec<usize> = groups.iter().flatten().copied().collect();
            all.sort_unstable();
            prop_assert_eq!(all, (0..sizes.len()).collect::<Vec<_>>());
            prop_assert_eq!(groups.len(), n.min(sizes.len()));
            let totals: Vec<u64> = groups.iter().map(|g| g.iter().map(|&i| sizes[i]).sum()).collect();
            let largest = sizes.iter().copied().max().unwrap_or(0);
            if let (Some(min), Some(max)) = (totals.iter().min(), totals.iter().max()) {
                prop_assert!(max - min <= largest);
            }
        }
    }
}
