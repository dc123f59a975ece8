//! The command line's allocator. Post-processing reads records on one thread and writes them on
//! another, each record a few short strings (an API call's name and arguments): under glibc's
//! malloc the reader's allocations and the writer's frees met on one arena's lock, and malloc and
//! free took a third of a traced run's JSON. mimalloc frees across threads without that lock
//! (docs/DECISIONS.md). It keeps freed memory 10 ms before it gives it back to the system, by
//! default; kreplay has it kept 2 ms ([`configure`]).

use std::ffi::c_long;

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc v2's option enum (the crate's bindings do not name it):
/// how long freed memory is kept before it is given back, in milliseconds (10 by default).
const PURGE_DELAY: i32 = 15;

/// How long kreplay has it kept. A traced run's Perfetto trace at 10^6 dispatches ends with its
/// passes read by threads that come and go while the writer frees what they read: its peak was
/// 80–107 MiB with 10 ms (the memory freed not yet given back when the next pages came), 78–83
/// MiB with 1–3 ms at the same speed, 68–77 MiB with 0 (the system time doubled).
const PURGE_DELAY_MS: c_long = 2;

extern "C" {
    fn mi_option_set(option: i32, value: c_long);
    #[cfg(test)]
    fn mi_option_get(option: i32) -> c_long;
}

/// Sets mimalloc's options, first thing in `main`; `MIMALLOC_PURGE_DELAY` in the environment
/// still decides.
pub fn configure() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_none() {
        // SAFETY: mimalloc's own setter of one of its options, with a value it documents; it
        // applies to memory freed from then on.
        unsafe { mi_option_set(PURGE_DELAY, PURGE_DELAY_MS) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_set_is_mimallocs_purge_delay() {
        if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
            return;
        }
        // SAFETY: mimalloc's getter of one of its options.
        let before = unsafe { mi_option_get(PURGE_DELAY) };
        // purge_delay's documented default, which neither neighbouring option has (eager commit
        // delay 1, NUMA nodes 0).
        assert_eq!(
            before, 10,
            "option {PURGE_DELAY} is not mimalloc's purge_delay"
        );
        configure();
        assert_eq!(unsafe { mi_option_get(PURGE_DELAY) }, PURGE_DELAY_MS);
    }
}
