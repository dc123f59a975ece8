//! Where a unit's snapshot is staged: on the device while it leaves the reserve free, else on
//! the host while it is within `--host-staging-max`.

use super::*;

impl<K: Backend> Engine<K> {
    /// Device staging first while it leaves the reserve free, host staging otherwise (only
    /// host staging with `KREPLAY_HOST_STAGING=1`); host staging only within
    /// `--host-staging-max`.
    fn staging_order<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        bytes: u64,
    ) -> Vec<Staging> {
        let mut order = Vec::with_capacity(2);
        if !self.config.switches.host_staging {
            let free = backend.device_free_bytes(device);
            if bytes <= free.saturating_sub(self.options.staging_reserve_bytes) {
                order.push(Staging::Device);
            }
        }
        if self.host_staging_admits(bytes) {
            order.push(Staging::Host);
        }
        order
    }

    /// Whether a snapshot of `bytes` may be staged on the host (`--host-staging-max`).
    pub(super) fn host_staging_admits(&self, bytes: u64) -> bool {
        bytes <= self.config.host_staging_max_bytes
    }

    /// A snapshot of `regions` (of `bytes` in all) in the first place of [`Self::staging_order`]
    /// that has room for it; `Ok(None)` when none has.
    pub(super) fn snapshot_staged<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        regions: &[Region],
        bytes: u64,
    ) -> Result<Option<(K::Snapshot, Staging)>, BackendError> {
        for place in self.staging_order(backend, device, bytes) {
            match backend.snapshot(device, regions, place) {
                Ok(staged) => return Ok(Some((staged, place))),
                Err(BackendError::OutOfStagingMemory(..)) => continue,
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    }
}
