//! Hardware counters through CUPTI's Range Profiler, one hardware pass per user group.
//!
//! Sequence (reference nvidia-cupti.md §3.3, §10 strategy C), per pass on group `g`:
//! - if the enabled range-profiler object is not configured for `g`: `Disable` it, `Enable` a
//!   fresh one (with `pRangeProfilerObject` reset to NULL: a stale pointer is
//!   `CUPTI_ERROR_INVALID_PARAMETER`), and size `g`'s counter-data image with
//!   `GetCounterDataSize` for `g` just before initialising it;
//! - `CounterDataImageInitialize` (always before `SetConfig`: the other order segfaults),
//!   `SetConfig(g)` with `CUPTI_UserReplay` + `CUPTI_AutoRange`, one range per pass, `Start`;
//! - the kernel executes;
//! - `Stop` (must report every pass submitted: a group is one pass), `DecodeData`,
//!   `EvaluateToGpuValues` for range 0.
//!
//! Switching `SetConfig` between groups on one enabled object is faster but silently wrong
//! (metrics absent from the first group read NaN), which is why each change of group pays a
//! `Disable` + `Enable`. With one group the object stays enabled across dispatches.
//!
//! Groups are packed into hardware passes: whole groups whose union this device collects in
//! one pass (the counter-availability image decides) share one configuration, so one
//! execution measures them all and the configuration rarely changes (reference
//! nvidia-cupti.md §10: a change costs ≈ 150 ms, a pass on the programmed configuration
//! ≈ 4–30 ms). Each group is still collected whole within one pass. `KREPLAY_PACK_GROUPS=0`
//! gives every group its own pass.

use crate::catalog::host::host_api_lock;
use crate::catalog::identity_cache;
use crate::cupti_call;
use crate::debug;
use crate::error::{c_text, CudaError};
use kreplay_core::catalog::{executions_needed, pack_groups};
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::{self as sys, struct_size, CUcontext};
use std::ffi::CString;
use std::ptr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// One counter group's host-side state: its metric names, the host object that evaluates them,
/// and the config image programmed into the hardware.
struct GroupConfig {
    _names: Vec<CString>,
    name_ptrs: Vec<*const std::ffi::c_char>,
    host: *mut sys::CUpti_Profiler_Host_Object,
    config_image: Vec<u8>,
}

/// One group's values from a hardware pass: `(group, per range the values in the order the
/// group lists its metrics)`.
pub type GroupValues = (usize, Vec<Vec<f64>>);

/// The Range Profiler of one CUDA context.
pub struct RangeProfiler {
    cupti: &'static Cupti,
    ctx: CUcontext,
    chip: String,
    /// [`identity_cache::digest`] of the chip and the counter-availability image read here.
    identity: String,
    /// One configuration per hardware pass (the union of the groups it collects).
    passes: Vec<GroupConfig>,
    /// For each user group: its hardware pass, and where its metrics sit in that pass's list.
    layout: Vec<(usize, Vec<usize>)>,
    sequence: Sequence,
    /// One object (`Reenable`, `Switch`) or one per group (`ObjectPerGroup`); NULL = not enabled.
    objects: Vec<*mut sys::CUpti_RangeProfiler_Object>,
    configured_pass: Option<usize>,
    /// One counter-data image per group, sized for that group's metrics and `image_ranges`.
    counter_data: Vec<Vec<u8>>,
    /// How many ranges each group's image holds.
    image_ranges: Vec<usize>,
    /// Configuration changes (a new object, or a switch of config) since creation.
    pub config_changes: u64,
    /// The ranges object 0 was first configured for since its `Enable` (see `object_for`).
    first_ranges: Option<usize>,
    /// Time spent starting passes, and how many: `[0]` with a change of configuration, `[1]`
    /// on the configuration already programmed (for `KREPLAY_DEBUG`).
    start_time: [Duration; 2],
    starts: [u64; 2],
}

/// How a pass switches the hardware to its group's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequence {
    /// `Disable` + `Enable` whenever the group changes (reference §10 strategy C): correct,
    /// ≈150 ms per change on an H200. The default.
    Reenable,
    /// `SetConfig` of another group on the one enabled object (strategy B): fast but CUPTI 13.0
    /// evaluates only the first group's metrics (NaN for the rest). Kept to prove that the GPU
    /// check catches it; never the default.
    Switch,
    /// One range-profiler object per group, each enabled once and kept (untried in the
    /// reference); the objects take turns on the context.
    ObjectPerGroup,
}

