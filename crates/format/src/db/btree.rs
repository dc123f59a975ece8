//! The large tables of several stored files appended to a merged database at the level of
//! SQLite's pages (issue 49: `db::bulk_merge`'s `INSERT … SELECT`, which moves each row's ids
//! through SQLite's virtual machine, took 7–10 s after a 10^6-dispatch run of four processes,
//! nine rows a dispatch; SQLite's own transfer of records, which moves no id, 4.9 s; this, 1.5).
//! Each file is read once, front to back, each of its tables' leaves handed to its table in
//! rowid order ([`write_tables`]); their rows' ids and the columns that refer to other tables'
//! rows are moved as the SQL would move them ([`Move`]) and written as the leaves of a new b-tree
//! appended to the merged file (every table's at once), whose interior pages are then built
//! above them and whose top page is written over the table's (empty) root page; each index is
//! built the same way from the files' index entries, moved likewise and merged in key order.
//! The file's header then counts the new pages. SQLite writes nothing meanwhile (the caller
//! closed it).
//!
//! Anything this does not write (a payload spilled to overflow pages, a value not an integer
//! where an id is moved, another page size, an index key not of integers) is [`Unsupported`]:
//! the caller cuts the file back to its length before and inserts those rows with SQL.

mod build;
mod format;
mod source;
#[cfg(test)]
mod tests;

use build::{PageOut, Tree};
use format::{
    get_value, get_varint, header_size, integer_serial, put_integer, put_varint, Columns, Value,
};
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
    let mut out = PageOut::open(path, header.page_size, usable, header.page_count)
        .map_err(Unsupported::io)?;
    write_tables(&mut out, tables)?;
    for table in tables {
        for (index, (root, columns)) in table.indexes.iter().enumerate() {
            write_index(&mut out, table, index, *root, columns)?;
        }
    }
    out.finish(header.bytes).map_err(Unsupported::io)
}

/// A table being written: its b-tree, its rows' rewriter, its last rowid.
struct Written {
    tree: Tree,
    rewriter: Rewriter,
    last: i64,
}

/// Every table's rows, each file's in turn, with their ids moved: each file read once, front to
/// back, each of its leaves handed to its table (a table's leaves, which SQLite appends as the
/// table grows, follow the file's order; a table whose leaves do not is read apart first).
fn write_tables(out: &mut PageOut, tables: &[Table]) -> Result<(), Unsupported> {
    let mut written: Vec<Written> = (tables.iter())
        .map(|t| Written {
            tree: Tree::new(out, false, t.root),
            rewriter: Rewriter::default(),
            last: 0,
        })
        .collect();
    let mut files: Vec<&Path> = Vec::new();
    for part in tables.iter().flat_map(|t| &t.parts) {
        if !files.contains(&part.path.as_path()) {
            files.push(&part.path);
        }
    }
    for file in files {
        let mut pages = Pages::open(file)?;
        // Each leaf of the file's tables, and which of `parts` it holds rows of.
        let mut scan: Vec<(u32, usize)> = Vec::new();
        let mut parts: Vec<Reading> = Vec::new();
        for (table, t) in tables.iter().enumerate() {
            let Some(part) = t.parts.iter().find(|p| p.path == file) else {
                continue;
            };
            let mut reading = Reading {
                table,
                part,
                rows: 0,
                kept: part.moves.iter().all(|m| matches!(m, Move::Keep)),
            };
            let leaves = source::leaves(&mut pages, part.root)?;
            if leaves.windows(2).all(|pair| pair[0] < pair[1]) {
                scan.extend(leaves.into_iter().map(|leaf| (leaf, parts.len())));
            } else {
                for leaf in leaves {
                    let page = pages.page(leaf)?;
                    let into = &mut written[reading.table];
                    source::leaf_rows(page, leaf, |id, row| reading.add(out, into, id, row))?;
                }
            }
            parts.push(reading);
        }
        scan.sort_unstable();
        let until = scan.last().map_or(0, |(leaf, _)| *leaf);
        for (leaf, at) in scan {
            let reading = &mut parts[at];
            let into = &mut written[reading.table];
            let page = pages.page_ahead(leaf, until)?;
            source::leaf_rows(page, leaf, |id, row| reading.add(out, into, id, row))?;
        }
        if parts.iter().any(|r| r.rows != r.part.rows) {
            return Err(Unsupported("a table's rows not as counted"));
        }
    }
    for table in written {
        table.tree.finish(out)?;
    }
    Ok(())
}

/// A file's rows of a table being read: the table (in `tables`), the part, the rows so far, and
/// whether its rows are kept as they are.
struct Reading<'a> {
    table: usize,
    part: &'a Part,
    rows: i64,
    kept: bool,
}

impl Reading<'_> {
    /// Adds a row of the part to its table, its id and columns moved.
    fn add(
        &mut self,
        out: &mut PageOut,
        table: &mut Written,
        rowid: i64,
        record: &[u8],
    ) -> Result<(), Unsupported> {
        self.rows += 1;
        let rowid = rowid.wrapping_add(self.part.id_offset);
        if rowid <= table.last || self.rows > self.part.rows {
            return Err(Unsupported("a table's rows not as counted"));
        }
        table.last = rowid;
        if self.kept {
            return table.tree.row(out, rowid, record);
        }
        table.rewriter.rewrite(record, &self.part.moves)?;
        table.tree.row(out, rowid, &table.rewriter.record)
    }
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
        let mut key = [None; 4];
        for (slot, column) in Columns::of(&self.rewriter.record)?.enumerate() {
            let (serial, bytes) = column?;
            key[slot.min(3)] = match get_value(serial, &self.rewriter.record[bytes]) {
                _ if slot > 3 => return Err(Unsupported("an index of more than three columns")),
                Value::Integer(value) => Some(value),
                Value::Null => None,
                Value::Other => return Err(Unsupported("an index key that is not an integer")),
            };
        }
        Ok(Some(key))
    }
}

