//! The thread that reads the launches timed without waiting (a run without counters): every
//! millisecond it records those whose end has completed, so that the application's threads
//! only record the two events around each launch. It stops when the tool is switched off; a
//! forked child has none (the engine's own reads, after API calls and when many launches are
//! pending, and the end of the process still record every launch).

use crate::tool;
use kreplay_core::lifecycle::{self, Life};
use std::time::Duration;

/// How often pending launches are read.
const PERIOD: Duration = Duration::from_millis(1);

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
                    let mut backend = tool.passive_backend(std::ptr::null_mut());
                    tool.engine.collect_ready_traced(&mut backend);
                }));
                if read.is_err() {
                    return;
                }
            }
        });
}
