//! Statistics by name with bounded memory, for the `--stats` files, the summary tables and the
//! JSON's `summary`. A run names few kernels, API functions, copy directions and allocation
//! operations, but a marker's message or a `--kernel-rename` range may differ at every step
//! ("step 1", "step 2", …): ≈ 150 bytes a name in memory, 1.5 GB for 10^7 names.
//!
//! A [`NameTally`] keeps names in memory up to a budget; past it, it hands what it holds to an
//! external sort ([`crate::spill`]) and starts again. [`NameTally::finish`] gives the names in
//! name order, equal names combined, as [`Names`]: in memory when nothing spilled, else in an
//! anonymous file, read as often as the writers need. [`Names::ranked`] orders them as
//! rocprofv3 lists them (largest total first, equal totals by name).

use crate::error::FormatError;
use crate::spill::{RunWriter, Sorter, WHOLE_ITEM};
use crate::stats::DurationStats;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// How many bytes of names a tally keeps in memory, and its sort keeps before writing a run.
const TALLY_BUDGET: usize = 4 << 20;
/// What a name in memory costs beside its bytes: its map entry (string, statistics, hash).
const ENTRY_COST: usize = 96;
/// One statistics record's bytes in a file: count, sum, sum of squares (16), min, max.
const STATS_LEN: usize = 48;
/// The read buffer of a names file.
const READ_BUFFER: usize = 64 << 10;

#[cfg(not(test))]
fn tally_budget() -> usize {
    TALLY_BUDGET
}

#[cfg(test)]
thread_local! {
    /// The budget of the tallies this thread makes: tests make them spill at once.
    pub(crate) static TEST_TALLY_BUDGET: std::cell::Cell<usize> = const { std::cell::Cell::new(TALLY_BUDGET) };
}

#[cfg(test)]
fn tally_budget() -> usize {
    TEST_TALLY_BUDGET.with(|b| b.get())
}

/// Where names spill: `dir`, else the system's temporary folder.
fn spill_dir(dir: Option<&Path>) -> PathBuf {
    dir.map(Path::to_path_buf)
        .unwrap_or_else(std::env::temp_dir)
}

/// An error of names spilled into `dir`, as the writers report it (naming the folder).
pub(crate) fn spill_error(dir: Option<&Path>) -> impl Fn(io::Error) -> FormatError + '_ {
    move |e| FormatError::io(&spill_dir(dir), e)
}

/// Durations added by name.
pub struct NameTally {
    names: HashMap<String, DurationStats>,
    /// The bytes `names` holds, estimated.
    held: usize,
    budget: usize,
    /// Where the spilled names go: `None`, the system's temporary folder.
    dir: Option<PathBuf>,
    spilled: Option<Sorter>,
    /// The first error spilling met: [`Self::finish`] returns it.
    error: Option<io::Error>,
}

impl Default for NameTally {
    fn default() -> Self {
        NameTally::new(None)
    }
}

impl NameTally {
    /// An empty tally spilling into `dir` (`None`: the system's temporary folder).
    pub fn new(dir: Option<&Path>) -> NameTally {
        NameTally {
            names: HashMap::new(),
            held: 0,
            budget: tally_budget(),
            dir: dir.map(Path::to_path_buf),
            spilled: None,
            error: None,
        }
    }

    /// Adds one duration (ns) to `name`'s statistics.
    pub fn add(&mut self, name: &str, ns: u64) {
        match self.names.get_mut(name) {
            Some(stats) => stats.add(ns),
            None => {
                let mut stats = DurationStats::default();
                stats.add(ns);
                self.insert(name.to_string(), stats);
            }
        }
    }

    /// Adds `stats` (durations gathered elsewhere) to `name`'s.
    pub fn add_stats(&mut self, name: Cow<'_, str>, stats: &DurationStats) {
        match self.names.get_mut(name.as_ref()) {
            Some(mine) => mine.merge(stats),
            None => self.insert(name.into_owned(), *stats),
        }
    }

    /// Adds every name of `names` with its statistics.
    pub fn add_names(&mut self, names: &Names) -> io::Result<()> {
        for entry in names.iter() {
            let (name, stats) = entry?;
            self.add_stats(name, &stats);
        }
        Ok(())
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty() && self.spilled.is_none()
    }

    fn insert(&mut self, name: String, stats: DurationStats) {
        self.held += name.len() + ENTRY_COST;
        self.names.insert(name, stats);
        if self.held >= self.budget {
            if let Err(e) = self.spill() {
                self.error.get_or_insert(e);
            }
        }
    }

