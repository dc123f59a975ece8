//! Hardware counters through CUPTI's Range Profiler, with CUPTI scheduling the hardware passes.
//!
//! User groups are packed into *hardware passes*: whole groups whose union this device collects
//! in one pass (its counter-availability image decides) share one, so one execution measures
//! them all. A replay unit measures a *schedule*: the hardware passes its groups need, in order
//! of first use. A schedule is ONE configuration image built with one
//! `cuptiProfilerHostConfigAddMetrics` call per hardware pass: each call is a pass group of its
//! own, so pass k of the image collects exactly the k-th hardware pass's metrics and every user
//! group is measured whole in one execution (checked on GH100 with `NVPW_Config_GetRawCounters`,
//! and on the H200 by `bench/probes/scheduled_passes.cu`, which gives each pass kernels of a
//! different size and finds every metric in its own pass).
//!
//! Sequence (reference nvidia-cupti.md §10 strategy A, §11), per unit:
//! - the range-profiler object stays enabled for the run; only a change of schedule (a unit that
//!   needs other groups, e.g. rotation) pays `Disable` + `Enable` (≈ 0.3 s on an H200);
//! - `CounterDataImageInitialize` (always before `SetConfig`: the other order segfaults), then
//!   `SetConfig` with `CUPTI_UserReplay` + `CUPTI_AutoRange`, `passIndex` 0, and always
//!   [`MAX_RANGES`] ranges (an object measures whole passes only up to the ranges of its first
//!   configuration);
//! - per execution: `Start`, the unit's kernels (one automatic range each), `Stop`, which
//!   advances CUPTI's pass index; the last reports every pass submitted;
//! - `DecodeData`, then every range evaluated with the schedule's host object.
//!
//! On an H200 a pass costs ≈ 20 ms to start with DRAM/L2 counters, ≈ 0 with SASS counters only,
//! and 7–20 ms to stop, against ≈ 160 ms for a `Disable` + `Enable` per group.
//!
//! `KREPLAY_RANGE_PROFILER_SEQUENCE=reenable` measures each execution on a one-pass
//! configuration of its own with `Disable` + `Enable` between them (the earlier, slow, correct
//! sequence); `switch` does the same with `SetConfig` alone, which CUPTI 13.0 evaluates wrongly
//! (NaN for every metric not in the first configuration): kept so that the GPU checks prove they
//! catch it, never the default. `KREPLAY_PACK_GROUPS=0` gives every group its own hardware pass.

use crate::catalog::host::host_api_lock;
use crate::catalog::identity_cache;
use crate::cupti_call;
use crate::debug;
use crate::error::{c_text, CudaError};
use kreplay_core::backend::UnitPlan;
use kreplay_core::catalog::pack_groups;
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::{self as sys, struct_size, CUcontext};
use std::collections::HashMap;
use std::ffi::CString;
use std::ptr;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The most kernels one execution measures (each is one range of the counter-data image).
pub const MAX_RANGES: usize = 128;

/// A configuration built on CUPTI's host API: the host object that evaluates it, its metric
/// names (in the order they were added) and the config image programmed into the hardware.
struct HostConfig {
    _names: Vec<CString>,
    name_ptrs: Vec<*const std::ffi::c_char>,
    host: *mut sys::CUpti_Profiler_Host_Object,
    config_image: Vec<u8>,
}

/// One group's values from a unit: `(group, per range the values in the order the group lists
/// its metrics)`.
pub type GroupValues = (usize, Vec<Vec<f64>>);

/// One hardware pass's values: `(pass, per range the values in the pass's metric order)`.
type PassValues = (usize, Vec<Vec<f64>>);

/// A schedule's configuration and the counter data it collects into.
struct Schedule {
    config: HostConfig,
    /// For each hardware pass of the schedule, where each of its metrics sits in `config`'s
    /// names (a metric of several passes is collected once, in the first of them).
    positions: Vec<Vec<usize>>,
    counter_data: Vec<u8>,
}

