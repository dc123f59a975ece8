//! Reference devices shared by several threads, as one replay backend: every call locks the
//! device it concerns for its duration (a kernel executes atomically).

use crate::device::kernel::SimLaunch;
use crate::device::sim::SimDevice;
use crate::device::state::{SimCapture, SimSnapshot};
use kreplay_core::backend::{DeviceId, SharedDevice};
use std::sync::{Arc, Mutex, MutexGuard};

/// A process's devices, shared by its application threads: each thread's runtime holds a
/// clone. Device `i` is the one numbered `i` ([`SimDevice::with_id`]); the backend's calls go
/// to the device they name, or that made the snapshot, capture or launch they are given.
#[derive(Clone)]
pub struct SharedSimDevice {
    devices: Arc<Vec<Mutex<SimDevice>>>,
}

impl SharedSimDevice {
    pub fn new(device: SimDevice) -> Self {
        Self::many(vec![device])
    }

    /// Several devices, numbered 0, 1, ... in order (each not yet numbered so gets its number).
    pub fn many(devices: Vec<SimDevice>) -> Self {
        SharedSimDevice {
            devices: Arc::new(
                devices
                    .into_iter()
                    .enumerate()
                    .map(|(i, d)| {
                        let id = i as DeviceId;
                        Mutex::new(if d.id() == id { d } else { d.with_id(id) })
                    })
                    .collect(),
            ),
        }
    }

    /// Device `device`, locked. A number it does not have is a mis-routed call of the engine or
    /// the runtime, which the reference device exists to catch: it panics (it is not behind FFI).
    pub fn on(&self, device: DeviceId) -> MutexGuard<'_, SimDevice> {
        let slot = self.devices.get(device as usize).unwrap_or_else(|| {
            panic!(
                "the reference device has no device {device} (it has {})",
                self.devices.len()
            )
        });
        slot.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// How many devices.
    pub fn count(&self) -> usize {
        self.devices.len()
    }
}

/// Every call locks the device it concerns ([`SharedDevice`] gives the three jobs).
impl SharedDevice for SharedSimDevice {
    type Device = SimDevice;
    type Locked<'a> = MutexGuard<'a, SimDevice>;

    fn lock(&self, device: DeviceId) -> MutexGuard<'_, SimDevice> {
        self.on(device)
    }

    fn launch_device(&self, launch: &SimLaunch) -> DeviceId {
        launch.device
    }

    fn snapshot_device(&self, snapshot: &SimSnapshot) -> DeviceId {
        snapshot.device
    }

    fn capture_device(&self, capture: &SimCapture) -> DeviceId {
        capture.device
    }
}
