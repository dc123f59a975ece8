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
        for (index, field) in fields.iter().enumerate() {
            if index > 0 {
                self.0.write_all(b",")?;
            }
            self.0.write_all(field.as_bytes())?;
        }
        self.0.write_all(b"\n")
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
