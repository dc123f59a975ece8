//! A record rewritten with its integers moved ([`super::Move`]), as `db::bulk_merge`'s SQL
//! would store it: each moved value in the serial type SQLite gives it. Most rows of a table
//! have the same serial types, and most keep them once moved, so the last record's layout
//! (which columns move, where their bytes are) and the last header made again are kept: a row
//! is then its record copied with its moved integers written over theirs, or the header made
//! for the same new serial types followed by its body with the moved integers in their new
//! sizes.

use super::format::{
    get_integer, get_varint, header_size, integer_serial, put_varint, serial_len, Columns,
};
use super::{Move, Unsupported};
use std::ops::Range;

/// Rewrites records: into [`Rewriter::record`], or where its caller says ([`Rewriter::prepare`],
/// [`Rewriter::write`]); the moved columns' values of the last one in [`Rewriter::values`].
#[derive(Default)]
pub(super) struct Rewriter {
    pub(super) record: Vec<u8>,
    /// Each moved column's value once moved (None: NULL) and its serial type, in column order.
    pub(super) values: Vec<(Option<i64>, u64)>,
    /// Whether every moved value keeps its serial type.
    same: bool,
    layout: Layout,
}

/// What the last record's header says of the columns to move.
#[derive(Default)]
struct Layout {
    /// The moves and the header (its size varint included) it was read for.
    moves: usize,
    header: Vec<u8>,
    /// Each column to move: its column, where its bytes are, its serial type.
    columns: Vec<(usize, Range<usize>, u64)>,
    /// Where the header ends, and where the last column's bytes end.
    size: usize,
    end: usize,
    /// The header last made again, for the moved columns' serial types `serials`.
    serials: Vec<u64>,
    remade: Vec<u8>,
}

impl Layout {
    /// Reads the columns `moves` moves from the header of `record` (`size` bytes).
    fn read(&mut self, record: &[u8], size: usize, moves: &[Move]) -> Result<(), Unsupported> {
        self.moves = 0;
        self.columns.clear();
        self.header.clear();
        self.serials.clear();
        self.remade.clear();
        let mut count = 0;
        self.end = size;
        for column in Columns::of(record)? {
            let (serial, bytes) = column?;
            let mv = moves
                .get(count)
                .ok_or(Unsupported("a record of more columns than its table"))?;
            if !matches!(mv, Move::Keep) {
                if !matches!(serial, 0..=9) {
                    return Err(Unsupported("an id that is not an integer"));
                }
                self.columns.push((count, bytes.clone(), serial));
            }
            self.end = bytes.end;
            count += 1;
        }
        if count != moves.len() {
            return Err(Unsupported("a record of fewer columns than its table"));
        }
        self.size = size;
        self.header.extend_from_slice(&record[..size]);
        self.moves = moves.as_ptr() as usize;
        Ok(())
    }

    /// The header of a record of this layout whose moved columns have the serial types of
    /// `values` (made again only when they are not the last ones).
    fn remade(&mut self, values: &[(Option<i64>, u64)]) -> Result<&[u8], Unsupported> {
        if self.remade.is_empty() || !values.iter().map(|v| v.1).eq(self.serials.iter().copied()) {
            self.serials.clear();
            self.serials.extend(values.iter().map(|v| v.1));
            let mut types = Vec::with_capacity(self.size);
            let mut moved = self.columns.iter().zip(&self.serials).peekable();
            let (_, mut at) = get_varint(&self.header)?;
            let mut column = 0;
            while at < self.size {
                let (serial, len) = get_varint(&self.header[at..])?;
                match moved.next_if(|((c, ..), _)| *c == column) {
                    Some((_, new)) => put_varint(&mut types, *new),
                    None => put_varint(&mut types, serial),
                }
                at += len;
                column += 1;
            }
            self.remade.clear();
            put_varint(&mut self.remade, header_size(types.len()) as u64);
            self.remade.extend_from_slice(&types);
        }
        Ok(&self.remade)
    }
}

impl Rewriter {
    /// Writes `record` with its columns moved by `moves` (one for each column) into
    /// `self.record`.
    pub(super) fn rewrite(&mut self, record: &[u8], moves: &[Move]) -> Result<(), Unsupported> {
        let len = self.prepare(record, moves)?;
        let mut written = std::mem::take(&mut self.record);
        written.resize(len, 0);
        let result = self.write(record, &mut written);
        self.record = written;
        result
    }

