//! An output file written front to back, its bytes kept out of the page cache: written
//! straight to the disk ([`direct`]) where the file system allows it, else through the cache and
//! dropped from it behind the writing ([`behind`]). A run's outputs are gigabytes (6.9 GB of CSV
//! at 10^7 dispatches) that nothing reads back while they are written. The file's bytes are the
//! same either way; the final `fsync` ([`crate::files::replace_file`]) still makes them durable
//! and reports any write error. A file smaller than a direct buffer, and what follows a seek
//! elsewhere than where the writing is, go through the cache.

mod behind;
mod direct;

use behind::{Behind, WINDOW};
use direct::{Aligned, Direct, BUFFER};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// A file written through [`Write`], kept out of the page cache (see the module's notes).
pub(crate) struct OutputFile {
    /// The file, opened for writing through the cache.
    file: File,
    /// Where the next byte written goes.
    position: u64,
    mode: Mode,
}

enum Mode {
    /// Gathered in `current`, the bytes from `at` (the start, then a [`BUFFER`] further each
    /// time) on, `filled` of them; the full buffers before written straight to the disk by
    /// `direct`, started at the first (none before). `path` is where it is opened.
    Direct {
        path: PathBuf,
        current: Aligned,
        filled: usize,
        at: u64,
        direct: Option<Direct>,
    },
    /// Written through the cache at the file's own offset (`position`), handed to `behind`
    /// every window: bytes before `flushed` were handed over.
    Cached {
        flushed: u64,
        behind: Option<Behind>,
    },
}

impl OutputFile {
    /// Writes `file`, opened for writing at its start, which `path` names: straight to the
    /// disk where it can.
    pub(crate) fn new(file: File, path: &Path) -> OutputFile {
        OutputFile::direct(file, path, 0)
    }

    /// Writes `file` (which `path` names) from its offset `start` on, what is before it kept:
    /// straight to the disk where it can and `start` is a multiple of the direct writes'
    /// alignment, else through the cache.
    pub(crate) fn at(mut file: File, path: &Path, start: u64) -> io::Result<OutputFile> {
        if start.is_multiple_of(direct::ALIGN as u64) {
            return Ok(OutputFile::direct(file, path, start));
        }
        file.seek(SeekFrom::Start(start))?;
        Ok(OutputFile {
            file,
            position: start,
            mode: Mode::Cached {
                flushed: start,
                behind: None,
            },
        })
    }

    /// Writes from `start`, a multiple of the direct writes' alignment.
    fn direct(file: File, path: &Path, start: u64) -> OutputFile {
        OutputFile {
            file,
            position: start,
            mode: Mode::Direct {
                path: path.to_path_buf(),
                current: Aligned::new(),
                filled: 0,
                at: start,
                direct: None,
            },
        }
    }

    /// Writes `file` through the cache, from its offset `0`.
    #[cfg(test)]
    pub(crate) fn cached(file: File) -> OutputFile {
        OutputFile {
            file,
            position: 0,
            mode: Mode::Cached {
                flushed: 0,
                behind: None,
            },
        }
    }

    /// Whether the bytes go straight to the disk (since the first full buffer was handed over).
    #[cfg(test)]
    pub(crate) fn is_direct(&self) -> bool {
        matches!(
            self.mode,
            Mode::Direct {
                direct: Some(_),
                ..
            }
        )
    }

