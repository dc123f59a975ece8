//! What the engine holds between calls: a snapshot's staged bytes and a capture's logged bytes.

use kreplay_core::backend::{DeviceId, Region};
use kreplay_cuda::memory::StagingBuffer;
use kreplay_cuda::CUdeviceptr;
use std::mem::ManuallyDrop;

/// Where a snapshot's bytes are: its buffer and each region's offset in it. The engine hands
/// it back through `release`, which keeps or frees the buffer; one dropped instead leaves its
/// buffer to its context, as at exit.
#[derive(Debug)]
pub struct CudaSnapshot {
    pub(crate) device: DeviceId,
    pub(crate) buffer: ManuallyDrop<StagingBuffer>,
    pub(crate) entries: Vec<(Region, u64)>,
    pub(crate) bytes: u64,
}

/// Bytes a call wrote into device memory, copied into the device's log arena.
#[derive(Debug)]
pub struct CudaCapture {
    pub(crate) device: DeviceId,
    pub(crate) target: CUdeviceptr,
    pub(crate) staged: CUdeviceptr,
    pub(crate) bytes: u64,
}
