//! The software device's copies and allocations as the memory domains see them
//! (`--memory-copy-trace`, `--memory-allocation-trace`): each of the application's calls handed
//! to the engine's entry points ([`kreplay_core::Engine::memory_copy`],
//! [`kreplay_core::Engine::memory_allocation`]) as the CUDA backend hands them the driver's
//! callbacks, timed on the device's clock (the dispatches' clock), named by the driver call it
//! stands for. The engine's own snapshots and restores, and replayed passes, go through the
//! device (`SimDevice`), never through the runtime: they are not recorded. A graph's copy nodes
//! are not either (the driver makes no call for them). Unprofiled, or without the options,
//! nothing is recorded.

use crate::runtime::SimRuntime;
use kreplay_core::backend::{AllocKind, DeviceId};
use kreplay_core::memory_trace::{AllocationCall, CopyCall, CopySide};
use kreplay_format::AllocationOperation;

/// The driver call an allocation of `kind` stands for, and the one that frees it.
fn alloc_api(kind: AllocKind) -> (&'static str, &'static str) {
    match kind {
        AllocKind::Device | AllocKind::ModuleVariable => ("cuMemAlloc_v2", "cuMemFree_v2"),
        AllocKind::Pitched => ("cuMemAllocPitch_v2", "cuMemFree_v2"),
        AllocKind::Managed => ("cuMemAllocManaged", "cuMemFree_v2"),
        AllocKind::Pool => ("cuMemAllocAsync", "cuMemFreeAsync"),
        AllocKind::Host => ("cuMemHostAlloc", "cuMemFreeHost"),
        AllocKind::VirtualMapping => ("cuMemMap", "cuMemUnmap"),
    }
}

/// A copy's side: device memory of `device`, or host memory.
pub(super) fn side(device: Option<DeviceId>, address: u64) -> CopySide {
    CopySide {
        device: device.map(u64::from),
        address,
    }
}

impl SimRuntime {
    /// The start of a copy to record: the device clock's time, when copies are recorded.
    pub(super) fn copy_started(&mut self) -> Option<u64> {
        let engine = self.engine.as_ref()?;
        if !engine.memory_copies_enabled() {
            return None;
        }
        Some(self.device().marker_time_ns())
    }

    /// Records a copy that [`SimRuntime::copy_started`] timed (nothing when it did not).
    pub(super) fn copy_done(
        &mut self,
        started: Option<u64>,
        operation: &str,
        src: CopySide,
        dst: CopySide,
        bytes: u64,
    ) {
        let Some(start_ns) = started else { return };
        let end_ns = self.device().marker_time_ns();
        if let Some(engine) = &self.engine {
            let call = CopyCall {
                operation,
                src,
                dst,
                bytes,
                // A synchronous copy, as `cuMemcpy*` without a stream.
                stream_id: 0,
            };
            engine.memory_copy(&call, start_ns, end_ns);
        }
    }

    /// The start of an allocation or free to record, as [`SimRuntime::copy_started`].
    pub(super) fn allocation_started(&mut self) -> Option<u64> {
        let engine = self.engine.as_ref()?;
        if !engine.memory_allocations_enabled() {
            return None;
        }
        Some(self.device().marker_time_ns())
    }

    /// Records an allocation (`freed: false`) or free of `bytes` of `kind` at `address`.
    pub(super) fn allocation_done(
        &mut self,
        started: Option<u64>,
        kind: AllocKind,
        address: u64,
        bytes: u64,
        freed: bool,
    ) {
        let Some(start_ns) = started else { return };
        let end_ns = self.device().marker_time_ns();
        let virtual_memory = kind == AllocKind::VirtualMapping;
        let operation = match (freed, virtual_memory) {
            (false, false) => AllocationOperation::Allocate,
            (true, false) => AllocationOperation::Free,
            (false, true) => AllocationOperation::VmemAllocate,
            (true, true) => AllocationOperation::VmemFree,
        };
        let (alloc, free) = alloc_api(kind);
        let call = AllocationCall {
            operation,
            kind,
            api: if freed { free } else { alloc },
            device: (kind != AllocKind::Host).then_some(u64::from(self.current)),
            address,
            size: bytes,
            stream_id: (kind == AllocKind::Pool).then_some(self.stream_id),
        };
        if let Some(engine) = &self.engine {
            engine.memory_allocation(&call, start_ns, end_ns);
        }
    }
}
