//! CUPTI's Profiler Host API (`cupti_profiler_host.h`), which answers metric lists, metric
//! properties, config images and pass counts from a chip name alone — no GPU, no CUDA context.
//!
//! [`HostObject`] owns one `CUpti_Profiler_Host_Object` and deinitialises it on drop. Metrics
//! added with [`HostObject::add_metrics`] accumulate in the object, so every pass-count query uses
//! a fresh object (as NVIDIA's `cupti_profiler_host_util.h` does).

use super::host_call::{check, function, metric_cstring, owned, owned_list, CuptiCallError};
use super::host_lock::host_api_lock;
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::struct_size;
use kreplay_cupti_sys::types::*;
use std::ffi::{c_char, CString};
use std::sync::MutexGuard;

/// CUPTI's metric types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MetricType {
    Counter,
    Ratio,
    Throughput,
}

impl MetricType {
    /// The three, in the order `avail` lists them.
    pub const ALL: [MetricType; 3] = [
        MetricType::Counter,
        MetricType::Ratio,
        MetricType::Throughput,
    ];

    fn raw(self) -> CUpti_MetricType {
        match self {
            MetricType::Counter => CUpti_MetricType_CUPTI_METRIC_TYPE_COUNTER,
            MetricType::Ratio => CUpti_MetricType_CUPTI_METRIC_TYPE_RATIO,
            MetricType::Throughput => CUpti_MetricType_CUPTI_METRIC_TYPE_THROUGHPUT,
        }
    }

    fn from_raw(raw: CUpti_MetricType) -> Option<MetricType> {
        MetricType::ALL.into_iter().find(|t| t.raw() == raw)
    }
}

/// What `cuptiProfilerHostGetMetricProperties` says of a metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricProperties {
    pub description: String,
    pub hw_unit: String,
    pub dim_unit: String,
    /// `None` for a type this code does not know.
    pub metric_type: Option<MetricType>,
}

/// The chips this CUPTI build knows (`GH100`, `AD102`, …), upper case as CUPTI wants them.
pub fn supported_chips(cupti: &Cupti) -> Result<Vec<String>, CuptiCallError> {
    let f = function!(cupti, cuptiProfilerHostGetSupportedChips)?;
    let _lock = host_api_lock();
    let mut params = CUpti_Profiler_Host_GetSupportedChips_Params {
        structSize: struct_size!(CUpti_Profiler_Host_GetSupportedChips_Params, ppChipNames),
        ..Default::default()
    };
    // SAFETY: params is a valid, sized struct; CUPTI fills the out fields.
    check(cupti, "cuptiProfilerHostGetSupportedChips", unsafe {
        f(&mut params)
    })?;
    // SAFETY: CUPTI returned `numChips` static strings.
    Ok(unsafe { owned_list(params.ppChipNames, params.numChips) })
}

/// Passes needed by a config image (`cuptiProfilerHostGetNumOfPasses`; no host object needed).
pub fn passes_of_config_image(cupti: &Cupti, image: &mut [u8]) -> Result<u32, CuptiCallError> {
    let f = function!(cupti, cuptiProfilerHostGetNumOfPasses)?;
    let _lock = host_api_lock();
    let mut params = CUpti_Profiler_Host_GetNumOfPasses_Params {
        structSize: struct_size!(CUpti_Profiler_Host_GetNumOfPasses_Params, numOfPasses),
        configImageSize: image.len(),
        pConfigImage: image.as_mut_ptr(),
        ..Default::default()
    };
    // SAFETY: the image buffer outlives the call and its size is given.
    check(cupti, "cuptiProfilerHostGetNumOfPasses", unsafe {
        f(&mut params)
    })?;
    Ok(u32::try_from(params.numOfPasses).unwrap_or(u32::MAX))
}

/// One initialised Profiler Host object for a chip (and optionally a device's
/// counter-availability image), deinitialised on drop.
pub struct HostObject<'lib> {
    cupti: &'lib Cupti,
    object: *mut CUpti_Profiler_Host_Object,
    /// CUPTI keeps pointers to the chip name and availability image; they live as long as we do.
    _chip: CString,
    _availability: Option<Vec<u8>>,
    /// Declared last: released after `Drop` has deinitialised the object.
    _lock: MutexGuard<'static, ()>,
}

