//! Owned driver objects of the tool's: each is made in the context current on the calling thread
//! and destroyed when dropped (an error while tearing down is ignored: there is nothing left to
//! do with the object). The raw handle is lent out for calls ([`Stream::raw`], [`Event::raw`],
//! [`DeviceMemory::address`]), never given away.
//!
//! The tool keeps them for as long as the context they belong to: a context's destruction drops
//! them first (its `DESTROY_STARTING` callback, while the context is alive); at process exit, and
//! when a device's context was replaced without its destruction being seen, they are left to go
//! with their contexts (forgotten: their handles may by then name the application's objects).

use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUdeviceptr, CUevent, CUstream};

/// A stream that does not synchronise with the legacy default stream.
pub struct Stream {
    driver: &'static Driver,
    raw: CUstream,
}

// SAFETY: a CUDA handle, valid on any thread of the process.
unsafe impl Send for Stream {}

impl Stream {
    /// A non-blocking stream in the current context.
    pub fn non_blocking(driver: &'static Driver) -> Result<Self, CudaError> {
        let mut raw: CUstream = std::ptr::null_mut();
        // SAFETY: the driver writes the new stream's handle.
        unsafe {
            drv!(
                driver,
                cuStreamCreate(&mut raw, sys::CUstream_flags_enum_CU_STREAM_NON_BLOCKING)
            )?
        };
        Ok(Stream { driver, raw })
    }

    pub fn raw(&self) -> CUstream {
        self.raw
    }

    /// Leaves the stream to its context, which destroys it with itself; its handle.
    pub fn leave_to_context(self) -> CUstream {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        // SAFETY: made by `non_blocking`, destroyed once.
        let _ = unsafe { drv!(self.driver, cuStreamDestroy_v2(self.raw)) };
    }
}

/// An event.
pub struct Event {
    driver: &'static Driver,
    raw: CUevent,
}

// SAFETY: a CUDA handle, valid on any thread of the process.
unsafe impl Send for Event {}

impl Event {
    /// An event in the current context that records time.
    pub fn timed(driver: &'static Driver) -> Result<Self, CudaError> {
        Self::with_flags(driver, sys::CUevent_flags_enum_CU_EVENT_DEFAULT)
    }

    /// An event in the current context for ordering only (no time: cheaper to record and wait).
    pub fn untimed(driver: &'static Driver) -> Result<Self, CudaError> {
        Self::with_flags(driver, sys::CUevent_flags_enum_CU_EVENT_DISABLE_TIMING)
    }

    fn with_flags(driver: &'static Driver, flags: u32) -> Result<Self, CudaError> {
        let mut raw: CUevent = std::ptr::null_mut();
        // SAFETY: the driver writes the new event's handle.
        unsafe { drv!(driver, cuEventCreate(&mut raw, flags))? };
        Ok(Event { driver, raw })
    }

    pub fn raw(&self) -> CUevent {
        self.raw
    }

    /// Records the event on `stream` (the tool's, or a launch's of the application).
    pub fn record(&self, stream: CUstream) -> Result<(), CudaError> {
        record_event(self.driver, self.raw, stream)
    }

    /// Waits until the work before the event's last record has finished.
    pub fn synchronize(&self) -> Result<(), CudaError> {
        // SAFETY: the event is live (owned here).
        unsafe { drv!(self.driver, cuEventSynchronize(self.raw)) }
    }

    /// Whether the work before the event's last record has finished (`Ok(false)`: not yet).
    /// Never waits.
    pub fn completed(&self) -> Result<bool, CudaError> {
        let Ok(query) = self.driver.cuEventQuery.as_ref() else {
            return Err(CudaError::Missing("cuEventQuery"));
        };
        let _scope = crate::guard::ToolScope::enter();
        // SAFETY: the event is live (owned here).
        let rc = unsafe { query(self.raw) };
        if rc == sys::cudaError_enum_CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        crate::error::check_driver(self.driver, "cuEventQuery", rc).map(|()| true)
    }

    /// Milliseconds from `self`'s last record to `later`'s (both timed events, recorded and
    /// completed).
    pub fn elapsed_ms(&self, later: &Event) -> Result<f32, CudaError> {
        let mut ms: f32 = 0.0;
        // SAFETY: both events are live (owned); the driver checks they were recorded.
        unsafe {
            drv!(
                self.driver,
                cuEventElapsedTime_v2(&mut ms, self.raw, later.raw)
            )?
        };
        Ok(ms)
    }

    /// Leaves the event to its context, which destroys it with itself; its handle.
    pub fn leave_to_context(self) -> CUevent {
        let raw = self.raw;
        std::mem::forget(self);
        raw
    }
}

impl Drop for Event {
    fn drop(&mut self) {
        // SAFETY: made by `with_flags`, destroyed once.
        let _ = unsafe { drv!(self.driver, cuEventDestroy_v2(self.raw)) };
    }
}