/// Environment variable choosing the [`Sequence`] (`reenable`, `switch`, `object-per-group`).
pub const ENV_SEQUENCE: &str = "KREPLAY_RANGE_PROFILER_SEQUENCE";

/// Environment variable switching group packing off (`0`) or on (`1`, the default).
pub const ENV_PACK: &str = "KREPLAY_PACK_GROUPS";

/// Whether groups are packed into shared hardware passes (`KREPLAY_PACK_GROUPS`, default on).
pub fn packing_from_env() -> Result<bool, CudaError> {
    let text = std::env::var(ENV_PACK).unwrap_or_default();
    match text.trim() {
        "" | "1" => Ok(true),
        "0" => Ok(false),
        _ => Err(CudaError::Load(format!(
            "{ENV_PACK}={text:?} is not 0 or 1; use 1 (the default) to let groups share hardware passes, 0 to give each group its own"
        ))),
    }
}

/// The metrics of `members` in order, each once.
fn union_metrics(groups: &[Vec<String>], members: &[usize]) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for &g in members {
        for m in &groups[g] {
            if !names.contains(m) {
                names.push(m.clone());
            }
        }
    }
    names
}

impl Sequence {
    pub fn parse(text: &str) -> Option<Sequence> {
        match text.trim() {
            "" | "reenable" => Some(Sequence::Reenable),
            "switch" => Some(Sequence::Switch),
            "object-per-group" => Some(Sequence::ObjectPerGroup),
            _ => None,
        }
    }

    /// The sequence `KREPLAY_RANGE_PROFILER_SEQUENCE` names; an unknown name is an error.
    pub fn from_env() -> Result<Sequence, CudaError> {
        let text = std::env::var(ENV_SEQUENCE).unwrap_or_default();
        Sequence::parse(&text).ok_or_else(|| {
            CudaError::Load(format!(
                "{ENV_SEQUENCE}={text:?} is not a range-profiler sequence; use reenable (the default), object-per-group or switch"
            ))
        })
    }
}

// SAFETY: the raw pointers are CUPTI handles, used only under the backend's lock.
unsafe impl Send for RangeProfiler {}

static PROFILER_INIT: OnceLock<Result<(), CudaError>> = OnceLock::new();

fn initialize_profiler(cupti: &'static Cupti) -> Result<(), CudaError> {
    PROFILER_INIT
        .get_or_init(|| {
            let mut params = sys::CUpti_Profiler_Initialize_Params {
                structSize: struct_size!(sys::CUpti_Profiler_Initialize_Params, pPriv),
                ..Default::default()
            };
            // SAFETY: a plain struct of the documented size.
            unsafe { cupti_call!(cupti, cuptiProfilerInitialize(&mut params)) }
        })
        .clone()
}

