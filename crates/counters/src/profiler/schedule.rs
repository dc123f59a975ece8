//! A unit's schedule: the configuration of its hardware passes (built once per schedule and
//! kept), programmed into the range profiler, and its counter data decoded into values.

use super::*;

impl RangeProfiler {
    /// The schedule's configuration, built on first use.
    pub(super) fn schedule(&mut self, passes: &[usize]) -> Result<&mut Schedule, CudaError> {
        if !self.schedules.contains_key(passes) {
            // One `ConfigAddMetrics` call per hardware pass, with all of its metrics: each pass
            // is decoded and evaluated alone (RangeProfiler::stop), so a metric two passes
            // collect is read from each pass's own execution, never as their mean.
            let calls: Vec<Vec<String>> = passes
                .iter()
                .map(|pass| self.pass_metrics[*pass].clone())
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

    /// Makes `passes` the configuration of the next `Start`: enables the object for it when
    /// another schedule is enabled (`Disable` + `Enable`; `SetConfig` alone for
    /// [`Sequence::Switch`]), then initialises its counter data and sets it.
    pub(super) fn configure(&mut self, passes: &[usize]) -> Result<(), CudaError> {
        let changing = self.enabled.as_deref() != Some(passes);
        if changing {
            if self.sequence != Sequence::Switch || self.object.is_null() {
                self.disable();
                self.object = self.enable()?;
            }
            let object = self.object;
            let ranges = self.ranges;
            let cupti = self.cupti;
            let schedule = self.schedule(passes)?;
            let size = counter_data_size(cupti, object, &mut schedule.config, ranges)?;
            schedule.counter_data = vec![0u8; size];
            self.enabled = Some(passes.to_vec());
            self.config_changes += 1;
        }
        self.initialize_counter_data(passes)?;
        let object = self.object;
        let ranges = self.ranges;
        let cupti = self.cupti;
        let schedule = self.schedule(passes)?;
        let mut set = sys::CUpti_RangeProfiler_SetConfig_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_SetConfig_Params,
                targetNestingLevel
            ),
            pRangeProfilerObject: object,
            configSize: schedule.config.config_image.len(),
            pConfig: schedule.config.config_image.as_ptr(),
            counterDataImageSize: schedule.counter_data.len(),
            pCounterDataImage: schedule.counter_data.as_mut_ptr(),
            range: sys::CUpti_ProfilerRange_CUPTI_AutoRange,
            replayMode: sys::CUpti_ProfilerReplayMode_CUPTI_UserReplay,
            maxRangesPerPass: ranges,
            numNestingLevels: 1,
            minNestingLevel: 1,
            passIndex: 0,
            targetNestingLevel: 1,
            ..Default::default()
        };
        // SAFETY: config image and counter data are owned by self.
        unsafe { cupti_call!(cupti, cuptiRangeProfilerSetConfig(&mut set))? };
        Ok(())
    }

    /// Initialises the counter data of the schedule `passes` (empty, ready for its passes).
    pub(super) fn initialize_counter_data(&mut self, passes: &[usize]) -> Result<(), CudaError> {
        let object = self.object;
        let cupti = self.cupti;
        let schedule = self.schedule(passes)?;
        let mut init = sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
                pCounterData
            ),
            pRangeProfilerObject: object,
            counterDataSize: schedule.counter_data.len(),
            pCounterData: schedule.counter_data.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the image buffer outlives the object's use of it (kept in self).
        unsafe {
            cupti_call!(
                cupti,
                cuptiRangeProfilerCounterDataImageInitialize(&mut init)
            )?
        };
        Ok(())
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
        let object = self.object;
        let mut decode = sys::CUpti_RangeProfiler_DecodeData_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_DecodeData_Params,
                numOfRangeDropped
            ),
            pRangeProfilerObject: object,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(cupti, cuptiRangeProfilerDecodeData(&mut decode))? };
        let key = if self.sequence == Sequence::Scheduled {
            passes.to_vec()
        } else {
            self.enabled.clone().unwrap_or_default()
        };
        let schedule = self.schedule(&key)?;
        let _host = host_api_lock();
        let mut info = sys::CUpti_RangeProfiler_GetCounterDataInfo_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_GetCounterDataInfo_Params,
                numTotalRanges
            ),
            pCounterDataImage: schedule.counter_data.as_ptr(),
            counterDataImageSize: schedule.counter_data.len(),
            ..Default::default()
        };
        // SAFETY: the image is owned by self.
        unsafe { cupti_call!(cupti, cuptiRangeProfilerGetCounterDataInfo(&mut info))? };
        if decode.numOfRangeDropped > 0 {
            return Err(CudaError::Load(format!(
                "the range profiler dropped {} range(s)",
                decode.numOfRangeDropped
            )));
        }
        // The passes evaluated (all of the schedule's, or the one given), their metrics in order.
        let selected: Vec<usize> = match only {
            Some(k) => vec![k],
            None => (0..passes.len()).collect(),
        };
        let mut names: Vec<*const std::ffi::c_char> = selected
            .iter()
            .flat_map(|&k| &schedule.positions[k])
            .map(|&i| schedule.config.name_ptrs[i])
            .collect();
        let mut ranges = Vec::with_capacity(info.numTotalRanges);
        for range in 0..info.numTotalRanges {
            let mut values = vec![f64::NAN; names.len()];
            let mut eval = sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params {
                structSize: struct_size!(
                    sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params,
                    pMetricValues
                ),
                pHostObject: schedule.config.host,
                pCounterDataImage: schedule.counter_data.as_ptr(),
                counterDataImageSize: schedule.counter_data.len(),
                rangeIndex: range,
                ppMetricNames: names.as_mut_ptr(),
                numMetrics: names.len(),
                pMetricValues: values.as_mut_ptr(),
                ..Default::default()
            };
            // SAFETY: `values` has one slot per metric; the names live in the configuration.
            unsafe { cupti_call!(cupti, cuptiProfilerHostEvaluateToGpuValues(&mut eval))? };
            ranges.push(values);
        }
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
