//! Errors of driver and CUPTI calls, each naming the API that failed and the library's own text.

use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{CUptiResult, CUresult};
use std::ffi::CStr;

/// A failed CUDA driver or CUPTI call.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CudaError {
    /// The driver returned an error code.
    #[error("{api} failed: {name} ({code}): {text}")]
    Driver {
        api: &'static str,
        code: i32,
        name: String,
        text: String,
    },
    /// CUPTI returned an error code.
    #[error("{api} failed: CUPTI error {code}: {text}{}", cupti_hint(*code))]
    Cupti {
        api: &'static str,
        code: i32,
        text: String,
    },
    /// The loaded library does not export the function (an older driver or CUPTI).
    #[error("{0} is not exported by the loaded CUDA library; update the NVIDIA driver / CUDA toolkit to 13.0 or newer")]
    Missing(&'static str),
    /// The driver or CUPTI library could not be loaded.
    #[error("{0}")]
    Load(String),
}

impl CudaError {
    /// The raw driver error code, when the error came from the driver.
    pub fn driver_code(&self) -> Option<i32> {
        match self {
            CudaError::Driver { code, .. } => Some(*code),
            _ => None,
        }
    }

    pub fn cupti_code(&self) -> Option<i32> {
        match self {
            CudaError::Cupti { code, .. } => Some(*code),
            _ => None,
        }
    }
}

/// What `CUPTI_ERROR_HARDWARE_BUSY` means for a user, appended to its message.
pub const HARDWARE_BUSY_HINT: &str = "; the GPU's performance counters are in use by another process (another kreplay or Nsight Compute run, DCGM profiling): profile one process per GPU at a time";

/// The explanation kreplay adds to a CUPTI error code, if any.
pub fn cupti_hint(code: i32) -> &'static str {
    if code == kreplay_cupti_sys::CUptiResult_CUPTI_ERROR_HARDWARE_BUSY as i32 {
        HARDWARE_BUSY_HINT
    } else {
        ""
    }
}

/// Turns a driver return code into a `Result`, naming `api`.
pub fn check_driver(driver: &Driver, api: &'static str, rc: CUresult) -> Result<(), CudaError> {
    if rc == 0 {
        return Ok(());
    }
    let mut name_ptr: *const std::ffi::c_char = std::ptr::null();
    let mut text_ptr: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: both functions only write a pointer to a static string, or leave it NULL.
    unsafe {
        if let Ok(f) = driver.cuGetErrorName.as_ref() {
            f(rc, &mut name_ptr);
        }
        if let Ok(f) = driver.cuGetErrorString.as_ref() {
            f(rc, &mut text_ptr);
        }
    }
    Err(CudaError::Driver {
        api,
        code: rc as i32,
        // SAFETY: static strings of the driver, or NULL.
        name: unsafe { c_text(name_ptr) }.unwrap_or_else(|| "CUDA_ERROR".into()),
        text: unsafe { c_text(text_ptr) }.unwrap_or_else(|| "unknown error".into()),
    })
}

/// Turns a CUPTI return code into a `Result`, naming `api`.
pub fn check_cupti(cupti: &Cupti, api: &'static str, rc: CUptiResult) -> Result<(), CudaError> {
    if rc == 0 {
        return Ok(());
    }
    let mut text_ptr: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: writes a pointer to a static string or leaves it NULL.
    unsafe {
        if let Ok(f) = cupti.cuptiGetResultString.as_ref() {
            f(rc, &mut text_ptr);
        }
    }
    Err(CudaError::Cupti {
        api,
        code: rc as i32,
        // SAFETY: a static string of CUPTI, or NULL.
        text: unsafe { c_text(text_ptr) }.unwrap_or_else(|| "unknown error".into()),
    })
}

/// Copies a C string the library owns; `None` for NULL.
///
/// # Safety
/// `ptr` is NULL or points at a NUL-terminated string that stays valid during the call.
pub unsafe fn c_text(ptr: *const std::ffi::c_char) -> Option<String> {
    if ptr.is_null() {
        return None;
    }
    // SAFETY: the caller's contract.
    Some(
        unsafe { CStr::from_ptr(ptr) }
            .to_string_lossy()
            .into_owned(),
    )
}

/// Calls a driver function through the run-time table, checking its result:
/// `drv!(driver, cuCtxSynchronize())` is a `Result<(), CudaError>`. Callers wrap it in `unsafe`
/// and uphold the function's own contract (valid handles and pointers). The call runs inside a
/// [`ToolScope`](crate::guard::ToolScope): the callbacks it fires on this thread are the tool's
/// own and are ignored, so no caller enters the scope by hand.
#[macro_export]
macro_rules! drv {
    ($driver:expr, $name:ident ( $($arg:expr),* $(,)? )) => {{
        let driver: &::kreplay_cupti_sys::driver::Driver = $driver;
        match driver.$name.as_ref() {
            Ok(f) => {
                let _scope = $crate::guard::ToolScope::enter();
                let rc = f($($arg),*);
                $crate::error::check_driver(driver, stringify!($name), rc)
            }
            Err(_) => Err($crate::error::CudaError::Missing(stringify!($name))),
        }
    }};
}

/// As [`drv!`], for CUPTI: `cupti_call!(cupti, cuptiRangeProfilerStart(&mut params))`, inside a
/// [`ToolScope`](crate::guard::ToolScope) too (CUPTI's own driver calls fire callbacks).
#[macro_export]
macro_rules! cupti_call {
    ($cupti:expr, $name:ident ( $($arg:expr),* $(,)? )) => {{
        let cupti: &::kreplay_cupti_sys::cupti::Cupti = $cupti;
        match cupti.$name.as_ref() {
            Ok(f) => {
                let _scope = $crate::guard::ToolScope::enter();
                let rc = f($($arg),*);
                $crate::error::check_cupti(cupti, stringify!($name), rc)
            }
            Err(_) => Err($crate::error::CudaError::Missing(stringify!($name))),
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_api_and_the_fix() {
        let e = CudaError::Driver {
            api: "cuMemAlloc_v2",
            code: 2,
            name: "CUDA_ERROR_OUT_OF_MEMORY".into(),
            text: "out of memory".into(),
        };
        assert_eq!(
            e.to_string(),
            "cuMemAlloc_v2 failed: CUDA_ERROR_OUT_OF_MEMORY (2): out of memory"
        );
        assert_eq!(e.driver_code(), Some(2));
        assert!(CudaError::Missing("cuFuncLoad")
            .to_string()
            .contains("cuFuncLoad is not exported"));
    }

    #[test]
    fn busy_counters_say_another_process_holds_them() {
        let busy = CudaError::Cupti {
            api: "cuptiProfilerGetCounterAvailability",
            code: kreplay_cupti_sys::CUptiResult_CUPTI_ERROR_HARDWARE_BUSY as i32,
            text: "CUPTI_ERROR_HARDWARE_BUSY".into(),
        };
        assert!(busy.to_string().ends_with(HARDWARE_BUSY_HINT), "{busy}");
        let other = CudaError::Cupti {
            api: "cuptiProfilerInitialize",
            code: 1,
            text: "CUPTI_ERROR_INVALID_PARAMETER".into(),
        };
        assert!(!other.to_string().contains("another process"), "{other}");
    }

    #[test]
    fn null_c_text_is_none() {
        // SAFETY: NULL and a literal.
        unsafe {
            assert_eq!(c_text(std::ptr::null()), None);
            assert_eq!(c_text(c"abc".as_ptr()).as_deref(), Some("abc"));
        }
    }
}
