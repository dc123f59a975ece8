//! What the catalog needs from a real device: its chip name and its counter-availability image.
//!
//! The image tells CUPTI which counters this device can actually schedule (some are reserved or
//! fused off), which can raise pass counts over the chip-only answer (`lts__t_sector_hit_rate.pct`
//! is 1 pass host-only and 2 with an H200's image; reference §0.7). Reading it needs a CUDA
//! context, so [`identify`] retains the device's primary context for the duration of the call —
//! the same context an application using the runtime API gets, so nothing new stays behind.

use super::host_call::{check, function, CuptiCallError};
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::struct_size;
use kreplay_cupti_sys::types::*;
use std::ffi::{c_char, CStr};

/// Why a device could not be identified.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    #[error("{call} failed for CUDA device {ordinal}: {name} ({code}); check that the device exists (nvidia-smi) or use --chip CHIP to work without a GPU")]
    Driver {
        call: &'static str,
        ordinal: i32,
        code: u32,
        name: String,
    },
    #[error("{0}")]
    Cupti(#[from] CuptiCallError),
}

/// A device's chip and counter-availability image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeviceIdentity {
    /// Upper case, as CUPTI's host API wants it (`GH100`).
    pub chip: String,
    pub counter_availability: Vec<u8>,
}

/// The chip name and counter-availability image of CUDA device `ordinal`.
pub fn identify(
    driver: &Driver,
    cupti: &Cupti,
    ordinal: i32,
) -> Result<DeviceIdentity, DeviceError> {
    let driver_call = |call: &'static str, code: CUresult| -> Result<(), DeviceError> {
        if code == cudaError_enum_CUDA_SUCCESS {
            Ok(())
        } else {
            Err(DeviceError::Driver {
                call,
                ordinal,
                code,
                name: driver_error_name(driver, code),
            })
        }
    };
    let missing = |call: &'static str| DeviceError::Driver {
        call,
        ordinal,
        code: u32::MAX,
        name: "missing from libcuda.so.1; update the NVIDIA driver".to_string(),
    };

    let cu_init = driver.cuInit.as_ref().map_err(|_| missing("cuInit"))?;
    let cu_device_get = driver
        .cuDeviceGet
        .as_ref()
        .map_err(|_| missing("cuDeviceGet"))?;
    // SAFETY: plain driver calls with valid out-pointers.
    driver_call("cuInit", unsafe { cu_init(0) })?;
    let mut device: CUdevice = 0;
    // SAFETY: as above.
    driver_call("cuDeviceGet", unsafe {
        cu_device_get(&mut device, ordinal)
    })?;

    // NVIDIA's samples initialise the profiler before asking for the chip name; so do we.
    initialize_profiler(cupti)?;
    let chip = chip_name(cupti, ordinal)?;
    let context = PrimaryContext::retain(driver, device, ordinal)?;
    let counter_availability = counter_availability(cupti, context.raw)?;
    drop(context);
    Ok(DeviceIdentity {
        chip: chip.to_ascii_uppercase(),
        counter_availability,
    })
}

/// `cuptiDeviceGetChipName` for a CUDA device ordinal.
pub fn chip_name(cupti: &Cupti, ordinal: i32) -> Result<String, CuptiCallError> {
    let f = function!(cupti, cuptiDeviceGetChipName)?;
    let mut params = CUpti_Device_GetChipName_Params {
        structSize: struct_size!(CUpti_Device_GetChipName_Params, pChipName),
        deviceIndex: usize::try_from(ordinal).unwrap_or(usize::MAX),
        ..Default::default()
    };
    // SAFETY: valid sized params; CUPTI returns a static string.
    check(cupti, "cuptiDeviceGetChipName", unsafe { f(&mut params) })?;
    if params.pChipName.is_null() {
        return Ok(String::new());
    }
    // SAFETY: a NUL-terminated string owned by CUPTI.
    Ok(unsafe { CStr::from_ptr(params.pChipName) }
        .to_string_lossy()
        .into_owned())
}

