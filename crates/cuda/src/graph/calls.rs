//! A graph's node as the tool runs it on the launch's stream: a kernel node as a launch of the
//! tool's own, any other node as the driver call it stands for.

use crate::drv;
use crate::launch::OwnedLaunch;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUevent, CUstream};

/// One node of a graph, as the tool runs it on the launch's stream.
#[derive(Clone)]
pub enum Step {
    /// A kernel node: an ordinary dispatch (its parameters copied at instantiation).
    Kernel(Box<OwnedLaunch>),
    /// Any other node the tool runs: a call of the application's.
    Call(NodeCall),
}

/// A node other than a kernel node, run as the driver call it stands for.
#[derive(Clone)]
pub enum NodeCall {
    Memset(sys::CUDA_MEMSET_NODE_PARAMS),
    Memcpy(Box<sys::CUDA_MEMCPY3D>),
    Host(sys::CUDA_HOST_NODE_PARAMS),
    EventRecord(CUevent),
    EventWait(CUevent),
}

// SAFETY: CUDA handles and the application's host pointers (host-node data, copy endpoints),
// valid on any thread; the tool only passes them back to the driver.
unsafe impl Send for Step {}
unsafe impl Sync for Step {}

impl NodeCall {
    /// What the node is called in the window summary ("replay windows closed by: ...").
    pub fn call_name(&self) -> &'static str {
        match self {
            NodeCall::Memset(_) => "a graph's memset node",
            NodeCall::Memcpy(_) => "a graph's memcpy node",
            NodeCall::Host(_) => "a graph's host node",
            NodeCall::EventRecord(_) => "a graph's event record node",
            NodeCall::EventWait(_) => "a graph's event wait node",
        }
    }

    /// Runs the node on `stream`.
    ///
    /// # Safety
    /// The node's handles and pointers are still the application's (its graph is alive, or
    /// was instantiated with them).
    pub unsafe fn run(&self, d: &Driver, stream: CUstream) -> Result<(), String> {
        let done = match self {
            NodeCall::Memset(p) => {
                let value = p.value;
                match (p.elementSize, p.height) {
                    (1, 1) => drv!(d, cuMemsetD8Async(p.dst, value as u8, p.width, stream)),
                    (2, 1) => drv!(d, cuMemsetD16Async(p.dst, value as u16, p.width, stream)),
                    (4, 1) => drv!(d, cuMemsetD32Async(p.dst, value, p.width, stream)),
                    (1, h) => drv!(
                        d,
                        cuMemsetD2D8Async(p.dst, p.pitch, value as u8, p.width, h, stream)
                    ),
                    (2, h) => drv!(
                        d,
                        cuMemsetD2D16Async(p.dst, p.pitch, value as u16, p.width, h, stream)
                    ),
                    (4, h) => drv!(
                        d,
                        cuMemsetD2D32Async(p.dst, p.pitch, value, p.width, h, stream)
                    ),
                    (size, _) => return Err(format!("a memset of {size}-byte elements")),
                }
            }
            NodeCall::Memcpy(p) => drv!(d, cuMemcpy3DAsync_v2(&**p, stream)),
            NodeCall::Host(p) => drv!(d, cuLaunchHostFunc(stream, p.fn_, p.userData)),
            NodeCall::EventRecord(event) => drv!(d, cuEventRecord(*event, stream)),
            NodeCall::EventWait(event) => drv!(d, cuStreamWaitEvent(stream, *event, 0)),
        };
        done.map_err(|e| e.to_string())
    }
}

/// Bytes a memset node writes from its destination.
pub fn memset_span(p: &sys::CUDA_MEMSET_NODE_PARAMS) -> u64 {
    let row = p.width as u64 * u64::from(p.elementSize);
    match p.height {
        0 => 0,
        1 => row,
        h => (h as u64 - 1) * p.pitch as u64 + row,
    }
}

/// Where a 3-D copy writes device memory: its first byte and how many bytes from there, or
/// `None` when its destination is not device memory by address (host memory, an array).
/// `UNIFIED` destinations are addresses too; the caller tells host from device.
pub fn memcpy_destination(p: &sys::CUDA_MEMCPY3D) -> Option<(u64, u64)> {
    let addressed = p.dstMemoryType == sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE
        || p.dstMemoryType == sys::CUmemorytype_enum_CU_MEMORYTYPE_UNIFIED;
    if !addressed {
        return None;
    }
    let (pitch, rows_per_slice) = (p.dstPitch as u64, p.dstHeight as u64);
    let first = p.dstDevice
        + p.dstXInBytes as u64
        + (p.dstY as u64 + p.dstZ as u64 * rows_per_slice) * pitch;
    let (height, depth) = (p.Height.max(1) as u64, p.Depth.max(1) as u64);
    let rows = (depth - 1) * rows_per_slice + (height - 1);
    Some((first, rows * pitch + p.WidthInBytes as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memset_nodes_write_rows_a_pitch_apart() {
        let mut p = sys::CUDA_MEMSET_NODE_PARAMS {
            dst: 0x1000,
            pitch: 0,
            value: 7,
            elementSize: 4,
            width: 256,
            height: 1,
        };
        // One row: the pitch is not used (captured memsets leave it 0).
        assert_eq!(memset_span(&p), 1024);
        p.pitch = 2048;
        p.height = 3;
        assert_eq!(memset_span(&p), 2 * 2048 + 1024);
        p.height = 0;
        assert_eq!(memset_span(&p), 0);
    }

    #[test]
    fn copies_to_device_memory_say_where_they_write() {
        let mut p = sys::CUDA_MEMCPY3D {
            dstMemoryType: sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE,
            dstDevice: 0x10000,
            WidthInBytes: 100,
            Height: 1,
            Depth: 1,
            ..Default::default()
        };
        assert_eq!(memcpy_destination(&p), Some((0x10000, 100)));
        // Rows 2..4 of slice 1 of a 512-byte pitch, 8 rows a slice, from byte 16.
        p.dstPitch = 512;
        p.dstHeight = 8;
        p.dstXInBytes = 16;
        p.dstY = 2;
        p.dstZ = 1;
        p.Height = 3;
        assert_eq!(
            memcpy_destination(&p),
            Some((0x10000 + 16 + (2 + 8) * 512, 2 * 512 + 100))
        );
        p.dstMemoryType = sys::CUmemorytype_enum_CU_MEMORYTYPE_HOST;
        assert_eq!(memcpy_destination(&p), None);
        p.dstMemoryType = sys::CUmemorytype_enum_CU_MEMORYTYPE_ARRAY;
        assert_eq!(memcpy_destination(&p), None);
    }
}
