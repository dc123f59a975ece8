//! What the records say about kernels and devices: demangled names, function attributes, and the
//! device's product name, chip and size.

use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUfunction};

/// The demangled form of a C++ symbol; the name itself when it is not mangled (C kernels, PTX).
pub fn demangle(name: &str) -> String {
    cpp_demangle::Symbol::new(name)
        .ok()
        .and_then(|symbol| symbol.demangle().ok())
        .unwrap_or_else(|| name.to_string())
}

/// A function's resources as the driver reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FunctionAttributes {
    pub registers: u32,
    pub static_shared_bytes: u32,
    pub local_bytes: u32,
    pub param_bytes: u32,
}

/// Reads `f`'s attributes; an attribute the driver refuses reads 0.
pub fn function_attributes(driver: &Driver, f: CUfunction) -> FunctionAttributes {
    let attribute = |which: sys::CUfunction_attribute| -> u32 {
        let mut value: i32 = 0;
        // SAFETY: writes one int for a live function handle.
        match unsafe { drv!(driver, cuFuncGetAttribute(&mut value, which, f)) } {
            Ok(()) => value.max(0) as u32,
            Err(_) => 0,
        }
    };
    let mut param_bytes = 0u32;
    for index in 0..4096usize {
        let (mut offset, mut size) = (0usize, 0usize);
        // SAFETY: writes two sizes; an index past the last parameter is an error.
        match unsafe { drv!(driver, cuFuncGetParamInfo(f, index, &mut offset, &mut size)) } {
            Ok(()) => param_bytes = param_bytes.max((offset + size) as u32),
            Err(_) => break,
        }
    }
    FunctionAttributes {
        registers: attribute(sys::CUfunction_attribute_enum_CU_FUNC_ATTRIBUTE_NUM_REGS),
        static_shared_bytes: attribute(
            sys::CUfunction_attribute_enum_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
        ),
        local_bytes: attribute(sys::CUfunction_attribute_enum_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES),
        param_bytes,
    }
}

/// A device's identity for the agent record.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct DeviceDescription {
    pub name: String,
    pub sm_count: u32,
    pub global_memory_bytes: u64,
    pub pci_location: String,
    pub max_threads_per_sm: u32,
    pub shared_memory_per_sm_bytes: u32,
}

pub fn describe_device(
    driver: &Driver,
    device: sys::CUdevice,
) -> Result<DeviceDescription, CudaError> {
    let mut name = [0 as std::ffi::c_char; 256];
    let mut sm_count = 0i32;
    let mut total = 0usize;
    let mut pci = [0 as std::ffi::c_char; 64];
    // SAFETY: buffers of the stated lengths; one int and one size written.
    unsafe {
        drv!(
            driver,
            cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device)
        )?;
        drv!(
            driver,
            cuDeviceGetAttribute(
                &mut sm_count,
                sys::CUdevice_attribute_enum_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                device
            )
        )?;
        drv!(driver, cuDeviceTotalMem_v2(&mut total, device))?;
        let _ = drv!(
            driver,
            cuDeviceGetPCIBusId(pci.as_mut_ptr(), pci.len() as i32, device)
        );
    }
    let attribute = |which: sys::CUdevice_attribute| {
        let mut value = 0i32;
        // SAFETY: one int written.
        unsafe { drv!(driver, cuDeviceGetAttribute(&mut value, which, device)) }
            .map_or(0, |()| value.max(0) as u32)
    };
    Ok(DeviceDescription {
        // SAFETY: NUL-terminated by the driver within the buffers.
        name: unsafe { crate::error::c_text(name.as_ptr()) }.unwrap_or_default(),
        sm_count: sm_count.max(0) as u32,
        global_memory_bytes: total as u64,
        // SAFETY: as above.
        pci_location: unsafe { crate::error::c_text(pci.as_ptr()) }.unwrap_or_default(),
        max_threads_per_sm: attribute(
            sys::CUdevice_attribute_enum_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR,
        ),
        shared_memory_per_sm_bytes: attribute(
            sys::CUdevice_attribute_enum_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_cpp_kernels_and_keeps_c_names() {
        assert_eq!(demangle("_Z3incPfm"), "inc(float*, unsigned long)");
        assert_eq!(demangle("saxpy"), "saxpy");
    }
}