/// Device memory (`cuMemAlloc`).
pub struct DeviceMemory {
    driver: &'static Driver,
    address: CUdeviceptr,
    bytes: u64,
}

impl DeviceMemory {
    /// `bytes` of device memory in the current context.
    pub fn allocate(driver: &'static Driver, bytes: u64) -> Result<Self, CudaError> {
        let mut address: CUdeviceptr = 0;
        // SAFETY: the driver writes the new allocation's address.
        unsafe { drv!(driver, cuMemAlloc_v2(&mut address, bytes as usize))? };
        Ok(DeviceMemory {
            driver,
            address,
            bytes,
        })
    }

    pub fn address(&self) -> CUdeviceptr {
        self.address
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Leaves the memory to its context, which frees it with itself; its address.
    pub fn leave_to_context(self) -> CUdeviceptr {
        let address = self.address;
        std::mem::forget(self);
        address
    }
}

impl std::fmt::Debug for DeviceMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "DeviceMemory({:#x}, {} bytes)", self.address, self.bytes)
    }
}

impl Drop for DeviceMemory {
    fn drop(&mut self) {
        // SAFETY: allocated by `allocate`, freed once.
        let _ = unsafe { drv!(self.driver, cuMemFree_v2(self.address)) };
    }
}

/// An executable graph of the tool's.
pub struct GraphExec {
    driver: &'static Driver,
    raw: sys::CUgraphExec,
}

// SAFETY: a CUDA handle, valid on any thread of the process.
unsafe impl Send for GraphExec {}

impl GraphExec {
    /// An executable graph of no nodes, in the current context.
    pub fn empty(driver: &'static Driver) -> Result<Self, CudaError> {
        let mut graph: sys::CUgraph = std::ptr::null_mut();
        let mut raw: sys::CUgraphExec = std::ptr::null_mut();
        // SAFETY: creates a graph of no nodes and instantiates it; the executable keeps what it
        // needs, so the graph is destroyed at once.
        unsafe {
            drv!(driver, cuGraphCreate(&mut graph, 0))?;
            let made = drv!(driver, cuGraphInstantiateWithFlags(&mut raw, graph, 0));
            let _ = drv!(driver, cuGraphDestroy(graph));
            made?;
        }
        Ok(GraphExec { driver, raw })
    }

    pub fn raw(&self) -> sys::CUgraphExec {
        self.raw
    }
}

impl Drop for GraphExec {
    fn drop(&mut self) {
        // SAFETY: made by `empty`, destroyed once (the driver frees it once work using it ran).
        let _ = unsafe { drv!(self.driver, cuGraphExecDestroy(self.raw)) };
    }
}

/// Records `event` on `stream` (either the tool's or the application's).
pub fn record_event(d: &Driver, event: CUevent, stream: CUstream) -> Result<(), CudaError> {
    // SAFETY: live handles of one context (or a default-stream constant).
    unsafe { drv!(d, cuEventRecord(event, stream)) }
}

/// Makes `stream`'s later work wait for `event`'s last record (across contexts too).
pub fn wait_event(d: &Driver, stream: CUstream, event: CUevent) -> Result<(), CudaError> {
    // SAFETY: live handles.
    unsafe { drv!(d, cuStreamWaitEvent(stream, event, 0)) }
}

/// Waits for `stream`'s work to finish; an error of work enqueued there earlier is reported.
pub fn synchronize_stream(d: &Driver, stream: CUstream) -> Result<(), CudaError> {
    // SAFETY: a live handle or a default-stream constant.
    unsafe { drv!(d, cuStreamSynchronize(stream)) }
}

/// Waits for the current context's work to finish.
pub fn synchronize_context(d: &Driver) -> Result<(), CudaError> {
    // SAFETY: no arguments; fails without a current context.
    unsafe { drv!(d, cuCtxSynchronize()) }
}

/// Sets `count` 32-bit words at `address` to `value`, enqueued on `stream`.
///
/// # Safety
/// `address..address + 4 × count` is device memory of `stream`'s context that no other work
/// uses meanwhile.
pub unsafe fn memset_d32_async(
    d: &Driver,
    address: CUdeviceptr,
    value: u32,
    count: usize,
    stream: CUstream,
) -> Result<(), CudaError> {
    // SAFETY: as the caller promises.
    unsafe { drv!(d, cuMemsetD32Async(address, value, count, stream)) }
}

/// Sets `bytes` bytes at `address` to `value`, synchronously.
///
/// # Safety
/// `address..address + bytes` is device memory of the current context.
pub unsafe fn memset_d8(
    d: &Driver,
    address: CUdeviceptr,
    value: u8,
    bytes: usize,
) -> Result<(), CudaError> {
    // SAFETY: as the caller promises.
    unsafe { drv!(d, cuMemsetD8_v2(address, value, bytes)) }
}
