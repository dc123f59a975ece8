//! The engine's job traits on the CUDA backend: drain, snapshot and restore, units and their
//! executions, measured launches, relaunch and captures.

use super::*;

impl Backend for CudaBackend {
    type Launch = CudaLaunch;
    type Snapshot = CudaSnapshot;
    type Capture = CudaCapture;
}

impl Memory for CudaBackend {
    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError> {
        let ctx = self.state(device)?.ctx;
        drain_context(self.driver, device, ctx, deadline)
    }

    fn device_free_bytes(&mut self, device: DeviceId) -> u64 {
        // Spare staging is free for staging: a snapshot that fits reuses it.
        let spare: u64 = self.devices.get(&device).map_or(0, |s| {
            s.spare
                .iter()
                .filter(|b| b.place == Staging::Device)
                .map(|b| b.bytes)
                .sum()
        });
        self.memory_free_now().saturating_add(spare)
    }

    fn snapshot(
        &mut self,
        device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<CudaSnapshot, BackendError> {
        let ctx = self.state(device)?.ctx;
        let _ctx = ContextGuard::make_current(self.driver, ctx).map_err(failed)?;
        // The driver faults inside a batched copy given memory that is no longer allocated,
        // where one copy at a time reports an error: such memory is left out (there is nothing
        // to restore in it).
        let live: Vec<Region>;
        let regions = if regions.len() > 1 {
            live = self.allocated(regions);
            &live[..]
        } else {
            regions
        };
        let mut entries = Vec::with_capacity(regions.len());
        let mut offset = 0u64;
        for region in regions {
            entries.push((*region, offset));
            offset += region.bytes.div_ceil(256) * 256;
        }
        let buffer = self.take_buffer(device, place, offset.max(1))?;
        let snapshot = CudaSnapshot {
            device,
            buffer,
            entries,
            bytes: regions.iter().map(|r| r.bytes).sum(),
        };
        if let Err(error) = self.copy(&snapshot, true) {
            self.release(snapshot);
            return Err(error);
        }
        Ok(snapshot)
    }

    fn restore(&mut self, snapshot: &CudaSnapshot) -> Result<u64, BackendError> {
        self.copy(snapshot, false)?;
        Ok(snapshot.bytes)
    }

    fn release(&mut self, snapshot: CudaSnapshot) {
        // The buffer stays for the next snapshot, unless device memory has become tight: then
        // the application gets it back.
        let d = self.driver;
        let Some(ctx) = self.devices.get(&snapshot.device).map(|s| s.ctx) else {
            return;
        };
        let Ok(_ctx) = ContextGuard::make_current(d, ctx) else {
            return;
        };
        let tight = snapshot.buffer.place == Staging::Device
            && self.memory_free_now() < DEFAULT_STAGING_RESERVE_BYTES;
        let Some(state) = self.devices.get_mut(&snapshot.device) else {
            return;
        };
        state.spare.push(snapshot.buffer);
        // At most two kept per place (a unit's start and the application's view), the
        // largest; none on the device once memory is tight.
        let place = snapshot.buffer.place;
        let mut kept: Vec<Buffer> = state
            .spare
            .iter()
            .filter(|b| b.place == place)
            .copied()
            .collect();
        kept.sort_by_key(|b| std::cmp::Reverse(b.bytes));
        let keep = if tight { 0 } else { SPARE_BUFFERS };
        let freed: Vec<Buffer> = kept.into_iter().skip(keep).collect();
        state.spare.retain(|b| {
            !freed
                .iter()
                .any(|f| f.address == b.address && f.place == b.place)
        });
        for buffer in freed {
            // SAFETY: released staging; copies are synchronous, so nothing uses it.
            unsafe { free_buffer(d, buffer) };
        }
    }
}

impl Measurement for CudaBackend {
    fn executions_of_group(&mut self, device: DeviceId, group: usize) -> usize {
        self.profiler(device)
            .map_or(1, |profiler| profiler.executions_of_group(group))
    }

