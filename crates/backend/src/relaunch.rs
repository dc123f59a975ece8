//! The engine's relaunch job on the CUDA backend: a launch issued again on the tool's stream,
//! kept past its callback, its parameter words read; the bytes a call wrote captured into the
//! device's log arena and applied again.

use crate::backend::{failed, CudaBackend};
use crate::snapshot::CudaCapture;
use crate::state::LOG_CHUNK_BYTES;
use kreplay_core::backend::{BackendError, DeviceId, Relaunch};
use kreplay_cuda::handles::DeviceMemory;
use kreplay_cuda::launch::CudaLaunch;
use kreplay_cuda::memory::{copy_device_async, copy_into_and_wait};
use kreplay_cuda::ContextGuard;
use kreplay_format::Staging;

impl Relaunch for CudaBackend {
    fn relaunch(&mut self, launch: &CudaLaunch) -> Result<(), BackendError> {
        let d = self.driver;
        match launch {
            CudaLaunch::Owned(owned) => {
                let _ctx = ContextGuard::make_current(d, owned.ctx).map_err(failed)?;
                let stream = self
                    .tool_stream_of(owned.ctx)
                    .unwrap_or_else(|| owned.stream());
                launch.issue_on(d, stream).map_err(failed)
            }
            CudaLaunch::Callback { .. } => {
                let current = self.current()?;
                let stream = self.tool_stream_of(current.ctx).unwrap_or(current.stream);
                // Inside the launch's callback: its parameter block is valid.
                launch.issue_on(d, stream).map_err(failed)
            }
        }
    }

    /// A copy of the application's launch that stays valid after its callback.
    fn retain_launch(&mut self, launch: &CudaLaunch) -> Result<CudaLaunch, BackendError> {
        let current = self.current()?;
        // The engine asks inside the launch's callback.
        launch
            .keep(self.driver, current.ctx, current.stream)
            .map_err(failed)
    }

    fn launch_addresses(&mut self, launch: &CudaLaunch) -> Vec<u64> {
        // Asked inside the launch's callback.
        launch.parameter_addresses(self.driver)
    }

    fn capture(
        &mut self,
        device: DeviceId,
        base: u64,
        bytes: u64,
    ) -> Result<CudaCapture, BackendError> {
        let d = self.driver;
        let state = self.state(device)?;
        let _ctx = ContextGuard::make_current(d, state.ctx).map_err(failed)?;
        let aligned = bytes.div_ceil(256).max(1) * 256;
        // The chunk being filled, or the next one that holds it, or a new chunk.
        let (mut chunk, mut at) = state.log_at;
        while chunk < state.log.len() && at + aligned > state.log[chunk].bytes() {
            chunk += 1;
            at = 0;
        }
        if chunk == state.log.len() {
            let chunk = DeviceMemory::allocate(d, aligned.max(LOG_CHUNK_BYTES))
                .map_err(|_| BackendError::OutOfStagingMemory(Staging::Device, aligned))?;
            state.log.push(chunk);
        }
        let staged = state.log[chunk].address() + at;
        // `base..base+bytes` is tracked device memory (the engine checked), the log chunk has
        // room; the copy is waited for.
        copy_into_and_wait(
            d,
            &state.log[chunk],
            at,
            base,
            bytes,
            state.tool_stream.raw(),
        )
        .map_err(failed)?;
        state.log_at = (chunk, at + aligned);
        state.log_live += 1;
        Ok(CudaCapture {
            device,
            target: base,
            staged,
            bytes,
        })
    }

    fn apply(&mut self, capture: &CudaCapture) -> Result<(), BackendError> {
        let d = self.driver;
        let state = self.state(capture.device)?;
        let _ctx = ContextGuard::make_current(d, state.ctx).map_err(failed)?;
        // In stream order after the relaunches before it (all on the tool stream); both
        // ranges are live device memory of the device's context.
        copy_device_async(
            d,
            capture.target,
            capture.staged,
            capture.bytes,
            state.tool_stream.raw(),
        )
        .map_err(failed)
    }

    fn release_capture(&mut self, capture: CudaCapture) {
        if let Some(state) = self.devices.get_mut(&capture.device) {
            state.log_live = state.log_live.saturating_sub(1);
            if state.log_live == 0 {
                state.log_at = (0, 0);
            }
        }
    }
}
