//! What each unit's executions ran under: the L2 flush before every measured launch
//! (`--cache-control all`, [`crate::flush`]) and the clocks read around every execution
//! ([`kreplay_cuda::clocks`]).

use crate::backend::CudaBackend;
use crate::flush::{ApplicationContextFlusher, L2Flusher};
use crate::seen::{widen, Seen};
use crate::state::DeviceState;
use kreplay_core::backend::DeviceId;
use kreplay_core::config::Switches;
use kreplay_core::engine::DEFAULT_STAGING_RESERVE_BYTES;
use kreplay_cuda::clocks::ClockReader;
use kreplay_cuda::device::Device;
use kreplay_cuda::handles::{synchronize_stream, Event};
use kreplay_cuda::{CUstream, ContextGuard, Driver};
use kreplay_format::CacheControl;

impl CudaBackend {
    /// Before a measured launch on `stream`: flushes L2 when the run asks for it and counters
    /// are measured, and counts whether it did. Returns the number of flush kernels launched
    /// in the application's context (each a range of its profiler before the launch's).
    pub(crate) fn before_measured_launch(&mut self, device: DeviceId, stream: CUstream) -> usize {
        let measuring = self
            .devices
            .get(&device)
            .and_then(|s| s.unit.as_ref())
            .is_some_and(|u| u.counters);
        if !measuring || self.options.cache_control != CacheControl::All {
            return 0;
        }
        let mut ranges = 0;
        let result = if self.options.flush_ranges_per_launch() > 0 {
            self.flush_in_application(device, stream, &mut ranges)
        } else {
            if !self.said_flush_in_application {
                self.said_flush_in_application = true;
                if let Some(warn) = &self.warn {
                    warn(&format!("--cache-control all: the L2 flush in the application's context needs {} range(s) of the profiler beside each launch's and the counters were set up for {}; the flush runs in a context of kreplay's own, which adds L2 membar sectors and active cycles to the next kernel's counters", ApplicationContextFlusher::RANGES, self.options.max_ranges));
                }
            }
            self.flush(device, stream)
        };
        let flushed = match result {
            Ok(()) => true,
            Err(reason) => {
                if let (Some(reason), Some(warn)) = (reason, &self.warn) {
                    warn(&format!("--cache-control all: the L2 cache of device {device} cannot be flushed ({reason}); its kernels are measured with the caches as the work before left them (as --cache-control none), which every dispatch's replay cost records"));
                }
                false
            }
        };
        let seen = self.seen.entry(device).or_default();
        if flushed {
            seen.flushed += 1;
        } else {
            seen.unflushed += 1;
        }
        ranges
    }

    /// [`Self::flush`] with the flusher in the application's context, on `stream` itself;
    /// `launched` counts its kernels, also when one fails (their ranges are measured either
    /// way). Once a flush failed, the device is not flushed again.
    fn flush_in_application(
        &mut self,
        device: DeviceId,
        stream: CUstream,
        launched: &mut usize,
    ) -> Result<(), Option<String>> {
        let d = self.driver;
        let (ctx, first) = self
            .devices
            .get(&device)
            .map(|s| (s.ctx, s.app_flusher.is_none()))
            .ok_or(None)?;
        if first {
            let made = {
                let _ctx = ContextGuard::make_current(d, ctx).map_err(|e| Some(e.to_string()))?;
                let free = self.memory_free_now();
                let needed = ApplicationContextFlusher::device_bytes(d, device)
                    .saturating_add(DEFAULT_STAGING_RESERVE_BYTES);
                if free < needed {
                    Err(format!(
                        "its buffer with the staging reserve needs {} MiB of device memory and {} MiB are free",
                        needed >> 20,
                        free >> 20
                    ))
                } else {
                    ApplicationContextFlusher::new(d, device, ctx).map_err(|e| e.to_string())
                }
            };
            if let Some(state) = self.devices.get_mut(&device) {
                state.app_flusher = Some(made);
            }
        }
        let host_ordered = self.options.switches.host_ordered_flush;
        let state = self.devices.get_mut(&device).ok_or(None)?;
        let result = match &state.app_flusher {
            Some(Ok(flusher)) => flusher
                .flush(stream, launched)
                .map(|()| {
                    if host_ordered {
                        // The launch is enqueued only once the flush has finished, so that
                        // nothing of the flush is still running when the launch's range
                        // begins. An error of the application's earlier work reported by
                        // this wait is the application's, left for it to see.
                        // (The launch's stream, of the application's context.)
                        let _ = synchronize_stream(d, stream);
                    }
                })
                .map_err(|e| e.to_string()),
            Some(Err(reason)) => return Err(first.then(|| reason.clone())),
            None => return Err(None),
        };
        result.map_err(|reason| {
            if let Some(Ok(flusher)) = state.app_flusher.replace(Err(reason.clone())) {
                self.retired_app_flushers.push(flusher);
            }
            Some(reason)
        })
    }

