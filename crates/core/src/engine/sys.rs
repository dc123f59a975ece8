//! Small process helpers of the engine: locks that survive a poisoning panic, clocks, the
//! thread id.

use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

pub(super) fn elapsed_ns(since: Instant) -> u64 {
    u64::try_from(since.elapsed().as_nanos()).unwrap_or(u64::MAX)
}

pub(super) fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The OS thread id, as rocprofv3 reports `tid`.
pub(super) fn current_tid() -> u64 {
    thread_local! {
        // Asked once per thread (a system call). A child forked from this thread inherits it,
        // but the tool does nothing in a forked child (`lifecycle::fork`).
        static TID: u64 = {
            // SAFETY: gettid has no preconditions and cannot fail.
            let tid = unsafe { libc::gettid() };
            u64::try_from(tid).unwrap_or(0)
        };
    }
    TID.try_with(|tid| *tid).unwrap_or_else(|_| {
        // SAFETY: as above (a thread being torn down).
        u64::try_from(unsafe { libc::gettid() }).unwrap_or(0)
    })
}