impl<'lib> HostObject<'lib> {
    /// `cuptiProfilerHostInitialize` for the range profiler. `chip` must be upper case.
    pub fn new(
        cupti: &'lib Cupti,
        chip: &str,
        availability: Option<&[u8]>,
    ) -> Result<Self, CuptiCallError> {
        let f = function!(cupti, cuptiProfilerHostInitialize)?;
        let lock = host_api_lock();
        let chip_c = CString::new(chip).map_err(|_| CuptiCallError {
            call: "cuptiProfilerHostInitialize",
            code: CUptiResult_CUPTI_ERROR_INVALID_CHIP_NAME,
            code_name: "CUPTI_ERROR_INVALID_CHIP_NAME".to_string(),
            message: "the chip name contains a NUL byte".to_string(),
        })?;
        let availability = availability.map(<[u8]>::to_vec);
        let mut params = CUpti_Profiler_Host_Initialize_Params {
            structSize: struct_size!(CUpti_Profiler_Host_Initialize_Params, pHostObject),
            profilerType: CUpti_ProfilerType_CUPTI_PROFILER_TYPE_RANGE_PROFILER,
            pChipName: chip_c.as_ptr(),
            pCounterAvailabilityImage: availability
                .as_ref()
                .map_or(std::ptr::null(), |image| image.as_ptr()),
            ..Default::default()
        };
        // SAFETY: the chip name and image outlive the host object (owned by Self).
        check(cupti, "cuptiProfilerHostInitialize", unsafe {
            f(&mut params)
        })?;
        Ok(HostObject {
            cupti,
            object: params.pHostObject,
            _chip: chip_c,
            _availability: availability,
            _lock: lock,
        })
    }

    /// Base metric names of one type (`sm__warps_launched`, without roll-up).
    pub fn base_metrics(&self, metric_type: MetricType) -> Result<Vec<String>, CuptiCallError> {
        let f = function!(self.cupti, cuptiProfilerHostGetBaseMetrics)?;
        let mut params = CUpti_Profiler_Host_GetBaseMetrics_Params {
            structSize: struct_size!(CUpti_Profiler_Host_GetBaseMetrics_Params, numMetrics),
            pHostObject: self.object,
            metricType: metric_type.raw(),
            ..Default::default()
        };
        // SAFETY: valid host object; CUPTI owns the returned strings until deinitialisation.
        check(self.cupti, "cuptiProfilerHostGetBaseMetrics", unsafe {
            f(&mut params)
        })?;
        // SAFETY: `numMetrics` strings owned by the host object, copied now.
        Ok(unsafe { owned_list(params.ppMetricNames, params.numMetrics) })
    }

    /// Roll-ups and sub-metrics a metric accepts (`.sum`, `.avg.per_second`, …).
    pub fn sub_metrics(
        &self,
        metric_type: MetricType,
        metric: &str,
    ) -> Result<Vec<String>, CuptiCallError> {
        let f = function!(self.cupti, cuptiProfilerHostGetSubMetrics)?;
        let name = metric_cstring(metric, "cuptiProfilerHostGetSubMetrics")?;
        let mut params = CUpti_Profiler_Host_GetSubMetrics_Params {
            structSize: struct_size!(CUpti_Profiler_Host_GetSubMetrics_Params, ppSubMetrics),
            pHostObject: self.object,
            metricType: metric_type.raw(),
            pMetricName: name.as_ptr(),
            ..Default::default()
        };
        // SAFETY: valid host object and name; strings owned by CUPTI, copied now.
        check(self.cupti, "cuptiProfilerHostGetSubMetrics", unsafe {
            f(&mut params)
        })?;
        // SAFETY: `numOfSubmetrics` strings owned by the host object.
        Ok(unsafe { owned_list(params.ppSubMetrics, params.numOfSubmetrics) })
    }

