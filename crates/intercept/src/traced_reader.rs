//! The thread that reads the launches timed without waiting (a run without counters): every
//! millisecond it records the launches that have completed, flushing CUPTI's records of
//! kernel executions every 10 ms (sooner when many are pending), so that the application's
//! threads only note each launch. It stops when the tool is switched off; a forked child has
//! none (the engine's own reads, after API calls and when many launches are pending, and the
//! end of the process still record every launch).

use crate::tool;
use kreplay_core::lifecycle::{self, Life};
use std::time::Duration;

/// How often pending launches are read.
const PERIOD: Duration = Duration::from_millis(1);
/// How often CUPTI's records of kernel executions are flushed, at most: a flush slows the
/// application's launches while it runs (every millisecond cost 2.3 µs a launch on an H100,
/// every 5 ms 0–0.6 µs, every 20 ms none measurable).
const FLUSH_PERIOD_NS: u64 = 10_000_000;
/// Pending launches that have the records flushed sooner (well below the engine's
/// `TRACED_READ_AT`, past which launches read them themselves).
const FLUSH_AT: usize = 1024;

/// Starts the thread (a failure to start leaves the reading to the engine's own reads).
pub(crate) fn start() {
    let _ = std::thread::Builder::new()
        .name("kreplay-traced".into())
        .spawn(|| {
            // The application's signals go to its own threads.
            lifecycle::block_signals();
            while lifecycle::life() == Life::On {
                std::thread::sleep(PERIOD);
                let Some(tool) = tool::tool() else {
                    return;
                };
                let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    // CUPTI's completed records of kernel executions come back here, before
                    // any lock is taken.
                    if kreplay_cuda::activity::since_flush_ns() >= FLUSH_PERIOD_NS
                        || tool.engine.traced_pending() >= FLUSH_AT
                    {
                        kreplay_cuda::activity::flush();
                    }
                    let mut backend = tool.passive_backend(std::ptr::null_mut());
                    tool.engine.collect_ready_traced(&mut backend);
                }));
                if read.is_err() {
                    return;
                }
            }
        });
}
