//! A CSV file written as rocprofv3's encoder writes one (`csv.hpp`): every header quoted, then
//! the rows, the whole file replaced atomically.

use crate::error::FormatError;
use crate::files::{write_file, OutputFile};
use crate::numbers::quoted;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// A CSV file being written: whole rows ([`Csv::row`]), or a row field by field into a line
/// buffer ([`Csv::int`], [`Csv::text`], [`Csv::raw`], then [`Csv::end`]) with no string per
/// field (the dispatch files have millions of rows).
pub(crate) struct Csv<'a> {
    out: &'a mut BufWriter<OutputFile>,
    line: Vec<u8>,
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
            self.line.push(b',');
        }
        self.fields += 1;
    }

    /// A field as it is (a number, or text already quoted).
    pub(crate) fn raw(&mut self, field: &str) -> &mut Self {
        self.separate();
        self.line.extend_from_slice(field.as_bytes());
        self
    }

    /// An integer field.
    pub(crate) fn int(&mut self, value: impl itoa::Integer) -> &mut Self {
        self.separate();
        self.line
            .extend_from_slice(self.digits.format(value).as_bytes());
        self
    }

    /// A string field, quoted as [`quoted`] quotes it.
    pub(crate) fn text(&mut self, text: &str) -> &mut Self {
        self.separate();
        self.line.push(b'"');
        for piece in text.split_inclusive('"') {
            self.line.extend_from_slice(piece.as_bytes());
            if piece.ends_with('"') {
                self.line.push(b'"');
            }
        }
        self.line.push(b'"');
        self
    }

    /// A field written by `write` (`write!` into the line: a float, a label).
    pub(crate) fn with(&mut self, write: impl FnOnce(&mut Vec<u8>)) -> &mut Self {
        self.separate();
        write(&mut self.line);
        self
    }

    /// Ends the row: writes its line.
    pub(crate) fn end(&mut self) -> io::Result<()> {
        self.line.push(b'\n');
        let written = self.out.write_all(&self.line);
        self.line.clear();
        self.fields = 0;
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
            line: Vec::with_capacity(512),
            fields: 0,
            digits: itoa::Buffer::new(),
        };
        let header: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        csv.row(&header)?;
        rows(&mut csv)
    })?;
    Ok(path)
}
