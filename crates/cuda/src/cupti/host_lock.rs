//! The process-wide lock around CUPTI's Profiler Host API.

use std::sync::{Mutex, MutexGuard};

/// CUPTI's host API is not safe to call from several threads at once: concurrent
/// `cuptiProfilerHostInitialize` calls fail with `CUPTI_ERROR_UNKNOWN` (seen in our parallel
/// tests). Every use of it in the process takes this lock; a
/// [`HostObject`](super::host_object::HostObject) holds it for its whole life, so code that
/// needs a second host object must not create it while one is alive.
static HOST_API: Mutex<()> = Mutex::new(());

/// Holds the process-wide host-API lock (for other users of CUPTI's host API, such as the
/// range profiler's evaluation, so that they do not race with the catalog).
pub fn host_api_lock() -> MutexGuard<'static, ()> {
    // A panic while holding it leaves no state behind worth refusing to continue over.
    HOST_API
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
