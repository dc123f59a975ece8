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
//! - after each hardware pass's last execution: `DecodeData`, every range evaluated for that
//!   pass's metrics alone with the schedule's host object, and the counter data initialised
//!   again for the next pass (CUPTI reports a raw counter that several passes collect as their
//!   mean, which would make a ratio of two executions).
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
use kreplay_core::backend::UnitPlan;
use kreplay_core::catalog::pack_groups;
use kreplay_core::config::Switches;
use kreplay_cuda::cupti::host_config::HostConfig;
use kreplay_cuda::cupti::profiler_device::{check_device_supported, counter_availability};
use kreplay_cuda::cupti::range_profiler::{counter_data_ranges, RangeProfilerObject};
use kreplay_cuda::cupti::{CUcontext, CUdevice, Cupti};
use kreplay_cuda::debug;
use kreplay_cuda::error::CudaError;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

mod host_config;
mod schedule;

pub use kreplay_cuda::cupti::profiler_device::chip_name;

/// The most kernels one execution measures (each is one range of the counter-data image).
pub const MAX_RANGES: usize = 128;

/// One group's values from a unit: `(group, per range the values in the order the group lists
/// its metrics)`.
pub type GroupValues = (usize, Vec<Vec<f64>>);

/// One hardware pass's values: `(pass, per range the values in the pass's metric order)`.
type PassValues = (usize, Vec<Vec<f64>>);

/// A schedule's configuration and the counter data it collects into.
struct Schedule {
    config: HostConfig,
    /// For each hardware pass of the schedule, where each of its metrics sits in `config`'s
    /// names (each pass lists all of its metrics).
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
    /// [`Switches::warm_up`]: [`RangeProfiler::warm_up`] programs the counters ahead.
    warm_up: bool,
    ranges: usize,
    /// The context's range-profiler object, enabled or not.
    object: RangeProfilerObject,
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

use kreplay_core::config::ENV_SEQUENCE;

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

    /// The sequence `KREPLAY_RANGE_PROFILER_SEQUENCE` named (`text`, empty when unset); an
    /// unknown name is an error.
    pub fn from_switch(text: &str) -> Result<Sequence, CudaError> {
        Sequence::parse(text).ok_or_else(|| CudaError::Load(Sequence::unknown(text)))
    }

    /// What an unknown sequence name is told (the CLI says it before the application starts).
    pub fn unknown(text: &str) -> String {
        format!(
            "{ENV_SEQUENCE}={text:?} is not a range-profiler sequence; use scheduled (the default), reenable or switch"
        )
    }
}

/// The outcome of CUPTI's profiler initialisation, once one is kept.
static PROFILER_INIT: Mutex<Option<Result<(), CudaError>>> = Mutex::new(None);

/// CUPTI's profiler initialisation (it loads nvperf's driver layer), once per process; its
/// outcome is kept for every later caller.
pub fn initialize_profiler(cupti: &'static Cupti) -> Result<(), CudaError> {
    let mut kept = PROFILER_INIT.lock().unwrap_or_else(|e| e.into_inner());
    kept.get_or_insert_with(|| call_profiler_initialize(cupti))
        .clone()
}

fn call_profiler_initialize(cupti: &'static Cupti) -> Result<(), CudaError> {
    kreplay_cuda::cupti::profiler_device::initialize(cupti)
}

/// [`initialize_profiler`] where it may be too early: a failure is not kept, so that a later
/// caller tries again. Whether the profiler is initialised.
pub fn try_initialize_profiler(cupti: &'static Cupti) -> bool {
    let mut kept = PROFILER_INIT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(outcome) = kept.as_ref() {
        return outcome.is_ok();
    }
    match call_profiler_initialize(cupti) {
        Ok(()) => {
            *kept = Some(Ok(()));
            true
        }
        Err(e) => {
            debug::line(&format!("profiler initialisation left to the set-up: {e}"));
            false
        }
    }
}

impl RangeProfiler {
    /// Prepares the groups for the context `ctx` of device `device_index`, for units of up to
    /// `ranges` kernels. Each group must be collectable in one hardware pass on this device
    /// (its counter-availability image decides).
    pub fn new(
        cupti: &'static Cupti,
        ctx: CUcontext,
        device: CUdevice,
        device_index: usize,
        groups: &[Vec<String>],
        ranges: usize,
        switches: &Switches,
    ) -> Result<Self, CudaError> {
        if let Some(why) = &switches.refused {
            return Err(CudaError::Load(why.clone()));
        }
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
            config.passes()
        };
        // A group may need several passes (the CLI allows it only for metrics that alone do
        // not fit one): it gets hardware passes of its own, never shared.
        let group_passes = groups
            .iter()
            .map(|metrics| one_pass(metrics))
            .collect::<Result<Vec<usize>, CudaError>>()?;
        laps.lap("group checks");
        let packed = if switches.pack_groups {
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
        let sequence = Sequence::from_switch(&switches.range_profiler_sequence)?;
        let mut profiler = RangeProfiler {
            cupti,
            chip,
            identity,
            availability,
            pass_metrics,
            pass_spans,
            layout,
            sequence,
            warm_up: switches.warm_up,
            ranges: ranges.clamp(1, MAX_RANGES),
            object: RangeProfilerObject::new(cupti, ctx),
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
        self.object.context()
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

    fn start_object(&mut self) -> Result<(), CudaError> {
        self.object.start()
    }

    /// `Stop`; returns whether every pass of the configuration has been submitted.
    fn stop_object(&mut self) -> Result<bool, CudaError> {
        self.object.stop()
    }

    fn disable(&mut self) {
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
