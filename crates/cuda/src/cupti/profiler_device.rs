//! What the range profiler asks of CUPTI about a device: the profiler's initialisation, whether
//! the device is supported, its chip name and its counter-availability image (errors as
//! [`CudaError`], each call inside the tool's re-entrancy scope).

use crate::cupti_call;
use crate::debug;
use crate::drv;
use crate::error::{c_text, CudaError};
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, struct_size, CUcontext};

/// `cuptiProfilerInitialize`.
pub fn initialize(cupti: &'static Cupti) -> Result<(), CudaError> {
    let mut params = sys::CUpti_Profiler_Initialize_Params {
        structSize: struct_size!(sys::CUpti_Profiler_Initialize_Params, pPriv),
        ..Default::default()
    };
    // SAFETY: a plain struct of the documented size.
    unsafe { cupti_call!(cupti, cuptiProfilerInitialize(&mut params)) }
}

/// The device of the context current on this thread (`cuCtxGetDevice`).
pub fn current_device(driver: &'static Driver) -> Result<sys::CUdevice, CudaError> {
    let mut device: sys::CUdevice = 0;
    // SAFETY: the caller made a context current on this thread; the driver writes its device.
    unsafe { drv!(driver, cuCtxGetDevice(&mut device))? };
    Ok(device)
}

/// Whether the range profiler supports `device`; if not, an error naming the reasons CUPTI gives.
pub fn check_device_supported(
    cupti: &'static Cupti,
    device: sys::CUdevice,
) -> Result<(), CudaError> {
    let mut params = sys::CUpti_Profiler_DeviceSupported_Params {
        structSize: struct_size!(sys::CUpti_Profiler_DeviceSupported_Params, api),
        cuDevice: device,
        api: sys::CUpti_Profiler_API_CUPTI_PROFILER_RANGE_PROFILING,
        ..Default::default()
    };
    // SAFETY: documented struct.
    unsafe { cupti_call!(cupti, cuptiProfilerDeviceSupported(&mut params))? };
    let supported = sys::CUpti_Profiler_Support_Level_CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    if params.isSupported == supported {
        return Ok(());
    }
    let mut reasons = Vec::new();
    for (level, what) in [
        (
            params.architecture,
            "the GPU architecture (compute capability 7.5 or newer needed)",
        ),
        (params.sli, "SLI"),
        (params.vGpu, "vGPU without profiling enabled"),
        (params.confidentialCompute, "confidential computing"),
        (params.cmp, "a CMP (mining) GPU"),
        (params.wsl, "WSL"),
    ] {
        if level != supported
            && level != sys::CUpti_Profiler_Support_Level_CUPTI_PROFILER_CONFIGURATION_UNKNOWN
        {
            reasons.push(what);
        }
    }
    Err(CudaError::Load(format!(
        "CUPTI range profiling is not supported on CUDA device {device}: {}",
        if reasons.is_empty() {
            "reason unknown".to_string()
        } else {
            reasons.join(", ")
        }
    )))
}

/// The chip name CUPTI uses for device `device_index` (e.g. `GH100`).
pub fn chip_name(cupti: &'static Cupti, device_index: usize) -> Result<String, CudaError> {
    let mut params = sys::CUpti_Device_GetChipName_Params {
        structSize: struct_size!(sys::CUpti_Device_GetChipName_Params, pChipName),
        deviceIndex: device_index,
        ..Default::default()
    };
    // SAFETY: CUPTI writes a pointer to a static string.
    unsafe { cupti_call!(cupti, cuptiDeviceGetChipName(&mut params))? };
    // SAFETY: a static string of CUPTI, or NULL.
    Ok(unsafe { c_text(params.pChipName) }.unwrap_or_default())
}

/// The counter-availability image of the device behind `ctx` (its size asked first).
pub fn counter_availability(cupti: &'static Cupti, ctx: CUcontext) -> Result<Vec<u8>, CudaError> {
    let mut params = sys::CUpti_Profiler_GetCounterAvailability_Params {
        structSize: struct_size!(
            sys::CUpti_Profiler_GetCounterAvailability_Params,
            pCounterAvailabilityImage
        ),
        ctx,
        ..Default::default()
    };
    let mut laps = debug::Laps::start();
    // SAFETY: first call asks for the size only (NULL image).
    unsafe { cupti_call!(cupti, cuptiProfilerGetCounterAvailability(&mut params))? };
    laps.lap("size");
    let mut image = vec![0u8; params.counterAvailabilityImageSize];
    params.pCounterAvailabilityImage = image.as_mut_ptr();
    // SAFETY: the buffer has the size CUPTI reported.
    unsafe { cupti_call!(cupti, cuptiProfilerGetCounterAvailability(&mut params))? };
    laps.lap("image");
    debug::line(&format!("availability image: {}", laps.summary()));
    // On return the size is the number of bytes copied (as the CLI's catalog reads it).
    image.truncate(params.counterAvailabilityImageSize);
    Ok(image)
}