    /// Hands the names in memory to the sort, each as its name's key and its statistics.
    fn spill(&mut self) -> io::Result<()> {
        self.held = 0;
        let sorter = match &mut self.spilled {
            Some(sorter) => sorter,
            None => {
                let dir = spill_dir(self.dir.as_deref());
                self.spilled
                    .insert(Sorter::with_budget(WHOLE_ITEM, &dir, self.budget))
            }
        };
        let mut item = Vec::new();
        for (name, stats) in self.names.drain() {
            item.clear();
            push_name_key(&mut item, &name);
            push_stats(&mut item, &stats);
            sorter.push_bytes(&item, &[])?;
        }
        Ok(())
    }

    /// The names in name order, equal names combined.
    pub fn finish(mut self) -> io::Result<Names> {
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        if self.spilled.is_none() {
            let mut list: Vec<(String, DurationStats)> = self.names.into_iter().collect();
            list.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            return Ok(Names::in_memory(list));
        }
        self.spill()?;
        let dir = spill_dir(self.dir.as_deref());
        let mut sorted = self.spilled.take().expect("spilled").into_sorted()?;
        let mut out = NamesFile::new(&dir)?;
        let mut current: Option<(String, DurationStats)> = None;
        while let Some(entry) = sorted.next_with(split_name_key)? {
            let (name, stats) = entry?;
            match &mut current {
                Some((held, sum)) if *held == name => sum.merge(&stats),
                _ => {
                    if let Some((name, stats)) = current.replace((name, stats)) {
                        out.push(&name, &stats)?;
                    }
                }
            }
        }
        if let Some((name, stats)) = current {
            out.push(&name, &stats)?;
        }
        out.finish()
    }
}

/// Names with their statistics, in the order they were made in, with all of them together.
#[derive(Debug, Default)]
pub struct Names {
    list: List,
    len: usize,
    total: DurationStats,
    /// The longest name's length in characters.
    widest: usize,
}

#[derive(Debug)]
enum List {
    Memory(Vec<(String, DurationStats)>),
    /// Each name as its length (u32), its bytes and its statistics ([`push_stats`]).
    File(File),
}

impl Default for List {
    fn default() -> Self {
        List::Memory(Vec::new())
    }
}

impl Names {
    /// `list` as it is ordered.
    pub fn in_memory(list: Vec<(String, DurationStats)>) -> Names {
        let mut names = Names::default();
        for (name, stats) in &list {
            names.count(name, stats);
        }
        names.list = List::Memory(list);
        names
    }

    fn count(&mut self, name: &str, stats: &DurationStats) {
        self.len += 1;
        self.total.merge(stats);
        self.widest = self.widest.max(name.chars().count());
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Every name's statistics together.
    pub fn total(&self) -> &DurationStats {
        &self.total
    }

    /// The longest name's length in characters (0 without names).
    pub fn widest(&self) -> usize {
        self.widest
    }

    /// The names in order, each read from the file if they are in one (an error ends them).
    pub fn iter(&self) -> NamesIter<'_> {
        match &self.list {
            List::Memory(list) => NamesIter::Memory(list.iter()),
            List::File(file) => NamesIter::File {
                reader: BufReader::with_capacity(READ_BUFFER, ReadAt { file, at: 0 }),
                left: self.len,
            },
        }
    }

    /// The names largest total first, equal totals in the order they were in (name order for a
    /// tally's), as rocprofv3 lists them; through a sort spilling into `dir` (`None`: the
    /// system's temporary folder) when they are in a file.
    pub fn ranked(self, dir: Option<&Path>) -> io::Result<Names> {
        let file = match self.list {
            List::Memory(mut list) => {
                // Stable: equal totals keep their order.
                list.sort_by_key(|(_, stats)| std::cmp::Reverse(stats.sum));
                return Ok(Names {
                    list: List::Memory(list),
                    ..self
                });
            }
            List::File(file) => file,
        };
        let dir = spill_dir(dir);
        let mut sorter = Sorter::with_budget(WHOLE_ITEM, &dir, tally_budget());
        let in_order = Names {
            list: List::File(file),
            ..self
        };
        let mut item = Vec::new();
        for (seq, entry) in in_order.iter().enumerate() {
            let (name, stats) = entry?;
            item.clear();
            item.extend_from_slice(&(u64::MAX - stats.sum).to_be_bytes());
            item.extend_from_slice(&(seq as u64).to_be_bytes());
            push_stats(&mut item, &stats);
            item.extend_from_slice(name.as_bytes());
            sorter.push_bytes(&item, &[])?;
        }
        drop(in_order);
        let mut sorted = sorter.into_sorted()?;
        let mut out = NamesFile::new(&dir)?;
        // Each item: the total's rank and the place (16 bytes), then a names file's entry.
        while let Some(pushed) = sorted.next_with(|item| {
            let stats = read_stats(&item[16..16 + STATS_LEN]);
            let name = std::str::from_utf8(&item[16 + STATS_LEN..]).map_err(invalid)?;
            out.push(name, &stats)
        })? {
            pushed?;
        }
        out.finish()
    }

