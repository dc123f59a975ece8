//! The database writer's backlog on disk. A process can send records faster than SQLite takes
//! them (a loop of tiny kernels under `--kernel-trace`: hundreds of thousands a second against
//! tens of thousands of dispatch passes the database inserts). Rather than let its queue grow
//! without bound, or refuse records, the writer thread moves what waits in its queue to a file
//! beside the database (`<database>.backlog`, one JSON record per line: appending is many times
//! faster than inserting), and inserts from there, in order, whenever its queue is quiet, all of
//! it before it answers a flush and before it closes the database. The file is removed once it
//! has been read to its end. A process killed without last words (SIGKILL) leaves it behind:
//! [`left_behind`] says how many records it held, which the database may lack.

use crate::records::Record;
use std::fs::File;
use std::io::{self, BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};

/// The backlog file of the database at `db`.
pub fn path_of(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".backlog");
    PathBuf::from(name)
}

/// Backlog files left in `dir` by processes that could not drain them (killed): each with the
/// number of records it holds (an upper bound of what their databases lack).
pub fn left_behind(dir: &Path) -> Vec<(PathBuf, u64)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, u64)> = entries
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(".db.backlog"))
        .map(|p| {
            let lines = File::open(&p)
                .map(|f| BufReader::new(f).split(b'\n').count() as u64)
                .unwrap_or(0);
            (p, lines)
        })
        .collect();
    found.sort();
    found
}

/// Records waiting on disk for the database, first in first out.
pub(super) struct Backlog {
    path: PathBuf,
    /// Open while the backlog holds records.
    file: Option<Open>,
    /// Records in the file not yet read back.
    waiting: u64,
    /// Records that went through the backlog, for the writer's report.
    pub(super) total: u64,
}

struct Open {
    writer: BufWriter<File>,
    reader: BufReader<File>,
    /// Whether records were appended since the writer was last flushed to the file.
    unflushed: bool,
    line: Vec<u8>,
}

impl Backlog {
    pub(super) fn new(db: &Path) -> Backlog {
        Backlog {
            path: path_of(db),
            file: None,
            waiting: 0,
            total: 0,
        }
    }

    /// Whether records wait in the backlog.
    pub(super) fn holds_records(&self) -> bool {
        self.waiting > 0
    }

    /// Appends a record at the end of the backlog.
    pub(super) fn push(&mut self, record: &Record) -> io::Result<()> {
        let open = match &mut self.file {
            Some(open) => open,
            None => {
                let file = File::create(&self.path)?;
                // Opened again, not cloned: the reader keeps a position of its own.
                let reader = BufReader::with_capacity(1 << 20, File::open(&self.path)?);
                self.file.insert(Open {
                    writer: BufWriter::with_capacity(1 << 20, file),
                    reader,
                    unflushed: false,
                    line: Vec::new(),
                })
            }
        };
        serde_json::to_writer(&mut open.writer, record)?;
        open.writer.write_all(b"\n")?;
        open.unflushed = true;
        self.waiting += 1;
        self.total += 1;
        Ok(())
    }

    /// Hands what was appended to the operating system (a process killed later leaves it in the
    /// file for [`left_behind`] to count).
    pub(super) fn flush(&mut self) -> io::Result<()> {
        match &mut self.file {
            Some(open) if open.unflushed => {
                open.unflushed = false;
                open.writer.flush()
            }
            _ => Ok(()),
        }
    }

    /// Reads back up to `most` records, oldest first, into `out`. The file is removed once every
    /// record in it has been read. A file that cannot be read back is given up (removed), and the
    /// error says how many records were lost with it.
    pub(super) fn pop(&mut self, most: usize, out: &mut Vec<Record>) -> io::Result<()> {
        let read = self.read(most, out);
        if let Err(e) = read {
            let lost = std::mem::take(&mut self.waiting);
            self.file = None;
            let _ = std::fs::remove_file(&self.path);
            return Err(io::Error::other(format!(
                "the database writer's backlog {} could not be read back ({e}): {lost} record(s) lost",
                self.path.display()
            )));
        }
        if self.waiting == 0 {
            self.close()?;
        }
        Ok(())
    }

    fn read(&mut self, most: usize, out: &mut Vec<Record>) -> io::Result<()> {
        self.flush()?;
        let Some(open) = &mut self.file else {
            return Ok(());
        };
        while self.waiting > 0 && out.len() < most {
            open.line.clear();
            if open.reader.read_until(b'\n', &mut open.line)? == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "it ended early",
                ));
            }
            self.waiting -= 1;
            out.push(serde_json::from_slice(&open.line)?);
        }
        Ok(())
    }

    /// Forgets the file (every record in it read back): removes it.
    fn close(&mut self) -> io::Result<()> {
        if self.file.take().is_some() {
            std::fs::remove_file(&self.path)?;
        }
        Ok(())
    }
}

impl Drop for Backlog {
    fn drop(&mut self) {
        if self.waiting == 0 {
            let _ = self.close();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::records::Warning;

    fn warning(n: usize) -> Record {
        Record::Warning(Warning {
            message: format!("record {n}"),
        })
    }

    #[test]
    fn records_come_back_in_order_and_the_file_goes_when_read_to_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("p.db");
        let mut backlog = Backlog::new(&db);
        assert!(!backlog.holds_records());
        for n in 0..10 {
            backlog.push(&warning(n)).unwrap();
        }
        backlog.flush().unwrap();
        assert_eq!(left_behind(dir.path()), vec![(path_of(&db), 10)]);
        let mut out = Vec::new();
        backlog.pop(4, &mut out).unwrap();
        assert_eq!(out, (0..4).map(warning).collect::<Vec<_>>());
        // Appending while reading: still first in, first out.
        backlog.push(&warning(10)).unwrap();
        out.clear();
        backlog.pop(100, &mut out).unwrap();
        assert_eq!(out, (4..11).map(warning).collect::<Vec<_>>());
        assert!(!backlog.holds_records());
        assert!(!path_of(&db).exists());
        assert_eq!(backlog.total, 11);
        // A second backlog after the first was drained starts a new file.
        backlog.push(&warning(11)).unwrap();
        out.clear();
        backlog.pop(100, &mut out).unwrap();
        assert_eq!(out, vec![warning(11)]);
        assert!(left_behind(dir.path()).is_empty());
    }
}
