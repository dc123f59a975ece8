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

/// Called by NVTX at the application's first NVTX call when `NVTX_INJECTION64_PATH` names this
/// library (`--marker-trace`): hands NVTX to CUPTI (the copy kreplay uses), whose NVTX callbacks
/// the tool then receives. Returns 0 (NVTX without an injection) when CUPTI cannot take it,
/// saying why once.
///
/// # Safety
/// Called by NVTX, with the function it passes every injection (`get_export_table`).
#[no_mangle]
pub unsafe extern "C" fn InitializeInjectionNvtx2(
    get_export_table: *const std::ffi::c_void,
) -> c_int {
    use kreplay_intercept::say;
    // SAFETY: NVTX's own argument, passed on unchanged.
    let forwarded = catch_unwind(AssertUnwindSafe(|| unsafe {
        kreplay_intercept::initialize_nvtx(get_export_table)
    }));
    match forwarded {
        Ok(Ok(result)) => result,
        Ok(Err(message)) => {
            say(&format!("{message}; NVTX markers are not recorded"));
            0
        }
        Err(_) => {
            say("internal error while handing NVTX to CUPTI; NVTX markers are not recorded");
            0
        }
    }
}