impl RangeProfiler {
    /// Prepares the groups for the context `ctx` of device `device_index`. Each group must be
    /// collectable in one hardware pass on this device (its counter-availability image decides).
    pub fn new(
        cupti: &'static Cupti,
        ctx: CUcontext,
        device: sys::CUdevice,
        device_index: usize,
        groups: &[Vec<String>],
    ) -> Result<Self, CudaError> {
        let mut laps = debug::Laps::start();
        initialize_profiler(cupti)?;
        laps.lap("profiler initialisation");
        check_device_supported(cupti, device)?;
        laps.lap("device check");
        let chip = chip_name(cupti, device_index)?;
        laps.lap("chip name");
        let availability = counter_availability(cupti, ctx)?;
        laps.lap("availability image");
        let identity = identity_cache::digest(&chip.to_ascii_uppercase(), &availability);
        // CUPTI's host API is not safe from several threads at once (set-ups of two devices
        // may run together, see `CudaBackend::prepare_counters`).
        let _host = host_api_lock();
        for (index, metrics) in groups.iter().enumerate() {
            let mut config = GroupConfig::build(cupti, &chip, &availability, metrics)?;
            let passes = config.passes(cupti);
            config.deinitialize(cupti);
            let passes = passes?;
            if passes != 1 {
                return Err(CudaError::Load(format!(
                    "counter group {index} ({}) needs {passes} hardware passes on {chip}; split it into groups that fit one pass each (kreplay avail pmc-check)",
                    metrics.join(" ")
                )));
            }
        }
        laps.lap("group checks");
        let packed = if packing_from_env()? {
            pack_groups(groups.len(), |members| {
                let mut trial = GroupConfig::build(
                    cupti,
                    &chip,
                    &availability,
                    &union_metrics(groups, members),
                )?;
                let passes = trial.passes(cupti);
                trial.deinitialize(cupti);
                Ok::<bool, CudaError>(passes? == 1)
            })?
        } else {
            (0..groups.len()).map(|g| vec![g]).collect()
        };
        laps.lap("packing");
        let mut configs = Vec::with_capacity(packed.len());
        let mut layout = vec![(0, Vec::new()); groups.len()];
        for (pass, members) in packed.iter().enumerate() {
            let names = union_metrics(groups, members);
            for &g in members {
                let positions = groups[g]
                    .iter()
                    .map(|m| names.iter().position(|n| n == m).unwrap_or(0))
                    .collect();
                layout[g] = (pass, positions);
            }
            configs.push(GroupConfig::build(cupti, &chip, &availability, &names)?);
        }
        laps.lap("configurations");
        debug::line(&format!(
            "profiler set up in {:.1} ms: {}",
            debug::ms(laps.total()),
            laps.summary()
        ));
        let sequence = Sequence::from_env()?;
        let objects = match sequence {
            Sequence::ObjectPerGroup => vec![ptr::null_mut(); configs.len()],
            Sequence::Reenable | Sequence::Switch => vec![ptr::null_mut()],
        };
        Ok(RangeProfiler {
            cupti,
            ctx,
            chip,
            identity,
            counter_data: vec![Vec::new(); configs.len()],
            image_ranges: vec![1; configs.len()],
            passes: configs,
            layout,
            sequence,
            objects,
            configured_pass: None,
            config_changes: 0,
            first_ranges: None,
            start_time: [Duration::ZERO; 2],
            starts: [0; 2],
        })
    }

    pub fn chip(&self) -> &str {
        &self.chip
    }

    /// [`identity_cache::digest`] of this device's chip and counter-availability image.
    pub fn identity_digest(&self) -> &str {
        &self.identity
    }

    pub fn context(&self) -> CUcontext {
        self.ctx
    }

    /// Executions needed to measure `groups` (pass by pass; `None`: a pass without counters).
    pub fn executions_for(&self, groups: &[Option<usize>]) -> usize {
        let pass_of: Vec<usize> = self.layout.iter().map(|(pass, _)| *pass).collect();
        executions_needed(groups, &pass_of)
    }

    /// The groups each hardware pass collects, pass by pass.
    pub fn packing(&self) -> Vec<Vec<usize>> {
        let mut passes = vec![Vec::new(); self.passes.len()];
        for (group, (pass, _)) in self.layout.iter().enumerate() {
            passes[*pass].push(group);
        }
        passes
    }

    /// The hardware pass that collects `group`.
    fn pass_of(&self, group: usize) -> Result<usize, CudaError> {
        self.layout
            .get(group)
            .map(|(pass, _)| *pass)
            .ok_or_else(|| {
                CudaError::Load(format!(
                    "counter group {group} does not exist ({} configured)",
                    self.layout.len()
                ))
            })
    }

    /// Programs `group`'s hardware pass and starts counting; the next kernel on the context is
    /// its range.
    pub fn start(&mut self, group: usize) -> Result<(), CudaError> {
        self.start_ranges(group, 1)
    }

    /// Programs `group`'s hardware pass for up to `ranges` kernels (one automatic range each,
    /// a replay window) and starts counting.
    pub fn start_ranges(&mut self, group: usize, ranges: usize) -> Result<(), CudaError> {
        let pass = self.pass_of(group)?;
        let began = Instant::now();
        let changes = self.config_changes;
        let result = self.program_and_start(pass, ranges);
        let kind = usize::from(self.config_changes == changes);
        self.start_time[kind] += began.elapsed();
        self.starts[kind] += 1;
        result
    }

    /// For `KREPLAY_DEBUG`: how long starting passes took, with and without a change of
    /// configuration.
    pub fn start_times(&self) -> String {
        let mean = |k: usize| debug::ms(self.start_time[k]) / self.starts[k].max(1) as f64;
        format!(
            "{} start(s) with a configuration change, {:.1} ms each; {} on the programmed configuration, {:.1} ms each",
            self.starts[0],
            mean(0),
            self.starts[1],
            mean(1)
        )
    }

