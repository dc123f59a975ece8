//! The reference device as a replay backend: the types it replays with, and its memory job
//! (drain, snapshots, restores); `measurement` and `relaunch` do the other two jobs.

use super::*;

impl Backend for SimDevice {
    type Launch = SimLaunch;
    type Snapshot = SimSnapshot;
    type Capture = SimCapture;
}

impl Memory for SimDevice {
    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        self.activity.drains += 1;
        if self
            .drains_before_stall
            .is_some_and(|limit| self.activity.drains > limit)
        {
            return Err(BackendError::DrainTimeout { device, deadline });
        }
        Ok(())
    }

    fn device_free_bytes(&mut self, _device: DeviceId) -> u64 {
        self.free_bytes()
    }

    fn snapshot(
        &mut self,
        _device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<SimSnapshot, BackendError> {
        let bytes: u64 = regions.iter().map(|r| r.bytes).sum();
        match place {
            Staging::Device if bytes > self.free_bytes() => {
                return Err(BackendError::OutOfStagingMemory(place, bytes))
            }
            Staging::Host if bytes > self.host_staging_limit => {
                return Err(BackendError::OutOfStagingMemory(place, bytes))
            }
            Staging::None => {
                return Err(BackendError::Failed(
                    "a snapshot needs a staging place".to_string(),
                ))
            }
            _ => {}
        }
        let mut copies = Vec::with_capacity(regions.len());
        for region in regions {
            let allocation = self
                .memory
                .get(&region.base)
                .filter(|a| a.data.len() as u64 == region.bytes)
                .ok_or_else(|| {
                    BackendError::Failed(format!(
                        "snapshot: no allocation of {} bytes at {:#x}",
                        region.bytes, region.base
                    ))
                })?;
            copies.push((region.base, allocation.data.clone()));
        }
        if place == Staging::Device {
            self.device_staging_in_use += bytes;
        }
        self.activity.snapshots += 1;
        Ok(SimSnapshot {
            device: self.id,
            place,
            bytes,
            regions: copies,
        })
    }

    fn restore(&mut self, snapshot: &SimSnapshot) -> Result<u64, BackendError> {
        let mut written = 0;
        for (base, copy) in &snapshot.regions {
            // A region freed or resized since the snapshot is skipped, as rocprofiler-sdk does.
            if let Some(allocation) = self.memory.get_mut(base) {
                if allocation.data.len() == copy.len() {
                    allocation.data.copy_from_slice(copy);
                    written += copy.len() as u64;
                }
            }
        }
        self.activity.restores += 1;
        Ok(written)
    }

    fn release(&mut self, snapshot: SimSnapshot) {
        if snapshot.place == Staging::Device {
            self.device_staging_in_use = self.device_staging_in_use.saturating_sub(snapshot.bytes);
        }
    }
}
