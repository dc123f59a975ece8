//! The large tables of several stored files appended to a merged database at the level of
//! SQLite's pages (issue 49: `db::bulk_merge`'s `INSERT … SELECT`, which moves each row's ids
//! through SQLite's virtual machine, took 7–10 s after a 10^6-dispatch run of four processes,
//! nine rows a dispatch; SQLite's own transfer of records, which moves no id, 4.9 s; this, 1.5
//! on one thread, less on several). Each file is read once, front to back, each of its tables'
//! leaves handed to its table in rowid order ([`tables`]); their rows' ids and the columns that
//! refer to other tables' rows are moved as the SQL would move them ([`Move`], [`rewrite`]) and
//! written as the leaves of a new b-tree appended to the merged file, the interior pages built
//! above them as they fill and the top page written over the table's (empty) root page
//! ([`build`]); each index is built the same way from the files' index entries, moved likewise
//! and merged in key order. The tables, then the indexes, are shared among threads that build
//! them side by side. The file's header then counts the new pages. SQLite writes nothing
//! meanwhile (the caller closed it).
//!
//! Anything this does not write (a payload spilled to overflow pages, a value not an integer
//! where an id is moved, another page size, an index key not of integers) is [`Unsupported`]:
//! the caller cuts the file back to its length before and inserts those rows with SQL.

mod build;
mod format;
mod rewrite;
mod source;
mod tables;
#[cfg(test)]
mod tests;