    fn program_and_start(&mut self, pass: usize, ranges: usize) -> Result<(), CudaError> {
        let cupti = self.cupti;
        let ranges = ranges.max(1);
        // The first start is the one a diagnostic line breaks down.
        let mut laps = (debug::enabled() && self.starts == [0, 0]).then(debug::Laps::start);
        let mut lap = |name| {
            if let Some(laps) = laps.as_mut() {
                laps.lap(name);
            }
        };
        let object = self.object_for(pass, ranges)?;
        lap("disable + enable");
        if self.image_ranges[pass] != ranges || self.counter_data[pass].is_empty() {
            let size = self.counter_data_size(object, pass, ranges)?;
            self.counter_data[pass] = vec![0u8; size];
            self.image_ranges[pass] = ranges;
        }
        lap("counter data size");
        let counter_data = &mut self.counter_data[pass];
        let mut init = sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_CounterDataImage_Initialize_Params,
                pCounterData
            ),
            pRangeProfilerObject: object,
            counterDataSize: counter_data.len(),
            pCounterData: counter_data.as_mut_ptr(),
            ..Default::default()
        };
        // SAFETY: the image buffer outlives the object's use of it (kept in self).
        unsafe {
            cupti_call!(
                cupti,
                cuptiRangeProfilerCounterDataImageInitialize(&mut init)
            )?
        };
        lap("image initialisation");
        let config = &self.passes[pass];
        let mut set = sys::CUpti_RangeProfiler_SetConfig_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_SetConfig_Params,
                targetNestingLevel
            ),
            pRangeProfilerObject: object,
            configSize: config.config_image.len(),
            pConfig: config.config_image.as_ptr(),
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
        // SAFETY: config image and counter data are owned by self.
        unsafe { cupti_call!(cupti, cuptiRangeProfilerSetConfig(&mut set))? };
        lap("SetConfig");
        let mut start = sys::CUpti_RangeProfiler_Start_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Start_Params, pRangeProfilerObject),
            pRangeProfilerObject: object,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(cupti, cuptiRangeProfilerStart(&mut start))? };
        lap("Start");
        if let Some(laps) = laps {
            debug::line(&format!("first counter start: {}", laps.summary()));
        }
        Ok(())
    }

    /// Stops counting and evaluates, for each range of the pass (at most `ranges`, in
    /// execution order), every group its hardware pass collected: `(group, per range the
    /// values in the order the group lists its metrics)`, `group` first.
    pub fn stop_ranges(
        &mut self,
        group: usize,
        ranges: usize,
    ) -> Result<Vec<GroupValues>, CudaError> {
        let pass = self.pass_of(group)?;
        let cupti = self.cupti;
        let object = self.current_object(pass);
        if self.configured_pass != Some(pass) || object.is_null() {
            return Err(CudaError::Load(format!(
                "counters of group {group} (hardware pass {pass}) were not started"
            )));
        }
        let mut stop = sys::CUpti_RangeProfiler_Stop_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Stop_Params, isAllPassSubmitted),
            pRangeProfilerObject: object,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(cupti, cuptiRangeProfilerStop(&mut stop))? };
        if stop.isAllPassSubmitted == 0 {
            // The configuration needs a second pass: it no longer matches one hardware pass.
            self.disable_all();
            return Err(CudaError::Load(format!(
                "hardware pass {pass} (counter group {group}) did not complete in one pass on {}",
                self.chip
            )));
        }
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
        let counter_data = &self.counter_data[pass];
        let _host = host_api_lock();
        let mut info = sys::CUpti_RangeProfiler_GetCounterDataInfo_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_GetCounterDataInfo_Params,
                numTotalRanges
            ),
            pCounterDataImage: counter_data.as_ptr(),
            counterDataImageSize: counter_data.len(),
            ..Default::default()
        };
        // SAFETY: the image is owned by self.
        unsafe { cupti_call!(cupti, cuptiRangeProfilerGetCounterDataInfo(&mut info))? };
        if info.numTotalRanges == 0 {
            return Err(CudaError::Load(format!(
                "the range profiler recorded no kernel for group {group} ({} ranges dropped)",
                decode.numOfRangeDropped
            )));
        }
        let config = &mut self.passes[pass];
        let mut results = Vec::new();
        for range in 0..info.numTotalRanges.min(ranges.max(1)) {
            let mut values = vec![f64::NAN; config.name_ptrs.len()];
            let mut eval = sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params {
                structSize: struct_size!(
                    sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params,
                    pMetricValues
                ),
                pHostObject: config.host,
                pCounterDataImage: counter_data.as_ptr(),
                counterDataImageSize: counter_data.len(),
                rangeIndex: range,
                ppMetricNames: config.name_ptrs.as_mut_ptr(),
                numMetrics: config.name_ptrs.len(),
                pMetricValues: values.as_mut_ptr(),
                ..Default::default()
            };
            // SAFETY: `values` has one slot per metric.
            unsafe { cupti_call!(cupti, cuptiProfilerHostEvaluateToGpuValues(&mut eval))? };
            results.push(values);
        }
        let mut collected: Vec<GroupValues> = self
            .layout
            .iter()
            .enumerate()
            .filter(|(_, (collected_by, _))| *collected_by == pass)
            .map(|(g, (_, positions))| {
                let values = results
                    .iter()
                    .map(|range| positions.iter().map(|&i| range[i]).collect())
                    .collect();
                (g, values)
            })
            .collect();
        collected.sort_by_key(|(g, _)| *g != group);
        Ok(collected)
    }

    /// The object hardware pass `pass` runs on (NULL when not enabled).
    fn current_object(&self, pass: usize) -> *mut sys::CUpti_RangeProfiler_Object {
        match self.sequence {
            Sequence::ObjectPerGroup => self.objects.get(pass).copied().unwrap_or(ptr::null_mut()),
            Sequence::Reenable | Sequence::Switch => self.objects[0],
        }
    }

    /// Makes hardware pass `pass`'s configuration the next one, as the sequence prescribes, and returns the
    /// object to start.
    fn object_for(
        &mut self,
        pass: usize,
        ranges: usize,
    ) -> Result<*mut sys::CUpti_RangeProfiler_Object, CudaError> {
        let slot = match self.sequence {
            Sequence::ObjectPerGroup => pass,
            Sequence::Reenable | Sequence::Switch => 0,
        };
        // An object measures whole passes only up to the ranges of its first configuration (on
        // an H200, first configured for 1 range, it measured 2 of a window of 6): a pass that
        // needs more starts on a fresh object, as a change of configuration does.
        let outgrown = self.sequence == Sequence::Reenable
            && self.first_ranges.is_some_and(|first| ranges > first);
        let changing = self.configured_pass != Some(pass) || outgrown;
        if self.sequence == Sequence::Reenable && changing {
            self.disable(0);
        }
        if self.objects[slot].is_null() {
            self.objects[slot] = self.enable()?;
            if slot == 0 {
                self.first_ranges = Some(ranges);
            }
        }
        if changing {
            // GetCounterDataSize for the pass just before its image is initialised (asking
            // for several groups up front made the first initialisation fail, reference §10):
            // an empty image makes `start_ranges` size it now.
            if self.sequence == Sequence::Switch {
                self.counter_data[pass].clear();
            }
            self.configured_pass = Some(pass);
            self.config_changes += 1;
        }
        Ok(self.objects[slot])
    }

    fn enable(&self) -> Result<*mut sys::CUpti_RangeProfiler_Object, CudaError> {
        let mut enable = sys::CUpti_RangeProfiler_Enable_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Enable_Params, pRangeProfilerObject),
            ctx: self.ctx,
            // A stale pointer here is CUPTI_ERROR_INVALID_PARAMETER: always start from NULL.
            pRangeProfilerObject: ptr::null_mut(),
            ..Default::default()
        };
        // SAFETY: documented struct; CUPTI writes the new object pointer.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerEnable(&mut enable))? };
        Ok(enable.pRangeProfilerObject)
    }

    fn counter_data_size(
        &mut self,
        object: *mut sys::CUpti_RangeProfiler_Object,
        pass: usize,
        ranges: usize,
    ) -> Result<usize, CudaError> {
        let config = &mut self.passes[pass];
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
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerGetCounterDataSize(&mut size))? };
        Ok(size.counterDataSize)
    }

    fn disable(&mut self, slot: usize) {
        let object = self.objects[slot];
        if object.is_null() {
            return;
        }
        let mut disable = sys::CUpti_RangeProfiler_Disable_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_Disable_Params,
                pRangeProfilerObject
            ),
            pRangeProfilerObject: object,
            ..Default::default()
        };
        // SAFETY: documented struct; the object is not used again.
        let result = unsafe { cupti_call!(self.cupti, cuptiRangeProfilerDisable(&mut disable)) };
        if let Err(e) = result {
            tracing::debug!("{e}");
        }
        self.objects[slot] = ptr::null_mut();
        if slot == 0 {
            self.first_ranges = None;
        }
        self.configured_pass = None;
        // A fresh object needs its images initialised again.
        for data in &mut self.counter_data {
            data.clear();
        }
    }

    fn disable_all(&mut self) {
        for slot in 0..self.objects.len() {
            self.disable(slot);
        }
    }

    /// Stops a started pass whose kernel never ran (the application's launch failed), dropping
    /// its counters, so that the next pass starts cleanly.
    pub fn abandon(&mut self, group: usize) {
        if let Err(e) = self.stop_unread(group) {
            tracing::debug!("{e}");
        }
    }

    /// Programs group 0's hardware pass into the hardware for up to `ranges` kernels and stops
    /// again with no kernel in between: the first `Start` of a configuration costs ≈ 135–240
    /// ms on an H200, a later one on the configuration already programmed 2–20 ms. Done by the
    /// set-up thread (`CudaBackend::prepare_counters`) while the application works, so that
    /// its first dispatch finds the configuration programmed. `ranges` is the most any later
    /// pass asks for: an object measures whole passes only up to the ranges of its first
    /// configuration (on an H200, after a first configuration for 1 range a replay window of
    /// 6 kernels measured only 2, `bench/probes/warm_up_variants.sh`), so a pass asking for
    /// more would start on a fresh object (`object_for`). On failure nothing stays enabled.
    /// `KREPLAY_WARM_UP=0` (a diagnostic setting) skips it.
    pub fn warm_up(&mut self, ranges: usize) -> Result<(), CudaError> {
        if std::env::var("KREPLAY_WARM_UP").is_ok_and(|v| v.trim() == "0") {
            return Ok(());
        }
        let warmed = self
            .start_ranges(0, ranges)
            .and_then(|()| self.stop_unread(0));
        if warmed.is_err() {
            self.disable_all();
        }
        warmed
    }

    /// `Stop` of `group`'s started pass without reading its counters.
    fn stop_unread(&mut self, group: usize) -> Result<(), CudaError> {
        let pass = self.pass_of(group)?;
        let object = self.current_object(pass);
        if self.configured_pass != Some(pass) || object.is_null() {
            return Ok(());
        }
        let mut stop = sys::CUpti_RangeProfiler_Stop_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Stop_Params, isAllPassSubmitted),
            pRangeProfilerObject: object,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerStop(&mut stop)) }
    }

    pub fn sequence(&self) -> Sequence {
        self.sequence
    }
}

