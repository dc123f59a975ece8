//! `libkreplay_inject.so`: CUDA loads it through `CUDA_INJECTION64_PATH` and calls
//! [`InitializeInjection`] inside `cuInit`.
//!
//! The library subscribes to CUPTI's driver and resource callback domains and turns them into
//! engine calls: launches go through `Engine::launch_enter`/`launch_exit` with the CUDA backend,
//! allocations and frees into the engine's inventory, loaded modules' `__device__` and
//! `__constant__` variables into the inventory at their kernels' first launch, and every other
//! driver call of an application thread holds the engine's fence. Records go to a `DbWriter`
//! (its own thread); at process exit they are flushed.
//!
//! Panic safety: every `extern "C"` entry point runs inside `catch_unwind`. A panic switches the
//! tool off (callbacks return at once from then on); the application goes on unprofiled.

mod callbacks;
mod tool;

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Called by the CUDA driver once, inside `cuInit`. Always returns 1: a tool that cannot start
/// says why on stderr and leaves the application alone.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(tool::initialize));
    match outcome {
        Ok(Ok(())) => {}
        Ok(Err(message)) => tool::say(&format!(
            "{message}; the application runs without profiling"
        )),
        Err(_) => {
            tool::say("internal error while starting; the application runs without profiling")
        }
    }
    1
}
