//! A CSV file written as rocprofv3's encoder writes one (`csv.hpp`): every header quoted, then
//! the rows, the whole file replaced atomically.

use crate::error::FormatError;
use crate::files::{write_file, OutputFile, WRITE_BUFFER};
use crate::numbers::quoted;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// Rows are gathered into a block of at least the file buffer's size, which then goes to the
/// file past its buffer: each row is copied once before the system call, not twice (into a
/// line, then into the buffer).
const BLOCK_BYTES: usize = WRITE_BUFFER;

/// A CSV file being written: whole rows ([`Csv::row`]), or a row field by field
/// ([`Csv::int`], [`Csv::text`], [`Csv::raw`], then [`Csv::end`]) into a block of rows, with no
/// string per field (the dispatch files have millions of rows).
pub(crate) struct Csv<'a> {
    out: &'a mut BufWriter<OutputFile>,
    block: Vec<u8>,
    fields: usize,
    digits: itoa::Buffer,
}

impl Csv<'_> {
    /// Writes one line: the fields, comma-separated.
    pub(crate) fn row(&mut self, fields: &[String]) -> io::Result<()> {
        for field in fields {
            self.raw(field);
        }
        self.end()
    }

    fn separate(&mut self) {
        if self.fields > 0 {
            self.block.push(b',');
        }
        self.fields += 1;
    }

    /// A field as it is (a number, or text already quoted).
    pub(crate) fn raw(&mut self, field: &str) -> &mut Self {
        self.separate();
        self.block.extend_from_slice(field.as_bytes());
        self
    }

    /// An integer field.
    pub(crate) fn int(&mut self, value: impl itoa::Integer) -> &mut Self {
        self.separate();
        self.block
            .extend_from_slice(self.digits.format(value).as_bytes());
        self
    }

    /// A string field, quoted as [`quoted`] quotes it.
    pub(crate) fn text(&mut self, text: &str) -> &mut Self {
        self.separate();
        self.block.push(b'"');
        if text.as_bytes().contains(&b'"') {
            for piece in text.split_inclusive('"') {
                self.block.extend_from_slice(piece.as_bytes());
                if piece.ends_with('"') {
                    self.block.push(b'"');
                }
            }
        } else {
            self.block.extend_from_slice(text.as_bytes());
        }
        self.block.push(b'"');
        self
    }

    /// A field written by `write` (`write!` into the row: a float, a label).
    pub(crate) fn with(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        self.separate();
        write(&mut self.block);
        self
    }

    /// Ends the row; a full block goes to the file.
    pub(crate) fn end(&mut self) -> io::Result<()> {
        self.block.push(b'\n');
        self.fields = 0;
        if self.block.len() >= BLOCK_BYTES {
            self.flush_block()?;
        }
        Ok(())
    }

    /// The rows of the block to the file.
    fn flush_block(&mut self) -> io::Result<()> {
        let written = self.out.write_all(&self.block);
        self.block.clear();
        written
    }
}

/// Writes the CSV file `path` atomically: the quoted header of `columns`, then what `rows` writes.
pub(crate) fn csv_file(
    path: PathBuf,
    columns: &[&str],
    rows: impl FnOnce(&mut Csv) -> io::Result<()>,
) -> Result<PathBuf, FormatError> {
    write_file(&path, |out| {
        let mut csv = Csv {
            out,
            block: Vec::with_capacity(BLOCK_BYTES + 4096),
            fields: 0,
            digits: itoa::Buffer::new(),
        };
        let header: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        csv.row(&header)?;
        rows(&mut csv)?;
        csv.flush_block()
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_past_several_blocks_are_written_in_order_with_quotes_doubled() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("rows.csv");
        // More than three blocks' worth of rows, every other name with quotes to double.
        let rows = 4 * BLOCK_BYTES / 16;
        csv_file(path.clone(), &["n", "name", "note"], |csv| {
            for n in 0..rows as u64 {
                csv.int(n)
                    .text(if n % 2 == 0 { "plain" } else { r#"f<"x">"# })
                    .raw("0")
                    .end()?;
            }
            Ok(())
        })
        .unwrap();
        let mut expected = String::from("\"n\",\"name\",\"note\"\n");
        for n in 0..rows {
            let name = if n % 2 == 0 {
                "\"plain\""
            } else {
                r#""f<""x"">""#
            };
            expected.push_str(&format!("{n},{name},0\n"));
        }
        let written = std::fs::read_to_string(&path).unwrap();
        assert!(written.len() > 3 * BLOCK_BYTES);
        assert_eq!(written, expected);
    }
}
