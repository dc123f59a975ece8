//! The two process calls the counters make around CUPTI: an exit handler that must run before
//! the static destructors CUPTI and nvperf register at first use, and the effective user, part
//! of the key under which a device's identity is cached (profiling permission is per user).

/// Registers `handler` with `atexit`: it runs before every exit handler registered earlier,
/// after those registered later.
pub fn at_exit(handler: extern "C" fn()) {
    // SAFETY: registers a plain extern "C" function.
    unsafe { libc::atexit(handler) };
}

/// The process's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}