    /// A graph launch reaches the engine whole only when it is not run node by node
    /// (`crate::graphs`: declined, or `KREPLAY_GRAPH_NODES=0`).
    fn graph_launch_unmeasurable(&mut self, _device: DeviceId) -> Option<&'static str> {
        Some("CUPTI's range profiler cannot measure a graph launch as one dispatch: on the H200 measuring one failed its range and every range after it")
    }

    fn max_window(&mut self, _device: DeviceId) -> usize {
        // Without counters there is nothing to amortise.
        if self.groups.is_empty() {
            1
        } else {
            (self.options.max_ranges / (1 + self.flush_ranges_per_launch())).max(1)
        }
    }

    fn plan_unit(
        &mut self,
        device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        let measured = groups.iter().any(Option::is_some);
        let single_group_schedules = self.options.single_group_schedules;
        let plan = if measured {
            let Some(profiler) = self.profiler(device) else {
                return Err(BackendError::Failed(format!(
                    "counters unavailable: {}",
                    self.counters_unavailable(device)
                        .unwrap_or("no counter groups")
                )));
            };
            let (plan, passes) = profiler.plan(groups);
            // A dispatch that runs once with one group while a schedule of several passes is
            // programmed would cost two reprogrammings (≈ 0.6 s on an H200).
            let switching = profiler
                .enabled_schedule()
                .is_some_and(|s| s.len() > 1 && s != passes.as_slice());
            if switching && passes.len() == 1 && !single_group_schedules {
                return Err(BackendError::Failed(
                    "the counters are programmed for several hardware passes; a dispatch that runs once keeps timestamps only, since measuring one group alone would reprogram them twice (≈ 0.6 s)".into(),
                ));
            }
            if let Err(e) = profiler.begin_unit(passes) {
                return Err(self.counters_lost(device, e));
            }
            plan
        } else {
            UnitPlan {
                executions: 1,
                execution_of_pass: vec![0; groups.len()],
            }
        };
        self.state(device)?.unit = Some(UnitState {
            groups: groups.to_vec(),
            plan: plan.clone(),
            counters: measured,
            execution: None,
            used: 0,
            timing: false,
            pending: None,
            launches: Vec::new(),
            ranges: Vec::new(),
            ranges_of: Vec::new(),
        });
        Ok(plan)
    }

    fn start_execution(
        &mut self,
        device: DeviceId,
        execution: usize,
        ranges: usize,
    ) -> Result<(), BackendError> {
        let ctx = self.state(device)?.ctx;
        let _ctx = ContextGuard::make_current(self.driver, ctx).map_err(failed)?;
        let per_launch = 1 + self.flush_ranges_per_launch();
        if ranges * per_launch > self.options.max_ranges.max(1) {
            return Err(BackendError::Failed(format!(
                "an execution of {ranges} launches{} exceeds the {} ranges the counters were set up for",
                if per_launch > 1 { format!(" ({per_launch} ranges each)") } else { String::new() },
                self.options.max_ranges
            )));
        }
        self.ensure_anchor(device).map_err(failed)?;
        let counters = {
            let unit = self.unit(device)?;
            unit.execution = Some(execution);
            unit.used = 0;
            unit.pending = None;
            unit.ranges.clear();
            unit.counters
        };
        if counters {
            self.note_clocks(device);
            let started = match self.profiler(device) {
                Some(profiler) => profiler.start(),
                None => Err(CudaError::Load("counters unavailable".into())),
            };
            if let Err(e) = started {
                return Err(self.counters_lost(device, e));
            }
        }
        Ok(())
    }

    fn runs_timing_executions(&mut self, device: DeviceId) -> bool {
        self.devices.get(&device).is_some_and(|s| s.unit.is_some())
    }

