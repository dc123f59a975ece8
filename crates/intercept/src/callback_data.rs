//! Reading CUPTI's driver-callback data beyond its parameter blocks (those are read where each
//! call is classified: `crate::classify`).

use kreplay_cupti_sys as sys;

/// Whether the call returned `CUDA_SUCCESS` (at its EXIT callback).
pub(crate) fn succeeded(data: &sys::CUpti_CallbackData) -> bool {
    // SAFETY: at EXIT the return value points at the call's CUresult.
    !data.functionReturnValue.is_null()
        && unsafe { *(data.functionReturnValue as *const sys::CUresult) } == 0
}
