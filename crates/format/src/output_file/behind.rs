//! Dropping a file written through the page cache from the cache behind its writer: every
//! [`WINDOW`] bytes its writeback is started, and the window before the last, once on disk, is
//! dropped, by a thread of its own that the writer hands the windows to (at most [`LAG`]
//! waiting). Left in the cache, gigabytes of output grew it by their size, and the kernel's cost
//! per byte written grew with it (1.1-1.7 s of system time per GB written at 5 GB against 0.26 s
//! at 0.7 GB on the 2-core VM; 0.29 s at either size with drop-behind; issue 49).

use crossbeam_channel::{bounded, Sender};
use std::fs::File;
use std::thread::JoinHandle;

/// How many bytes are handed to writeback at a time.
pub(super) const WINDOW: u64 = 32 << 20;

/// How many written windows may wait for the thread that drops them ([`Behind`]) before the
/// writer waits for it: the cache holds at most about this many windows more of the file.
const LAG: usize = 4;

/// Who drops a file behind its writer: a thread of its own, so that the writer goes on while
/// the disk catches up (waiting in the writer's thread for each window to reach the disk took
/// a quarter of the JSON writer's time at 10^6 dispatches; issue 49), or, without a thread to
/// spare, the writer itself.
pub(super) enum Behind {
    Thread {
        windows: Option<Sender<(u64, u64)>>,
        thread: Option<JoinHandle<()>>,
    },
    Inline(Dropper),
}

impl Behind {
    pub(super) fn start(file: &File) -> Behind {
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
    pub(super) fn window(&mut self, file: &File, window: (u64, u64)) {
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
pub(super) struct Dropper {
    /// Bytes before this offset are on disk and dropped from the cache.
    dropped: u64,
}

impl Dropper {
    /// Starts the writeback of the window `from..to` just written, and drops what is on disk
    /// up to a window before its end.
    pub(super) fn window(&mut self, file: &File, (from, to): (u64, u64)) {
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
