//! An output file written front to back whose written part leaves the page cache as it goes
//! ("drop-behind"): every [`WINDOW`] bytes its writeback is started, and the window before the
//! last, once on disk, is dropped from the cache. A run's outputs are gigabytes (6.9 GB of CSV
//! at 10^7 dispatches) that nothing reads back while they are written; left in the cache, they
//! grow it by their size, and the kernel's cost per byte written grew with it (1.1-1.7 s of
//! system time per GB written at 5 GB against 0.26 s at 0.7 GB on the 2-core VM; 0.29 s at
//! either size with drop-behind; issue 49). The file's bytes are the same; the final `fsync`
//! ([`crate::files::replace_file`]) still makes them durable and reports any write error.

use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};

/// How many bytes are handed to writeback at a time; the cache holds at most about two of them
/// of the file.
const WINDOW: u64 = 32 << 20;

/// A file written through [`Write`], dropped behind as it grows (see the module's notes).
pub(crate) struct OutputFile {
    file: File,
    /// Where the next write goes.
    position: u64,
    /// Bytes before this offset have had their writeback started.
    flushed: u64,
    /// Bytes before this offset are on disk and dropped from the cache.
    dropped: u64,
}

impl OutputFile {
    pub(crate) fn new(file: File) -> OutputFile {
        OutputFile {
            file,
            position: 0,
            flushed: 0,
            dropped: 0,
        }
    }

    /// The file itself (to truncate it, or to hand it to a thread that writes it).
    pub(crate) fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Starts the writeback of what was written since the last window, and drops the window
    /// before it once written. Hints only: a failure leaves the bytes in the cache, to be
    /// written (and any error reported) by the final `fsync`.
    fn drop_behind(&mut self) {
        if self.position < self.flushed + WINDOW {
            return;
        }
        start_writeback(&self.file, self.flushed, self.position);
        self.flushed = self.position;
        let keep_from = self.flushed.saturating_sub(WINDOW);
        if keep_from > self.dropped {
            drop_written(&self.file, self.dropped, keep_from);
            self.dropped = keep_from;
        }
    }
}

impl Write for OutputFile {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        let written = self.file.write(bytes)?;
        self.position += written as u64;
        self.drop_behind();
        Ok(written)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.file.flush()
    }
}

impl Seek for OutputFile {
    /// Writing goes on from where it is put (a writer that rewrites a part it truncated): what
    /// was dropped after it is written again, and dropped again.
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        self.position = self.file.seek(to)?;
        self.flushed = self.flushed.min(self.position);
        self.dropped = self.dropped.min(self.position);
        Ok(self.position)
    }
}

#[cfg(target_os = "linux")]
fn start_writeback(file: &File, from: u64, to: u64) {
    use std::os::fd::AsRawFd;
    // SAFETY: a plain system call on an open descriptor; it reads no memory of ours.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            from as libc::off64_t,
            (to - from) as libc::off64_t,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

#[cfg(target_os = "linux")]
fn drop_written(file: &File, from: u64, to: u64) {
    use std::os::fd::AsRawFd;
    let (offset, length) = (from as libc::off64_t, (to - from) as libc::off64_t);
    // SAFETY: plain system calls on an open descriptor; they read no memory of ours.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            offset,
            length,
            libc::SYNC_FILE_RANGE_WAIT_BEFORE
                | libc::SYNC_FILE_RANGE_WRITE
                | libc::SYNC_FILE_RANGE_WAIT_AFTER,
        );
        libc::posix_fadvise(file.as_raw_fd(), offset, length, libc::POSIX_FADV_DONTNEED);
    }
}

#[cfg(not(target_os = "linux"))]
fn start_writeback(_: &File, _: u64, _: u64) {}

#[cfg(not(target_os = "linux"))]
fn drop_written(_: &File, _: u64, _: u64) {}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// The bytes are those written, across windows and after a rewrite from a truncation.
    #[test]
    fn keeps_every_byte() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out");
        let chunk: Vec<u8> = (0..=255u8).cycle().take(1 << 20).collect();
        // Chunks of 1 MiB: past three windows, then past two again from within the first.
        let (first, second) = ((3 * WINDOW) >> 20, (2 * WINDOW) >> 20);
        let cut = WINDOW / 2 + 7;
        let mut out = OutputFile::new(File::create(&path).unwrap());
        let mut expected = Vec::new();
        for _ in 0..=first {
            out.write_all(&chunk).unwrap();
            expected.extend_from_slice(&chunk);
        }
        out.seek(SeekFrom::Start(cut)).unwrap();
        out.file().set_len(cut).unwrap();
        expected.truncate(cut as usize);
        for _ in 0..=second {
            out.write_all(&chunk).unwrap();
            expected.extend_from_slice(&chunk);
        }
        out.flush().unwrap();
        drop(out);
        let mut read = Vec::new();
        File::open(&path).unwrap().read_to_end(&mut read).unwrap();
        assert!(read == expected, "the file differs from what was written");
    }
}
