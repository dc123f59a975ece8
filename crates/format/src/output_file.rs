//! An output file written front to back whose written part leaves the page cache as it goes
//! ("drop-behind"): every [`WINDOW`] bytes its writeback is started, and the window before the
//! last, once on disk, is dropped from the cache, by a thread of its own that the writer hands
//! the windows to (at most [`LAG`] waiting). A run's outputs are gigabytes (6.9 GB of CSV
//! at 10^7 dispatches) that nothing reads back while they are written; left in the cache, they
//! grow it by their size, and the kernel's cost per byte written grew with it (1.1-1.7 s of
//! system time per GB written at 5 GB against 0.26 s at 0.7 GB on the 2-core VM; 0.29 s at
//! either size with drop-behind; issue 49). The file's bytes are the same; the final `fsync`
//! ([`crate::files::replace_file`]) still makes them durable and reports any write error.

use crossbeam_channel::{bounded, Sender};
use std::fs::File;
use std::io::{self, Seek, SeekFrom, Write};
use std::thread::JoinHandle;

/// How many bytes are handed to writeback at a time.
const WINDOW: u64 = 32 << 20;

/// How many written windows may wait for the thread that drops them ([`Behind`]) before the
/// writer waits for it: the cache holds at most about this many windows more of the file.
const LAG: usize = 4;

/// A file written through [`Write`], dropped behind as it grows (see the module's notes).
pub(crate) struct OutputFile {
    file: File,
    /// Where the next write goes.
    position: u64,
    /// Bytes before this offset have been handed to writeback.
    flushed: u64,
    /// Who drops the windows written: none before the first.
    behind: Option<Behind>,
}

impl OutputFile {
    pub(crate) fn new(file: File) -> OutputFile {
        OutputFile {
            file,
            position: 0,
            flushed: 0,
            behind: None,
        }
    }

    /// The file itself (to truncate it, or to hand it to a thread that writes it).
    pub(crate) fn file(&mut self) -> &mut File {
        &mut self.file
    }

    /// Hands what was written since the last window to writeback and the dropping behind it.
    /// Hints only: a failure leaves the bytes in the cache, to be written (and any error
    /// reported) by the final `fsync`.
    fn drop_behind(&mut self) {
        if self.position < self.flushed + WINDOW {
            return;
        }
        let window = (self.flushed, self.position);
        self.flushed = self.position;
        let file = &self.file;
        self.behind
            .get_or_insert_with(|| Behind::start(file))
            .window(file, window);
    }
}

/// Who drops a file behind its writer: a thread of its own, so that the writer goes on while
/// the disk catches up (waiting in the writer's thread for each window to reach the disk took
/// a quarter of the JSON writer's time at 10^6 dispatches; issue 49), or, without a thread to
/// spare, the writer itself.
enum Behind {
    Thread {
        windows: Option<Sender<(u64, u64)>>,
        thread: Option<JoinHandle<()>>,
    },
    Inline(Dropper),
}

impl Behind {
    fn start(file: &File) -> Behind {
        let thread = |file: File| {
            let (windows, received) = bounded::<(u64, u64)>(LAG);
            let thread = std::thread::Builder::new()
                .name("kreplay-drop".into())
                .spawn(move || {
                    let mut dropper = Dropper::default();
                    for window in received {
                        dropper.window(&file, window);
                    }
                })
                .ok()?;
            Some(Behind::Thread {
                windows: Some(windows),
                thread: Some(thread),
            })
        };
        let started = file.try_clone().ok().and_then(thread);
        started.unwrap_or(Behind::Inline(Dropper::default()))
    }

    /// The window `from..to` is written: drop behind it.
    fn window(&mut self, file: &File, window: (u64, u64)) {
        match self {
            Behind::Thread {
                windows: Some(windows),
                ..
            } => {
                // The writer waits here only when LAG windows are waiting already.
                if windows.send(window).is_err() {
                    *self = Behind::Inline(Dropper::default());
                }
            }
            Behind::Thread { windows: None, .. } => {}
            Behind::Inline(dropper) => dropper.window(file, window),
        }
    }
}

impl Drop for Behind {
    /// Waits for the windows handed over: the file is then closed, synced or renamed alone.
    fn drop(&mut self) {
        if let Behind::Thread { windows, thread } = self {
            drop(windows.take());
            if let Some(thread) = thread.take() {
                let _ = thread.join();
            }
        }
    }
}

/// How far a file has been dropped from the cache.
#[derive(Default)]
struct Dropper {
    /// Bytes before this offset are on disk and dropped from the cache.
    dropped: u64,
}

impl Dropper {
    /// Starts the writeback of the window `from..to` just written, and drops what is on disk
    /// up to a window before its end.
    fn window(&mut self, file: &File, (from, to): (u64, u64)) {
        start_writeback(file, from, to);
        // A window before what was dropped: the writer went back (see `seek`).
        self.dropped = self.dropped.min(from);
        let keep_from = to.saturating_sub(WINDOW);
        if keep_from > self.dropped {
            drop_written(file, self.dropped, keep_from);
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
