//! The engine's measurement job on the CUDA backend: a unit planned on the range profiler, its
//! executions started and stopped, each measured launch between a pair of events (the L2
//! flushed before it under `--cache-control all`), and the unit's counters read back per pass.

use crate::backend::{failed, CudaBackend};
use crate::state::UnitState;
use kreplay_core::backend::{
    BackendError, DeviceId, Measurement, PassCounters, Timing, UnitConditions, UnitPlan,
};
use kreplay_cuda::error::CudaError;
use kreplay_cuda::ContextGuard;
use kreplay_format::CounterSample;

impl Measurement for CudaBackend {
    fn executions_of_group(&mut self, device: DeviceId, group: usize) -> usize {
        self.profiler(device)
            .map_or(1, |profiler| profiler.executions_of_group(group))
    }

    fn max_window(&mut self, _device: DeviceId) -> usize {
        // Without counters there is nothing to amortise.
        if self.groups.is_empty() {
            1
        } else {
            (self.options.max_ranges / (1 + self.options.flush_ranges_per_launch())).max(1)
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
        self.state(device)?.unit = Some(UnitState::new(groups, plan.clone(), measured));
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
        let per_launch = 1 + self.options.flush_ranges_per_launch();
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
        let ctx = self.state(device)?.ctx;
        let _ctx = ContextGuard::make_current(self.driver, ctx).map_err(failed)?;
        let (used, counters, timing) = {
            let unit = self.unit(device)?;
            unit.execution
                .take()
                .ok_or_else(|| BackendError::Failed("stop without a running execution".into()))?;
            let timing = std::mem::take(&mut unit.timing);
            (unit.used, unit.counters && !timing, timing)
        };
        self.wait_for_launches(device, used).map_err(failed)?;
        if counters {
            self.note_clocks(device);
        }
        let timings = self.launch_times(device, used).map_err(failed)?;
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
            let names = self.sample_names.get(*group).map_or(&[][..], Vec::as_slice);
            per_pass.push(Some(
                ranges
                    .iter()
                    .map(|values| {
                        names
                            .iter()
                            .copied()
                            .zip(values.iter().copied())
                            .map(|(name, value)| CounterSample { name, value })
                            .collect()
                    })
                    .collect(),
            ));
        }
        Ok(per_pass)
    }

    fn take_unit_conditions(&mut self, device: DeviceId) -> UnitConditions {
        self.take_seen(device).conditions()
    }

    fn trace_starts(&mut self, device: DeviceId) -> Result<Option<u64>, BackendError> {
        self.traced_start(device)
    }

    fn trace_ends(&mut self, device: DeviceId, tag: u64) -> Result<(), BackendError> {
        self.traced_end(device, tag)
    }

    fn trace_abandoned(&mut self, device: DeviceId, tag: u64) {
        self.traced_abandon(device, tag)
    }

    fn traced_times(
        &mut self,
        device: DeviceId,
        at_least: usize,
    ) -> Vec<(u64, Result<Timing, BackendError>)> {
        self.traced_read(device, at_least)
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