    /// The names as a list (tests).
    #[cfg(test)]
    pub fn to_vec(&self) -> Vec<(String, DurationStats)> {
        self.iter()
            .map(|e| e.map(|(n, s)| (n.into_owned(), s)))
            .collect::<io::Result<_>>()
            .unwrap()
    }
}

/// [`Names::iter`].
pub enum NamesIter<'a> {
    Memory(std::slice::Iter<'a, (String, DurationStats)>),
    File {
        reader: BufReader<ReadAt<'a>>,
        left: usize,
    },
}

impl<'a> Iterator for NamesIter<'a> {
    type Item = io::Result<(Cow<'a, str>, DurationStats)>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            NamesIter::Memory(list) => list
                .next()
                .map(|(name, stats)| Ok((Cow::Borrowed(name.as_str()), *stats))),
            NamesIter::File { reader, left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                let entry = read_entry(reader);
                if entry.is_err() {
                    *left = 0;
                }
                Some(entry.map(|(name, stats)| (Cow::Owned(name), stats)))
            }
        }
    }
}

/// A file read from `at` on, leaving its own offset alone: several readers at once.
pub struct ReadAt<'a> {
    file: &'a File,
    at: u64,
}

impl Read for ReadAt<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}

/// Names written one after the other into an anonymous file, as a sort run
/// ([`RunWriter`]): each its statistics ([`push_stats`]) then its bytes.
struct NamesFile {
    out: RunWriter,
    names: Names,
    stats: Vec<u8>,
}

impl NamesFile {
    fn new(dir: &Path) -> io::Result<NamesFile> {
        Ok(NamesFile {
            out: RunWriter::new(dir)?,
            names: Names::default(),
            stats: Vec::with_capacity(STATS_LEN),
        })
    }

    fn push(&mut self, name: &str, stats: &DurationStats) -> io::Result<()> {
        self.stats.clear();
        push_stats(&mut self.stats, stats);
        self.out.push(&self.stats, name.as_bytes())?;
        self.names.count(name, stats);
        Ok(())
    }

    fn finish(self) -> io::Result<Names> {
        Ok(Names {
            list: List::File(self.out.finish()?),
            ..self.names
        })
    }
}

/// An entry of a names file ([`NamesFile`]).
fn read_entry(reader: &mut impl Read) -> io::Result<(String, DurationStats)> {
    let mut len = [0u8; 4];
    reader.read_exact(&mut len)?;
    let mut item = vec![0u8; u32::from_le_bytes(len) as usize];
    reader.read_exact(&mut item)?;
    if item.len() < STATS_LEN {
        return Err(invalid("a names file's entry is cut short"));
    }
    let stats = read_stats(&item[..STATS_LEN]);
    item.drain(..STATS_LEN);
    Ok((String::from_utf8(item).map_err(invalid)?, stats))
}

fn invalid(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

fn push_stats(out: &mut Vec<u8>, stats: &DurationStats) {
    out.extend_from_slice(&stats.count.to_le_bytes());
    out.extend_from_slice(&stats.sum.to_le_bytes());
    out.extend_from_slice(&stats.sum_of_squares.to_le_bytes());
    out.extend_from_slice(&stats.min.to_le_bytes());
    out.extend_from_slice(&stats.max.to_le_bytes());
}

fn read_stats(bytes: &[u8]) -> DurationStats {
    let u64_at = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    DurationStats {
        count: u64_at(0),
        sum: u64_at(8),
        sum_of_squares: u128::from_le_bytes(bytes[16..32].try_into().expect("16 bytes")),
        min: u64_at(32),
        max: u64_at(40),
    }
}

/// `name` as a key that sorts as the name does, whatever follows it: each 0 byte as 0 1, then 0 0.
fn push_name_key(out: &mut Vec<u8>, name: &str) {
    for &b in name.as_bytes() {
        out.push(b);
        if b == 0 {
            out.push(1);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// A tally's sort item: the name of its key ([`push_name_key`]) and the statistics after it.
fn split_name_key(item: &[u8]) -> io::Result<(String, DurationStats)> {
    let mut name = Vec::new();
    let mut at = 0;
    loop {
        match (item.get(at), item.get(at + 1)) {
            (Some(0), Some(0)) => break,
            (Some(0), Some(1)) => {
                name.push(0);
                at += 2;
            }
            (Some(&b), _) if b != 0 => {
                name.push(b);
                at += 1;
            }
            _ => return Err(invalid("a spilled name is malformed")),
        }
    }
    let stats = item
        .get(at + 2..at + 2 + STATS_LEN)
        .ok_or_else(|| invalid("a spilled name's statistics are cut short"))?;
    Ok((String::from_utf8(name).map_err(invalid)?, read_stats(stats)))
}

#[cfg(test)]
mod tests;
