//! A range-profiler configuration built on CUPTI's host API ([`HostConfig`]): one host object
//! with a schedule's metrics (one `ConfigAddMetrics` call per hardware pass), the config image
//! programmed into the hardware, and the evaluation of counter data into metric values.

use crate::cupti_call;
use crate::error::CudaError;
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::{self as sys, struct_size};
use std::ffi::{c_char, CString};
use std::ptr;

/// A configuration built on CUPTI's host API: the host object that evaluates it (deinitialised
/// on drop), its metric names (in the order they were added) and the config image.
pub struct HostConfig {
    cupti: &'static Cupti,
    _names: Vec<CString>,
    pub(super) name_ptrs: Vec<*const c_char>,
    host: *mut sys::CUpti_Profiler_Host_Object,
    config_image: Vec<u8>,
}

// SAFETY: the pointers are CUPTI's host object and the names this value owns; CUPTI's host API
// is used from one thread at a time (the callers hold `host_api_lock` or own the object alone).
unsafe impl Send for HostConfig {}

impl HostConfig {
    /// One host object; each entry of `calls` is one `ConfigAddMetrics` call (one pass group:
    /// CUPTI schedules each call's metrics apart from the others').
    pub fn build(
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
        let mut name_ptrs: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
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
        let host = init.pHostObject;
        let mut at = 0;
        for call in calls {
            let mut add = sys::CUpti_Profiler_Host_ConfigAddMetrics_Params {
                structSize: struct_size!(
                    sys::CUpti_Profiler_Host_ConfigAddMetrics_Params,
                    numMetrics
                ),
                pHostObject: host,
                ppMetricNames: name_ptrs[at..].as_mut_ptr(),
                numMetrics: call.len(),
                ..Default::default()
            };
            at += call.len();
            // SAFETY: name pointers are valid for the call.
            let added = unsafe { cupti_call!(cupti, cuptiProfilerHostConfigAddMetrics(&mut add)) };
            if let Err(e) = added {
                deinitialize(cupti, host);
                return Err(CudaError::Load(format!(
                    "{e} (metrics: {}; list valid names with `kreplay avail list`)",
                    call.join(" ")
                )));
            }
        }
        // A failure from here on leaves the host object as it always did (not seen in use).
        let mut size = sys::CUpti_Profiler_Host_GetConfigImageSize_Params {
            structSize: struct_size!(
                sys::CUpti_Profiler_Host_GetConfigImageSize_Params,
                configImageSize
            ),
            pHostObject: host,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(cupti, cuptiProfilerHostGetConfigImageSize(&mut size))? };
        let mut config_image = vec![0u8; size.configImageSize];
        let mut image = sys::CUpti_Profiler_Host_GetConfigImage_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage),
            pHostObject: host,
            configImageSize: config_image.len(),
            pConfigImage: config_image.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the buffer has the size CUPTI asked for.
        unsafe { cupti_call!(cupti, cuptiProfilerHostGetConfigImage(&mut image))? };
        Ok(HostConfig {
            cupti,
            _names: names,
            name_ptrs,
            host,
            config_image,
        })
    }

    /// The passes CUPTI needs for this configuration (`cuptiProfilerHostGetNumOfPasses`).
    pub fn passes(&mut self) -> Result<usize, CudaError> {
        let mut params = sys::CUpti_Profiler_Host_GetNumOfPasses_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses),
            configImageSize: self.config_image.len(),
            pConfigImage: self.config_image.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the image is owned by self.
        unsafe { cupti_call!(self.cupti, cuptiProfilerHostGetNumOfPasses(&mut params))? };
        Ok(params.numOfPasses)
    }

    /// The config image programmed into the hardware.
    pub fn config_image(&self) -> &[u8] {
        &self.config_image
    }

    /// The values of the metrics at `metrics` (positions in the order they were added) for each
    /// of the first `ranges` ranges of `counter_data` (decoded), one evaluation per range.
    pub fn evaluate(
        &self,
        counter_data: &[u8],
        ranges: usize,
        metrics: impl IntoIterator<Item = usize>,
    ) -> Result<Vec<Vec<f64>>, CudaError> {
        let mut names: Vec<*const c_char> =
            metrics.into_iter().map(|i| self.name_ptrs[i]).collect();
        let mut values_per_range = Vec::with_capacity(ranges);
        for range in 0..ranges {
            let mut values = vec![f64::NAN; names.len()];
            let mut eval = sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params {
                structSize: struct_size!(
                    sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params,
                    pMetricValues
                ),
                pHostObject: self.host,
                pCounterDataImage: counter_data.as_ptr(),
                counterDataImageSize: counter_data.len(),
                rangeIndex: range,
                ppMetricNames: names.as_mut_ptr(),
                numMetrics: names.len(),
                pMetricValues: values.as_mut_ptr(),
                ..Default::default()
            };
            // SAFETY: `values` has one slot per metric; the names live in this configuration.
            unsafe { cupti_call!(self.cupti, cuptiProfilerHostEvaluateToGpuValues(&mut eval))? };
            values_per_range.push(values);
        }
        Ok(values_per_range)
    }
}

impl Drop for HostConfig {
    fn drop(&mut self) {
        deinitialize(self.cupti, self.host);
    }
}

/// `cuptiProfilerHostDeinitialize`, its outcome ignored (nothing is left to do with the object).
fn deinitialize(cupti: &'static Cupti, host: *mut sys::CUpti_Profiler_Host_Object) {
    if host.is_null() {
        return;
    }
    let mut params = sys::CUpti_Profiler_Host_Deinitialize_Params {
        structSize: struct_size!(sys::CUpti_Profiler_Host_Deinitialize_Params, pHostObject),
        pHostObject: host,
        ..Default::default()
    };
    // SAFETY: the host object is not used after this.
    let _ = unsafe { cupti_call!(cupti, cuptiProfilerHostDeinitialize(&mut params)) };
}
