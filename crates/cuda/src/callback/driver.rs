//! A driver-API callback's data (`CUpti_CallbackData`): where the callback is (ENTER or EXIT),
//! the calling context, the correlation id, the call's name and parameters (decoded by
//! [`super::calls`]), whether it succeeded, the launched kernel's symbol.

use super::calls::{call_params, CallParams};
use crate::error::c_text;
use crate::CUcontext;
use kreplay_cupti_sys as sys;
use std::ffi::c_void;

/// What CUPTI passes a driver-API callback, valid during that callback only (CUPTI's
/// `CUpti_CallbackData`, read through the methods below).
#[repr(transparent)]
pub struct DriverData(sys::CUpti_CallbackData);

impl DriverData {
    /// The data behind CUPTI's pointer.
    ///
    /// # Safety
    /// `raw` is the data CUPTI passed to a driver-API callback (or a test's block that keeps
    /// its contract: a NUL-terminated name, parameters of the call named), used during it.
    pub unsafe fn from_raw<'a>(raw: *const c_void) -> &'a DriverData {
        // SAFETY: `DriverData` is a transparent wrapper (the caller's contract for the rest).
        unsafe { &*(raw as *const DriverData) }
    }

    /// Whether this is the call's ENTER callback (else its EXIT).
    pub fn is_enter(&self) -> bool {
        self.0.callbackSite == sys::CUpti_ApiCallbackSite_CUPTI_API_ENTER
    }

    /// The context current to the calling thread (NULL before any).
    pub fn context(&self) -> CUcontext {
        self.0.context
    }

    /// The id CUPTI gives the call, shared by its ENTER and EXIT and by its activity records.
    pub fn correlation_id(&self) -> u32 {
        self.0.correlationId
    }

    /// CUPTI's per-call slot, the same at the call's ENTER and EXIT (`correlationData`): where
    /// the tool keeps the call's start time between them. NULL when CUPTI gives none.
    pub fn correlation_slot(&self) -> *mut u64 {
        self.0.correlationData
    }

    /// The call's parameter block as `generated_cuda_meta.h` declares it for the call (NULL
    /// when CUPTI gives none), for the decoders that take a call's block.
    pub fn params(&self) -> *const c_void {
        self.0.functionParams
    }

    /// What a copy's, memset's or free's parameter block says ([`call_params`]), by the
    /// call's own name; `None` for other calls.
    pub fn call_params(&self) -> Option<CallParams> {
        // SAFETY: CUPTI passes the parameter block of the call it names, valid during the
        // callback (the constructor's contract).
        unsafe { call_params(self.function_name(), self.0.functionParams) }
    }

    /// The argument values the API trace records for this call ([`super::args::call_args`]),
    /// read at its EXIT; `None` for a call whose arguments are not decoded.
    /// A call that failed has none: its output arguments (an allocation's address) may not
    /// have been written, nor its pointers be valid.
    pub fn call_args(&self) -> Option<super::args::RawArgs> {
        if !self.succeeded() {
            return None;
        }
        // SAFETY: CUPTI passes the parameter block of the call it names, valid during the
        // callback (the constructor's contract); outputs are written at EXIT.
        unsafe { super::args::call_args(self.function_name(), self.0.functionParams) }
    }

    /// The API's name, `"a driver call"` when CUPTI gives none.
    pub fn function_name(&self) -> &str {
        let name = self.0.functionName;
        if name.is_null() {
            "a driver call"
        } else {
            // SAFETY: CUPTI passes the API's name as a NUL-terminated static string.
            unsafe { std::ffi::CStr::from_ptr(name) }
                .to_str()
                .unwrap_or("a driver call")
        }
    }

    /// Whether the call returned `CUDA_SUCCESS` (meaningful at its EXIT callback).
    pub fn succeeded(&self) -> bool {
        self.result() == Some(0)
    }

    /// The call's `CUresult` (meaningful at its EXIT callback; `None` where CUPTI gives none).
    pub fn result(&self) -> Option<sys::CUresult> {
        let result = self.0.functionReturnValue;
        // SAFETY: at EXIT the return value points at the call's CUresult.
        (!result.is_null()).then(|| unsafe { *(result as *const sys::CUresult) })
    }

    /// The launched kernel's symbol name; `None` when empty.
    ///
    /// # Safety
    /// The callback is a launch's: CUPTI's `symbolName` is valid for launch callbacks only.
    pub unsafe fn launch_symbol(&self) -> Option<String> {
        // SAFETY: valid for launch callbacks (the caller's contract).
        unsafe { c_text(self.0.symbolName) }.filter(|s| !s.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_name_and_result_are_read_or_defaulted() {
        let mut result: sys::CUresult = 0;
        let mut failed: sys::CUresult = 2;
        let name = c"cuMemAlloc_v2";
        let mut raw = sys::CUpti_CallbackData::default();
        // SAFETY: a block that keeps CUPTI's contract, read while it lives.
        let data = |raw: &sys::CUpti_CallbackData| unsafe {
            DriverData::from_raw((raw as *const sys::CUpti_CallbackData).cast())
        };
        assert_eq!(data(&raw).function_name(), "a driver call");
        assert!(!data(&raw).succeeded(), "no result: not a success");
        raw.functionName = name.as_ptr();
        raw.functionReturnValue = (&mut result as *mut sys::CUresult).cast();
        assert_eq!(data(&raw).function_name(), "cuMemAlloc_v2");
        assert!(data(&raw).succeeded());
        raw.functionReturnValue = (&mut failed as *mut sys::CUresult).cast();
        assert!(!data(&raw).succeeded());
    }
}
