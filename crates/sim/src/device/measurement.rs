//! The reference device's measurement: units of executions and ranges, and the counters of
//! every pass.

use super::*;

impl Measurement for SimDevice {
    fn max_window(&mut self, _device: DeviceId) -> usize {
        self.max_window
    }

    fn plan_unit(
        &mut self,
        _device: DeviceId,
        groups: &[Option<usize>],
    ) -> Result<UnitPlan, BackendError> {
        for group in groups {
            self.check_group(*group)?;
        }
        // A pass with timestamps only rides on the first pass's execution.
        let first = groups
            .iter()
            .flatten()
            .next()
            .map_or(usize::MAX, |g| self.pass_of[*g]);
        let hardware: Vec<usize> = groups
            .iter()
            .map(|g| g.map_or(first, |g| self.pass_of[g]))
            .collect();
        let (plan, _) = UnitPlan::from_hardware_passes(&hardware);
        let unit = SimUnit {
            groups: groups.to_vec(),
            measured: vec![None; plan.executions],
            plan: plan.clone(),
            running: None,
            ranges: Vec::new(),
            pending: None,
            shareable: false,
        };
        self.units.insert(thread::current().id(), unit);
        Ok(plan)
    }

    fn start_execution(
        &mut self,
        _device: DeviceId,
        execution: usize,
        ranges: usize,
    ) -> Result<(), BackendError> {
        let max_window = self.max_window;
        let unit = self.unit_here()?;
        if unit.running.is_some() {
            return Err(BackendError::Failed(
                "start_execution while an execution is running".to_string(),
            ));
        }
        if execution >= unit.plan.executions {
            return Err(BackendError::Failed(format!(
                "execution {execution} of a unit planned for {}",
                unit.plan.executions
            )));
        }
        if ranges > max_window {
            return Err(BackendError::Failed(format!(
                "an execution of {ranges} launches exceeds the device's {max_window}"
            )));
        }
        unit.running = Some(execution);
        unit.ranges.clear();
        unit.shareable |= ranges > 1;
        Ok(())
    }

    fn launch_starts(&mut self, _device: DeviceId) -> Result<(), BackendError> {
        // As the CUDA backend: only a launch whose unit measures counters is flushed before.
        let me = thread::current().id();
        let measuring = self
            .units
            .get(&me)
            .is_some_and(|u| u.groups.iter().any(Option::is_some));
        if self.flush_before_launches && measuring {
            self.activity.flushes += 1;
            self.flushed.insert(me);
        }
        let clock = self.clock_ns;
        let unit = self.unit_here()?;
        if unit.running.is_none() {
            return Err(BackendError::Failed(
                "launch_starts outside an execution".to_string(),
            ));
        }
        unit.pending = Some(Range {
            stats: ExecStats::default(),
            start_ns: clock,
            end_ns: clock,
        });
        Ok(())
    }

    fn launch_ends(&mut self, _device: DeviceId) -> Result<(), BackendError> {
        let unit = self.unit_here()?;
        let range = unit
            .pending
            .take()
            .ok_or_else(|| BackendError::Failed("launch_ends without launch_starts".to_string()))?;
        unit.ranges.push(range);
        Ok(())
    }

    fn launch_abandoned(&mut self, _device: DeviceId) {
        if let Ok(unit) = self.unit_here() {
            unit.pending = None;
        }
    }

    fn stop_execution(&mut self, _device: DeviceId) -> Result<Vec<Timing>, BackendError> {
        let unit = self.unit_here()?;
        let execution = unit
            .running
            .take()
            .ok_or_else(|| BackendError::Failed("stop_execution without start".to_string()))?;
        let ranges = std::mem::take(&mut unit.ranges);
        let timings = ranges
            .iter()
            .map(|r| Timing {
                start_ns: r.start_ns,
                end_ns: r.end_ns,
            })
            .collect();
        // The timing execution (after the planned ones) adds nothing to the counters.
        if let Some(measured) = unit.measured.get_mut(execution) {
            *measured = Some(ranges);
        }
        Ok(timings)
    }

    fn runs_timing_executions(&mut self, _device: DeviceId) -> bool {
        self.unit_here().is_ok()
    }

    fn start_timing_execution(
        &mut self,
        _device: DeviceId,
        _ranges: usize,
    ) -> Result<(), BackendError> {
        let unit = self.unit_here()?;
        if unit.running.is_some() {
            return Err(BackendError::Failed(
                "start_timing_execution while an execution is running".to_string(),
            ));
        }
        unit.running = Some(unit.plan.executions);
        unit.ranges.clear();
        Ok(())
    }

    fn unit_counters(&mut self, _device: DeviceId) -> Result<PassCounters, BackendError> {
        let me = thread::current().id();
        self.unit_here()?;
        let unit = self
            .units
            .remove(&me)
            .ok_or_else(|| BackendError::Failed("no unit".to_string()))?;
        Ok(unit
            .groups
            .iter()
            .zip(&unit.plan.execution_of_pass)
            .map(|(group, execution)| {
                let ranges = unit.measured.get(*execution)?.as_ref()?;
                Some(
                    ranges
                        .iter()
                        .map(|r| self.counters_for(*group, &r.stats))
                        .collect(),
                )
            })
            .collect())
    }

    fn trace_starts(&mut self, _device: DeviceId) -> Result<Option<u64>, BackendError> {
        Ok(Some(self.traced_starts()))
    }

    fn trace_ends(&mut self, _device: DeviceId, tag: u64) -> Result<(), BackendError> {
        self.traced_ends(tag)
    }

    fn trace_abandoned(&mut self, _device: DeviceId, tag: u64) {
        self.traced_abandoned(tag)
    }

    fn traced_times(
        &mut self,
        _device: DeviceId,
        at_least: usize,
    ) -> Vec<(u64, Result<Timing, BackendError>)> {
        self.traced_completed(at_least)
            .into_iter()
            .map(|(tag, timing)| (tag, Ok(timing)))
            .collect()
    }

    fn take_unit_conditions(&mut self, _device: DeviceId) -> UnitConditions {
        UnitConditions {
            cache: if self.flushed.remove(&thread::current().id()) {
                CacheState::Flushed
            } else {
                CacheState::AsLeft
            },
            ..UnitConditions::default()
        }
    }

    fn abandon_unit(&mut self, _device: DeviceId) {
        if self.unit_here().is_ok() {
            self.units.remove(&thread::current().id());
        }
    }
}
