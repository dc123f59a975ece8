//! Checked calls of CUPTI's profiling API as the catalog reports them: [`CuptiCallError`] names
//! the call and gives CUPTI's own name and message for the result code.

use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::types::*;
use std::ffi::{c_char, CStr, CString};

/// The result codes callers tell apart.
pub use kreplay_cupti_sys::types::{
    CUptiResult_CUPTI_ERROR_HARDWARE_BUSY as HARDWARE_BUSY,
    CUptiResult_CUPTI_ERROR_INVALID_CHIP_NAME as INVALID_CHIP_NAME,
    CUptiResult_CUPTI_ERROR_UNKNOWN as UNKNOWN,
};

/// A CUPTI call that did not return `CUPTI_SUCCESS`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {message} ({code_name}){}", crate::error::cupti_hint(*code as i32))]
pub struct CuptiCallError {
    pub call: &'static str,
    pub code: CUptiResult,
    pub code_name: String,
    pub message: String,
}

/// The name (`CUPTI_ERROR_INVALID_METRIC_NAME`) and message CUPTI gives for a result code.
fn describe_result(cupti: &Cupti, code: CUptiResult) -> (String, String) {
    let read = |f: &Result<
        unsafe extern "C" fn(CUptiResult, *mut *const c_char) -> CUptiResult,
        libloading::Error,
    >| {
        let f = f.as_ref().ok()?;
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: CUPTI stores a pointer to a static string.
        let rc = unsafe { f(code, &mut text) };
        if rc != CUptiResult_CUPTI_SUCCESS || text.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated static string owned by CUPTI.
        Some(
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned(),
        )
    };
    let name = read(&cupti.cuptiGetResultString).unwrap_or_else(|| format!("CUptiResult {code}"));
    let message = read(&cupti.cuptiGetErrorMessage).unwrap_or_else(|| name.clone());
    (name, message)
}

/// Turns a CUPTI result into `Result`, with CUPTI's own name and message for failures.
pub fn check(cupti: &Cupti, call: &'static str, code: CUptiResult) -> Result<(), CuptiCallError> {
    if code == CUptiResult_CUPTI_SUCCESS {
        return Ok(());
    }
    let (code_name, message) = describe_result(cupti, code);
    Err(CuptiCallError {
        call,
        code,
        code_name,
        message,
    })
}

/// Resolves a function pointer of the loaded library, or a call error saying it is missing.
macro_rules! function {
    ($cupti:expr, $name:ident) => {
        $cupti
            .$name
            .as_ref()
            .map_err(|e| $crate::cupti::host_call::CuptiCallError {
                call: stringify!($name),
                code: ::kreplay_cupti_sys::types::CUptiResult_CUPTI_ERROR_NOT_SUPPORTED,
                code_name: "missing symbol".to_string(),
                message: format!("this libcupti does not export it ({e}); use CUPTI 13.0 or newer"),
            })
    };
}
pub(crate) use function;

/// Copies a C string CUPTI returned (NULL becomes empty).
///
/// # Safety
/// `text` is NULL or points at a NUL-terminated string that lives for the call.
pub(crate) unsafe fn owned(text: *const c_char) -> String {
    if text.is_null() {
        String::new()
    } else {
        CStr::from_ptr(text).to_string_lossy().into_owned()
    }
}

/// Copies an array of `count` C strings.
///
/// # Safety
/// `names` is NULL (then `count` is ignored) or points at `count` valid C strings.
pub(crate) unsafe fn owned_list(names: *const *const c_char, count: usize) -> Vec<String> {
    if names.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(names, count)
        .iter()
        .map(|&name| owned(name))
        .collect()
}

/// A metric name as CUPTI takes it (a NUL byte is CUPTI's invalid-name error for `call`).
pub(crate) fn metric_cstring(metric: &str, call: &'static str) -> Result<CString, CuptiCallError> {
    CString::new(metric).map_err(|_| CuptiCallError {
        call,
        code: CUptiResult_CUPTI_ERROR_INVALID_METRIC_NAME,
        code_name: "CUPTI_ERROR_INVALID_METRIC_NAME".to_string(),
        message: format!("metric name {metric:?} contains a NUL byte"),
    })
}
