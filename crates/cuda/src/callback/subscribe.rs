//! The tool's CUPTI subscription: a process has one subscriber; the tool's callback is
//! subscribed under its name and the driver-API and resource domains are enabled, the NVTX
//! domain when the run records markers, the runtime-API domain when it records API calls.

use crate::cupti_call;
use crate::error::{c_text, CudaError};
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::{self as sys, struct_size};
use std::ffi::CString;

/// Why the subscription failed.
#[derive(Debug)]
pub enum SubscribeError {
    /// Another subscriber holds CUPTI in this process: its name as CUPTI gives it (empty when
    /// it gives none).
    Taken(String),
    /// `cuptiSubscribe` failed otherwise.
    Subscribe(CudaError),
    /// Subscribed, but a domain could not be enabled.
    Enable(CudaError),
}

/// Subscribes `callback` as `name`, then enables the driver-API and resource domains, the
/// NVTX domain when `nvtx` and the runtime-API domain when `runtime`. From the one thread that
/// initialises the tool.
pub fn subscribe(
    cupti: &Cupti,
    name: &str,
    callback: sys::CUpti_CallbackFunc,
    nvtx: bool,
    runtime: bool,
) -> Result<(), SubscribeError> {
    let name = CString::new(name).unwrap_or_default();
    let mut old_name =
        vec![0 as std::ffi::c_char; sys::CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN as usize + 64];
    let mut params = sys::CUpti_SubscriberParams {
        structSize: struct_size!(sys::CUpti_SubscriberParams, oldSubscriberSize),
        subscriberName: name.as_ptr(),
        oldSubscriberName: old_name.as_mut_ptr(),
        oldSubscriberSize: old_name.len(),
    };
    let mut handle: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: the callback is a plain extern "C" function; params point at live buffers.
    let result = unsafe {
        cupti_call!(
            cupti,
            cuptiSubscribe_v2(&mut handle, callback, std::ptr::null_mut(), &mut params)
        )
    };
    if let Err(e) = result {
        if e.cupti_code()
            == Some(sys::CUptiResult_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED as i32)
        {
            // SAFETY: CUPTI wrote a NUL-terminated name into the zeroed buffer (or nothing).
            let other = unsafe { c_text(old_name.as_ptr()) }.unwrap_or_default();
            return Err(SubscribeError::Taken(other));
        }
        return Err(SubscribeError::Subscribe(e));
    }
    let nvtx = nvtx.then_some(sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_NVTX);
    let runtime = runtime.then_some(sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RUNTIME_API);
    for domain in [
        sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_DRIVER_API,
        sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RESOURCE,
    ]
    .into_iter()
    .chain(nvtx)
    .chain(runtime)
    {
        // SAFETY: enabling a domain on our own subscriber.
        unsafe { cupti_call!(cupti, cuptiEnableDomain(1, handle, domain)) }
            .map_err(SubscribeError::Enable)?;
    }
    Ok(())
}
