//! The GPU's current SM and memory clocks, read through NVML (`libnvidia-ml.so.1`, which the
//! NVIDIA driver installs; loaded at run time). kreplay never changes clocks; it records the
//! clocks seen around each replay unit so that users can judge time-based counters.

use libloading::Library;
use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::sync::OnceLock;

/// NVML's library.
pub const NVML_SONAME: &str = "libnvidia-ml.so.1";

type NvmlDevice = *mut c_void;
const NVML_SUCCESS: c_int = 0;
const NVML_CLOCK_SM: c_uint = 1;
const NVML_CLOCK_MEM: c_uint = 2;

struct Nvml {
    _library: Library,
    by_pci_bus_id: unsafe extern "C" fn(*const c_char, *mut NvmlDevice) -> c_int,
    clock_info: unsafe extern "C" fn(NvmlDevice, c_uint, *mut c_uint) -> c_int,
}

// SAFETY: NVML is thread-safe; the function pointers stay valid while the library is loaded.
unsafe impl Send for Nvml {}
unsafe impl Sync for Nvml {}

fn nvml() -> Option<&'static Nvml> {
    static NVML: OnceLock<Option<Nvml>> = OnceLock::new();
    NVML.get_or_init(|| {
        // SAFETY: NVML's documented entry points, with their C signatures.
        unsafe {
            let library = Library::new(NVML_SONAME).ok()?;
            // Every symbol first: the library is initialised only when it will be kept.
            let init: unsafe extern "C" fn() -> c_int = *library.get(b"nvmlInit_v2\0").ok()?;
            let by_pci_bus_id = *library.get(b"nvmlDeviceGetHandleByPciBusId_v2\0").ok()?;
            let clock_info = *library.get(b"nvmlDeviceGetClockInfo\0").ok()?;
            if init() != NVML_SUCCESS {
                return None;
            }
            Some(Nvml {
                _library: library,
                by_pci_bus_id,
                clock_info,
            })
        }
    })
    .as_ref()
}

/// One GPU's clocks, found by its PCI bus id (`cuDeviceGetPCIBusId`'s text).
#[derive(Debug, Clone, Copy)]
pub struct ClockReader {
    device: NvmlDevice,
}

// SAFETY: an NVML handle, valid on any thread.
unsafe impl Send for ClockReader {}

impl ClockReader {
    /// `None` without NVML or when NVML does not know the device.
    pub fn for_pci_bus_id(bus_id: &str) -> Option<ClockReader> {
        let nvml = nvml()?;
        let bus_id = CString::new(bus_id).ok()?;
        let mut device: NvmlDevice = std::ptr::null_mut();
        // SAFETY: a NUL-terminated string and a handle NVML writes.
        let status = unsafe { (nvml.by_pci_bus_id)(bus_id.as_ptr(), &mut device) };
        (status == NVML_SUCCESS && !device.is_null()).then_some(ClockReader { device })
    }

    /// The SM and memory clocks now, MHz.
    pub fn read(&self) -> Option<[u32; 2]> {
        let nvml = nvml()?;
        let mut sm = 0;
        let mut memory = 0;
        // SAFETY: a handle from NVML and integers it writes.
        let ok = unsafe {
            (nvml.clock_info)(self.device, NVML_CLOCK_SM, &mut sm) == NVML_SUCCESS
                && (nvml.clock_info)(self.device, NVML_CLOCK_MEM, &mut memory) == NVML_SUCCESS
        };
        ok.then_some([sm, memory])
    }
}
