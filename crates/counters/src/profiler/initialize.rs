//! CUPTI's profiler initialisation, once per process: its outcome kept for every later caller.

use kreplay_cuda::cupti::Cupti;
use kreplay_cuda::debug;
use kreplay_cuda::error::CudaError;
use std::sync::Mutex;

/// The outcome of CUPTI's profiler initialisation, once one is kept.
static PROFILER_INIT: Mutex<Option<Result<(), CudaError>>> = Mutex::new(None);

/// CUPTI's profiler initialisation (it loads nvperf's driver layer), once per process; its
/// outcome is kept for every later caller.
pub fn initialize_profiler(cupti: &'static Cupti) -> Result<(), CudaError> {
    let mut kept = PROFILER_INIT.lock().unwrap_or_else(|e| e.into_inner());
    kept.get_or_insert_with(|| call_profiler_initialize(cupti))
        .clone()
}

fn call_profiler_initialize(cupti: &'static Cupti) -> Result<(), CudaError> {
    kreplay_cuda::cupti::profiler_device::initialize(cupti)
}

/// [`initialize_profiler`] where it may be too early: a failure is not kept, so that a later
/// caller tries again. Whether the profiler is initialised.
pub fn try_initialize_profiler(cupti: &'static Cupti) -> bool {
    let mut kept = PROFILER_INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(outcome) = kept.as_ref() {
        return outcome.is_ok();
    }
    match call_profiler_initialize(cupti) {
        Ok(()) => {
            *kept = Some(Ok(()));
            true
        }
        Err(e) => {
            debug::line(&format!("profiler initialisation left to the set-up: {e}"));
            false
        }
    }
}
