//! A CSV file written as rocprofv3's encoder writes one (`csv.hpp`): every header quoted, then
//! the rows, the whole file replaced atomically.

use crate::error::FormatError;
use crate::files::write_file;
use crate::numbers::quoted;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::PathBuf;

/// A CSV file being written.
pub(crate) struct Csv<'a>(&'a mut BufWriter<File>);

impl Csv<'_> {
    /// Writes one line: the fields, comma-separated.
    pub(crate) fn row(&mut self, fields: &[String]) -> io::Result<()> {
        writeln!(self.0, "{}", fields.join(","))
    }
}

/// Writes the CSV file `path` atomically: the quoted header of `columns`, then what `rows` writes.
pub(crate) fn csv_file(
    path: PathBuf,
    columns: &[&str],
    rows: impl FnOnce(&mut Csv) -> io::Result<()>,
) -> Result<PathBuf, FormatError> {
    write_file(&path, |out| {
        let mut csv = Csv(out);
        let header: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        csv.row(&header)?;
        rows(&mut csv)
    })?;
    Ok(path)
}