impl Drop for RangeProfiler {
    fn drop(&mut self) {
        self.disable_all();
        for config in &mut self.passes {
            config.deinitialize(self.cupti);
        }
    }
}

impl GroupConfig {
    fn build(
        cupti: &'static Cupti,
        chip: &str,
        availability: &[u8],
        metrics: &[String],
    ) -> Result<Self, CudaError> {
        let chip_c = CString::new(chip).map_err(|_| CudaError::Load("bad chip name".into()))?;
        let names: Vec<CString> = metrics
            .iter()
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
            pCounterAvailabilityImage: availability.as_ptr(),
            ..Default::default()
        };
        // SAFETY: strings and image outlive the call.
        unsafe { cupti_call!(cupti, cuptiProfilerHostInitialize(&mut init))? };
        let mut config = GroupConfig {
            _names: Vec::new(),
            name_ptrs: Vec::new(),
            host: init.pHostObject,
            config_image: Vec::new(),
        };
        let mut add = sys::CUpti_Profiler_Host_ConfigAddMetrics_Params {
            structSize: struct_size!(sys::CUpti_Profiler_Host_ConfigAddMetrics_Params, numMetrics),
            pHostObject: config.host,
            ppMetricNames: name_ptrs.as_mut_ptr(),
            numMetrics: name_ptrs.len(),
            ..Default::default()
        };
        // SAFETY: name pointers are valid for the call.
        unsafe { cupti_call!(cupti, cuptiProfilerHostConfigAddMetrics(&mut add)) }.map_err(
            |e| {
                CudaError::Load(format!(
                    "{e} (metrics: {}; list valid names with `kreplay avail list`)",
                    metrics.join(" ")
                ))
            },
        )?;
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

