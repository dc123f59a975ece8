//! The memory domains' records: the application's memory copies (`--memory-copy-trace`) and its
//! allocations and frees (`--memory-allocation-trace`), as rocprofv3 records its `MEMORY_COPY`
//! and `MEMORY_ALLOCATION` buffer-tracing kinds.
//!
//! A record is made once per application call, at the application's own time and order: the
//! tool's own copies (snapshots, restores, staging) and the replayed passes of a window never
//! make one. The database keeps copies as `rocpd_memory_copy` rows and allocations as
//! `rocpd_memory_allocate` rows, each with a `rocpd_event`, in the order they were recorded
//! (row ids increase), so that a reader can take them a page at a time. The host side of a
//! copy, or a host allocation, is the process's CPU agent (`None` in a record).

use serde::{Deserialize, Serialize};

/// rocprofv3's category (buffer-tracing kind name) of copy records: the `Kind` column of
/// `memory_copy_trace.csv` and the `category` of rocpd's `memory_copies` view.
pub const MEMORY_COPY_CATEGORY: &str = "MEMORY_COPY";
/// The same for allocation records (`memory_allocation_trace.csv`, `memory_allocations`).
pub const MEMORY_ALLOCATION_CATEGORY: &str = "MEMORY_ALLOCATION";

/// Which way a copy goes, rocprofv3's `rocprofiler_memory_copy_operation_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CopyDirection {
    HostToHost,
    HostToDevice,
    DeviceToHost,
    DeviceToDevice,
}

impl CopyDirection {
    /// The direction of a copy from `src` to `dst` (`None`: host memory).
    pub fn between(src: Option<u64>, dst: Option<u64>) -> CopyDirection {
        match (src, dst) {
            (None, None) => CopyDirection::HostToHost,
            (None, Some(_)) => CopyDirection::HostToDevice,
            (Some(_), None) => CopyDirection::DeviceToHost,
            (Some(_), Some(_)) => CopyDirection::DeviceToDevice,
        }
    }

    /// rocprofv3's operation name: the `Direction` column, rocpd's copy name.
    pub fn as_str(self) -> &'static str {
        match self {
            CopyDirection::HostToHost => "MEMORY_COPY_HOST_TO_HOST",
            CopyDirection::HostToDevice => "MEMORY_COPY_HOST_TO_DEVICE",
            CopyDirection::DeviceToHost => "MEMORY_COPY_DEVICE_TO_HOST",
            CopyDirection::DeviceToDevice => "MEMORY_COPY_DEVICE_TO_DEVICE",
        }
    }

    /// The direction [`Self::as_str`] names.
    pub fn parse(text: &str) -> Option<CopyDirection> {
        [
            CopyDirection::HostToHost,
            CopyDirection::HostToDevice,
            CopyDirection::DeviceToHost,
            CopyDirection::DeviceToDevice,
        ]
        .into_iter()
        .find(|d| d.as_str() == text)
    }
}

/// One copy the application made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryCopyRecord {
    /// The copy's id in its process, from 1 in the order the application made them
    /// (rocprofv3's `Correlation_Id`).
    pub id: u64,
    /// The call as the driver names it (`cuMemcpyHtoDAsync_v2`, ...).
    pub operation: String,
    pub direction: CopyDirection,
    /// The source's device (agent id); `None` for host memory.
    pub src_agent: Option<u64>,
    /// The destination's device; `None` for host memory.
    pub dst_agent: Option<u64>,
    pub src_address: u64,
    pub dst_address: u64,
    pub bytes: u64,
    /// The CUDA stream (0: the legacy default stream, or a synchronous copy).
    pub stream_id: u64,
    pub pid: u32,
    pub tid: u64,
    /// Nanoseconds on the clock of the dispatches' timestamps.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// What an allocation record is, rocprofv3's `rocprofiler_memory_allocation_operation_t`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AllocationOperation {
    Allocate,
    Free,
    /// A virtual-memory mapping made (`cuMemMap`).
    VmemAllocate,
    /// A virtual-memory mapping released (`cuMemUnmap`).
    VmemFree,
}

