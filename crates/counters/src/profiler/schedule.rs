//! A unit's schedule: the configuration of its hardware passes (built once per schedule and
//! kept), programmed into the range profiler, and its counter data decoded into values.

use super::sequence::Sequence;
use super::state::{PassValues, RangeProfiler, Schedule};
use crate::catalog::host::host_api_lock;
use kreplay_cuda::cupti::host_config::HostConfig;
use kreplay_cuda::cupti::range_profiler::{counter_data_ranges, RangeProfilerObject};
use kreplay_cuda::error::CudaError;

impl RangeProfiler {
    /// The schedule's configuration, built on first use.
    pub(super) fn schedule(&mut self, passes: &[usize]) -> Result<&mut Schedule, CudaError> {
        if !self.schedules.contains_key(passes) {
            // One `ConfigAddMetrics` call per hardware pass, with all of its metrics: each pass
            // is decoded and evaluated alone (RangeProfiler::stop), so a metric two passes
            // collect is read from each pass's own execution, never as their mean.
            let calls: Vec<Vec<String>> = passes
                .iter()
                .map(|pass| self.layout.pass_metrics[*pass].clone())
                .collect();
            let mut at = 0;
            let positions = calls
                .iter()
                .map(|call| {
                    let range = (at..at + call.len()).collect();
                    at += call.len();
                    range
                })
                .collect();
            let config = {
                let _host = host_api_lock();
                HostConfig::build(self.cupti, &self.chip, &self.availability, &calls)?
            };
            self.schedules.insert(
                passes.to_vec(),
                Schedule {
                    config,
                    positions,
                    counter_data: Vec::new(),
                },
            );
        }
        self.schedules
            .get_mut(passes)
            .ok_or_else(|| CudaError::Load("schedule missing".into()))
    }

    /// The range-profiler object and the schedule of `passes` (built on first use), borrowed
    /// together.
    fn object_and_schedule(
        &mut self,
        passes: &[usize],
    ) -> Result<(&mut RangeProfilerObject, &mut Schedule), CudaError> {
        self.schedule(passes)?;
        let schedule = self
            .schedules
            .get_mut(passes)
            .ok_or_else(|| CudaError::Load("schedule missing".into()))?;
        Ok((&mut self.object, schedule))
    }

    /// Makes `passes` the configuration of the next `Start`: enables the object for it when
    /// another schedule is enabled (`Disable` + `Enable`; `SetConfig` alone for
    /// [`Sequence::Switch`]), then initialises its counter data and sets it.
    pub(super) fn configure(&mut self, passes: &[usize]) -> Result<(), CudaError> {
        let changing = self.enabled.as_deref() != Some(passes);
        if changing {
            if self.sequence != Sequence::Switch || !self.object.is_enabled() {
                self.disable();
                self.object.enable()?;
            }
            let ranges = self.ranges;
            let (object, schedule) = self.object_and_schedule(passes)?;
            let size = object.counter_data_size(&mut schedule.config, ranges)?;
            schedule.counter_data = vec![0u8; size];
            self.enabled = Some(passes.to_vec());
            self.config_changes += 1;
        }
        self.initialize_counter_data(passes)?;
        let ranges = self.ranges;
        let (object, schedule) = self.object_and_schedule(passes)?;
        // The image and counter data stay in `self.schedules` while the object uses them.
        object.set_config(&schedule.config, &mut schedule.counter_data, ranges)
    }

    /// Initialises the counter data of the schedule `passes` (empty, ready for its passes).
    pub(super) fn initialize_counter_data(&mut self, passes: &[usize]) -> Result<(), CudaError> {
        let (object, schedule) = self.object_and_schedule(passes)?;
        object.initialize_counter_data(&mut schedule.counter_data)
    }

    /// Decodes the counter data of the schedule `passes` and evaluates every range: the
    /// values per range of each of its hardware passes (in that pass's metric order), or with
    /// `only`, of the pass at that index of `passes` alone (its metrics alone evaluated).
    pub(super) fn decode(
        &mut self,
        passes: &[usize],
        only: Option<usize>,
    ) -> Result<Vec<PassValues>, CudaError> {
        let cupti = self.cupti;
        let dropped = self.object.decode()?;
        let key = if self.sequence == Sequence::Scheduled {
            passes.to_vec()
        } else {
            self.enabled.clone().unwrap_or_default()
        };
        let schedule = self.schedule(&key)?;
        let _host = host_api_lock();
        let total_ranges = counter_data_ranges(cupti, &schedule.counter_data)?;
        if dropped > 0 {
            return Err(CudaError::Load(format!(
                "the range profiler dropped {dropped} range(s)"
            )));
        }
        // The passes evaluated (all of the schedule's, or the one given), their metrics in order.
        let selected: Vec<usize> = match only {
            Some(k) => vec![k],
            None => (0..passes.len()).collect(),
        };
        let names = selected
            .iter()
            .flat_map(|&k| schedule.positions[k].iter().copied());
        let ranges = schedule
            .config
            .evaluate(&schedule.counter_data, total_ranges, names)?;
        let mut at = 0;
        Ok(selected
            .iter()
            .map(|&k| {
                let span = at..at + schedule.positions[k].len();
                at = span.end;
                let values = ranges
                    .iter()
                    .map(|range| range[span.clone()].to_vec())
                    .collect();
                (passes[k], values)
            })
            .collect())
    }
}