/// The counter-availability image of the device behind `context`.
///
/// Calls `cuptiProfilerInitialize` first. CUPTI documents that this "may fail if any profiling
/// or sampling session is active on the context or its device", so the backend reads it before
/// enabling the range profiler.
pub fn counter_availability(cupti: &Cupti, context: CUcontext) -> Result<Vec<u8>, CuptiCallError> {
    initialize_profiler(cupti)?;
    let availability = function!(cupti, cuptiProfilerGetCounterAvailability)?;

    // First call with no buffer: CUPTI reports the size.
    let mut params = CUpti_Profiler_GetCounterAvailability_Params {
        structSize: struct_size!(
            CUpti_Profiler_GetCounterAvailability_Params,
            pCounterAvailabilityImage
        ),
        ctx: context,
        ..Default::default()
    };
    // SAFETY: valid context and params; a NULL image asks for the size.
    check(cupti, "cuptiProfilerGetCounterAvailability", unsafe {
        availability(&mut params)
    })?;
    let mut image = vec![0u8; params.counterAvailabilityImageSize];
    params.pCounterAvailabilityImage = image.as_mut_ptr();
    params.counterAvailabilityImageSize = image.len();
    // SAFETY: the buffer has the size CUPTI reported.
    check(cupti, "cuptiProfilerGetCounterAvailability", unsafe {
        availability(&mut params)
    })?;
    // On return the size is the number of bytes actually copied.
    image.truncate(params.counterAvailabilityImageSize);
    Ok(image)
}

/// `cuptiProfilerInitialize` (CUPTI allows calling it more than once per process).
pub fn initialize_profiler(cupti: &Cupti) -> Result<(), CuptiCallError> {
    let initialize = function!(cupti, cuptiProfilerInitialize)?;
    let mut params = CUpti_Profiler_Initialize_Params {
        structSize: struct_size!(CUpti_Profiler_Initialize_Params, pPriv),
        ..Default::default()
    };
    // SAFETY: valid sized params.
    check(cupti, "cuptiProfilerInitialize", unsafe {
        initialize(&mut params)
    })
}

fn driver_error_name(driver: &Driver, code: CUresult) -> String {
    let Ok(f) = driver.cuGetErrorName.as_ref() else {
        return format!("CUresult {}", code);
    };
    let mut text: *const c_char = std::ptr::null();
    // SAFETY: the driver stores a pointer to a static string.
    if unsafe { f(code, &mut text) } != cudaError_enum_CUDA_SUCCESS || text.is_null() {
        return format!("CUresult {}", code);
    }
    // SAFETY: a NUL-terminated static string.
    unsafe { CStr::from_ptr(text) }
        .to_string_lossy()
        .into_owned()
}

/// The device's primary context, retained and current on this thread until dropped.
struct PrimaryContext<'a> {
    driver: &'a Driver,
    device: CUdevice,
    raw: CUcontext,
    pushed: bool,
}

impl<'a> PrimaryContext<'a> {
    fn retain(driver: &'a Driver, device: CUdevice, ordinal: i32) -> Result<Self, DeviceError> {
        let missing = |call: &'static str| DeviceError::Driver {
            call,
            ordinal,
            code: u32::MAX,
            name: "missing from libcuda.so.1; update the NVIDIA driver".to_string(),
        };
        let retain = driver
            .cuDevicePrimaryCtxRetain
            .as_ref()
            .map_err(|_| missing("cuDevicePrimaryCtxRetain"))?;
        let push = driver
            .cuCtxPushCurrent_v2
            .as_ref()
            .map_err(|_| missing("cuCtxPushCurrent"))?;
        let fail = |call: &'static str, code: CUresult| DeviceError::Driver {
            call,
            ordinal,
            code,
            name: driver_error_name(driver, code),
        };
        let mut raw: CUcontext = std::ptr::null_mut();
        // SAFETY: valid device and out-pointer.
        let rc = unsafe { retain(&mut raw, device) };
        if rc != cudaError_enum_CUDA_SUCCESS {
            return Err(fail("cuDevicePrimaryCtxRetain", rc));
        }
        // From here on, Drop releases what was retained (and pops once pushed).
        let mut context = PrimaryContext {
            driver,
            device,
            raw,
            pushed: false,
        };
        // SAFETY: a context just retained.
        let rc = unsafe { push(raw) };
        if rc != cudaError_enum_CUDA_SUCCESS {
            return Err(fail("cuCtxPushCurrent", rc));
        }
        context.pushed = true;
        Ok(context)
    }
}

impl Drop for PrimaryContext<'_> {
    fn drop(&mut self) {
        if self.pushed {
            if let Ok(pop) = self.driver.cuCtxPopCurrent_v2.as_ref() {
                let mut popped: CUcontext = std::ptr::null_mut();
                // SAFETY: we pushed this context on this thread.
                unsafe { pop(&mut popped) };
            }
        }
        if let Ok(release) = self.driver.cuDevicePrimaryCtxRelease_v2.as_ref() {
            // SAFETY: balances the successful retain.
            unsafe { release(self.device) };
        }
    }
}
