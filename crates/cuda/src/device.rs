//! A CUDA device's handle and the attributes the tool reads of it.

use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUdevice};

/// The attributes the tool reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Attribute {
    L2CacheBytes,
    MultiprocessorCount,
    /// 1 where the device can launch cooperative kernels.
    CooperativeLaunch,
}

impl Attribute {
    fn raw(self) -> sys::CUdevice_attribute {
        match self {
            Attribute::L2CacheBytes => {
                sys::CUdevice_attribute_enum_CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE
            }
            Attribute::MultiprocessorCount => {
                sys::CUdevice_attribute_enum_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT
            }
            Attribute::CooperativeLaunch => {
                sys::CUdevice_attribute_enum_CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH
            }
        }
    }
}

/// A device, by its driver handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Device {
    raw: CUdevice,
}

impl Device {
    /// CUDA device `ordinal`.
    pub fn get(d: &Driver, ordinal: u32) -> Result<Device, CudaError> {
        let mut raw: CUdevice = 0;
        // SAFETY: writes one device handle.
        unsafe { drv!(d, cuDeviceGet(&mut raw, ordinal as i32))? };
        Ok(Device { raw })
    }

    /// The device of the calling thread's current context; fails without one.
    pub fn current(d: &Driver) -> Result<Device, CudaError> {
        let mut raw: CUdevice = 0;
        // SAFETY: writes one device handle.
        unsafe { drv!(d, cuCtxGetDevice(&mut raw))? };
        Ok(Device { raw })
    }

    pub fn raw(self) -> CUdevice {
        self.raw
    }

    pub fn attribute(self, d: &Driver, which: Attribute) -> Result<i32, CudaError> {
        let mut value = 0;
        // SAFETY: writes one integer.
        unsafe { drv!(d, cuDeviceGetAttribute(&mut value, which.raw(), self.raw))? };
        Ok(value)
    }

    /// The PCI bus id, as NVML takes it.
    pub fn pci_bus_id(self, d: &Driver) -> Result<String, CudaError> {
        let mut text = [0 as std::ffi::c_char; 32];
        // SAFETY: writes at most `text.len()` bytes, NUL-terminated.
        unsafe {
            drv!(
                d,
                cuDeviceGetPCIBusId(text.as_mut_ptr(), text.len() as i32, self.raw)
            )?;
            Ok(std::ffi::CStr::from_ptr(text.as_ptr())
                .to_string_lossy()
                .into_owned())
        }
    }
}
