//! Items written once to an anonymous temporary file, in the order given, and read back from
//! the start as often as needed: the replay costs of a process, read before its records so that
//! each slice finds its dispatch's, in bounded memory.

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::path::Path;

/// The buffer of a spool's writer and of each reader.
const BUFFER: usize = 1 << 20;

pub(super) struct Spool {
    file: BufWriter<File>,
}

impl Spool {
    /// An empty spool in `dir`.
    pub(super) fn new(dir: &Path) -> io::Result<Spool> {
        Ok(Spool {
            file: BufWriter::with_capacity(BUFFER, tempfile::tempfile_in(dir)?),
        })
    }

    /// Adds an item: `key`, then `payload`.
    pub(super) fn push(&mut self, key: &[u8], payload: &[u8]) -> io::Result<()> {
        let len = (key.len() + payload.len()) as u32;
        self.file.write_all(&len.to_le_bytes())?;
        self.file.write_all(key)?;
        self.file.write_all(payload)
    }

    /// The items from the first.
    pub(super) fn read(&mut self) -> io::Result<SpoolReader> {
        self.file.flush()?;
        let mut file = self.file.get_ref().try_clone()?;
        file.rewind()?;
        Ok(SpoolReader {
            file: BufReader::with_capacity(BUFFER, file),
        })
    }
}

/// Items in order, each its key then its payload (as [`Spool::push`] takes them).
pub(super) trait Items {
    /// Sets `item` to the next item (key and payload); false after the last.
    fn next_into(&mut self, item: &mut Vec<u8>) -> io::Result<bool>;
}

pub(super) struct SpoolReader {
    file: BufReader<File>,
}

impl Items for SpoolReader {
    fn next_into(&mut self, item: &mut Vec<u8>) -> io::Result<bool> {
        let mut len = [0u8; 4];
        match self.file.read_exact(&mut len) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(false),
            Err(e) => return Err(e),
        }
        item.resize(u32::from_le_bytes(len) as usize, 0);
        self.file.read_exact(item)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_read_back_in_order_as_often_as_asked() {
        let dir = tempfile::tempdir().unwrap();
        let mut spool = Spool::new(dir.path()).unwrap();
        for i in 0..1000u32 {
            spool
                .push(&i.to_be_bytes(), &vec![7; i as usize % 5])
                .unwrap();
        }
        for _ in 0..2 {
            let mut reader = spool.read().unwrap();
            let mut item = Vec::new();
            for i in 0..1000u32 {
                assert!(reader.next_into(&mut item).unwrap());
                assert_eq!(item[..4], i.to_be_bytes());
                assert_eq!(item.len(), 4 + i as usize % 5);
            }
            assert!(!reader.next_into(&mut item).unwrap());
        }
    }
}
