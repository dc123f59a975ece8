//! Staging memory of the tool's (device memory or pinned host memory, freed when dropped), the
//! copies between it and the application's device memory, and the memory queries the backend
//! asks (free bytes, whether an address is still allocated).
//!
//! Addresses of the application's (`CUdeviceptr`) are device memory the caller tracks: a copy to
//! or from one the driver does not know fails with its error. The tool's side of every copy is
//! an owned object here, and a copy into it is checked against its size.

use crate::drv;
use crate::error::CudaError;
use crate::handles::{synchronize_stream, DeviceMemory};
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUdeviceptr, CUstream};
use std::ffi::c_void;

/// Pinned host memory (`cuMemHostAlloc`, portable to every context), freed when dropped.
pub struct PinnedMemory {
    driver: &'static Driver,
    raw: *mut c_void,
    bytes: u64,
}

// SAFETY: pinned memory the process owns, usable from any thread; the tool never reads or writes
// it from the host, only copies through the driver.
unsafe impl Send for PinnedMemory {}

impl PinnedMemory {
    /// `bytes` of portable pinned host memory.
    pub fn allocate(driver: &'static Driver, bytes: u64) -> Result<Self, CudaError> {
        let mut raw: *mut c_void = std::ptr::null_mut();
        // SAFETY: the driver writes the new allocation's address.
        unsafe {
            drv!(
                driver,
                cuMemHostAlloc(&mut raw, bytes as usize, sys::CU_MEMHOSTALLOC_PORTABLE)
            )?
        };
        Ok(PinnedMemory { driver, raw, bytes })
    }

    pub fn address(&self) -> u64 {
        self.raw as u64
    }

    pub fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for PinnedMemory {
    fn drop(&mut self) {
        // SAFETY: allocated by `allocate`, freed once.
        let _ = unsafe { drv!(self.driver, cuMemFreeHost(self.raw)) };
    }
}

impl std::fmt::Debug for PinnedMemory {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PinnedMemory({:#x}, {} bytes)",
            self.address(),
            self.bytes
        )
    }
}

/// A snapshot's staging: device memory first, pinned host memory when the device has no room.
#[derive(Debug)]
pub enum StagingBuffer {
    Device(DeviceMemory),
    Pinned(PinnedMemory),
}

/// Which way a [`StagingBuffer::transfer`] copies.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// From the application's memory into the staging buffer (a snapshot).
    ToStaging,
    /// From the staging buffer back to the application's memory (a restore).
    FromStaging,
}

/// One copy between `bytes` of the application's device memory at `device` and the staging
/// buffer's bytes at `offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagedCopy {
    pub device: CUdeviceptr,
    pub offset: u64,
    pub bytes: u64,
}

impl StagingBuffer {
    /// The buffer's first byte (a host address for pinned memory, which the driver's unified
    /// addressing also takes as a device address).
    pub fn address(&self) -> u64 {
        match self {
            StagingBuffer::Device(memory) => memory.address(),
            StagingBuffer::Pinned(memory) => memory.address(),
        }
    }

    pub fn bytes(&self) -> u64 {
        match self {
            StagingBuffer::Device(memory) => memory.bytes(),
            StagingBuffer::Pinned(memory) => memory.bytes(),
        }
    }

    pub fn is_device(&self) -> bool {
        matches!(self, StagingBuffer::Device(_))
    }

    /// Leaves the buffer to its context (or the process), which frees it with itself.
    pub fn leave_to_context(self) {
        std::mem::forget(self);
    }

    /// Copies every one of `copies` in `direction` on `stream`, then waits for the stream. With
    /// `batch`, one batched call (`cuMemcpyBatchAsync`) is tried first; where the driver has
    /// none or refuses it, the copies go one by one (a repeat of a copy already done is
    /// harmless). A copy that fails returns its error at once, unwaited.
    pub fn transfer(
        &self,
        d: &Driver,
        copies: &[StagedCopy],
        direction: Direction,
        stream: CUstream,
        batch: bool,
    ) -> Result<(), CudaError> {
        fits(self.bytes(), copies)?;
        if batch && self.copy_batch_async(d, copies, direction, stream).is_ok() {
            return synchronize_stream(d, stream);
        }
        for copy in copies {
            self.copy_async(d, copy, direction, stream)?;
        }
        synchronize_stream(d, stream)
    }

    /// `(destination, source)` of `copy`.
    fn ends(&self, copy: &StagedCopy, direction: Direction) -> (u64, u64) {
        let staged = self.address() + copy.offset;
        match direction {
            Direction::ToStaging => (staged, copy.device),
            Direction::FromStaging => (copy.device, staged),
        }
    }