    /// The file itself (to truncate it, once a seek made it written through the cache).
    pub(crate) fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Writes the gathered bytes that fill no buffer through the cache (where the direct
    /// write of their buffer, once full, writes them again), after the full buffers handed
    /// over: every byte given is then in the file.
    fn write_gathered(&mut self) -> io::Result<()> {
        if let Mode::Direct {
            current,
            filled,
            at,
            direct,
            ..
        } = &mut self.mode
        {
            if let Some(direct) = direct {
                direct.wait()?;
            }
            self.file.write_all_at(&current.bytes()[..*filled], *at)?;
        }
        Ok(())
    }

    /// Goes on through the cache from `position` (the direct writes' thread stopped).
    fn write_cached(&mut self) -> io::Result<()> {
        self.write_gathered()?;
        self.file.seek(SeekFrom::Start(self.position))?;
        self.mode = Mode::Cached {
            flushed: self.position,
            behind: None,
        };
        Ok(())
    }

    /// The gathered buffer is full: hands it to the direct writes (started at the first) and
    /// takes the next, or, where the file cannot be written directly, goes on through the cache.
    fn buffer_full(&mut self) -> io::Result<()> {
        let Mode::Direct {
            path,
            current,
            filled,
            at,
            direct,
        } = &mut self.mode
        else {
            return Ok(());
        };
        if direct.is_none() {
            *direct = Direct::start(path, &self.file);
        }
        let Some(writer) = direct else {
            return self.write_cached();
        };
        writer.write(current, *at)?;
        *at += BUFFER as u64;
        *filled = 0;
        Ok(())
    }
}

impl Drop for OutputFile {
    /// Bytes gathered and not flushed are written all the same (as a `BufWriter`'s are).
    fn drop(&mut self) {
        let _ = self.write_gathered();
    }
}

impl Write for OutputFile {
    /// Bytes are taken only once the buffer has room: an error (a direct write's before) takes
    /// none.
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        if matches!(self.mode, Mode::Direct { filled: BUFFER, .. }) {
            self.buffer_full()?;
        }
        match &mut self.mode {
            Mode::Direct {
                current, filled, ..
            } => {
                let room = &mut current.bytes_mut()[*filled..];
                let taken = room.len().min(bytes.len());
                room[..taken].copy_from_slice(&bytes[..taken]);
                *filled += taken;
                self.position += taken as u64;
                Ok(taken)
            }
            Mode::Cached { flushed, behind } => {
                let written = self.file.write(bytes)?;
                self.position += written as u64;
                if self.position >= *flushed + WINDOW {
                    // Hints only: a failure leaves the bytes in the cache, to be written (and
                    // any error reported) by the final `fsync`.
                    let window = (*flushed, self.position);
                    *flushed = self.position;
                    let file = &self.file;
                    behind
                        .get_or_insert_with(|| Behind::start(file))
                        .window(file, window);
                }
                Ok(written)
            }
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        if matches!(self.mode, Mode::Direct { filled: BUFFER, .. }) {
            self.buffer_full()?;
        }
        self.write_gathered()?;
        self.file.flush()
    }
}

impl Seek for OutputFile {
    /// Telling where the writing is changes nothing; writing goes on from anywhere else it is
    /// put (a writer that rewrites a part it truncated) through the cache: what was dropped
    /// after it is written again, and dropped again.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        if let Mode::Direct { .. } = self.mode {
            if to == SeekFrom::Current(0) || to == SeekFrom::Start(self.position) {
                return Ok(self.position);
            }
            self.write_cached()?;
        }
        self.position = self.file.seek(to)?;
        if let Mode::Cached { flushed, .. } = &mut self.mode {
            *flushed = (*flushed).min(self.position);
        }
        Ok(self.position)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    fn read(path: &Path) -> Vec<u8> {
        let mut read = Vec::new();
        File::open(path).unwrap().read_to_end(&mut read).unwrap();
        read
    }

    /// Whether the file system of `path` takes direct writes.
    #[cfg(not(target_os = "linux"))]
    fn takes_direct(_: &Path) -> bool {
        false
    }

    /// Whether the file system of `path` takes direct writes.
    #[cfg(target_os = "linux")]
    fn takes_direct(path: &Path) -> bool {
        use std::os::unix::fs::OpenOptionsExt;
        std::fs::OpenOptions::new()
            .write(true)
            .custom_flags(libc::O_DIRECT)
            .open(path)
            .is_ok()
    }