/// The unit being measured.
#[derive(Debug)]
struct Unit {
    /// Hardware passes, in order.
    passes: Vec<usize>,
    /// The hardware pass of each execution: a pass whose metrics need several of CUPTI's
    /// passes (a metric that alone does not fit one) runs that many executions in a row.
    executions: Vec<usize>,
    /// Executions stopped so far.
    stopped: usize,
    running: bool,
    /// Values per range of each hardware pass already decoded (one-pass sequences decode after
    /// every execution, the scheduled one after the last).
    values: HashMap<usize, Vec<Vec<f64>>>,
}

/// The Range Profiler of one CUDA context.
pub struct RangeProfiler {
    cupti: &'static Cupti,
    ctx: CUcontext,
    chip: String,
    /// [`identity_cache::digest`] of the chip and the counter-availability image read here.
    identity: String,
    availability: Vec<u8>,
    /// The metrics of each hardware pass (the union of the groups it collects).
    pass_metrics: Vec<Vec<String>>,
    /// Executions each hardware pass needs: 1, or for a group of metrics that alone need
    /// several passes (`--metrics sm__throughput...`), as many as CUPTI schedules for it.
    pass_spans: Vec<usize>,
    /// For each user group: its hardware pass, and where its metrics sit in that pass's list.
    layout: Vec<(usize, Vec<usize>)>,
    sequence: Sequence,
    ranges: usize,
    /// NULL = not enabled.
    object: *mut sys::CUpti_RangeProfiler_Object,
    /// The schedule the enabled object is configured for.
    enabled: Option<Vec<usize>>,
    schedules: HashMap<Vec<usize>, Schedule>,
    unit: Option<Unit>,
    /// Configuration changes (a new object, or a switch of configuration) since creation.
    pub config_changes: u64,
    /// Time spent starting passes, and how many: `[0]` with a change of configuration, `[1]`
    /// on the configuration already programmed (for `KREPLAY_DEBUG`).
    start_time: [Duration; 2],
    starts: [u64; 2],
}

/// How executions get their hardware pass's configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sequence {
    /// One image per schedule, CUPTI advancing the pass index: the default.
    Scheduled,
    /// One-pass images, `Disable` + `Enable` between them (≈ 160 ms per change, correct).
    Reenable,
    /// One-pass images switched with `SetConfig` alone: wrong on CUPTI 13.0, for the GPU
    /// check that proves the NaN check can fail.
    Switch,
}

/// Environment variable choosing the [`Sequence`] (`scheduled`, `reenable`, `switch`).
pub const ENV_SEQUENCE: &str = "KREPLAY_RANGE_PROFILER_SEQUENCE";