    /// One batched call for every copy, ordered after the stream's earlier work.
    fn copy_batch_async(
        &self,
        d: &Driver,
        copies: &[StagedCopy],
        direction: Direction,
        stream: CUstream,
    ) -> Result<(), CudaError> {
        let (mut dsts, mut srcs, mut sizes) = (Vec::new(), Vec::new(), Vec::new());
        for copy in copies {
            let (dst, src) = self.ends(copy, direction);
            dsts.push(dst);
            srcs.push(src);
            sizes.push(copy.bytes as usize);
        }
        let mut attributes = sys::CUmemcpyAttributes {
            srcAccessOrder: sys::CUmemcpySrcAccessOrder_enum_CU_MEMCPY_SRC_ACCESS_ORDER_STREAM,
            ..Default::default()
        };
        let mut attribute_of = [0usize];
        // SAFETY: three arrays of `count` elements and one attribute applying from copy 0; the
        // staging side of each copy lies inside this buffer (`fits`), the other is device
        // memory the caller tracks.
        unsafe {
            drv!(
                d,
                cuMemcpyBatchAsync_v2(
                    dsts.as_mut_ptr(),
                    srcs.as_mut_ptr(),
                    sizes.as_mut_ptr(),
                    dsts.len(),
                    &mut attributes,
                    attribute_of.as_mut_ptr(),
                    1,
                    stream
                )
            )
        }
    }

    /// One copy: device to device, or between device and pinned host memory.
    fn copy_async(
        &self,
        d: &Driver,
        copy: &StagedCopy,
        direction: Direction,
        stream: CUstream,
    ) -> Result<(), CudaError> {
        let staged = self.address() + copy.offset;
        let n = copy.bytes as usize;
        // SAFETY: the staging side lies inside this buffer (`fits`); the other is device memory
        // the caller tracks.
        unsafe {
            match (self, direction) {
                (StagingBuffer::Device(_), Direction::ToStaging) => {
                    drv!(d, cuMemcpyDtoDAsync_v2(staged, copy.device, n, stream))
                }
                (StagingBuffer::Device(_), Direction::FromStaging) => {
                    drv!(d, cuMemcpyDtoDAsync_v2(copy.device, staged, n, stream))
                }
                (StagingBuffer::Pinned(_), Direction::ToStaging) => drv!(
                    d,
                    cuMemcpyDtoHAsync_v2(staged as *mut _, copy.device, n, stream)
                ),
                (StagingBuffer::Pinned(_), Direction::FromStaging) => drv!(
                    d,
                    cuMemcpyHtoDAsync_v2(copy.device, staged as *const _, n, stream)
                ),
            }
        }
    }
}

/// Copies `bytes` of the application's device memory at `source` into `log` at `at` on
/// `stream`, then waits for the stream.
pub fn copy_into_and_wait(
    d: &Driver,
    log: &DeviceMemory,
    at: u64,
    source: CUdeviceptr,
    bytes: u64,
    stream: CUstream,
) -> Result<(), CudaError> {
    if at.checked_add(bytes).is_none_or(|end| end > log.bytes()) {
        return Err(CudaError::Load(format!(
            "a capture of {bytes} bytes at offset {at} does not fit a log chunk of {} bytes",
            log.bytes()
        )));
    }
    let staged = log.address() + at;
    // SAFETY: the destination lies inside `log`; the source is device memory the caller tracks.
    unsafe {
        drv!(
            d,
            cuMemcpyDtoDAsync_v2(staged, source, bytes as usize, stream)
        )?
    };
    synchronize_stream(d, stream)
}

/// Copies `bytes` from `source` to `destination`, both device memory (the tool's log and the
/// application's memory it was captured from), enqueued on `stream`.
pub fn copy_device_async(
    d: &Driver,
    destination: CUdeviceptr,
    source: CUdeviceptr,
    bytes: u64,
    stream: CUstream,
) -> Result<(), CudaError> {
    // SAFETY: device memory on both sides (the caller's tracking says so); the driver reports
    // an address it does not know.
    unsafe {
        drv!(
            d,
            cuMemcpyDtoDAsync_v2(destination, source, bytes as usize, stream)
        )
    }
}

/// Free memory of the current context's device now, bytes.
pub fn memory_free_now(d: &Driver) -> Result<u64, CudaError> {
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: writes two sizes for the current context's device.
    unsafe { drv!(d, cuMemGetInfo_v2(&mut free, &mut total))? };
    Ok(free as u64)
}

/// The start of the allocation holding `address` in the current context (0 or an error where
/// the driver knows none).
pub fn allocation_start(d: &Driver, address: CUdeviceptr) -> Result<CUdeviceptr, CudaError> {
    let mut start: CUdeviceptr = 0;
    // SAFETY: the attribute is written to a CUdeviceptr.
    unsafe {
        drv!(
            d,
            cuPointerGetAttribute(
                (&mut start as *mut CUdeviceptr).cast(),
                sys::CUpointer_attribute_enum_CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                address
            )
        )?
    };
    Ok(start)
}

/// Every copy lies inside a staging buffer of `size` bytes.
fn fits(size: u64, copies: &[StagedCopy]) -> Result<(), CudaError> {
    match copies
        .iter()
        .find(|c| c.offset.checked_add(c.bytes).is_none_or(|end| end > size))
    {
        Some(copy) => Err(CudaError::Load(format!(
            "a copy of {} bytes at offset {} does not fit a staging buffer of {size} bytes",
            copy.bytes, copy.offset
        ))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_outside_the_staging_buffer_is_refused_before_the_driver_sees_it() {
        let copy = |offset, bytes| StagedCopy {
            device: 0x1000,
            offset,
            bytes,
        };
        assert!(fits(512, &[copy(0, 256), copy(256, 256)]).is_ok());
        assert!(fits(512, &[copy(0, 256), copy(256, 257)]).is_err());
        assert!(fits(512, &[copy(u64::MAX, 2)]).is_err());
    }
}