    /// The bytes are those written, across windows and buffers and after a rewrite from a
    /// truncation, straight to the disk or through the cache.
    #[test]
    fn keeps_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        // Chunks of 1 MiB: past three windows, then past two again from within the first.
        let (first, second) = ((3 * WINDOW) >> 20, (2 * WINDOW) >> 20);
        let cut = WINDOW / 2 + 7;
        for direct in [true, false] {
            let path = dir.path().join(format!("out-{direct}"));
            let file = File::create(&path).unwrap();
            let mut out = match direct {
                true => OutputFile::new(file, &path),
                false => OutputFile::cached(file),
            };
            let mut expected = Vec::new();
            for _ in 0..=first {
                out.write_all(&chunk).unwrap();
                expected.extend_from_slice(&chunk);
            }
            assert_eq!(out.is_direct(), direct && takes_direct(&path));
            out.seek(SeekFrom::Start(cut)).unwrap();
            out.file().set_len(cut).unwrap();
            expected.truncate(cut as usize);
            for _ in 0..=second {
                out.write_all(&chunk).unwrap();
                expected.extend_from_slice(&chunk);
            }
            out.flush().unwrap();
            drop(out);
            assert!(read(&path) == expected, "the file differs ({direct})");
        }
    }

    /// Written from an offset, aligned (straight to the disk) or not (through the cache): the
    /// bytes before it kept, those after it the bytes given.
    #[test]
    fn a_file_written_from_an_offset_keeps_what_is_before() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..2 * BUFFER + 999).map(|i| (i % 251) as u8).collect();
        for start in [3 * 4096, 4096 + 17] {
            let path = dir.path().join(format!("at-{start}"));
            std::fs::write(&path, vec![9u8; start]).unwrap();
            let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
            let mut out = OutputFile::at(file, &path, start as u64).unwrap();
            out.write_all(&bytes).unwrap();
            out.flush().unwrap();
            drop(out);
            let mut expected = vec![9u8; start];
            expected.extend_from_slice(&bytes);
            assert!(read(&path) == expected, "from {start}");
        }
    }

    /// Writes of any length, a flush between them (after which the file holds every byte
    /// given), a question of where the writing is (which changes nothing) and a file that never
    /// fills a buffer, or fills exactly one.
    #[test]
    fn direct_writes_keep_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let bytes: Vec<u8> = (0..5 * BUFFER + 12_345)
            .map(|i| (i * 7 + i / 4099) as u8)
            .collect();
        for (name, total, piece) in [
            ("pieces", bytes.len(), 7_919),
            ("small", 100, 33),
            ("one", BUFFER, BUFFER),
            ("whole", bytes.len(), bytes.len()),
        ] {
            let path = dir.path().join(name);
            let mut out = OutputFile::new(File::create(&path).unwrap(), &path);
            let mut given = 0;
            for part in bytes[..total].chunks(piece) {
                out.write_all(part).unwrap();
                given += part.len();
                if given > 2 * BUFFER && given - part.len() <= 2 * BUFFER {
                    out.flush().unwrap();
                    assert!(read(&path) == bytes[..given], "{name}: flushed at {given}");
                    assert_eq!(out.stream_position().unwrap(), given as u64);
                }
            }
            out.flush().unwrap();
            let engaged = total >= BUFFER && takes_direct(&path);
            assert_eq!(out.is_direct(), engaged, "{name}");
            drop(out);
            assert!(read(&path) == bytes[..total], "{name}: the file differs");
        }
    }

    /// A file that cannot be opened for direct writes (here: its name gone before the first
    /// buffer filled) is written through the cache from where the gathering was.
    #[test]
    fn a_file_not_opened_for_direct_writes_is_written_through_the_cache() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("gone");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        let reader = file.try_clone().unwrap();
        std::fs::remove_file(&path).unwrap();
        let bytes: Vec<u8> = (0..3 * BUFFER + 5).map(|i| (i % 253) as u8).collect();
        let mut out = OutputFile::new(file, &path);
        for part in bytes.chunks(100_003) {
            out.write_all(part).unwrap();
        }
        out.flush().unwrap();
        assert!(!out.is_direct());
        drop(out);
        let mut read = vec![0u8; bytes.len() + 1];
        let length = reader.read_at(&mut read, 0).unwrap();
        assert!(read[..length] == bytes[..], "{length} bytes read back");
    }
}
