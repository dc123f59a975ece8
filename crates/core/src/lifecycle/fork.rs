//! A child the application forks without exec inherits the tool's memory but not its threads:
//! the writer, the signals' thread, the counter set-ups and the device state belong to the
//! parent. The child is marked [`Life::ForkedChild`](super::Life::ForkedChild) at the fork, so
//! that its callbacks and its exit do nothing.

/// Marks every child forked from now on as a forked child. Once is enough per process.
pub fn watch_forks() {
    // SAFETY: registers a plain extern "C" function that only stores an atomic.
    unsafe { libc::pthread_atfork(None, None, Some(in_forked_child)) };
}

/// Runs in the child right after `fork`: async-signal-safe (an atomic store).
extern "C" fn in_forked_child() {
    super::state::mark_forked_child();
}
