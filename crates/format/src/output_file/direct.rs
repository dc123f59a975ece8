//! Writing a file past the page cache (`O_DIRECT`): the bytes are gathered in aligned buffers
//! of [`BUFFER`] bytes, and each full one is written straight to the disk by a thread of its own
//! while the writer fills the next (at most [`BUFFERS`] in all). Through the cache, the kernel
//! copied every byte into a page it allocated, wrote it back and dropped it: a third of the CPU
//! of writing 2.2 GB of JSON at 10^6 dispatches, against a copy into the buffer here (issue 49).
//! A file system that refuses `O_DIRECT` (on opening, or on a write) gets the bytes through the
//! cache instead, dropped behind ([`Dropper`]).

use super::behind::Dropper;
use crossbeam_channel::{bounded, Receiver, Sender};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::thread::JoinHandle;

/// The alignment `O_DIRECT` asks of a write's memory, offset and length (a page: the logical
/// block of every disk this runs on, or a multiple of it).
pub(super) const ALIGN: usize = 4096;

/// How many bytes a direct write writes.
pub(super) const BUFFER: usize = 2 << 20;

/// How many buffers a file has at most: one being filled, the others being written or free.
const BUFFERS: usize = 3;

/// [`BUFFER`] bytes aligned to [`ALIGN`]: a slice of a vector that is never resized.
pub(super) struct Aligned {
    storage: Vec<u8>,
    start: usize,
}

impl Aligned {
    pub(super) fn new() -> Aligned {
        let storage = vec![0u8; BUFFER + ALIGN];
        let address = storage.as_ptr() as usize;
        let start = (ALIGN - address % ALIGN) % ALIGN;
        Aligned { storage, start }
    }

    pub(super) fn bytes(&self) -> &[u8] {
        &self.storage[self.start..self.start + BUFFER]
    }

    pub(super) fn bytes_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..self.start + BUFFER]
    }
}

/// A full buffer to write at `at`.
struct Job {
    buffer: Aligned,
    at: u64,
}

/// A buffer written (or not).
struct Done {
    buffer: Aligned,
    result: io::Result<()>,
}

/// The thread that writes a file's full buffers, and the buffers not being filled.
pub(super) struct Direct {
    jobs: Option<Sender<Job>>,
    done: Receiver<Done>,
    thread: Option<JoinHandle<()>>,
    /// Buffers handed to the thread and not yet back.
    in_flight: usize,
    /// Buffers back from the thread.
    spare: Vec<Aligned>,
    /// Buffers made, the one being filled included.
    made: usize,
}

impl Direct {
    /// Opens `path` (which `cached`, opened for writing, names) for direct writes and starts
    /// the thread that makes them; `None` where either cannot be done.
    pub(super) fn start(path: &Path, cached: &File) -> Option<Direct> {
        let direct = open_direct(path)?;
        let cached = cached.try_clone().ok()?;
        let (jobs, received) = bounded::<Job>(BUFFERS);
        let (finished, done) = bounded::<Done>(BUFFERS);
        let thread = std::thread::Builder::new()
            .name("kreplay-write".into())
            .spawn(move || write_jobs(&direct, &cached, received, finished))
            .ok()?;
        Some(Direct {
            jobs: Some(jobs),
            done,
            thread: Some(thread),
            in_flight: 0,
            spare: Vec::new(),
            made: 1,
        })
    }

    /// Hands the full buffer `current` to the thread to write at `at`, and puts in its place
    /// the buffer to fill next: a spare one, a new one, or the first to come back (waiting for
    /// it). An error is that of a write before (`current` is then left as it is).
    pub(super) fn write(&mut self, current: &mut Aligned, at: u64) -> io::Result<()> {
        let next = match self.spare.pop() {
            Some(buffer) => buffer,
            None if self.made < BUFFERS => {
                self.made += 1;
                Aligned::new()
            }
            None => self.back()?,
        };
        let buffer = std::mem::replace(current, next);
        let jobs = self.jobs.as_ref().ok_or_else(stopped)?;
        jobs.send(Job { buffer, at }).map_err(|_| stopped())?;
        self.in_flight += 1;
        Ok(())
    }

    /// Waits for every buffer handed over to be written; the first error of their writes.
    pub(super) fn wait(&mut self) -> io::Result<()> {
        let mut first = Ok(());
        while self.in_flight > 0 {
            match self.back() {
                Ok(buffer) => self.spare.push(buffer),
                Err(e) => first = first.and(Err(e)),
            }
        }
        first
    }

    /// The next buffer back from the thread, or the error of its write (the buffer kept spare:
    /// a writer that goes on after an error finds one). Where the thread is gone, so are the
    /// buffers it had.
    fn back(&mut self) -> io::Result<Aligned> {
        let Ok(Done { buffer, result }) = self.done.recv() else {
            self.in_flight = 0;
            return Err(stopped());
        };
        self.in_flight -= 1;
        match result {
            Ok(()) => Ok(buffer),
            Err(e) => {
                self.spare.push(buffer);
                Err(e)
            }
        }
    }
}

impl Drop for Direct {
    /// Waits for the writes handed over: the file is then closed, synced or renamed alone.
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The thread's work: each job written straight to the disk through `direct`, or, once a
/// direct write was refused (`EINVAL`: an alignment the file system asks more of), through
/// the cache (`cached`), dropped behind.
fn write_jobs(direct: &File, cached: &File, jobs: Receiver<Job>, finished: Sender<Done>) {
    let mut refused = false;
    let mut dropper = Dropper::default();
    for Job { buffer, at } in jobs {
        let bytes = buffer.bytes();
        let mut result = Err(io::Error::from_raw_os_error(libc::EINVAL));
        if !refused {
            result = direct.write_all_at(bytes, at);
        }
        if matches!(&result, Err(e) if e.raw_os_error() == Some(libc::EINVAL)) {
            refused = true;
            result = cached.write_all_at(bytes, at);
            dropper.window(cached, (at, at + bytes.len() as u64));
        }
        if finished.send(Done { buffer, result }).is_err() {
            break;
        }
    }
}

#[cfg(target_os = "linux")]
fn open_direct(path: &Path) -> Option<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .write(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
        .ok()
}

#[cfg(not(target_os = "linux"))]
fn open_direct(_: &Path) -> Option<File> {
    None
}

/// Why a write failed when the thread that makes them is gone (it panicked).
fn stopped() -> io::Error {
    io::Error::other("the thread writing the output file stopped")
}
