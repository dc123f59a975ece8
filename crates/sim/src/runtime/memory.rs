//! The application's memory calls: allocations, copies, fills and synchronisation, each
//! routed through the engine with what it does to device memory.

use crate::device::SimError;
use crate::runtime::{api_trace, SimRuntime};
use kreplay_core::backend::{AllocKind, CallEffect, DeviceId, DeviceScope};

impl SimRuntime {
    /// Allocates and (when profiled) records the allocation in the engine's inventory.
    pub fn alloc(&mut self, kind: AllocKind, bytes: u64) -> Result<u64, SimError> {
        let id = self.next_correlation();
        let region = self.api(Some(api_trace::alloc_names(kind)), id, |runtime| {
            runtime.call("alloc", CallEffect::NoDeviceWrite, |d| d.alloc(kind, bytes))
        })?;
        if let Some(engine) = &self.engine {
            engine.inventory().insert(region);
        }
        Ok(region.base)
    }

    pub fn free(&mut self, base: u64) -> Result<(), SimError> {
        let device = self.device_id();
        self.call("free", CallEffect::Frees, |d| d.free(base))?;
        if let Some(engine) = &self.engine {
            engine.inventory().remove(device, base);
        }
        Ok(())
    }

    /// A host-to-device copy.
    pub fn write_u32s(&mut self, address: u64, values: &[u32]) -> Result<(), SimError> {
        let effect = self.writes(address, values.len() as u64 * 4);
        self.call("write_u32s", effect, |d| d.write_u32s(address, values))
    }

    /// The host's own store into memory it can reach directly (managed memory): no CUDA call,
    /// so nothing the tool sees.
    pub fn host_store_u32(&mut self, address: u64, value: u32) -> Result<(), SimError> {
        self.device().write_u32s(address, &[value])
    }

    /// A device-to-host copy.
    pub fn read_u32s(&mut self, address: u64, count: usize) -> Result<Vec<u32>, SimError> {
        self.call("read_u32s", CallEffect::NoDeviceWrite, |d| {
            d.read_u32s(address, count)
        })
    }

    /// A device-to-device copy.
    pub fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), SimError> {
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
        self.call_on("copy_peer", effect, DeviceScope::All, |devices| {
            let data = devices
                .on(src_device)
                .read_u32s(src, (bytes / 4) as usize)?;
            devices.on(current).write_u32s(dst, &data)
        })
    }

    /// A memset of `u32`s.
    pub fn fill_u32s(&mut self, dst: u64, value: u32, count: usize) -> Result<(), SimError> {
        let effect = self.writes(dst, count as u64 * 4);
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