    /// The timing execution: as a later planned execution (the tool's stream, the L2 flushed
    /// before each launch under `--cache-control all`), but the profiler is not started, so
    /// no range and none of its work surrounds the launches.
    fn start_timing_execution(
        &mut self,
        device: DeviceId,
        _ranges: usize,
    ) -> Result<(), BackendError> {
        let ctx = self.state(device)?.ctx;
        let _ctx = ContextGuard::make_current(self.driver, ctx).map_err(failed)?;
        self.ensure_anchor(device).map_err(failed)?;
        let unit = self.unit(device)?;
        if unit.execution.is_some() {
            return Err(BackendError::Failed(
                "a timing execution while another runs".into(),
            ));
        }
        unit.execution = Some(unit.plan.executions);
        unit.timing = true;
        unit.used = 0;
        unit.pending = None;
        unit.ranges.clear();
        Ok(())
    }

    fn launch_starts(&mut self, device: DeviceId) -> Result<(), BackendError> {
        let current = self.current;
        let state = self.state(device)?;
        let tool_stream = state.tool_stream.raw();
        let unit = state
            .unit
            .as_mut()
            .ok_or_else(|| BackendError::Failed("no unit planned".into()))?;
        // Execution 0 is the application's own launch, on its stream; later ones run on the
        // tool's stream.
        let stream = match (unit.execution, current) {
            (Some(0), Some(c)) if !c.passive => c.stream,
            (Some(_), _) => tool_stream,
            (None, _) => return Err(BackendError::Failed("no execution running".into())),
        };
        let index = unit.used;
        unit.pending = Some(stream);
        // The flush runs before the start event: the launch's time does not include it.
        let flush_ranges = self.before_measured_launch(device, stream);
        self.unit(device)?
            .ranges
            .extend(std::iter::repeat_n(false, flush_ranges));
        self.record_event(device, index, false, stream)
            .map_err(failed)
    }

    fn launch_ends(&mut self, device: DeviceId) -> Result<(), BackendError> {
        let unit = self.unit(device)?;
        let stream = unit
            .pending
            .take()
            .ok_or_else(|| BackendError::Failed("launch_ends without launch_starts".into()))?;
        let index = unit.used;
        self.record_event(device, index, true, stream)
            .map_err(failed)?;
        let unit = self.unit(device)?;
        unit.used += 1;
        // The launch ran: its range follows its flush's (an abandoned launch has none).
        unit.ranges.push(true);
        Ok(())
    }

    fn launch_abandoned(&mut self, device: DeviceId) {
        if let Ok(unit) = self.unit(device) {
            unit.pending = None;
        }
    }

    fn stop_execution(&mut self, device: DeviceId) -> Result<Vec<Timing>, BackendError> {
        let d = self.driver;
        let ctx = self.state(device)?.ctx;
        let _ctx = ContextGuard::make_current(d, ctx).map_err(failed)?;
        let (used, counters, timing) = {
            let unit = self.unit(device)?;
            unit.execution
                .take()
                .ok_or_else(|| BackendError::Failed("stop without a running execution".into()))?;
            let timing = std::mem::take(&mut unit.timing);
            (unit.used, unit.counters && !timing, timing)
        };
        let (anchor, anchor_ns, pairs) = {
            let state = self.state(device)?;
            (
                state.anchor.raw(),
                state.anchor_host_ns,
                state.events[..used]
                    .iter()
                    .map(|(start, end)| (start.raw(), end.raw()))
                    .collect::<Vec<_>>(),
            )
        };
        if let Some((_, last)) = pairs.last() {
            // SAFETY: the tool's own event; waits for the execution's last launch.
            unsafe { drv!(d, cuEventSynchronize(*last)) }.map_err(failed)?;
        }
        if counters {
            self.note_clocks(device);
        }
        let mut timings = Vec::with_capacity(used);
        for (start, end) in &pairs {
            let start_ns = anchor_ns + self.elapsed_ns(anchor, *start).map_err(failed)?;
            let end_ns = start_ns + self.elapsed_ns(*start, *end).map_err(failed)?;
            timings.push(Timing { start_ns, end_ns });
        }
        if counters {
            let stopped = match self.profiler(device) {
                Some(profiler) => profiler.stop(),
                None => Err(CudaError::Load("counters unavailable".into())),
            };
            if let Err(e) = stopped {
                return Err(self.counters_lost(device, e));
            }
        }
        if !timing {
            let unit = self.unit(device)?;
            unit.launches.push(used);
            let ranges = std::mem::take(&mut unit.ranges);
            unit.ranges_of.push(ranges);
        }
        Ok(timings)
    }