use build::{PageOut, Tree};
use rewrite::Rewriter;
use source::{Entries, Header, Pages};
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why the pages were not written (the rows then go through SQL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unsupported(pub(super) &'static str);

impl Unsupported {
    fn io(_: std::io::Error) -> Unsupported {
        Unsupported("a page could not be written")
    }
}

/// How a column's values are moved, as `db::bulk_merge`'s SQL moves them.
#[derive(Clone, Debug)]
pub(super) enum Move {
    Keep,
    /// `CASE WHEN x = 0 THEN 0 ELSE x + n END`: a reference to a moved table's row (0: none).
    Add(i64),
    /// `CASE x WHEN from THEN to ... END`: NULL for a value not listed (a few: the nodes).
    Map(Arc<[(i64, i64)]>),
}

impl Move {
    fn apply(&self, value: i64) -> Option<i64> {
        match self {
            Move::Keep => Some(value),
            Move::Add(_) if value == 0 => Some(0),
            Move::Add(offset) => Some(value.wrapping_add(*offset)),
            Move::Map(map) => map
                .iter()
                .find(|(from, _)| *from == value)
                .map(|(_, to)| *to),
        }
    }
}

/// One file's rows of a table.
#[derive(Clone)]
pub(super) struct Part {
    pub(super) path: PathBuf,
    /// The table's root page in the file, and each of its indexes' (in [`Table::indexes`]' order).
    pub(super) root: u32,
    pub(super) index_roots: Vec<u32>,
    /// The file's rows of the table: ids 1 to `rows`, moved by `id_offset`.
    pub(super) rows: i64,
    pub(super) id_offset: i64,
    /// Each column's move, in the table's order.
    pub(super) moves: Vec<Move>,
}

/// A table of the merged file written by pages: its root page there, its indexes' (each with
/// the table column of each key column, in order), the files' rows in turn.
pub(super) struct Table {
    pub(super) root: u32,
    pub(super) indexes: Vec<(u32, Vec<usize>)>,
    pub(super) parts: Vec<Part>,
}

/// Appends `tables` to the database at `path` (closed): see the module's notes.
pub(super) fn append(path: &Path, tables: &[Table]) -> Result<(), Unsupported> {
    append_with(path, tables, tables::threads())
}

/// [`append`] by `threads` threads side by side.
fn append_with(path: &Path, tables: &[Table], threads: usize) -> Result<(), Unsupported> {
    let file = std::fs::File::open(path).map_err(Unsupported::io)?;
    let header = Header::read(&file)?;
    let length = file.metadata().map_err(Unsupported::io)?.len();
    if header.schema_format != 4 || length != u64::from(header.page_count) * header.page_size as u64
    {
        return Err(Unsupported("a merged file not as SQLite left it"));
    }
    for part in tables.iter().flat_map(|t| &t.parts) {
        let source = std::fs::File::open(&part.path).map_err(Unsupported::io)?;
        let stored = Header::read(&source)?;
        if (stored.page_size, stored.reserved, stored.encoding)
            != (header.page_size, header.reserved, header.encoding)
            || stored.schema_format > 4
        {
            return Err(Unsupported(
                "a stored file of another page size or encoding",
            ));
        }
    }
    let usable = header.page_size - header.reserved;
    let out = PageOut::open(path, header.page_size, usable, header.page_count)
        .map_err(Unsupported::io)?;
    tables::write_tables(&out, tables, threads)?;
    write_indexes(&out, tables, threads)?;
    out.finish(header.bytes).map_err(Unsupported::io)
}

/// Every table's indexes, each built by [`write_index`], shared among `threads` threads.
fn write_indexes(out: &PageOut, tables: &[Table], threads: usize) -> Result<(), Unsupported> {
    let indexes: Vec<(&Table, usize)> = (tables.iter())
        .flat_map(|table| (0..table.indexes.len()).map(move |index| (table, index)))
        .collect();
    let sizes: Vec<u64> = (indexes.iter())
        .map(|(table, _)| table.parts.iter().map(|p| p.rows.max(0) as u64).sum())
        .collect();
    let groups = tables::groups(&sizes, threads);
    std::thread::scope(|scope| {
        let running: Vec<_> = (groups.iter())
            .map(|group| {
                let indexes = &indexes;
                scope.spawn(move || {
                    for &at in group {
                        let (table, index) = indexes[at];
                        let (root, columns) = &table.indexes[index];
                        write_index(out, table, index, *root, columns)?;
                    }
                    Ok(())
                })
            })
            .collect();
        tables::joined(Ok(()), running)
    })
}

/// An index key: its integers (None: NULL, which sorts first) and the rowid after them, the
/// slots after the last None.
type Key = [Option<i64>; 4];

/// One file's entries of an index, moved, in key order.
struct Stream {
    entries: Entries,
    moves: Vec<Move>,
    rewriter: Rewriter,
    taken: i64,
    rows: i64,
}

impl Stream {
    /// The next entry's key (its record in `self.rewriter.record`), None after the last.
    fn next(&mut self, raw: &mut Vec<u8>) -> Result<Option<Key>, Unsupported> {
        if !self.entries.next_entry(raw)? {
            return match self.taken == self.rows {
                true => Ok(None),
                false => Err(Unsupported("an index's entries not as its table's rows")),
            };
        }
        self.taken += 1;
        self.rewriter.rewrite(raw, &self.moves)?;
        let values = &self.rewriter.values;
        if values.len() > 4 {
            return Err(Unsupported("an index of more than three columns"));
        }
        let mut key = [None; 4];
        for (slot, (value, _)) in key.iter_mut().zip(values) {
            *slot = *value;
        }
        Ok(Some(key))
    }
}

/// The index `index` of `table` (root `root`, key columns `columns`): every file's entries,
/// moved as their rows, merged in key order.
fn write_index(
    out: &PageOut,
    table: &Table,
    index: usize,
    root: u32,
    columns: &[usize],
) -> Result<(), Unsupported> {
    let mut tree = Tree::new(out, true, root);
    let mut streams = Vec::new();
    let mut heap = BinaryHeap::new();
    let mut raw = Vec::new();
    for part in &table.parts {
        let root = *part
            .index_roots
            .get(index)
            .ok_or(Unsupported("a stored file without the index"))?;
        let mut moves: Vec<Move> = columns
            .iter()
            .map(|&c| part.moves.get(c).cloned())
            .collect::<Option<_>>()
            .ok_or(Unsupported("an index on a column the table lacks"))?;
        moves.push(Move::Add(part.id_offset));
        // Every column moved (a kept one by nothing), so that each value is in the rewriter's.
        for mv in &mut moves {
            if matches!(mv, Move::Keep) {
                *mv = Move::Add(0);
            }
        }
        let mut stream = Stream {
            entries: Entries::new(Pages::open(&part.path)?, root)?,
            moves,
            rewriter: Rewriter::default(),
            taken: 0,
            rows: part.rows,
        };
        if let Some(key) = stream.next(&mut raw)? {
            heap.push(std::cmp::Reverse((key, streams.len())));
        }
        streams.push(stream);
    }
    let mut last: Option<Key> = None;
    while let Some(mut top) = heap.peek_mut() {
        let std::cmp::Reverse((key, at)) = *top;
        if last.as_ref().is_some_and(|last| *last >= key) {
            return Err(Unsupported("an index's entries out of order once moved"));
        }
        let stream = &mut streams[at];
        tree.entry(out, &stream.rewriter.record)?;
        last = Some(key);
        match stream.next(&mut raw)? {
            // In the taken one's place: one sift down.
            Some(next) => *top = std::cmp::Reverse((next, at)),
            None => {
                std::collections::binary_heap::PeekMut::pop(top);
            }
        }
    }
    tree.finish(out)
}
