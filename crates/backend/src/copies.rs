//! Staging buffers and the copies between tracked memory and a snapshot (one batched
//! `cuMemcpyBatchAsync` per direction, but one call per region while an execution measures:
//! the range profiler counts a batched copy between two kernels as kernels).

use crate::backend::{failed, CudaBackend};
use crate::snapshot::CudaSnapshot;
use crate::staging::host_staging_limit;
use kreplay_core::backend::{AllocKind, BackendError, DeviceId, Region};
use kreplay_cuda::handles::DeviceMemory;
use kreplay_cuda::memory::{allocation_start, Direction, PinnedMemory, StagedCopy, StagingBuffer};
use kreplay_cuda::ContextGuard;
use kreplay_format::Staging;

/// Where `buffer` is, as the engine names it.
pub(crate) fn place(buffer: &StagingBuffer) -> Staging {
    if buffer.is_device() {
        Staging::Device
    } else {
        Staging::Host
    }
}

impl CudaBackend {
    /// A staging buffer of at least `bytes` at `place`: a spare one, or a new allocation
    /// (2 MiB steps, so that small variations reuse buffers).
    pub(crate) fn take_buffer(
        &mut self,
        device: DeviceId,
        at: Staging,
        bytes: u64,
    ) -> Result<StagingBuffer, BackendError> {
        let d = self.driver;
        let state = self.state(device)?;
        let fit = state
            .spare
            .iter()
            .enumerate()
            .filter(|(_, b)| place(b) == at && b.bytes() >= bytes)
            .min_by_key(|(_, b)| b.bytes())
            .map(|(i, _)| i);
        if let Some(i) = fit {
            return Ok(state.spare.swap_remove(i));
        }
        // A spare of the same place that is too small goes back to the application first
        // (freed in the order kept).
        let (small, others): (Vec<_>, Vec<_>) = state.spare.drain(..).partition(|b| place(b) == at);
        state.spare = others;
        drop(small);
        let want = bytes.div_ceil(2 << 20).max(1) * (2 << 20);
        if at == Staging::Host && want > host_staging_limit() {
            // Pinning most of the host's memory would starve the application (or end it).
            return Err(BackendError::OutOfStagingMemory(at, bytes));
        }
        match at {
            Staging::Device => DeviceMemory::allocate(d, want).map(StagingBuffer::Device),
            Staging::Host => PinnedMemory::allocate(d, want).map(StagingBuffer::Pinned),
            Staging::None => return Err(BackendError::Failed("snapshot to nowhere".into())),
        }
        .map_err(|_| BackendError::OutOfStagingMemory(at, bytes))
    }

    /// Copies between tracked memory and a snapshot's buffer on the tool stream, then waits.
    pub(crate) fn copy(
        &mut self,
        snapshot: &CudaSnapshot,
        to_staging: bool,
    ) -> Result<(), BackendError> {
        let d = self.driver;
        let state = self.state(snapshot.device)?;
        // A unit may be closed on another thread: its copies run in the device's context.
        let _ctx = ContextGuard::make_current(d, state.ctx).map_err(failed)?;
        let stream = state.tool_stream.raw();
        // Not while an execution measures (a unit taking in new allocations between members):
        // the range profiler counted each batched copy as a kernel of its own (H200,
        // 2026-12-01: "measured 5 kernel(s) where the unit launched 3"); single copies it does
        // not count. One batched call otherwise: many small regions cost a call each.
        let measuring = state
            .unit
            .as_ref()
            .is_some_and(|unit| unit.execution.is_some());
        let copies: Vec<StagedCopy> = snapshot
            .entries
            .iter()
            .map(|(region, offset)| StagedCopy {
                device: region.base,
                offset: *offset,
                bytes: region.bytes,
            })
            .collect();
        let direction = if to_staging {
            Direction::ToStaging
        } else {
            Direction::FromStaging
        };
        let batch = snapshot.entries.len() > 1 && !measuring;
        snapshot
            .buffer
            .transfer(d, &copies, direction, stream, batch)
            .map_err(failed)
    }

    /// The regions whose first and last bytes are in live device memory of the current context.
    /// One that is not was freed behind the inventory's back (a diagnostic line says which).
    /// Asked of `cuMemAlloc`'d memory and module variables only, the kinds seen to answer on
    /// the H200: pool, managed and virtual-memory regions are kept unasked (were the query to
    /// fail for live ones, their memory would silently go unrestored), and their lifetimes are
    /// tracked from their own frees and unmaps.
    pub(crate) fn allocated(&self, regions: &[Region]) -> Vec<Region> {
        let checked = |kind: AllocKind| {
            matches!(
                kind,
                AllocKind::Device | AllocKind::Pitched | AllocKind::ModuleVariable
            )
        };
        let live = |address| allocation_start(self.driver, address).is_ok_and(|start| start != 0);
        regions
            .iter()
            .filter(|region| {
                let ok = !checked(region.kind)
                    || (live(region.base) && live(region.base + region.bytes.max(1) - 1));
                if !ok {
                    kreplay_cuda::debug::line(&format!(
                        "tracked memory at {:#x} ({} bytes, {:?}) is no longer allocated: not snapshotted",
                        region.base, region.bytes, region.kind
                    ));
                }
                ok
            })
            .copied()
            .collect()
    }
}
