//! CUPTI's Range Profiler object of one context ([`RangeProfilerObject`]): enabled and disabled
//! (on drop too), configured, started and stopped, its counter data initialised and decoded.
//!
//! `SetConfig` hands CUPTI the configuration's image and the counter-data buffer, which it keeps
//! using at `Start`, `Stop` and `DecodeData`: the caller keeps both alive, unmoved, until the
//! next `SetConfig` or the object's `Disable`.

use super::host_config::HostConfig;
use crate::cupti_call;
use crate::error::CudaError;
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::{self as sys, struct_size, CUcontext};
use std::ptr;

/// The range-profiler object of a context: enabled ([`Self::enable`]) or not.
pub struct RangeProfilerObject {
    cupti: &'static Cupti,
    ctx: CUcontext,
    /// NULL = not enabled.
    raw: *mut sys::CUpti_RangeProfiler_Object,
}

// SAFETY: CUPTI handles, valid on any thread; used by one thread at a time (the owner's `&mut`).
unsafe impl Send for RangeProfilerObject {}

impl RangeProfilerObject {
    /// The object of context `ctx`, not enabled yet.
    pub fn new(cupti: &'static Cupti, ctx: CUcontext) -> Self {
        RangeProfilerObject {
            cupti,
            ctx,
            raw: ptr::null_mut(),
        }
    }

    pub fn context(&self) -> CUcontext {
        self.ctx
    }

    pub fn is_enabled(&self) -> bool {
        !self.raw.is_null()
    }

    /// `cuptiRangeProfilerEnable` on the context.
    pub fn enable(&mut self) -> Result<(), CudaError> {
        let mut enable = sys::CUpti_RangeProfiler_Enable_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Enable_Params, pRangeProfilerObject),
            ctx: self.ctx,
            // A stale pointer here is CUPTI_ERROR_INVALID_PARAMETER: always start from NULL.
            pRangeProfilerObject: ptr::null_mut(),
            ..Default::default()
        };
        // SAFETY: documented struct; CUPTI writes the new object pointer.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerEnable(&mut enable))? };
        self.raw = enable.pRangeProfilerObject;
        Ok(())
    }

    /// `cuptiRangeProfilerDisable` when enabled (a failure is only logged: the object is gone
    /// either way).
    pub fn disable(&mut self) {
        if self.raw.is_null() {
            return;
        }
        let mut disable = sys::CUpti_RangeProfiler_Disable_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_Disable_Params,
                pRangeProfilerObject
            ),
            pRangeProfilerObject: self.raw,
            ..Default::default()
        };
        // SAFETY: documented struct; the object is not used again.
        let result = unsafe { cupti_call!(self.cupti, cuptiRangeProfilerDisable(&mut disable)) };
        if let Err(e) = result {
            tracing::debug!("{e}");
        }
        self.raw = ptr::null_mut();
    }

    /// `cuptiRangeProfilerStart`.
    pub fn start(&mut self) -> Result<(), CudaError> {
        let mut start = sys::CUpti_RangeProfiler_Start_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Start_Params, pRangeProfilerObject),
            pRangeProfilerObject: self.raw,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerStart(&mut start)) }
    }

    /// `cuptiRangeProfilerStop`; returns whether every pass of the configuration has been
    /// submitted.
    pub fn stop(&mut self) -> Result<bool, CudaError> {
        let mut stop = sys::CUpti_RangeProfiler_Stop_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Stop_Params, isAllPassSubmitted),
            pRangeProfilerObject: self.raw,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerStop(&mut stop))? };
        Ok(stop.isAllPassSubmitted != 0)
    }

    /// The size of a counter-data image for `config`'s metrics and `ranges` ranges.
    pub fn counter_data_size(
        &self,
        config: &mut HostConfig,
        ranges: usize,
    ) -> Result<usize, CudaError> {
        let mut size = sys::CUpti_RangeProfiler_GetCounterDataSize_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_GetCounterDataSize_Params,
                counterDataSize
            ),
            pRangeProfilerObject: self.raw,
            pMetricNames: config.name_ptrs.as_mut_ptr(),
            numMetrics: config.name_ptrs.len(),
            maxNumOfRanges: ranges,
            maxNumRangeTreeNodes: ranges as u32,
            ..Default::default()
        };
        // SAFETY: the metric name pointers live as long as `config`.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerGetCounterDataSize(&mut size))? };
        Ok(size.counterDataSize)
    }

    /// Initialises `counter_data` (empty, ready for the configuration's passes).
    pub fn initialize_counter_data(&self, counter_data: &mut [u8]) -> Result<(), CudaError> {
        let mut init = sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
                pCounterData
            ),
            pRangeProfilerObject: self.raw,
            counterDataSize: counter_data.len(),
            pCounterData: counter_data.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the image buffer outlives the object's use of it (see the module's note).
        unsafe {
            cupti_call!(
                self.cupti,
                cuptiRangeProfilerCounterDataImageInitialize(&mut init)
            )
        }
    }

    /// `SetConfig` with `config`'s image and `counter_data`: user replay, automatic ranges (up to
    /// `ranges` per pass), one nesting level, from pass 0. Both stay in use by CUPTI (see the
    /// module's note).
    pub fn set_config(
        &self,
        config: &HostConfig,
        counter_data: &mut [u8],
        ranges: usize,
    ) -> Result<(), CudaError> {
        let image = config.config_image();
        let mut set = sys::CUpti_RangeProfiler_SetConfig_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_SetConfig_Params,
                targetNestingLevel
            ),
            pRangeProfilerObject: self.raw,
            configSize: image.len(),
            pConfig: image.as_ptr(),
            counterDataImageSize: counter_data.len(),
            pCounterDataImage: counter_data.as_mut_ptr(),
            range: sys::CUpti_ProfilerRange_CUPTI_AutoRange,
            replayMode: sys::CUpti_ProfilerReplayMode_CUPTI_UserReplay,
            maxRangesPerPass: ranges,
            numNestingLevels: 1,
            minNestingLevel: 1,
            passIndex: 0,
            targetNestingLevel: 1,
            ..Default::default()
        };
        // SAFETY: config image and counter data are kept alive by the caller.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerSetConfig(&mut set)) }
    }

    /// `DecodeData` into the configured counter data; returns the ranges CUPTI dropped.
    pub fn decode(&self) -> Result<usize, CudaError> {
        let mut decode = sys::CUpti_RangeProfiler_DecodeData_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_DecodeData_Params,
                numOfRangeDropped
            ),
            pRangeProfilerObject: self.raw,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerDecodeData(&mut decode))? };
        Ok(decode.numOfRangeDropped)
    }
}

impl Drop for RangeProfilerObject {
    fn drop(&mut self) {
        self.disable();
    }
}

/// The ranges a decoded counter-data image holds (`cuptiRangeProfilerGetCounterDataInfo`).
pub fn counter_data_ranges(cupti: &'static Cupti, counter_data: &[u8]) -> Result<usize, CudaError> {
    let mut info = sys::CUpti_RangeProfiler_GetCounterDataInfo_Params {
        structSize: struct_size!(
            sys::CUpti_RangeProfiler_GetCounterDataInfo_Params,
            numTotalRanges
        ),
        pCounterDataImage: counter_data.as_ptr(),
        counterDataImageSize: counter_data.len(),
        ..Default::default()
    };
    // SAFETY: the image outlives the call.
    unsafe { cupti_call!(cupti, cuptiRangeProfilerGetCounterDataInfo(&mut info))? };
    Ok(info.numTotalRanges)
}
