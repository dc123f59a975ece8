//! Driver queries the interception makes about a launch's context and stream, each inside the
//! tool's re-entrancy scope (its callbacks ignore them).

use crate::drv;
use kreplay_cupti_sys as sys;
use kreplay_cupti_sys::driver::Driver;

/// The device ordinal of the live context `ctx`.
pub fn context_device(driver: &Driver, ctx: sys::CUcontext) -> Option<u32> {
    let mut device: sys::CUdevice = 0;
    // SAFETY: writes the ordinal of a live context's device.
    unsafe { drv!(driver, cuCtxGetDevice_v2(&mut device, ctx)) }.ok()?;
    Some(device as u32)
}

/// Whether `stream` is being captured into a graph.
pub fn is_capturing(driver: &Driver, stream: sys::CUstream) -> bool {
    let mut status: sys::CUstreamCaptureStatus = 0;
    // SAFETY: queries the launch's stream (a live handle or a default-stream constant).
    unsafe { drv!(driver, cuStreamIsCapturing(stream, &mut status)) }
        .map(|()| status != sys::CUstreamCaptureStatus_enum_CU_STREAM_CAPTURE_STATUS_NONE)
        .unwrap_or(false)
}

/// The stream's process-unique id (its handle when the driver gives none).
pub fn stream_id(driver: &Driver, stream: sys::CUstream) -> u64 {
    let mut id: u64 = 0;
    // SAFETY: writes the stream's process-unique id.
    match unsafe { drv!(driver, cuStreamGetId(stream, &mut id)) } {
        Ok(()) => id,
        Err(_) => stream as u64,
    }
}
