//! A unit measured on the range profiler: begun on a schedule, its executions started and
//! stopped, each hardware pass decoded once its executions are done, its values read; a unit
//! left unread abandoned; the full schedule warmed up ahead.

use super::sequence::Sequence;
use super::state::{GroupValues, RangeProfiler, Unit};
use kreplay_core::config::ENV_SEQUENCE;
use kreplay_cuda::debug;
use kreplay_cuda::error::CudaError;
use std::collections::HashMap;
use std::time::Instant;

impl RangeProfiler {
    /// Begins a unit measuring hardware passes `passes`, one per execution.
    pub fn begin_unit(&mut self, passes: Vec<usize>) -> Result<(), CudaError> {
        // A unit left unfinished (its counters never read) ends first: CUPTI still expects
        // its remaining passes.
        if self.unit.is_some() {
            self.abandon();
        }
        if let Some(bad) = passes
            .iter()
            .find(|p| **p >= self.layout.pass_metrics.len())
        {
            return Err(CudaError::Load(format!(
                "hardware pass {bad} does not exist ({} planned)",
                self.layout.pass_metrics.len()
            )));
        }
        let executions: Vec<usize> = passes
            .iter()
            .flat_map(|&p| std::iter::repeat_n(p, self.layout.pass_spans[p]))
            .collect();
        if self.sequence == Sequence::Scheduled {
            self.configure(&passes)?;
        } else if executions.len() != passes.len() {
            return Err(CudaError::Load(format!(
                "a metric that needs several passes is measured only with {ENV_SEQUENCE}=scheduled (the default)"
            )));
        }
        self.unit = Some(Unit {
            passes,
            executions,
            stopped: 0,
            running: false,
            values: HashMap::new(),
        });
        Ok(())
    }

    /// Starts the unit's next execution; its kernels are its ranges.
    pub fn start(&mut self) -> Result<(), CudaError> {
        let began = Instant::now();
        let changes = self.config_changes;
        let result = self.program_and_start();
        let kind = usize::from(self.config_changes == changes);
        self.start_time[kind] += began.elapsed();
        self.starts[kind] += 1;
        result
    }

    fn program_and_start(&mut self) -> Result<(), CudaError> {
        let unit = self
            .unit
            .as_ref()
            .ok_or_else(|| CudaError::Load("no unit begun".into()))?;
        if unit.running {
            return Err(CudaError::Load("an execution is already running".into()));
        }
        let pass = *unit.executions.get(unit.stopped).ok_or_else(|| {
            CudaError::Load(format!(
                "execution {} of a unit of {} executions",
                unit.stopped,
                unit.executions.len()
            ))
        })?;
        if self.sequence != Sequence::Scheduled {
            self.configure(&[pass])?;
        }
        self.object.start()?;
        if let Some(unit) = self.unit.as_mut() {
            unit.running = true;
        }
        Ok(())
    }

    /// Stops the running execution. After the unit's last (or, one pass at a time, after each)
    /// the counter data is decoded.
    pub fn stop(&mut self) -> Result<(), CudaError> {
        let (pass, last, schedule) = {
            let unit = self
                .unit
                .as_mut()
                .ok_or_else(|| CudaError::Load("no unit begun".into()))?;
            if !unit.running {
                return Err(CudaError::Load("no execution is running".into()));
            }
            unit.running = false;
            let pass = unit.executions[unit.stopped];
            unit.stopped += 1;
            (
                pass,
                unit.stopped == unit.executions.len(),
                unit.passes.clone(),
            )
        };
        let all_submitted = self.stop_object()?;
        let (decoded, only) = if self.sequence == Sequence::Scheduled {
            if all_submitted != last {
                self.unit = None;
                self.disable();
                return Err(CudaError::Load(format!(
                    "the range profiler's passes did not match the schedule {schedule:?} on {} (all passes submitted: {all_submitted} after execution {})",
                    self.chip,
                    if last { "the last" } else { "an earlier" }
                )));
            }
            // Once a hardware pass's executions are all stopped, its counter data is decoded
            // and its metrics alone evaluated, and the image starts empty for the next pass:
            // CUPTI evaluates a raw counter that several passes collect (sm__cycles_active.sum
            // under both sm__cycles_active.avg and a ratio) as their mean, so a ratio would mix
            // two executions (on the H200 a one-block kernel of 4 warps read 5.1 active warps
            // per active cycle; docs/sections.md).
            let pass_done = self
                .unit
                .as_ref()
                .is_some_and(|u| u.executions.get(u.stopped) != Some(&pass));
            if !pass_done {
                return Ok(());
            }
            let index = schedule.iter().position(|p| *p == pass);
            (schedule, index)
        } else {
            if !all_submitted {
                self.disable();
                return Err(CudaError::Load(format!(
                    "hardware pass {pass} did not complete in one pass on {}",
                    self.chip
                )));
            }
            (vec![pass], None)
        };
        let values = self.decode(&decoded, only)?;
        if let Some(unit) = self.unit.as_mut() {
            unit.values.extend(values);
        }
        if only.is_some() && !last {
            self.initialize_counter_data(&decoded)?;
        }
        Ok(())
    }