/// Whether groups are packed into shared hardware passes (`KREPLAY_PACK_GROUPS`, default on).
fn packing_from_env() -> Result<bool, CudaError> {
    let text = std::env::var(kreplay_core::config::ENV_PACK_GROUPS).ok();
    kreplay_core::config::group_packing(text.as_deref()).map_err(CudaError::Load)
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
            "" | "scheduled" => Some(Sequence::Scheduled),
            "reenable" => Some(Sequence::Reenable),
            "switch" => Some(Sequence::Switch),
            _ => None,
        }
    }

    /// The sequence `KREPLAY_RANGE_PROFILER_SEQUENCE` names; an unknown name is an error.
    pub fn from_env() -> Result<Sequence, CudaError> {
        let text = std::env::var(ENV_SEQUENCE).unwrap_or_default();
        Sequence::parse(&text).ok_or_else(|| {
            CudaError::Load(format!(
                "{ENV_SEQUENCE}={text:?} is not a range-profiler sequence; use scheduled (the default), reenable or switch"
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
    /// Prepares the groups for the context `ctx` of device `device_index`, for units of up to
    /// `ranges` kernels. Each group must be collectable in one hardware pass on this device
    /// (its counter-availability image decides).
    pub fn new(
        cupti: &'static Cupti,
        ctx: CUcontext,
        device: sys::CUdevice,
        device_index: usize,
        groups: &[Vec<String>],
        ranges: usize,
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
        // may run together, see `crate::setup::CounterSetup::prepare`).
        let _host = host_api_lock();
        let one_pass = |metrics: &[String]| -> Result<usize, CudaError> {
            let mut config = HostConfig::build(cupti, &chip, &availability, &[metrics.to_vec()])?;
            let passes = config.passes(cupti);
            config.deinitialize(cupti);
            passes
        };
        // A group may need several passes (the CLI allows it only for metrics that alone do
        // not fit one): it gets hardware passes of its own, never shared.
        let group_passes = groups
            .iter()
            .map(|metrics| one_pass(metrics))
            .collect::<Result<Vec<usize>, CudaError>>()?;
        laps.lap("group checks");
        let packed = if packing_from_env()? {
            pack_groups(groups.len(), |members| {
                if members.iter().any(|&g| group_passes[g] > 1) {
                    return Ok(false);
                }
                Ok::<bool, CudaError>(one_pass(&union_metrics(groups, members))? == 1)
            })?
        } else {
            (0..groups.len()).map(|g| vec![g]).collect()
        };
        laps.lap("packing");
        let mut pass_metrics = Vec::with_capacity(packed.len());
        let pass_spans = packed
            .iter()
            .map(|members| {
                members
                    .iter()
                    .map(|&g| group_passes[g])
                    .max()
                    .unwrap_or(1)
                    .max(1)
            })
            .collect();
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
            pass_metrics.push(names);
        }
        drop(_host);
        let sequence = Sequence::from_env()?;
        let mut profiler = RangeProfiler {
            cupti,
            ctx,
            chip,
            identity,
            availability,
            pass_metrics,
            pass_spans,
            layout,
            sequence,
            ranges: ranges.clamp(1, MAX_RANGES),
            object: ptr::null_mut(),
            enabled: None,
            schedules: HashMap::new(),
            unit: None,
            config_changes: 0,
            start_time: [Duration::ZERO; 2],
            starts: [0; 2],
        };
        // The schedule every replay of all groups uses, built now (off the application's
        // threads when set up at context creation).
        let all: Vec<Option<usize>> = (0..groups.len()).map(Some).collect();
        let (_, full) = profiler.plan(&all);
        if profiler.sequence == Sequence::Scheduled && !full.is_empty() {
            profiler.schedule(&full)?;
        }
        laps.lap("configurations");
        debug::line(&format!(
            "profiler set up in {:.1} ms: {}",
            debug::ms(laps.total()),
            laps.summary()
        ));
        Ok(profiler)
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

    /// Executions `group` alone needs (its hardware pass's span; 1 for an unknown group).
    pub fn executions_of_group(&self, group: usize) -> usize {
        self.layout
            .get(group)
            .map_or(1, |(pass, _)| self.pass_spans[*pass])
    }

    /// Executions each hardware pass takes (see [`RangeProfiler::packing`]).
    pub fn pass_spans(&self) -> &[usize] {
        &self.pass_spans
    }

    /// The groups each hardware pass collects, pass by pass.
    pub fn packing(&self) -> Vec<Vec<usize>> {
        let mut passes = vec![Vec::new(); self.pass_metrics.len()];
        for (group, (pass, _)) in self.layout.iter().enumerate() {
            passes[*pass].push(group);
        }
        passes
    }

    /// How a unit collecting `groups` (pass by pass; `None`: timestamps only) runs: which
    /// execution measures each pass, and the hardware pass of each execution.
    pub fn plan(&self, groups: &[Option<usize>]) -> (UnitPlan, Vec<usize>) {
        // A pass without counters rides on the first pass's execution.
        let first = groups
            .iter()
            .flatten()
            .next()
            .and_then(|g| self.layout.get(*g))
            .map_or(usize::MAX, |(pass, _)| *pass);
        let hardware: Vec<usize> = groups
            .iter()
            .map(|g| {
                g.and_then(|g| self.layout.get(g))
                    .map_or(first, |(pass, _)| *pass)
            })
            .collect();
        let span = |p: usize| self.pass_spans.get(p).copied().unwrap_or(1);
        let (plan, order) = UnitPlan::from_hardware_passes_spanning(&hardware, span);
        let order = order.into_iter().filter(|p| *p != usize::MAX).collect();
        (plan, order)
    }

    /// The schedule the enabled object is programmed for, if any.
    pub fn enabled_schedule(&self) -> Option<&[usize]> {
        self.enabled.as_deref()
    }

    /// Begins a unit measuring hardware passes `passes`, one per execution.
    pub fn begin_unit(&mut self, passes: Vec<usize>) -> Result<(), CudaError> {
        // A unit left unfinished (its counters never read) ends first: CUPTI still expects
        // its remaining passes.
        if self.unit.is_some() {
            self.abandon();
        }
        if let Some(bad) = passes.iter().find(|p| **p >= self.pass_metrics.len()) {
            return Err(CudaError::Load(format!(
                "hardware pass {bad} does not exist ({} planned)",
                self.pass_metrics.len()
            )));
        }
        let executions: Vec<usize> = passes
            .iter()
            .flat_map(|&p| std::iter::repeat_n(p, self.pass_spans[p]))
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
        let mut start = sys::CUpti_RangeProfiler_Start_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Start_Params, pRangeProfilerObject),
            pRangeProfilerObject: self.object,
            ..Default::default()
        };
        // SAFETY: documented struct, enabled object.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerStart(&mut start))? };
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
        let decoded = if self.sequence == Sequence::Scheduled {
            if all_submitted != last {
                self.unit = None;
                self.disable();
                return Err(CudaError::Load(format!(
                    "the range profiler's passes did not match the schedule {schedule:?} on {} (all passes submitted: {all_submitted} after execution {})",
                    self.chip,
                    if last { "the last" } else { "an earlier" }
                )));
            }
            if !last {
                return Ok(());
            }
            schedule
        } else {
            if !all_submitted {
                self.disable();
                return Err(CudaError::Load(format!(
                    "hardware pass {pass} did not complete in one pass on {}",
                    self.chip
                )));
            }
            vec![pass]
        };
        let values = self.decode(&decoded)?;
        if let Some(unit) = self.unit.as_mut() {
            unit.values.extend(values);
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
        if self.object.is_null() {
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
        if std::env::var("KREPLAY_WARM_UP").is_ok_and(|v| v.trim() == "0") {
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

    pub fn sequence(&self) -> Sequence {
        self.sequence
    }

    /// The schedule's configuration, built on first use.
    fn schedule(&mut self, passes: &[usize]) -> Result<&mut Schedule, CudaError> {
        if !self.schedules.contains_key(passes) {
            // A metric several passes share is added once, with the first of them: CUPTI would
            // otherwise collect it in each and report their mean (warps_launched read as
            // 32767.999999999996 on an H200), where one execution's exact value is wanted.
            let mut calls: Vec<Vec<String>> = Vec::with_capacity(passes.len());
            let mut added: Vec<String> = Vec::new();
            for pass in passes {
                let metrics = &self.pass_metrics[*pass];
                let mut call: Vec<String> = metrics
                    .iter()
                    .filter(|m| !added.contains(m))
                    .cloned()
                    .collect();
                if call.is_empty() {
                    // Every metric is collected by an earlier pass (groups given a pass each
                    // with KREPLAY_PACK_GROUPS=0): keep the pass, its values are read there.
                    call = vec![metrics[0].clone()];
                }
                added.extend(call.iter().cloned());
                calls.push(call);
            }
            let positions = passes
                .iter()
                .map(|pass| {
                    self.pass_metrics[*pass]
                        .iter()
                        .map(|m| added.iter().position(|a| a == m).unwrap_or(0))
                        .collect()
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
    fn configure(&mut self, passes: &[usize]) -> Result<(), CudaError> {
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
        let object = self.object;
        let ranges = self.ranges;
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

    /// Decodes the counter data of the schedule `passes` and evaluates every range: the
    /// values per range of each of its hardware passes (in that pass's metric order).
    fn decode(&mut self, passes: &[usize]) -> Result<Vec<PassValues>, CudaError> {
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
        let mut ranges = Vec::with_capacity(info.numTotalRanges);
        for range in 0..info.numTotalRanges {
            let config = &mut schedule.config;
            let mut values = vec![f64::NAN; config.name_ptrs.len()];
            let mut eval = sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params {
                structSize: struct_size!(
                    sys::CUpti_Profiler_Host_EvaluateToGpuValues_Params,
                    pMetricValues
                ),
                pHostObject: config.host,
                pCounterDataImage: schedule.counter_data.as_ptr(),
                counterDataImageSize: schedule.counter_data.len(),
                rangeIndex: range,
                ppMetricNames: config.name_ptrs.as_mut_ptr(),
                numMetrics: config.name_ptrs.len(),
                pMetricValues: values.as_mut_ptr(),
                ..Default::default()
            };
            // SAFETY: `values` has one slot per metric.
            unsafe { cupti_call!(cupti, cuptiProfilerHostEvaluateToGpuValues(&mut eval))? };
            ranges.push(values);
        }
        Ok(passes
            .iter()
            .zip(&schedule.positions)
            .map(|(pass, positions)| {
                let values = ranges
                    .iter()
                    .map(|range| positions.iter().map(|&i| range[i]).collect())
                    .collect();
                (*pass, values)
            })
            .collect())
    }

    fn start_object(&mut self) -> Result<(), CudaError> {
        let mut start = sys::CUpti_RangeProfiler_Start_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Start_Params, pRangeProfilerObject),
            pRangeProfilerObject: self.object,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerStart(&mut start)) }
    }

    /// `Stop`; returns whether every pass of the configuration has been submitted.
    fn stop_object(&mut self) -> Result<bool, CudaError> {
        let mut stop = sys::CUpti_RangeProfiler_Stop_Params {
            structSize: struct_size!(sys::CUpti_RangeProfiler_Stop_Params, isAllPassSubmitted),
            pRangeProfilerObject: self.object,
            ..Default::default()
        };
        // SAFETY: documented struct.
        unsafe { cupti_call!(self.cupti, cuptiRangeProfilerStop(&mut stop))? };
        Ok(stop.isAllPassSubmitted != 0)
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

    fn disable(&mut self) {
        self.enabled = None;
        if self.object.is_null() {
            return;
        }
        let mut disable = sys::CUpti_RangeProfiler_Disable_Params {
            structSize: struct_size!(
                sys::CUpti_RangeProfiler_Disable_Params,
                pRangeProfilerObject
            ),
            pRangeProfilerObject: self.object,
            ..Default::default()
        };
        // SAFETY: documented struct; the object is not used again.
        let result = unsafe { cupti_call!(self.cupti, cuptiRangeProfilerDisable(&mut disable)) };
        if let Err(e) = result {
            tracing::debug!("{e}");
        }
        self.object = ptr::null_mut();
    }
}

impl Drop for RangeProfiler {
    fn drop(&mut self) {
        self.disable();
        for schedule in self.schedules.values_mut() {
            schedule.config.deinitialize(self.cupti);
        }
    }
}

fn counter_data_size(
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
    fn build(
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

/// The hardware passes of a configuration built from `calls` (one `ConfigAddMetrics` each), on
/// `chip` without a device (no availability image): what the schedule of packed passes
/// becomes. Used by the tests below (GPU-less, with the CUPTI wheel) to check that each call
/// stays a pass of its own.
#[cfg(test)]
fn host_schedule_passes(
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
    let mut laps = debug::Laps::start();
    // SAFETY: first call asks for the size only (NULL image).
    unsafe { cupti_call!(cupti, cuptiProfilerGetCounterAvailability(&mut params))? };
    laps.lap("size");
    let mut image = vec![0u8; params.counterAvailabilityImageSize];
    params.pCounterAvailabilityImage = image.as_mut_ptr();
    // SAFETY: the buffer has the size CUPTI reported.
    unsafe { cupti_call!(cupti, cuptiProfilerGetCounterAvailability(&mut params))? };
    laps.lap("image");
    debug::line(&format!("availability image: {}", laps.summary()));
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
    fn sequence_names_parse_and_default_to_scheduled() {
        assert_eq!(Sequence::parse(""), Some(Sequence::Scheduled));
        assert_eq!(Sequence::parse("scheduled"), Some(Sequence::Scheduled));
        assert_eq!(Sequence::parse("reenable"), Some(Sequence::Reenable));
        assert_eq!(Sequence::parse("switch"), Some(Sequence::Switch));
        assert_eq!(Sequence::parse("object-per-group"), None);
    }
}

#[cfg(test)]
mod host_tests {
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
        let cupti = crate::loader::cupti().unwrap_or_else(|e| panic!("{e}"));
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