    fn passes(&mut self, cupti: &'static Cupti) -> Result<usize, CudaError> {
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

    fn deinitialize(&mut self, cupti: &'static Cupti) {
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

fn check_device_supported(cupti: &'static Cupti, device: sys::CUdevice) -> Result<(), CudaError> {
    let mut params = sys::CUpti_Profiler_DeviceSupported_Params {
        structSize: struct_size!(sys::CUpti_Profiler_DeviceSupported_Params, api),
        cuDevice: device,
        api: sys::CUpti_Profiler_API_CUPTI_PROFILER_RANGE_PROFILING,
        ..Default::default()
    };
    // SAFETY: documented struct.
    unsafe { cupti_call!(cupti, cuptiProfilerDeviceSupported(&mut params))? };
    let supported = sys::CUpti_Profiler_Support_Level_CUPTI_PROFILER_CONFIGURATION_SUPPORTED;
    if params.isSupported == supported {
        return Ok(());
    }
    let mut reasons = Vec::new();
    for (level, what) in [
        (
            params.architecture,
            "the GPU architecture (compute capability 7.5 or newer needed)",
        ),
        (params.sli, "SLI"),
        (params.vGpu, "vGPU without profiling enabled"),
        (params.confidentialCompute, "confidential computing"),
        (params.cmp, "a CMP (mining) GPU"),
        (params.wsl, "WSL"),
    ] {
        if level != supported
            && level != sys::CUpti_Profiler_Support_Level_CUPTI_PROFILER_CONFIGURATION_UNKNOWN
        {
            reasons.push(what);
        }
    }
    Err(CudaError::Load(format!(
        "CUPTI range profiling is not supported on CUDA device {device}: {}",
        if reasons.is_empty() {
            "reason unknown".to_string()
        } else {
            reasons.join(", ")
        }
    )))
}

/// The chip name CUPTI uses for device `device_index` (e.g. `GH100`).
pub fn chip_name(cupti: &'static Cupti, device_index: usize) -> Result<String, CudaError> {
    let mut params = sys::CUpti_Device_GetChipName_Params {
        structSize: struct_size!(sys::CUpti_Device_GetChipName_Params, pChipName),
        deviceIndex: device_index,
        ..Default::default()
    };
    // SAFETY: CUPTI writes a pointer to a static string.
    unsafe { cupti_call!(cupti, cuptiDeviceGetChipName(&mut params))? };
    // SAFETY: a static string of CUPTI, or NULL.
    Ok(unsafe { c_text(params.pChipName) }.unwrap_or_default())
}

fn counter_availability(cupti: &'static Cupti, ctx: CUcontext) -> Result<Vec<u8>, CudaError> {
    let mut params = sys::CUpti_Profiler_GetCounterAvailability_Params {
        structSize: struct_size!(
            sys::CUpti_Profiler_GetCounterAvailability_Params,
            pCounterAvailabilityImage
        ),
        ctx,
        ..Default::default()
    };
    // SAFETY: first call asks for the size only (NULL image).
    unsafe { cupti_call!(cupti, cuptiProfilerGetCounterAvailability(&mut params))? };
    let mut image = vec![0u8; params.counterAvailabilityImageSize];
    params.pCounterAvailabilityImage = image.as_mut_ptr();
    // SAFETY: the buffer has the size CUPTI reported.
    unsafe { cupti_call!(cupti, cuptiProfilerGetCounterAvailability(&mut params))? };
    // On return the size is the number of bytes copied (as the CLI's catalog reads it).
    image.truncate(params.counterAvailabilityImageSize);
    Ok(image)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn union_keeps_first_occurrence_order() {
        let groups = vec![
            vec!["a".to_string(), "b".to_string()],
            vec!["b".to_string(), "c".to_string()],
        ];
        assert_eq!(union_metrics(&groups, &[0, 1]), ["a", "b", "c"]);
        assert_eq!(union_metrics(&groups, &[1, 0]), ["b", "c", "a"]);
    }

    #[test]
    fn sequence_names_parse_and_default_to_reenable() {
        assert_eq!(Sequence::parse(""), Some(Sequence::Reenable));
        assert_eq!(Sequence::parse("reenable"), Some(Sequence::Reenable));
        assert_eq!(Sequence::parse("switch"), Some(Sequence::Switch));
        assert_eq!(
            Sequence::parse("object-per-group"),
            Some(Sequence::ObjectPerGroup)
        );
        assert_eq!(Sequence::parse("fast"), None);
    }
}
