//! The data CUPTI passes a callback, typed by the callback's domain.

use super::driver::DriverData;
use super::ids::Domain;
use super::nvtx::NvtxData;
use super::resource::ResourceData;
use std::ffi::c_void;

/// A callback's data, by domain.
#[derive(Clone, Copy)]
pub enum CallbackData<'a> {
    /// A driver-API call's ENTER or EXIT.
    Driver(&'a DriverData),
    /// A runtime-API call's ENTER or EXIT (`--runtime-trace`, `--sys-trace`): CUPTI passes the
    /// same block as for a driver call.
    Runtime(&'a DriverData),
    /// A resource event (contexts, streams, modules, graphs).
    Resource(&'a ResourceData),
    /// An NVTX call of the application.
    Nvtx(&'a NvtxData),
    /// A domain the tool does not enable.
    Other,
}

/// What `cbdata` is for `domain`.
///
/// # Safety
/// `cbdata` is the non-NULL pointer CUPTI passed to a callback of `domain`, and the value is
/// used only during that callback.
pub unsafe fn callback_data<'a>(domain: u32, cbdata: *const c_void) -> CallbackData<'a> {
    match Domain(domain) {
        // SAFETY: CUPTI passes a CUpti_CallbackData for the driver domain.
        Domain::DRIVER_API => CallbackData::Driver(unsafe { DriverData::from_raw(cbdata) }),
        // SAFETY: CUPTI passes a CUpti_CallbackData for the runtime domain too.
        Domain::RUNTIME_API => CallbackData::Runtime(unsafe { DriverData::from_raw(cbdata) }),
        // SAFETY: CUPTI passes a CUpti_ResourceData for the resource domain.
        Domain::RESOURCE => CallbackData::Resource(unsafe { ResourceData::from_raw(cbdata) }),
        // SAFETY: CUPTI passes a CUpti_NvtxData for the NVTX domain.
        Domain::NVTX => CallbackData::Nvtx(unsafe { NvtxData::from_raw(cbdata) }),
        _ => CallbackData::Other,
    }
}
