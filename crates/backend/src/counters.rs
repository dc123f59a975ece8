//! The backend's range profiler per device: made at the first measured unit (from the set-up
//! begun at context creation when there is one), checked against the CLI's device identity,
//! given up once it fails, and summarised at the end of the run.

use crate::backend::{failed, CudaBackend};
use kreplay_core::backend::{BackendError, DeviceId};
use kreplay_counters::profiler::RangeProfiler;
use kreplay_cuda::error::CudaError;
use kreplay_cuda::CUdevice;

impl CudaBackend {
    /// The device's profiler, made at first use; `None` without counters or once they broke.
    pub(crate) fn profiler(&mut self, device: DeviceId) -> Option<&mut RangeProfiler> {
        if self.counters_broken.contains_key(&device) || self.groups.is_empty() {
            return None;
        }
        let needs_new = self
            .devices
            .get(&device)
            .is_some_and(|s| s.profiler.is_none());
        if needs_new {
            let current = self.current?;
            let prepared = self.setup.as_ref().and_then(|s| s.take(current.ctx));
            let built = match (prepared, self.cupti) {
                (Some(prepared), _) => prepared,
                (None, Some(cupti)) => RangeProfiler::new(
                    cupti,
                    current.ctx,
                    current.cu_device,
                    current.cu_device as usize,
                    &self.groups,
                    self.options.max_ranges,
                    &self.options.switches,
                ),
                (None, None) => Err(CudaError::Load("CUPTI is not loaded".into())),
            };
            match built {
                Ok(p) => {
                    self.compare_identity(current.cu_device, &p);
                    self.devices.get_mut(&device)?.profiler = Some(p)
                }
                Err(e) => {
                    self.counters_broken.insert(device, e.to_string());
                    return None;
                }
            }
        }
        self.devices.get_mut(&device)?.profiler.as_mut()
    }

    fn compare_identity(&self, cu_device: CUdevice, profiler: &RangeProfiler) {
        let (Some(checked), Some(warn)) = (&self.checked_identity, &self.warn) else {
            return;
        };
        if cu_device == 0 && checked != profiler.identity_digest() {
            warn(&kreplay_counters::catalog::identity_cache::stale_warning(
                checked,
                profiler.identity_digest(),
            ));
        }
    }

    /// A module or library of `ctx` is about to be unloaded: each device's range profiler lets
    /// go of its enabled configuration (see [`RangeProfiler::before_module_unload`]), and the
    /// one the context's counter set-up makes will when the first dispatch takes it.
    pub fn before_module_unload(&mut self, ctx: kreplay_cuda::CUcontext) {
        if let Some(setup) = &self.setup {
            setup.before_module_unload(ctx);
        }
        for state in self.devices.values_mut() {
            if let Some(profiler) = state.profiler.as_mut() {
                profiler.before_module_unload();
            }
        }
    }

    /// Counters lost on `device`: said once by the engine, timestamps only from now on.
    pub(crate) fn counters_lost(&mut self, device: DeviceId, e: CudaError) -> BackendError {
        self.counters_broken.insert(device, e.to_string());
        if let Some(profiler) = self
            .devices
            .get_mut(&device)
            .and_then(|s| s.profiler.as_mut())
        {
            profiler.abandon();
        }
        failed(e)
    }

    /// One line per device that collected counters for several groups: how the groups were
    /// packed into hardware passes and how often the configuration changed.
    pub fn pass_summary(&self) -> Vec<String> {
        for (device, state) in &self.devices {
            if let Some(profiler) = &state.profiler {
                kreplay_cuda::debug::line(&format!("device {device}: {}", profiler.start_times()));
            }
        }
        if self.groups.len() < 2 {
            return Vec::new();
        }
        let mut devices: Vec<_> = self.devices.iter().collect();
        devices.sort_by_key(|(device, _)| **device);
        devices
            .into_iter()
            .filter_map(|(device, state)| {
                let profiler = state.profiler.as_ref()?;
                let packing = profiler.packing();
                let spans = profiler.pass_spans();
                let passes: Vec<String> = packing
                    .iter()
                    .zip(spans)
                    .map(|(groups, span)| {
                        let members = groups
                            .iter()
                            .map(|g| g.to_string())
                            .collect::<Vec<_>>()
                            .join("+");
                        if *span > 1 {
                            format!("{members} over {span} passes")
                        } else {
                            members
                        }
                    })
                    .collect();
                Some(format!(
                    "device {device} ({}): {} counter group(s) in {} hardware pass(es) [{}]; {} configuration change(s){}",
                    profiler.chip(),
                    self.groups.len(),
                    spans.iter().sum::<usize>(),
                    passes.join(", "),
                    profiler.config_changes,
                    if packing.len() < self.groups.len() {
                        " (groups sharing a pass were measured in one execution; KREPLAY_PACK_GROUPS=0 gives each its own)"
                    } else {
                        ""
                    }
                ))
            })
            .collect()
    }
}
