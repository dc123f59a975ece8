//! `libkreplay_inject.so`: CUDA loads it through `CUDA_INJECTION64_PATH` and calls
//! [`InitializeInjection`] inside `cuInit`. The library is this entry point and its panic wall;
//! what it starts, the interception of the application's CUDA calls, is
//! `kreplay_intercept`.

use std::ffi::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

/// Called by the CUDA driver once, inside `cuInit`. Always returns 1: a tool that cannot start
/// says why on stderr and leaves the application alone.
#[no_mangle]
pub extern "C" fn InitializeInjection() -> c_int {
    use kreplay_intercept::{initialize, say};
    match catch_unwind(AssertUnwindSafe(initialize)) {
        Ok(Ok(())) => {}
        Ok(Err(message)) => say(&format!(
            "{message}; the application runs without profiling"
        )),
        Err(_) => say("internal error while starting; the application runs without profiling"),
    }
    1
}