    /// Reads `record`'s columns to move by `moves` (one for each column), moves their values
    /// ([`Rewriter::values`]), and returns the length of the record rewritten, which
    /// [`Rewriter::write`] then writes.
    pub(super) fn prepare(&mut self, record: &[u8], moves: &[Move]) -> Result<usize, Unsupported> {
        let size = match record.first() {
            Some(&size) if size < 0x80 => usize::from(size),
            _ => get_varint(record)?.0 as usize,
        };
        if size == 0 || size > record.len() {
            return Err(Unsupported("a record's header runs past the record"));
        }
        let layout = &mut self.layout;
        if layout.moves != moves.as_ptr() as usize || layout.header != record[..size] {
            layout.read(record, size, moves)?;
        }
        if layout.end > record.len() {
            return Err(Unsupported("a record's body is shorter than its header"));
        }
        self.values.clear();
        self.same = true;
        let mut len = record.len();
        for (column, bytes, serial) in &layout.columns {
            let value = get_integer(*serial, &record[bytes.clone()])?;
            let value = value.and_then(|v| moves[*column].apply(v));
            let new = value.map_or(0, integer_serial);
            if new != *serial {
                self.same = false;
                len = len + serial_len(new)? - bytes.len();
            }
            self.values.push((value, new));
        }
        if !self.same {
            len = len + layout.remade(&self.values)?.len() - layout.size;
        }
        Ok(len)
    }

    /// Writes the record [`Rewriter::prepare`] read (`record`) into `out`, of the length it
    /// returned: the record with its moved integers written over theirs where each keeps its
    /// serial type (mostly so), else the header made again and the body with the moved
    /// integers in their new sizes.
    pub(super) fn write(&self, record: &[u8], out: &mut [u8]) -> Result<(), Unsupported> {
        let layout = &self.layout;
        let moved = layout.columns.iter().zip(&self.values);
        if self.same {
            out.copy_from_slice(record);
            for ((_, bytes, _), (value, _)) in moved {
                if let Some(value) = value {
                    let len = bytes.len();
                    out[bytes.clone()].copy_from_slice(&value.to_be_bytes()[8 - len..]);
                }
            }
            return Ok(());
        }
        let mut at = 0;
        let mut put = |bytes: &[u8]| {
            out[at..at + bytes.len()].copy_from_slice(bytes);
            at += bytes.len();
        };
        put(&layout.remade);
        let mut copied = layout.size;
        for ((_, bytes, _), (value, serial)) in moved {
            put(&record[copied..bytes.start]);
            if let Some(value) = value {
                put(&value.to_be_bytes()[8 - serial_len(*serial)?..]);
            }
            copied = bytes.end;
        }
        put(&record[copied..]);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record of `columns` (serial type and bytes of each; a header under 128 bytes).
    fn record(columns: &[(u64, &[u8])]) -> Vec<u8> {
        let mut record = vec![columns.len() as u8 + 1];
        record.extend(columns.iter().map(|(serial, _)| *serial as u8));
        for (_, bytes) in columns {
            record.extend_from_slice(bytes);
        }
        record
    }

    /// Columns that take no bytes (NULL, the constants 0 and 1) lie at the same place in the
    /// body: each is moved as its own column (an earlier rewriter matched moved columns by
    /// their bytes' place and moved the wrong one), and a value whose serial type changes gets
    /// the header made again, both ways.
    #[test]
    fn columns_without_bytes_are_moved_as_their_own() {
        let mut rewriter = Rewriter::default();
        let stored = record(&[(0, &[]), (9, &[]), (8, &[]), (1, &[7])]);
        let moves = [Move::Add(100), Move::Add(5), Move::Add(5), Move::Keep];
        rewriter.rewrite(&stored, &moves).unwrap();
        // NULL stays NULL, 1 + 5 = 6 takes a byte, 0 stays 0 (no reference), 7 is kept.
        assert_eq!(
            rewriter.record,
            record(&[(0, &[]), (1, &[6]), (8, &[]), (1, &[7])])
        );
        assert_eq!(rewriter.values, [(None, 0), (Some(6), 1), (Some(0), 8)]);
        let moves = [Move::Keep, Move::Keep, Move::Keep, Move::Add(-6)];
        rewriter.rewrite(&stored, &moves).unwrap();
        assert_eq!(
            rewriter.record,
            record(&[(0, &[]), (9, &[]), (8, &[]), (9, &[])])
        );
        // The same serial types as the stored record's: its bytes with the value written over.
        let moves = [Move::Keep, Move::Keep, Move::Keep, Move::Add(100)];
        rewriter.rewrite(&stored, &moves).unwrap();
        assert_eq!(
            rewriter.record,
            record(&[(0, &[]), (9, &[]), (8, &[]), (1, &[107])])
        );
    }
}