    /// The values of every group the unit's hardware passes collected, for each range (ranges
    /// in execution order). Ends the unit.
    pub fn unit_values(&mut self) -> Result<Vec<GroupValues>, CudaError> {
        let unit = self
            .unit
            .take()
            .ok_or_else(|| CudaError::Load("no unit begun".into()))?;
        if unit.stopped != unit.executions.len() {
            return Err(CudaError::Load(format!(
                "{} of {} executions of the unit were measured",
                unit.stopped,
                unit.executions.len()
            )));
        }
        Ok(self
            .layout
            .groups
            .iter()
            .enumerate()
            .filter_map(|(g, (pass, positions))| {
                let ranges = unit.values.get(pass)?;
                let values = ranges
                    .iter()
                    .map(|range| positions.iter().map(|&i| range[i]).collect())
                    .collect();
                Some((g, values))
            })
            .collect())
    }

    /// Ends the unit unread: a running execution is stopped and the schedule's remaining passes
    /// are submitted empty, so that the next unit starts on a clean configuration.
    pub fn abandon(&mut self) {
        let Some(unit) = self.unit.take() else {
            return;
        };
        if !self.object.is_enabled() {
            return;
        }
        let mut result = Ok(());
        if unit.running {
            result = self.stop_object().map(|_| ());
        }
        if self.sequence == Sequence::Scheduled {
            let mut remaining = unit.executions.len() - unit.stopped - usize::from(unit.running);
            while remaining > 0 && result.is_ok() {
                result = self
                    .start_object()
                    .and_then(|()| self.stop_object().map(|_| ()));
                remaining -= 1;
            }
        }
        if let Err(e) = result {
            tracing::debug!("{e}");
            self.disable();
        }
    }

    /// Programs the full schedule into the hardware and runs its passes with no kernel in
    /// between: the first `Start` of a configuration after `Enable` costs ≈ 0.3 s on an H200, a
    /// later one 0–20 ms. Done by the set-up thread (`crate::setup::CounterSetup::prepare`) while the
    /// application works, so that its first dispatch finds the configuration programmed. On
    /// failure nothing stays enabled. `KREPLAY_WARM_UP=0` (a diagnostic setting) skips it.
    pub fn warm_up(&mut self, groups: &[Option<usize>]) -> Result<(), CudaError> {
        if !self.warm_up {
            return Ok(());
        }
        let (_, passes) = self.plan(groups);
        if passes.is_empty() {
            return Ok(());
        }
        let mut laps = debug::Laps::start();
        let warmed = (|| {
            self.begin_unit(passes.clone())?;
            let executions = self.unit.as_ref().map_or(0, |u| u.executions.len());
            for _ in 0..executions {
                self.start()?;
                self.stop_unit_execution_unread()?;
            }
            self.unit = None;
            Ok(())
        })();
        laps.lap("warm-up");
        debug::line(&format!("first counter start: {}", laps.summary()));
        if warmed.is_err() {
            self.unit = None;
            self.disable();
        }
        warmed
    }

    /// Stops the running execution without decoding (nothing was measured).
    fn stop_unit_execution_unread(&mut self) -> Result<(), CudaError> {
        if let Some(unit) = self.unit.as_mut() {
            unit.running = false;
            unit.stopped += 1;
        }
        self.stop_object().map(|_| ())
    }

    fn start_object(&mut self) -> Result<(), CudaError> {
        self.object.start()
    }

    /// `Stop`; returns whether every pass of the configuration has been submitted.
    fn stop_object(&mut self) -> Result<bool, CudaError> {
        self.object.stop()
    }

    /// A module or library of the context is about to be unloaded: an object enabled between
    /// units with SASS metrics is disabled, and the next unit's configuration enables it
    /// afresh (≈ 0.15–0.3 s, so only where it is needed). With SASS metrics enabled, CUPTI's
    /// instrumentation outlived the unloaded module: a later launch faulted inside the driver
    /// (SIGSEGV at 0x18, under `cuLaunchKernelEx`) in a JAX program whose autotuning loads and
    /// unloads trial modules, in every run on the H100; disabled at each unload, in none. A
    /// unit in progress is left alone (the engine closes replay windows before an unload).
    pub fn before_module_unload(&mut self) {
        let instrumented = self
            .enabled
            .as_deref()
            .is_some_and(|passes| self.layout.instrumented(passes));
        if instrumented && self.unit.is_none() && self.object.is_enabled() {
            self.disable();
        }
    }

    /// Disables the object: the next configuration enables it again.
    pub(super) fn disable(&mut self) {
        self.enabled = None;
        self.object.disable();
    }
}

impl Drop for RangeProfiler {
    fn drop(&mut self) {
        // The object first, then the schedules' host objects (dropped with their fields).
        self.disable();
    }
}