impl AllocationOperation {
    /// rocprofv3's operation name (the `Operation` column).
    pub fn as_str(self) -> &'static str {
        match self {
            AllocationOperation::Allocate => "MEMORY_ALLOCATION_ALLOCATE",
            AllocationOperation::Free => "MEMORY_ALLOCATION_FREE",
            AllocationOperation::VmemAllocate => "MEMORY_ALLOCATION_VMEM_ALLOCATE",
            AllocationOperation::VmemFree => "MEMORY_ALLOCATION_VMEM_FREE",
        }
    }

    pub fn parse(text: &str) -> Option<AllocationOperation> {
        ALL_OPERATIONS.into_iter().find(|op| op.as_str() == text)
    }

    /// rocpd's `type` and `level` columns (rocprofv3's `memtype_to_db`).
    pub fn db_type_level(self) -> (&'static str, &'static str) {
        match self {
            AllocationOperation::Allocate => ("ALLOC", "REAL"),
            AllocationOperation::Free => ("FREE", "REAL"),
            AllocationOperation::VmemAllocate => ("ALLOC", "VIRTUAL"),
            AllocationOperation::VmemFree => ("FREE", "VIRTUAL"),
        }
    }

    pub fn from_db(kind: &str, level: &str) -> Option<AllocationOperation> {
        ALL_OPERATIONS
            .into_iter()
            .find(|op| op.db_type_level() == (kind, level))
    }

    /// An allocation (as opposed to a free): rocprofv3 names the agent of these only.
    pub fn allocates(self) -> bool {
        matches!(
            self,
            AllocationOperation::Allocate | AllocationOperation::VmemAllocate
        )
    }
}

const ALL_OPERATIONS: [AllocationOperation; 4] = [
    AllocationOperation::Allocate,
    AllocationOperation::Free,
    AllocationOperation::VmemAllocate,
    AllocationOperation::VmemFree,
];

/// One allocation or free the application made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryAllocationRecord {
    /// The record's id in its process, from 1 in the order the application made them
    /// (rocprofv3's `Correlation_Id`).
    pub id: u64,
    pub operation: AllocationOperation,
    /// What memory: `device`, `pitched`, `pool`, `managed`, `host`, `virtual` (kreplay's; in
    /// rocpd's `extdata`).
    pub memory: String,
    /// The call as the driver names it (`cuMemAlloc_v2`, `cuMemFreeAsync`, ...).
    pub api: String,
    /// The device the memory is on (`None`: host memory, or a free: rocprofv3 names the agent
    /// of allocations only).
    pub agent_id: Option<u64>,
    pub address: u64,
    /// Bytes allocated or mapped; 0 for a free (rocprofv3's), whose allocation's row has them.
    pub size: u64,
    /// The stream of a stream-ordered allocation or free.
    pub stream_id: Option<u64>,
    pub pid: u32,
    pub tid: u64,
    /// Nanoseconds on the clock of the dispatches' timestamps.
    pub start_ns: u64,
    pub end_ns: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_round_trip_through_their_names_and_rocpd_columns() {
        for op in ALL_OPERATIONS {
            assert_eq!(AllocationOperation::parse(op.as_str()), Some(op));
            let (kind, level) = op.db_type_level();
            assert_eq!(AllocationOperation::from_db(kind, level), Some(op));
        }
        assert!(AllocationOperation::VmemAllocate.allocates());
        assert!(!AllocationOperation::Free.allocates());
    }

    #[test]
    fn a_copys_direction_follows_its_sides() {
        assert_eq!(
            CopyDirection::between(None, Some(0)).as_str(),
            "MEMORY_COPY_HOST_TO_DEVICE"
        );
        assert_eq!(
            CopyDirection::between(Some(1), Some(0)),
            CopyDirection::DeviceToDevice
        );
        assert_eq!(
            CopyDirection::between(Some(0), None),
            CopyDirection::DeviceToHost
        );
        assert_eq!(
            CopyDirection::between(None, None),
            CopyDirection::HostToHost
        );
    }
}
