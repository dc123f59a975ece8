//! Checked calls into CUPTI's Profiler Host API (`cupti_profiler_host.h`), which answers metric
//! lists, metric properties, config images and pass counts from a chip name alone — no GPU,
//! no CUDA context.
//!
//! [`HostObject`] owns one `CUpti_Profiler_Host_Object` and deinitialises it on drop. Metrics
//! added with [`HostObject::add_metrics`] accumulate in the object, so every pass-count query uses
//! a fresh object (as NVIDIA's `cupti_profiler_host_util.h` does).

use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::struct_size;
use kreplay_cupti_sys::types::*;
use std::ffi::{c_char, CStr, CString};
use std::sync::{Mutex, MutexGuard};

/// CUPTI's host API is not safe to call from several threads at once: concurrent
/// `cuptiProfilerHostInitialize` calls fail with `CUPTI_ERROR_UNKNOWN` (seen in our parallel
/// tests). Every use of it in the process takes this lock; a [`HostObject`] holds it for its
/// whole life, so code that needs a second host object must not create it while one is alive.
static HOST_API: Mutex<()> = Mutex::new(());

/// Holds the process-wide host-API lock (for other users of CUPTI's host API, such as the
/// range profiler's evaluation, so that they do not race with the catalog).
pub fn host_api_lock() -> MutexGuard<'static, ()> {
    // A panic while holding it leaves no state behind worth refusing to continue over.
    HOST_API
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A CUPTI call that did not return `CUPTI_SUCCESS`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{call} failed: {message} ({code_name}){}", kreplay_cuda::error::cupti_hint(*code as i32))]
pub struct CuptiCallError {
    pub call: &'static str,
    pub code: CUptiResult,
    pub code_name: String,
    pub message: String,
}

/// The name (`CUPTI_ERROR_INVALID_METRIC_NAME`) and message CUPTI gives for a result code.
fn describe_result(cupti: &Cupti, code: CUptiResult) -> (String, String) {
    let read = |f: &Result<
        unsafe extern "C" fn(CUptiResult, *mut *const c_char) -> CUptiResult,
        libloading::Error,
    >| {
        let f = f.as_ref().ok()?;
        let mut text: *const c_char = std::ptr::null();
        // SAFETY: CUPTI stores a pointer to a static string.
        let rc = unsafe { f(code, &mut text) };
        if rc != CUptiResult_CUPTI_SUCCESS || text.is_null() {
            return None;
        }
        // SAFETY: a NUL-terminated static string owned by CUPTI.
        Some(
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned(),
        )
    };
    let name = read(&cupti.cuptiGetResultString).unwrap_or_else(|| format!("CUptiResult {code}"));
    let message = read(&cupti.cuptiGetErrorMessage).unwrap_or_else(|| name.clone());
    (name, message)
}

/// Turns a CUPTI result into `Result`, with CUPTI's own name and message for failures.
pub fn check(cupti: &Cupti, call: &'static str, code: CUptiResult) -> Result<(), CuptiCallError> {
    if code == CUptiResult_CUPTI_SUCCESS {
        return Ok(());
    }
    let (code_name, message) = describe_result(cupti, code);
    Err(CuptiCallError {
        call,
        code,
        code_name,
        message,
    })
}

/// Resolves a function pointer of the loaded library, or a call error saying it is missing.
macro_rules! function {
    ($cupti:expr, $name:ident) => {
        $cupti.$name.as_ref().map_err(|e| CuptiCallError {
            call: stringify!($name),
            code: CUptiResult_CUPTI_ERROR_NOT_SUPPORTED,
            code_name: "missing symbol".to_string(),
            message: format!("this libcupti does not export it ({e}); use CUPTI 13.0 or newer"),
        })
    };
}
pub(crate) use function;

/// Copies a C string CUPTI returned (NULL becomes empty).
///
/// # Safety
/// `text` is NULL or points at a NUL-terminated string that lives for the call.
unsafe fn owned(text: *const c_char) -> String {
    if text.is_null() {
        String::new()
    } else {
        CStr::from_ptr(text).to_string_lossy().into_owned()
    }
}

/// Copies an array of `count` C strings.
///
/// # Safety
/// `names` is NULL (then `count` is ignored) or points at `count` valid C strings.
unsafe fn owned_list(names: *const *const c_char, count: usize) -> Vec<String> {
    if names.is_null() {
        return Vec::new();
    }
    std::slice::from_raw_parts(names, count)
        .iter()
        .map(|&name| owned(name))
        .collect()
}

/// CUPTI's three metric types, in the order `avail` lists them.
pub const METRIC_TYPES: [CUpti_MetricType; 3] = [
    CUpti_MetricType_CUPTI_METRIC_TYPE_COUNTER,
    CUpti_MetricType_CUPTI_METRIC_TYPE_RATIO,
    CUpti_MetricType_CUPTI_METRIC_TYPE_THROUGHPUT,
];

/// How `avail info` spells a metric type.
pub fn metric_type_name(metric_type: CUpti_MetricType) -> &'static str {
    const NAMES: [(CUpti_MetricType, &str); 3] = [
        (CUpti_MetricType_CUPTI_METRIC_TYPE_COUNTER, "counter"),
        (CUpti_MetricType_CUPTI_METRIC_TYPE_RATIO, "ratio"),
        (CUpti_MetricType_CUPTI_METRIC_TYPE_THROUGHPUT, "throughput"),
    ];
    NAMES
        .iter()
        .find(|(value, _)| *value == metric_type)
        .map_or("unknown", |(_, name)| name)
}

/// What `cuptiProfilerHostGetMetricProperties` says of a metric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MetricProperties {
    pub description: String,
    pub hw_unit: String,
    pub dim_unit: String,
    pub metric_type: CUpti_MetricType,
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
    pub fn base_metrics(
        &self,
        metric_type: CUpti_MetricType,
    ) -> Result<Vec<String>, CuptiCallError> {
        let f = function!(self.cupti, cuptiProfilerHostGetBaseMetrics)?;
        let mut params = CUpti_Profiler_Host_GetBaseMetrics_Params {
            structSize: struct_size!(CUpti_Profiler_Host_GetBaseMetrics_Params, numMetrics),
            pHostObject: self.object,
            metricType: metric_type,
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
        metric_type: CUpti_MetricType,
        metric: &str,
    ) -> Result<Vec<String>, CuptiCallError> {
        let f = function!(self.cupti, cuptiProfilerHostGetSubMetrics)?;
        let name = metric_cstring(metric, "cuptiProfilerHostGetSubMetrics")?;
        let mut params = CUpti_Profiler_Host_GetSubMetrics_Params {
            structSize: struct_size!(CUpti_Profiler_Host_GetSubMetrics_Params, ppSubMetrics),
            pHostObject: self.object,
            metricType: metric_type,
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
                metric_type: params.metricType,
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

fn metric_cstring(metric: &str, call: &'static str) -> Result<CString, CuptiCallError> {
    CString::new(metric).map_err(|_| CuptiCallError {
        call,
        code: CUptiResult_CUPTI_ERROR_INVALID_METRIC_NAME,
        code_name: "CUPTI_ERROR_INVALID_METRIC_NAME".to_string(),
        message: format!("metric name {metric:?} contains a NUL byte"),
    })
}