/// The index `index` of `table` (root `root`, key columns `columns`): every file's entries,
/// moved as their rows, merged in key order.
fn write_index(
    out: &mut PageOut,
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

/// A record rewritten with its columns moved.
#[derive(Default)]
struct Rewriter {
    record: Vec<u8>,
    /// The record's integers to move.
    moved: Vec<Moved>,
    /// The last record's header and what it says of the columns to move (most rows of a table
    /// have the same serial types, so the same layout).
    layout: Layout,
}

/// An integer of a record moved: its column, where it is in the record, its serial type there,
/// and its value moved (None: NULL) with its serial type.
struct Moved {
    column: usize,
    bytes: std::ops::Range<usize>,
    serial: u64,
    value: Option<i64>,
    new: u64,
}

#[derive(Default)]
struct Layout {
    /// The moves and the header (its size varint included) it was read for.
    moves: usize,
    header: Vec<u8>,
    /// Each column to move: its column, where its bytes are, its serial type.
    columns: Vec<(usize, std::ops::Range<usize>, u64)>,
    /// Where the last column's bytes end.
    end: usize,
    /// A header being made again.
    scratch: Vec<u8>,
}

impl Layout {
    /// Reads the columns `moves` moves from the header of `record` (`size` bytes).
    fn read(&mut self, record: &[u8], size: usize, moves: &[Move]) -> Result<(), Unsupported> {
        self.columns.clear();
        self.header.clear();
        let columns = Columns::of(record)?;
        let mut count = 0;
        for column in columns {
            let (serial, bytes) = column?;
            let mv = moves
                .get(count)
                .ok_or(Unsupported("a record of more columns than its table"))?;
            if !matches!(mv, Move::Keep) {
                self.columns.push((count, bytes.clone(), serial));
            }
            self.end = bytes.end;
            count += 1;
        }
        if count != moves.len() {
            return Err(Unsupported("a record of fewer columns than its table"));
        }
        self.end = self.end.max(size);
        self.header.extend_from_slice(&record[..size]);
        self.moves = moves.as_ptr() as usize;
        Ok(())
    }
}

impl Rewriter {
    /// Writes `record` with its columns moved by `moves` (one for each column) into
    /// `self.record`: the record itself with its moved integers written over theirs where
    /// each keeps its serial type (mostly so), else a record made again.
    fn rewrite(&mut self, record: &[u8], moves: &[Move]) -> Result<(), Unsupported> {
        let (size, len) = get_varint(record)?;
        let size = usize::try_from(size)
            .ok()
            .filter(|size| (len..=record.len()).contains(size))
            .ok_or(Unsupported("a record's header runs past the record"))?;
        let layout = &mut self.layout;
        if layout.moves != moves.as_ptr() as usize || layout.header != record[..size] {
            if let Err(e) = layout.read(record, size, moves) {
                layout.moves = 0;
                return Err(e);
            }
        }
        if layout.end > record.len() {
            return Err(Unsupported("a record's body is shorter than its header"));
        }
        self.moved.clear();
        for (column, bytes, serial) in &layout.columns {
            match get_value(*serial, &record[bytes.clone()]) {
                Value::Null => {}
                Value::Other => return Err(Unsupported("an id that is not an integer")),
                Value::Integer(value) => {
                    let value = moves[*column].apply(value);
                    self.moved.push(Moved {
                        column: *column,
                        bytes: bytes.clone(),
                        serial: *serial,
                        value,
                        new: value.map_or(0, integer_serial),
                    });
                }
            }
        }
        self.record.clear();
        if self.moved.iter().all(|m| m.serial == m.new) {
            self.record.extend_from_slice(record);
            for Moved { bytes, value, .. } in &self.moved {
                if let Some(value) = value {
                    let len = bytes.len();
                    self.record[bytes.clone()].copy_from_slice(&value.to_be_bytes()[8 - len..]);
                }
            }
            return Ok(());
        }
        self.remake(record)
    }

    /// `record` made again with the moved integers in their own serial types: the header's
    /// serial types copied but theirs, the body's bytes between them copied.
    fn remake(&mut self, record: &[u8]) -> Result<(), Unsupported> {
        let (size, mut at) = get_varint(record)?;
        let size = size as usize;
        let header = &mut self.layout.scratch;
        header.clear();
        let mut moved = self.moved.iter().peekable();
        let mut column = 0;
        while at < size {
            let (_, len) = get_varint(&record[at..size])?;
            match moved.next_if(|moved| moved.column == column) {
                Some(moved) => put_varint(header, moved.new),
                None => header.extend_from_slice(&record[at..at + len]),
            }
            at += len;
            column += 1;
        }
        put_varint(&mut self.record, header_size(header.len()) as u64);
        self.record.extend_from_slice(header);
        let mut copied = size;
        for Moved { bytes, value, .. } in &self.moved {
            self.record.extend_from_slice(&record[copied..bytes.start]);
            if let Some(value) = value {
                put_integer(&mut self.record, *value);
            }
            copied = bytes.end;
        }
        self.record.extend_from_slice(&record[copied..]);
        Ok(())
    }
}
