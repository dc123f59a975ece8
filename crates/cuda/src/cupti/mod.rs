//! Typed CUPTI profiling calls and the objects they make, for the counters crate: the
//! Profiler Host API (metric lists, configurations, evaluation: no GPU needed), a device's
//! identity (chip name, counter-availability image), and the Range Profiler object of a context.
//!
//! Two error flavours stay apart, as their callers show them: the host API and the device
//! identity answer [`CuptiCallError`] (CUPTI's own name and message, for the catalog), the range
//! profiler [`CudaError`](crate::error::CudaError) (through [`cupti_call!`](crate::cupti_call),
//! inside the tool's re-entrancy scope).

pub mod host_call;
pub mod host_config;
pub mod host_lock;
pub mod host_object;
pub mod identity;
pub mod process;
pub mod profiler_device;
pub mod range_profiler;

pub use host_call::{CuptiCallError, HARDWARE_BUSY, INVALID_CHIP_NAME, UNKNOWN};
pub use host_lock::host_api_lock;

/// The handle types callers hold and hand back: the loaded libraries and CUDA's opaque handles.
pub use kreplay_cupti_sys::cupti::Cupti;
pub use kreplay_cupti_sys::driver::Driver;
pub use kreplay_cupti_sys::{CUcontext, CUdevice};
