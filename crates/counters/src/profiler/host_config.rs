//! A configuration built on CUPTI's host API ([`HostConfig`]): the metrics of a schedule's
//! hardware passes, one `ConfigAddMetrics` call each, and the counter-data image it needs.

use super::*;

/// A configuration built on CUPTI's host API: the host object that evaluates it, its metric
/// names (in the order they were added) and the config image programmed into the hardware.
pub(super) struct HostConfig {
    _names: Vec<CString>,
    pub(super) name_ptrs: Vec<*const std::ffi::c_char>,
    pub(super) host: *mut sys::CUpti_Profiler_Host_Object,
    pub(super) config_image: Vec<u8>,
}

pub(super) fn counter_data_size(
    cupti: &'static Cupti,
    object: *mut sys::CUpti_RangeProfiler_Object,
    config: &mut HostConfig,
    ranges: usize,
) -> Result<usize, CudaError> {
    let mut size = sys::CUpti_RangeProfiler_GetCounterDataSize_Params {
        structSize: struct_size!(
            sys::CUpti_RangeProfiler_GetCounterDataSize_Params,
            counterDataSize
        ),
        pRangeProfilerObject: object,
        pMetricNames: config.name_ptrs.as_mut_ptr(),
        numMetrics: config.name_ptrs.len(),
        maxNumOfRanges: ranges,
        maxNumRangeTreeNodes: ranges as u32,
        ..Default::default()
    };
    // SAFETY: the metric name pointers live as long as `config`.
    unsafe { cupti_call!(cupti, cuptiRangeProfilerGetCounterDataSize(&mut size))? };
    Ok(size.counterDataSize)
}

impl HostConfig {
    /// One host object; each entry of `calls` is one `ConfigAddMetrics` call (one pass group:
    /// CUPTI schedules each call's metrics apart from the others').
    pub(super) fn build(
        cupti: &'static Cupti,
        chip: &str,
        availability: &[u8],
        calls: &[Vec<String>],
    ) -> Result<Self, CudaError> {
        let chip_c = CString::new(chip).map_err(|_| CudaError::Load("bad chip name".into()))?;
        let names: Vec<CString> = calls
            .iter()
            .flatten()
            .map(|m| {
                CString::new(m.as_str())
                    .map_err(|_| CudaError::Load(format!("metric name {m:?} contains a NUL byte")))
            })
            .collect::<Result<_, _>>()?;
        let mut name_ptrs: Vec<*const std::ffi::c_char> =
            names.iter().map(|n| n.as_ptr()).collect();
        let mut init = sys::CUpti_Profiler_Host_Initialize_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_Initialize_Params, pHostObject),
            profilerType: sys::CUpti_ProfilerType_CUPTI_PROFILER_TYPE_RANGE_PROFILER,
            pChipName: chip_c.as_ptr(),
            // Without an image CUPTI answers from the chip name alone.
            pCounterAvailabilityImage: if availability.is_empty() {
                ptr::null()
            } else {
                availability.as_ptr()
            },
            ..Default::default()
        };
        // SAFETY: strings and image outlive the call.
        unsafe { cupti_call!(cupti, cuptiProfilerHostInitialize(&mut init))? };
        let mut config = HostConfig {
            _names: Vec::new(),
            name_ptrs: Vec::new(),
            host: init.pHostObject,
            config_image: Vec::new(),
        };
        let mut at = 0;
        for call in calls {
            let mut add = sys::CUpti_Profiler_Host_ConfigAddMetrics_Params {
                structSize: struct_size!(
                    sys::CUpti_Profiler_Host_ConfigAddMetrics_Params,
                    numMetrics
                ),
                pHostObject: config.host,
                ppMetricNames: name_ptrs[at..].as_mut_ptr(),
                numMetrics: call.len(),
                ..Default::default()
            };
            at += call.len();
            // SAFETY: name pointers are valid for the call.
            let added = unsafe { cupti_call!(cupti, cuptiProfilerHostConfigAddMetrics(&mut add)) };
            if let Err(e) = added {
                config.deinitialize(cupti);
                return Err(CudaError::Load(format!(
                    "{e} (metrics: {}; list valid names with `kreplay avail list`)",
                    call.join(" ")
                )));
            }
        }
        let mut size = sys::CUpti_Profiler_Host_GetConfigImageSize_Params {
            structSize: struct_size!(
                sys::CUpti_Profiler_Host_GetConfigImageSize_Params,
                configImageSize
            ),
            pHostObject: config.host,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(cupti, cuptiProfilerHostGetConfigImageSize(&mut size))? };
        config.config_image = vec![0u8; size.configImageSize];
        let mut image = sys::CUpti_Profiler_Host_GetConfigImage_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage),
            pHostObject: config.host,
            configImageSize: config.config_image.len(),
            pConfigImage: config.config_image.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the buffer has the size CUPTI asked for.
        unsafe { cupti_call!(cupti, cuptiProfilerHostGetConfigImage(&mut image))? };
        config._names = names;
        config.name_ptrs = name_ptrs;
        Ok(config)
    }

    pub(super) fn passes(&mut self, cupti: &'static Cupti) -> Result<usize, CudaError> {
        let mut params = sys::CUpti_Profiler_Host_GetNumOfPasses_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses),
            configImageSize: self.config_image.len(),
            pConfigImage: self.config_image.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the image is owned by self.
        unsafe { cupti_call!(cupti, cuptiProfilerHostGetNumOfPasses(&mut params))? };
        Ok(params.numOfPasses)
    }

    pub(super) fn deinitialize(&mut self, cupti: &'static Cupti) {
        if self.host.is_null() {
            return;
        }
        let mut params = sys::CUpti_Profiler_Host_Deinitialize_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_Deinitialize_Params, pHostObject),
            pHostObject: self.host,
            ..Default::default()
        };
        // SAFETY: the host object is not used after this.
        let _ = unsafe { cupti_call!(cupti, cuptiProfilerHostDeinitialize(&mut params)) };
        self.host = ptr::null_mut();
    }
}