    fn unit_counters(&mut self, device: DeviceId) -> Result<PassCounters, BackendError> {
        let unit = self
            .state(device)?
            .unit
            .take()
            .ok_or_else(|| BackendError::Failed("no unit planned".into()))?;
        let launches_of = |execution: usize| unit.launches.get(execution).copied();
        if !unit.counters {
            return Ok(unit
                .plan
                .execution_of_pass
                .iter()
                .map(|e| launches_of(*e).map(|n| vec![Vec::new(); n]))
                .collect());
        }
        let values = match self.profiler(device) {
            Some(profiler) => profiler.unit_values(),
            None => Err(CudaError::Load("counters unavailable".into())),
        };
        let values = values.map_err(|e| self.counters_lost(device, e))?;
        let mut per_pass = Vec::with_capacity(unit.groups.len());
        for (group, execution) in unit.groups.iter().zip(&unit.plan.execution_of_pass) {
            let Some(launches) = launches_of(*execution) else {
                per_pass.push(None);
                continue;
            };
            let Some(group) = group else {
                per_pass.push(Some(vec![Vec::new(); launches]));
                continue;
            };
            let Some((_, ranges)) = values.iter().find(|(g, _)| g == group) else {
                per_pass.push(None);
                continue;
            };
            let ranges = launch_ranges(ranges, unit.ranges_of.get(*execution));
            // Ranges are matched to launches by order: a count that differs (a kernel the unit
            // did not launch, or one it did that was not measured) would give launches another
            // kernel's values.
            if ranges.len() != launches {
                return Err(BackendError::Failed(format!(
                    "the range profiler measured {} kernel(s) where the unit launched {launches}",
                    ranges.len()
                )));
            }
            let names = self.groups.get(*group).cloned().unwrap_or_default();
            per_pass.push(Some(
                ranges
                    .iter()
                    .map(|values| {
                        names
                            .iter()
                            .cloned()
                            .zip(values.iter().copied())
                            .map(|(name, value)| CounterSample { name, value })
                            .collect()
                    })
                    .collect(),
            ));
        }
        Ok(per_pass)
    }

    fn take_unit_conditions(&mut self, device: DeviceId) -> kreplay_core::backend::UnitConditions {
        self.take_seen(device).conditions()
    }

    fn abandon_unit(&mut self, device: DeviceId) {
        let Some(state) = self.devices.get_mut(&device) else {
            return;
        };
        let ctx = state.ctx;
        if state.unit.take().is_some_and(|u| u.counters) {
            let Ok(_ctx) = ContextGuard::make_current(self.driver, ctx) else {
                return;
            };
            if let Some(profiler) = self
                .devices
                .get_mut(&device)
                .and_then(|s| s.profiler.as_mut())
            {
                profiler.abandon();
            }
        }
    }
}

impl Relaunch for CudaBackend {
    fn relaunch(&mut self, launch: &CudaLaunch) -> Result<(), BackendError> {
        let d = self.driver;
        match launch {
            CudaLaunch::Owned(owned) => {
                let _ctx = ContextGuard::make_current(d, owned.ctx).map_err(failed)?;
                let stream = self
                    .tool_stream_of(owned.ctx)
                    .unwrap_or_else(|| owned.stream());
                owned.launch_on(d, stream).map_err(failed)
            }
            CudaLaunch::Callback { api, params } => {
                let current = self.current()?;
                let stream = self.tool_stream_of(current.ctx).unwrap_or(current.stream);
                // SAFETY: `params` is the parameter block of the launch whose callback is
                // running; CUDA keeps it valid for the callback's duration.
                unsafe { relaunch_callback(d, *api, *params, stream) }.map_err(failed)
            }
        }
    }

