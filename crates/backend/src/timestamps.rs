//! Timestamps of measured launches: a pair of events around each, placed on the host clock
//! (nanoseconds since the Unix epoch) through an anchor event recorded on the tool's idle
//! stream and synchronised, re-anchored every second (event times are f32 milliseconds: a
//! young anchor keeps them precise).

use crate::backend::CudaBackend;
use kreplay_core::backend::{DeviceId, Timing};
use kreplay_cuda::error::CudaError;
use kreplay_cuda::handles::Event;
use kreplay_cuda::CUstream;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn host_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}

/// Nanoseconds from `from`'s record to `to`'s (0 where the driver says less).
pub(crate) fn elapsed_ns(from: &Event, to: &Event) -> Result<u64, CudaError> {
    let ms = from.elapsed_ms(to)?;
    Ok((f64::from(ms.max(0.0)) * 1.0e6) as u64)
}

impl CudaBackend {
    /// Re-anchors the event clock on the host clock when the anchor is older than a second.
    pub(crate) fn ensure_anchor(&mut self, device: DeviceId) -> Result<(), CudaError> {
        let Some(state) = self.devices.get_mut(&device) else {
            return Ok(());
        };
        if state
            .anchored_at
            .is_some_and(|t| t.elapsed() < Duration::from_secs(1))
        {
            return Ok(());
        }
        // Launches timed against this anchor are still to be read: it is kept for them and a
        // new one made (the context is current: the caller made it so).
        if state.traced_pending() {
            let fresh = Event::timed(self.driver)?;
            let old = std::mem::replace(&mut state.anchor, fresh);
            state
                .old_anchors
                .push((state.anchor_generation, old, state.anchor_host_ns));
        }
        state.anchor_generation += 1;
        // The tool's own event on the tool's own (idle) stream.
        state.anchor.record(state.tool_stream.raw())?;
        state.anchor.synchronize()?;
        state.anchor_host_ns = host_now_ns();
        state.anchored_at = Some(Instant::now());
        Ok(())
    }

    /// Records the `index`-th event pair's `end` (or start) on `stream`, creating pairs as needed.
    pub(crate) fn record_event(
        &mut self,
        device: DeviceId,
        index: usize,
        end: bool,
        stream: CUstream,
    ) -> Result<(), CudaError> {
        let d = self.driver;
        let Some(state) = self.devices.get_mut(&device) else {
            return Err(CudaError::Load(format!(
                "device {device} has no tool state"
            )));
        };
        while state.events.len() <= index {
            state.events.push((Event::timed(d)?, Event::timed(d)?));
        }
        let (start, stop) = &state.events[index];
        let event = if end { stop } else { start };
        event.record(stream)
    }

    /// Waits for the last of the first `used` event pairs (the execution's last launch).
    pub(crate) fn wait_for_launches(&self, device: DeviceId, used: usize) -> Result<(), CudaError> {
        match self
            .devices
            .get(&device)
            .and_then(|s| s.events[..used].last())
        {
            Some((_, last)) => last.synchronize(),
            None => Ok(()),
        }
    }

    /// The host-clock times of the first `used` event pairs (all completed).
    pub(crate) fn launch_times(
        &self,
        device: DeviceId,
        used: usize,
    ) -> Result<Vec<Timing>, CudaError> {
        let Some(state) = self.devices.get(&device) else {
            return Err(CudaError::Load(format!(
                "device {device} has no tool state"
            )));
        };
        let mut timings = Vec::with_capacity(used);
        for (start, end) in &state.events[..used] {
            let start_ns = state.anchor_host_ns + elapsed_ns(&state.anchor, start)?;
            let end_ns = start_ns + elapsed_ns(start, end)?;
            timings.push(Timing { start_ns, end_ns });
        }
        Ok(timings)
    }
}
