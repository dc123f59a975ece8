//! The data CUPTI passes a callback, typed by the callback's domain.

use kreplay_cupti_sys as sys;
use std::ffi::c_void;

/// A callback's data, by domain.
#[derive(Clone, Copy)]
pub enum CallbackData<'a> {
    /// A driver-API call's ENTER or EXIT.
    Driver(&'a sys::CUpti_CallbackData),
    /// A resource event (contexts, streams, modules, graphs).
    Resource(&'a sys::CUpti_ResourceData),
    /// A domain the tool does not enable.
    Other,
}

/// What `cbdata` is for `domain`.
///
/// # Safety
/// `cbdata` is the non-NULL pointer CUPTI passed to a callback of `domain`, and the value is
/// used only during that callback.
pub unsafe fn callback_data<'a>(
    domain: sys::CUpti_CallbackDomain,
    cbdata: *const c_void,
) -> CallbackData<'a> {
    match domain {
        // SAFETY: CUPTI passes a CUpti_CallbackData for the driver domain.
        sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_DRIVER_API => {
            CallbackData::Driver(unsafe { &*(cbdata as *const sys::CUpti_CallbackData) })
        }
        // SAFETY: CUPTI passes a CUpti_ResourceData for the resource domain.
        sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RESOURCE => {
            CallbackData::Resource(unsafe { &*(cbdata as *const sys::CUpti_ResourceData) })
        }
        _ => CallbackData::Other,
    }
}
