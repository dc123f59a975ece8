//! Devices and their memory as the engine names them: device ids, allocation kinds, regions.

/// A device ordinal within the process (the CUDA device index; 0 for the software device).
pub type DeviceId = u32;

/// The kinds of memory the inventory knows. Only the tracked kinds are snapshotted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AllocKind {
    /// `cuMemAlloc` and what the runtime maps onto it: tracked.
    Device,
    /// `cuMemAllocPitch`: tracked.
    Pitched,
    /// A module-scope `__device__` or writable `__constant__` variable: tracked.
    ModuleVariable,
    /// `cuMemAllocManaged`: tracked (copied like device memory; the copies migrate its pages
    /// to the device).
    Managed,
    /// Stream-ordered pool memory (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`, what
    /// `cudaMallocAsync` and its pools give): tracked, from the allocation until its free.
    Pool,
    /// Host, pinned or mapped host memory: not restored.
    Host,
    /// A `cuMemMap` of `cuMemCreate`'d memory (PyTorch's expandable segments, JAX and other
    /// allocators on the virtual-memory API): tracked, from the map until its unmap.
    VirtualMapping,
}

impl AllocKind {
    /// Whether snapshots cover this kind.
    pub fn is_tracked(self) -> bool {
        matches!(
            self,
            AllocKind::Device
                | AllocKind::Pitched
                | AllocKind::ModuleVariable
                | AllocKind::Managed
                | AllocKind::Pool
                | AllocKind::VirtualMapping
        )
    }

    /// How the once-per-process "not restored" notice names this kind.
    pub fn describe(self) -> &'static str {
        match self {
            AllocKind::Device => "device memory",
            AllocKind::Pitched => "pitched device memory",
            AllocKind::ModuleVariable => "module variable",
            AllocKind::Managed => "managed memory",
            AllocKind::Pool => "stream-ordered pool memory",
            AllocKind::Host => "host memory",
            AllocKind::VirtualMapping => "virtual-memory mapping",
        }
    }
}

/// A contiguous range of device-visible memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Region {
    pub device: DeviceId,
    /// Device address.
    pub base: u64,
    pub bytes: u64,
    pub kind: AllocKind,
}
