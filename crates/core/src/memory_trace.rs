//! The memory domains (`--memory-copy-trace`, `--memory-allocation-trace`): the application's
//! copies, allocations and frees, each made a record once, at the application's call. Both
//! devices reach them through [`crate::Engine::memory_copy`] and
//! [`crate::Engine::memory_allocation`]: the CUDA backend from CUPTI's driver callbacks of the
//! application's own calls (the tool's own calls fire none it records), the reference device
//! from its runtime's calls. The engine's snapshots, restores and the replayed passes of a
//! window (which re-execute a window's copies) go through the backend, never through these:
//! a copy is recorded once, at the application's time and in its order.

use crate::backend::AllocKind;
use kreplay_format::{
    AllocationOperation, CopyDirection, MemoryAllocationRecord, MemoryCopyRecord,
};
use std::sync::atomic::{AtomicU64, Ordering};

/// One side of a copy: host memory (`device: None`) or memory of a device.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopySide {
    pub device: Option<u64>,
    pub address: u64,
}

/// One copy of the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyCall<'a> {
    /// The call as the driver names it (`cuMemcpyHtoDAsync_v2`, ...).
    pub operation: &'a str,
    pub src: CopySide,
    pub dst: CopySide,
    pub bytes: u64,
    /// The CUDA stream (0 for the legacy default stream or a synchronous copy).
    pub stream_id: u64,
}

/// One allocation or free of the application.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AllocationCall<'a> {
    /// `Allocate` or `Free` (of any kind but a virtual mapping), `VmemAllocate`/`VmemFree` for
    /// a mapping (`cuMemMap`/`cuMemUnmap`).
    pub operation: AllocationOperation,
    /// What memory it is.
    pub kind: AllocKind,
    /// The call as the driver names it (`cuMemAlloc_v2`, ...).
    pub api: &'a str,
    /// The device the memory is on; `None` for host memory.
    pub device: Option<u64>,
    pub address: u64,
    /// Bytes allocated or mapped (a free's is not recorded: rocprofv3 records 0).
    pub size: u64,
    /// The stream of a stream-ordered allocation or free.
    pub stream_id: Option<u64>,
}

/// The name of a kind of memory in the records (rocpd's `extdata.memory`).
pub fn memory_name(kind: AllocKind) -> &'static str {
    match kind {
        AllocKind::Device => "device",
        AllocKind::Pitched => "pitched",
        AllocKind::ModuleVariable => "module_variable",
        AllocKind::Managed => "managed",
        AllocKind::Pool => "pool",
        AllocKind::Host => "host",
        AllocKind::VirtualMapping => "virtual",
    }
}

/// The process's memory trace: which domains are on and the ids given so far.
pub struct MemoryTrace {
    copies: bool,
    allocations: bool,
    pid: u32,
    last_copy: AtomicU64,
    last_allocation: AtomicU64,
}

impl MemoryTrace {
    pub fn new(copies: bool, allocations: bool, pid: u32) -> MemoryTrace {
        MemoryTrace {
            copies,
            allocations,
            pid,
            last_copy: AtomicU64::new(0),
            last_allocation: AtomicU64::new(0),
        }
    }

    pub fn copies(&self) -> bool {
        self.copies
    }

    pub fn allocations(&self) -> bool {
        self.allocations
    }

    /// The record of `call` by thread `tid` from `start_ns` to `end_ns`; `None` when copies are
    /// not recorded.
    pub fn copy(
        &self,
        call: &CopyCall<'_>,
        tid: u64,
        start_ns: u64,
        end_ns: u64,
    ) -> Option<MemoryCopyRecord> {
        if !self.copies {
            return None;
        }
        Some(MemoryCopyRecord {
            id: self.last_copy.fetch_add(1, Ordering::Relaxed) + 1,
            operation: call.operation.to_string(),
            direction: CopyDirection::between(call.src.device, call.dst.device),
            src_agent: call.src.device,
            dst_agent: call.dst.device,
            src_address: call.src.address,
            dst_address: call.dst.address,
            bytes: call.bytes,
            stream_id: call.stream_id,
            pid: self.pid,
            tid,
            start_ns,
            end_ns: end_ns.max(start_ns),
        })
    }

    /// The record of `call`, as [`MemoryTrace::copy`]; `None` when allocations are not
    /// recorded, or for a module variable (the loader's, not an allocation the application
    /// made).
    pub fn allocation(
        &self,
        call: &AllocationCall<'_>,
        tid: u64,
        start_ns: u64,
        end_ns: u64,
    ) -> Option<MemoryAllocationRecord> {
        if !self.allocations || call.kind == AllocKind::ModuleVariable {
            return None;
        }
        let allocates = call.operation.allocates();
        Some(MemoryAllocationRecord {
            id: self.last_allocation.fetch_add(1, Ordering::Relaxed) + 1,
            operation: call.operation,
            memory: memory_name(call.kind).to_string(),
            api: call.api.to_string(),
            agent_id: if allocates { call.device } else { None },
            address: call.address,
            size: if allocates { call.size } else { 0 },
            stream_id: call.stream_id,
            pid: self.pid,
            tid,
            start_ns,
            end_ns: end_ns.max(start_ns),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn copy(src: Option<u64>, dst: Option<u64>) -> CopyCall<'static> {
        CopyCall {
            operation: "cuMemcpyAsync",
            src: CopySide {
                device: src,
                address: 0x10,
            },
            dst: CopySide {
                device: dst,
                address: 0x20,
            },
            bytes: 64,
            stream_id: 3,
        }
    }

    #[test]
    fn copies_are_numbered_in_order_with_their_direction_and_nothing_when_off() {
        let trace = MemoryTrace::new(true, false, 9);
        let first = trace.copy(&copy(None, Some(0)), 4, 10, 20).unwrap();
        let second = trace.copy(&copy(Some(1), Some(0)), 4, 30, 25).unwrap();
        assert_eq!(
            (first.id, first.direction),
            (1, CopyDirection::HostToDevice)
        );
        assert_eq!(
            (second.id, second.direction, second.end_ns),
            (2, CopyDirection::DeviceToDevice, 30)
        );
        assert_eq!((first.pid, first.tid, first.bytes), (9, 4, 64));
        assert!(MemoryTrace::new(false, true, 9)
            .copy(&copy(None, Some(0)), 4, 10, 20)
            .is_none());
    }

    #[test]
    fn frees_name_no_agent_nor_size_and_module_variables_are_not_allocations() {
        let trace = MemoryTrace::new(false, true, 9);
        let call = AllocationCall {
            operation: AllocationOperation::Allocate,
            kind: AllocKind::Pool,
            api: "cuMemAllocAsync",
            device: Some(0),
            address: 0x7000,
            size: 256,
            stream_id: Some(5),
        };
        let alloc = trace.allocation(&call, 4, 1, 2).unwrap();
        assert_eq!(
            (alloc.id, alloc.agent_id, alloc.size, alloc.memory.as_str()),
            (1, Some(0), 256, "pool")
        );
        let free = AllocationCall {
            operation: AllocationOperation::Free,
            api: "cuMemFreeAsync",
            ..call
        };
        let free = trace.allocation(&free, 4, 3, 4).unwrap();
        assert_eq!((free.id, free.agent_id, free.size), (2, None, 0));
        let variable = AllocationCall {
            kind: AllocKind::ModuleVariable,
            ..call
        };
        assert!(trace.allocation(&variable, 4, 5, 6).is_none());
        assert!(MemoryTrace::new(true, false, 9)
            .allocation(&call, 4, 1, 2)
            .is_none());
    }
}
