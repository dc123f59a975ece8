//! The engine's memory job on the CUDA backend: drain a device, snapshot tracked memory into
//! staging and restore it, release a snapshot's staging (kept for reuse while device memory
//! allows).

use crate::backend::{failed, CudaBackend};
use crate::copies::place;
use crate::snapshot::CudaSnapshot;
use crate::state::SPARE_BUFFERS;
use kreplay_core::backend::{BackendError, DeviceId, Memory, Region};
use kreplay_core::engine::DEFAULT_STAGING_RESERVE_BYTES;
use kreplay_cuda::drain::{synchronize_within, Drained};
use kreplay_cuda::{CUcontext, ContextGuard, Driver};
use kreplay_format::Staging;
use std::mem::ManuallyDrop;
use std::time::Duration;

impl Memory for CudaBackend {
    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        let ctx = self.state(device)?.ctx;
        drain_context(self.driver, device, ctx, deadline)
    }

    fn device_free_bytes(&mut self, device: DeviceId) -> u64 {
        // Spare staging is free for staging: a snapshot that fits reuses it.
        let spare: u64 = self.devices.get(&device).map_or(0, |s| {
            s.spare
                .iter()
                .filter(|b| b.is_device())
                .map(|b| b.bytes())
                .sum()
        });
        self.memory_free_now().saturating_add(spare)
    }

    fn snapshot(
        &mut self,
        device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<CudaSnapshot, BackendError> {
        let ctx = self.state(device)?.ctx;
        let _ctx = ContextGuard::make_current(self.driver, ctx).map_err(failed)?;
        // The driver faults inside a batched copy given memory that is no longer allocated,
        // where one copy at a time reports an error: such memory is left out (there is nothing
        // to restore in it).
        let live: Vec<Region>;
        let regions = if regions.len() > 1 {
            live = self.allocated(regions);
            &live[..]
        } else {
            regions
        };
        let mut entries = Vec::with_capacity(regions.len());
        let mut offset = 0u64;
        for region in regions {
            entries.push((*region, offset));
            offset += region.bytes.div_ceil(256) * 256;
        }
        let buffer = self.take_buffer(device, place, offset.max(1))?;
        let snapshot = CudaSnapshot {
            device,
            buffer: ManuallyDrop::new(buffer),
            entries,
            bytes: regions.iter().map(|r| r.bytes).sum(),
        };
        if let Err(error) = self.copy(&snapshot, true) {
            self.release(snapshot);
            return Err(error);
        }
        Ok(snapshot)
    }

    fn restore(&mut self, snapshot: &CudaSnapshot) -> Result<u64, BackendError> {
        self.copy(snapshot, false)?;
        Ok(snapshot.bytes)
    }

    fn release(&mut self, snapshot: CudaSnapshot) {
        // The buffer stays for the next snapshot, unless device memory has become tight: then
        // the application gets it back. Where the device's state or context is gone, it is left
        // to the context (`snapshot.buffer` is never dropped).
        let d = self.driver;
        let Some(ctx) = self.devices.get(&snapshot.device).map(|s| s.ctx) else {
            return;
        };
        let Ok(_ctx) = ContextGuard::make_current(d, ctx) else {
            return;
        };
        let at = place(&snapshot.buffer);
        let tight = at == Staging::Device && self.memory_free_now() < DEFAULT_STAGING_RESERVE_BYTES;
        let Some(state) = self.devices.get_mut(&snapshot.device) else {
            return;
        };
        state.spare.push(ManuallyDrop::into_inner(snapshot.buffer));
        // At most two kept per place (a unit's start and the application's view), the
        // largest; none on the device once memory is tight. The others are freed, largest
        // first.
        let mut kept: Vec<(u64, u64)> = state
            .spare
            .iter()
            .filter(|b| place(b) == at)
            .map(|b| (b.address(), b.bytes()))
            .collect();
        kept.sort_by_key(|(_, bytes)| std::cmp::Reverse(*bytes));
        let keep = if tight { 0 } else { SPARE_BUFFERS };
        let mut freed = Vec::new();
        for (address, _) in kept.into_iter().skip(keep) {
            if let Some(i) = state
                .spare
                .iter()
                .position(|b| b.address() == address && place(b) == at)
            {
                freed.push(state.spare.remove(i));
            }
        }
        // Copies are synchronous: nothing uses them.
        drop(freed);
    }
}

/// Waits for `device`'s context `ctx` to finish its work, at most `deadline`. Needs none of the
/// backend's state: [`crate::DispatchBackend`] waits with the backend unlocked, so that a drain
/// of one device never holds up another device's replay.
pub(crate) fn drain_context(
    driver: &'static Driver,
    device: DeviceId,
    ctx: CUcontext,
    deadline: Duration,
) -> Result<(), BackendError> {
    match synchronize_within(
        driver,
        ctx,
        deadline,
        kreplay_core::lifecycle::block_signals,
    )
    .map_err(failed)?
    {
        Drained::Done => Ok(()),
        Drained::TimedOut => Err(BackendError::DrainTimeout { device, deadline }),
    }
}
