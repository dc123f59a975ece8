//! The application's memory calls: allocations, copies, fills and synchronisation, each
//! routed through the engine with what it does to device memory.

use crate::device::SimError;
use crate::runtime::api_args::SimArgs;
use crate::runtime::memory_trace::side;
use crate::runtime::{api_trace, SimRuntime};

/// `cudaMemcpyKind`'s values.
const HOST_TO_DEVICE: u32 = 1;
const DEVICE_TO_HOST: u32 = 2;
const DEVICE_TO_DEVICE: u32 = 3;
use kreplay_core::backend::{AllocKind, CallEffect, DeviceId, DeviceScope};

impl SimRuntime {
    /// Allocates and (when profiled) records the allocation in the engine's inventory.
    pub fn alloc(&mut self, kind: AllocKind, bytes: u64) -> Result<u64, SimError> {
        let started = self.allocation_started();
        let id = self.next_correlation();
        let region = self.api(api_trace::alloc_names(kind), id, |runtime| {
            let region =
                runtime.call("alloc", CallEffect::NoDeviceWrite, |d| d.alloc(kind, bytes))?;
            let stream = runtime.stream_id;
            runtime.set_args(SimArgs::alloc(kind, region.base, bytes, stream));
            Ok::<_, SimError>(region)
        })?;
        if let Some(engine) = &self.engine {
            engine.inventory().insert(region);
        }
        self.allocation_done(started, kind, region.base, bytes, false);
        Ok(region.base)
    }

    pub fn free(&mut self, base: u64) -> Result<(), SimError> {
        let device = self.device_id();
        let started = self.allocation_started();
        let found = (self.engine.as_ref())
            .and_then(|engine| engine.inventory().find(device, base))
            .map(|region| (region.kind, region.bytes));
        let kind = found.map(|(kind, _)| kind);
        let size = found.map_or(0, |(_, bytes)| bytes);
        let id = self.next_correlation();
        self.set_args(SimArgs::free(kind, base, size, self.stream_id));
        self.api(Some(api_trace::free_names(kind)), id, |runtime| {
            runtime.call("free", CallEffect::Frees, |d| d.free(base))
        })?;
        let removed = match &self.engine {
            Some(engine) => engine.inventory().remove(device, base),
            None => None,
        };
        if let Some(region) = removed {
            self.allocation_done(started, region.kind, base, region.bytes, true);
        }
        Ok(())
    }

    /// A host-to-device copy.
    pub fn write_u32s(&mut self, address: u64, values: &[u32]) -> Result<(), SimError> {
        let bytes = values.len() as u64 * 4;
        let effect = self.writes(address, bytes);
        let started = self.copy_started();
        let host = values.as_ptr() as u64;
        self.set_args(SimArgs::copy(address, host, bytes, HOST_TO_DEVICE));
        self.call("write_u32s", effect, |d| d.write_u32s(address, values))?;
        let device = Some(self.device_id());
        self.copy_done(
            started,
            "cuMemcpyHtoD_v2",
            side(None, 0),
            side(device, address),
            bytes,
        );
        Ok(())
    }

    /// The host's own store into memory it can reach directly (managed memory): no CUDA call,
    /// so nothing the tool sees.
    pub fn host_store_u32(&mut self, address: u64, value: u32) -> Result<(), SimError> {
        self.device().write_u32s(address, &[value])
    }

    /// A device-to-host copy.
    pub fn read_u32s(&mut self, address: u64, count: usize) -> Result<Vec<u32>, SimError> {
        let started = self.copy_started();
        // The host buffer the values land in, as a cudaMemcpy's destination.
        let mut values = Vec::with_capacity(count);
        let host = values.as_ptr() as u64;
        self.set_args(SimArgs::copy(
            host,
            address,
            count as u64 * 4,
            DEVICE_TO_HOST,
        ));
        self.call("read_u32s", CallEffect::NoDeviceWrite, |d| {
            values.extend(d.read_u32s(address, count)?);
            Ok::<_, SimError>(())
        })?;
        let device = Some(self.device_id());
        let bytes = count as u64 * 4;
        self.copy_done(
            started,
            "cuMemcpyDtoH_v2",
            side(device, address),
            side(None, 0),
            bytes,
        );
        Ok(values)
    }

    /// A device-to-device copy.
    pub fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), SimError> {
        let started = self.copy_started();
        self.set_args(SimArgs::copy(dst, src, bytes, DEVICE_TO_DEVICE));
        self.copy_untraced(dst, src, bytes)?;
        let device = Some(self.device_id());
        self.copy_done(
            started,
            "cuMemcpyDtoD_v2",
            side(device, src),
            side(device, dst),
            bytes,
        );
        Ok(())
    }

    /// A device-to-device copy the memory trace does not see: a graph's copy node (the driver
    /// makes no call of the application's for it).
    pub(super) fn copy_untraced(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), SimError> {
        let effect = self.writes(dst, bytes);
        self.call("copy", effect, |d| d.copy(dst, src, bytes))
    }

    /// A copy from `src` on `src_device` to `dst` on the current device (as `cudaMemcpyPeer`):
    /// a call that touches two devices, so it holds off replays on every device.
    pub fn copy_peer(
        &mut self,
        dst: u64,
        src_device: DeviceId,
        src: u64,
        bytes: u64,
    ) -> Result<(), SimError> {
        let effect = self.writes(dst, bytes);
        let current = self.current;
        let started = self.copy_started();
        self.set_args(SimArgs::copy_peer(dst, current, src, src_device, bytes));
        self.call_on("copy_peer", effect, DeviceScope::All, |devices| {
            let data = devices
                .on(src_device)
                .read_u32s(src, (bytes / 4) as usize)?;
            devices.on(current).write_u32s(dst, &data)
        })?;
        let (from, to) = (side(Some(src_device), src), side(Some(current), dst));
        self.copy_done(started, "cuMemcpyPeer", from, to, bytes);
        Ok(())
    }

    /// A memset of `u32`s.
    pub fn fill_u32s(&mut self, dst: u64, value: u32, count: usize) -> Result<(), SimError> {
        let effect = self.writes(dst, count as u64 * 4);
        self.set_args(SimArgs::fill(dst, value, count as u64));
        self.call("fill_u32s", effect, |d| d.fill_u32s(dst, value, count))
    }

    /// A synchronisation: nothing to do on a synchronous device, but a call all the same.
    pub fn synchronize(&mut self) {
        self.call("synchronize", CallEffect::NoDeviceWrite, |_| ())
    }

    fn writes(&self, base: u64, bytes: u64) -> CallEffect {
        CallEffect::DeviceWrite {
            device: self.device_id(),
            base,
            bytes,
        }
    }
}
