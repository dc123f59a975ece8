//! The effective user, part of the key under which a device's identity is cached (profiling
//! permission is per user).

/// The process's effective user id.
pub fn effective_uid() -> u32 {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() }
}