    /// Enqueues the flush on `stream`. The flusher is made at the device's first flush; once
    /// it could not be made, or a flush failed, the device is not flushed again. `Err(Some)`:
    /// why, the first time; `Err(None)`: the device is not flushed.
    fn flush(&mut self, device: DeviceId, stream: CUstream) -> Result<(), Option<String>> {
        let d = self.driver;
        let first = !self.flushers.contains_key(&device);
        if first {
            let flusher = self.new_flusher(device);
            self.flushers.insert(device, flusher);
        }
        let result = match (self.flushers.get(&device), self.devices.get_mut(&device)) {
            (Some(Ok(flusher)), Some(state)) => {
                enqueue(d, flusher, state, stream, &self.options.switches)
            }
            (Some(Err(reason)), _) => return Err(first.then(|| reason.clone())),
            _ => return Err(None),
        };
        result.map_err(|reason| {
            if let Some(Ok(flusher)) = self.flushers.insert(device, Err(reason.clone())) {
                self.retired_flushers.push(flusher);
            }
            Some(reason)
        })
    }

    /// A flusher for `device`, unless its context and buffer would leave the application less
    /// than the staging reserve of device memory.
    fn new_flusher(&mut self, device: DeviceId) -> Result<L2Flusher, String> {
        let d = self.driver;
        let ctx = self
            .devices
            .get(&device)
            .map(|s| s.ctx)
            .ok_or_else(|| format!("device {device} has no tool state"))?;
        let _ctx = ContextGuard::make_current(d, ctx).map_err(|e| e.to_string())?;
        let free = self.memory_free_now();
        let needed =
            L2Flusher::device_bytes(d, device).saturating_add(DEFAULT_STAGING_RESERVE_BYTES);
        if free < needed {
            return Err(format!(
                "its context and buffer with the staging reserve need {} MiB of device memory and {} MiB are free",
                needed >> 20,
                free >> 20
            ));
        }
        L2Flusher::new(d, device).map_err(|e| e.to_string())
    }

    /// Reads the device's clocks into what its unit has seen (nothing without NVML).
    pub(crate) fn note_clocks(&mut self, device: DeviceId) {
        let d = self.driver;
        let reader = *self.clock_readers.entry(device).or_insert_with(|| {
            pci_bus_id(d, device).and_then(|id| ClockReader::for_pci_bus_id(&id))
        });
        let Some([sm, memory]) = reader.and_then(|r| r.read()) else {
            return;
        };
        let seen = self.seen.entry(device).or_default();
        widen(&mut seen.sm_mhz, sm);
        widen(&mut seen.memory_mhz, memory);
    }

    /// What the device's unit has seen so far, handed over: the next unit starts afresh.
    pub(crate) fn take_seen(&mut self, device: DeviceId) -> Seen {
        self.seen.remove(&device).unwrap_or_default()
    }
}

/// The flush on `stream` of the device whose state is `state` (its event made on first use).
fn enqueue(
    d: &'static Driver,
    flusher: &L2Flusher,
    state: &mut DeviceState,
    stream: CUstream,
    switches: &Switches,
) -> Result<(), String> {
    let _ctx = ContextGuard::make_current(d, state.ctx).map_err(|e| e.to_string())?;
    if switches.host_ordered_flush {
        return flusher
            .flush_host_ordered(d, stream)
            .map_err(|e| e.to_string());
    }
    let ready = match &state.flush_ready {
        Some(ready) => ready.raw(),
        None => {
            let ready = Event::untimed(d).map_err(|e| e.to_string())?;
            state.flush_ready.insert(ready).raw()
        }
    };
    flusher.flush(d, stream, ready).map_err(|e| e.to_string())
}

/// The PCI bus id of CUDA device `ordinal`, as NVML takes it.
fn pci_bus_id(d: &Driver, ordinal: DeviceId) -> Option<String> {
    Device::get(d, ordinal).ok()?.pci_bus_id(d).ok()
}