    /// Description, hardware unit, unit and type of a metric (with or without roll-up).
    pub fn properties(&self, metric: &str) -> Result<MetricProperties, CuptiCallError> {
        let f = function!(self.cupti, cuptiProfilerHostGetMetricProperties)?;
        let name = metric_cstring(metric, "cuptiProfilerHostGetMetricProperties")?;
        let mut params = CUpti_Profiler_Host_GetMetricProperties_Params {
            structSize: struct_size!(CUpti_Profiler_Host_GetMetricProperties_Params, metricType),
            pHostObject: self.object,
            pMetricName: name.as_ptr(),
            ..Default::default()
        };
        // SAFETY: valid host object and name.
        check(self.cupti, "cuptiProfilerHostGetMetricProperties", unsafe {
            f(&mut params)
        })?;
        // SAFETY: strings owned by CUPTI, copied now.
        unsafe {
            Ok(MetricProperties {
                description: owned(params.pDescription),
                hw_unit: owned(params.pHwUnit),
                dim_unit: owned(params.pDimUnit),
                metric_type: MetricType::from_raw(params.metricType),
            })
        }
    }

    /// Adds metrics to this object's configuration (`CUPTI_ERROR_INVALID_METRIC_NAME` if one is
    /// unknown for the chip).
    pub fn add_metrics(&mut self, metrics: &[&str]) -> Result<(), CuptiCallError> {
        let f = function!(self.cupti, cuptiProfilerHostConfigAddMetrics)?;
        let names = metrics
            .iter()
            .map(|m| metric_cstring(m, "cuptiProfilerHostConfigAddMetrics"))
            .collect::<Result<Vec<_>, _>>()?;
        let mut pointers: Vec<*const c_char> = names.iter().map(|n| n.as_ptr()).collect();
        let mut params = CUpti_Profiler_Host_ConfigAddMetrics_Params {
            structSize: struct_size!(CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics),
            pHostObject: self.object,
            ppMetricNames: pointers.as_mut_ptr(),
            numMetrics: pointers.len(),
            ..Default::default()
        };
        // SAFETY: the names outlive the call.
        check(self.cupti, "cuptiProfilerHostConfigAddMetrics", unsafe {
            f(&mut params)
        })
    }

    /// The config image of the metrics added so far.
    pub fn config_image(&self) -> Result<Vec<u8>, CuptiCallError> {
        let size_fn = function!(self.cupti, cuptiProfilerHostGetConfigImageSize)?;
        let image_fn = function!(self.cupti, cuptiProfilerHostGetConfigImage)?;
        let mut size = CUpti_Profiler_Host_GetConfigImageSize_Params {
            structSize: struct_size!(
                CUpti_Profiler_Host_GetConfigImageSize_Params,
                configImageSize
            ),
            pHostObject: self.object,
            ..Default::default()
        };
        // SAFETY: valid host object.
        check(self.cupti, "cuptiProfilerHostGetConfigImageSize", unsafe {
            size_fn(&mut size)
        })?;
        let mut image = vec![0u8; size.configImageSize];
        let mut params = CUpti_Profiler_Host_GetConfigImage_Params {
            structSize: struct_size!(CUpti_Profiler_Host_GetConfigImage_Params, pConfigImage),
            pHostObject: self.object,
            configImageSize: image.len(),
            pConfigImage: image.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the buffer has the size CUPTI asked for.
        check(self.cupti, "cuptiProfilerHostGetConfigImage", unsafe {
            image_fn(&mut params)
        })?;
        Ok(image)
    }
}

impl Drop for HostObject<'_> {
    fn drop(&mut self) {
        let Ok(f) = self.cupti.cuptiProfilerHostDeinitialize.as_ref() else {
            return;
        };
        let mut params = CUpti_Profiler_Host_Deinitialize_Params {
            structSize: struct_size!(CUpti_Profiler_Host_Deinitialize_Params, pHostObject),
            pHostObject: self.object,
            ..Default::default()
        };
        // SAFETY: the object came from cuptiProfilerHostInitialize and is released once.
        let rc = unsafe { f(&mut params) };
        if rc != CUptiResult_CUPTI_SUCCESS {
            tracing::debug!(rc, "cuptiProfilerHostDeinitialize failed");
        }
    }
}
