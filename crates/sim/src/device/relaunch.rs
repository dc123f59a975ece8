//! The reference device's relaunches and captured writes, for a unit's later executions.

use super::*;

impl Relaunch for SimDevice {
    fn relaunch(&mut self, launch: &SimLaunch) -> Result<(), BackendError> {
        self.activity.relaunches += 1;
        self.execute(launch)
            .map_err(|e| BackendError::Failed(e.to_string()))
    }

    fn retain_launch(&mut self, launch: &SimLaunch) -> Result<SimLaunch, BackendError> {
        Ok(launch.clone())
    }

    fn launch_addresses(&mut self, launch: &SimLaunch) -> Vec<u64> {
        launch.args.clone()
    }

    fn capture(
        &mut self,
        _device: DeviceId,
        base: u64,
        bytes: u64,
    ) -> Result<SimCapture, BackendError> {
        let device = self.id;
        let (start, allocation) = self
            .locate(base, bytes)
            .map_err(|e| BackendError::Failed(e.to_string()))?;
        let offset = (base - start) as usize;
        let capture = SimCapture {
            device,
            base,
            bytes: allocation.data[offset..offset + bytes as usize].to_vec(),
        };
        self.activity.captures += 1;
        Ok(capture)
    }

    fn apply(&mut self, capture: &SimCapture) -> Result<(), BackendError> {
        let (start, allocation) = self
            .locate(capture.base, capture.bytes.len() as u64)
            .map_err(|e| BackendError::Failed(e.to_string()))?;
        let offset = (capture.base - start) as usize;
        allocation.data[offset..offset + capture.bytes.len()].copy_from_slice(&capture.bytes);
        Ok(())
    }
}