    /// A copy of the application's launch that stays valid after its callback.
    fn retain_launch(&mut self, launch: &CudaLaunch) -> Result<CudaLaunch, BackendError> {
        let current = self.current()?;
        match launch {
            CudaLaunch::Callback { api, params } => {
                // SAFETY: the engine asks inside the launch's callback.
                let owned = unsafe {
                    OwnedLaunch::copy(self.driver, current.ctx, *api, *params, current.stream)
                }
                .map_err(failed)?;
                Ok(CudaLaunch::Owned(Box::new(owned)))
            }
            // A launch the tool issued itself (a graph's kernel node): already a copy.
            CudaLaunch::Owned(owned) => Ok(CudaLaunch::Owned(owned.clone())),
        }
    }

    fn launch_addresses(&mut self, launch: &CudaLaunch) -> Vec<u64> {
        match launch {
            CudaLaunch::Owned(owned) => owned.addresses(),
            // SAFETY: asked inside the launch's callback.
            CudaLaunch::Callback { api, params } => unsafe {
                callback_addresses(self.driver, *api, *params)
            },
        }
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
        let stream = state.tool_stream.raw();
        // SAFETY: `base..base+bytes` is tracked device memory (the engine checked), the log
        // chunk has room; the copy is waited for.
        unsafe {
            drv!(
                d,
                cuMemcpyDtoDAsync_v2(staged, base, bytes as usize, stream)
            )
            .map_err(failed)?;
            drv!(d, cuStreamSynchronize(stream)).map_err(failed)?;
        }
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
        // In stream order after the relaunches before it (all on the tool stream).
        // SAFETY: both ranges are live device memory of the device's context.
        unsafe {
            drv!(
                d,
                cuMemcpyDtoDAsync_v2(
                    capture.target,
                    capture.staged,
                    capture.bytes as usize,
                    state.tool_stream.raw()
                )
            )
        }
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

/// Waits for `device`'s context `ctx` to finish its work, at most `deadline`. Needs none of the
/// backend's state: [`super::DispatchBackend`] waits with the backend unlocked, so that a drain
/// of one device never holds up another device's replay.
pub(super) fn drain_context(
    driver: &'static Driver,
    device: DeviceId,
    ctx: CUcontext,
    deadline: Duration,
) -> Result<(), BackendError> {
    match kreplay_cuda::drain::synchronize_within(driver, ctx, deadline).map_err(failed)? {
        kreplay_cuda::drain::Drained::Done => Ok(()),
        kreplay_cuda::drain::Drained::TimedOut => {
            Err(BackendError::DrainTimeout { device, deadline })
        }
    }
}

/// The ranges of an execution's launches: those of flush kernels in the application's context
/// (`false` in `kinds`, the execution's ranges in order) dropped. Ranges that do not match
/// `kinds` in number are all kept, for the caller's count check to refuse.
fn launch_ranges<'a>(ranges: &'a [Vec<f64>], kinds: Option<&Vec<bool>>) -> Vec<&'a Vec<f64>> {
    match kinds {
        Some(kinds) if kinds.len() == ranges.len() => ranges
            .iter()
            .zip(kinds)
            .filter_map(|(values, launch)| launch.then_some(values))
            .collect(),
        _ => ranges.iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::launch_ranges;

    #[test]
    fn flush_ranges_are_dropped_and_a_miscount_is_left_to_the_count_check() {
        let ranges = vec![vec![1.0], vec![2.0], vec![3.0], vec![4.0]];
        let kinds = vec![false, true, false, true];
        assert_eq!(
            launch_ranges(&ranges, Some(&kinds)),
            [&vec![2.0], &vec![4.0]]
        );
        assert_eq!(launch_ranges(&ranges, Some(&vec![true; 4])).len(), 4);
        // A flush that failed part-way: more ranges than kinds, all kept (and then refused).
        assert_eq!(launch_ranges(&ranges, Some(&vec![true; 2])).len(), 4);
        assert_eq!(launch_ranges(&ranges, None).len(), 4);
    }
}