/// The hardware passes of a configuration built from `calls` (one `ConfigAddMetrics` each), on
/// `chip` without a device (no availability image): what the schedule of packed passes
/// becomes. Used by the tests below (GPU-less, with the CUPTI wheel) to check that each call
/// stays a pass of its own.
#[cfg(test)]
pub(super) fn host_schedule_passes(
    cupti: &'static Cupti,
    chip: &str,
    calls: &[Vec<String>],
) -> Result<usize, CudaError> {
    let _host = host_api_lock();
    let mut config = HostConfig::build(cupti, chip, &[], calls)?;
    let passes = config.passes(cupti);
    config.deinitialize(cupti);
    passes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(metrics: &[&str]) -> Vec<String> {
        metrics.iter().map(|m| m.to_string()).collect()
    }

    /// GPU-less, with the CUPTI wheel `.ci/run` installs: one `ConfigAddMetrics` call per
    /// hardware pass gives a configuration of exactly that many passes, never merged (two calls
    /// that would fit one pass together stay two) — what lets CUPTI schedule a unit's passes
    /// while every group stays whole in its own pass.
    #[test]
    fn each_add_metrics_call_stays_a_hardware_pass_of_its_own() {
        let _ = crate::catalog::tests_support::gh100();
        let cupti = kreplay_cuda::loader::cupti().unwrap_or_else(|e| panic!("{e}"));
        let warps = names(&["sm__warps_launched.sum", "smsp__inst_executed.sum"]);
        let dram = names(&["dram__bytes_read.sum", "lts__t_sectors.sum"]);
        let together: Vec<String> = warps.iter().chain(&dram).cloned().collect();
        let passes = |calls: &[Vec<String>]| {
            host_schedule_passes(cupti, "GH100", calls).unwrap_or_else(|e| panic!("{e}"))
        };
        assert_eq!(passes(&[together]), 1, "one call: one pass");
        assert_eq!(
            passes(&[warps.clone(), dram.clone()]),
            2,
            "two calls: two passes"
        );
        // The benchmark's four groups, packed into three hardware passes on GH100.
        let headline = [
            names(&[
                "sm__warps_launched.sum",
                "smsp__inst_executed.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
                "dram__sectors_read.sum",
                "lts__t_sectors_op_read.sum",
            ]),
            names(&[
                "smsp__sass_inst_executed_op_shared_ld.sum",
                "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
            ]),
            names(&[
                "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
                "lts__t_sectors_op_write.sum",
            ]),
        ];
        assert_eq!(passes(&headline), 3);
        let all: Vec<String> = headline.iter().flatten().cloned().collect();
        assert_eq!(passes(&[all]), 3, "CUPTI's own split of the union");
        // A metric that alone needs several passes keeps its count in a schedule: a hardware
        // pass of the profiler spans that many executions.
        let throughput = names(&["sm__throughput.avg.pct_of_peak_sustained_elapsed"]);
        let alone = passes(std::slice::from_ref(&throughput));
        assert_eq!(
            alone, 8,
            "sm__throughput's passes on GH100 (as tests/gpu/run.py states)"
        );
        assert_eq!(passes(&[warps, throughput]), alone + 1);
    }
}
