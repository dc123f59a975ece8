//! A driver-API callback's data (`CUpti_CallbackData`) beyond its plain fields: the call's name,
//! whether it succeeded, the launched kernel's symbol.

use crate::error::c_text;
use kreplay_cupti_sys as sys;

/// What a driver call's callback data says, read safely where CUPTI's contract allows.
pub trait DriverCallback {
    /// The API's name, `"a driver call"` when CUPTI gives none.
    fn function_name(&self) -> &str;

    /// Whether the call returned `CUDA_SUCCESS` (meaningful at its EXIT callback).
    fn succeeded(&self) -> bool;

    /// The launched kernel's symbol name; `None` when empty.
    ///
    /// # Safety
    /// The callback is a launch's: CUPTI's `symbolName` is valid for launch callbacks only.
    unsafe fn launch_symbol(&self) -> Option<String>;
}

impl DriverCallback for sys::CUpti_CallbackData {
    fn function_name(&self) -> &str {
        if self.functionName.is_null() {
            "a driver call"
        } else {
            // SAFETY: CUPTI passes the API's name as a NUL-terminated static string.
            unsafe { std::ffi::CStr::from_ptr(self.functionName) }
                .to_str()
                .unwrap_or("a driver call")
        }
    }

    fn succeeded(&self) -> bool {
        // SAFETY: at EXIT the return value points at the call's CUresult.
        !self.functionReturnValue.is_null()
            && unsafe { *(self.functionReturnValue as *const sys::CUresult) } == 0
    }

    unsafe fn launch_symbol(&self) -> Option<String> {
        // SAFETY: valid for launch callbacks (the caller's contract).
        unsafe { c_text(self.symbolName) }.filter(|s| !s.is_empty())
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
        let mut data = sys::CUpti_CallbackData::default();
        assert_eq!(data.function_name(), "a driver call");
        assert!(!data.succeeded(), "no result: not a success");
        data.functionName = name.as_ptr();
        data.functionReturnValue = (&mut result as *mut sys::CUresult).cast();
        assert_eq!(data.function_name(), "cuMemAlloc_v2");
        assert!(data.succeeded());
        data.functionReturnValue = (&mut failed as *mut sys::CUresult).cast();
        assert!(!data.succeeded());
    }
}
