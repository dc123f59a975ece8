//! A context's range profiler made ([`RangeProfiler::new`]: the device checked, its groups
//! packed into hardware passes, the full schedule built), and what it tells of itself.

use super::initialize::initialize_profiler;
use super::layout::PassLayout;
use super::sequence::Sequence;
use super::state::{RangeProfiler, MAX_RANGES};
use crate::catalog::host::host_api_lock;
use crate::catalog::identity_cache;
use kreplay_core::backend::UnitPlan;
use kreplay_core::config::Switches;
use kreplay_cuda::cupti::host_config::HostConfig;
use kreplay_cuda::cupti::profiler_device::{
    check_device_supported, chip_name, counter_availability,
};
use kreplay_cuda::cupti::range_profiler::RangeProfilerObject;
use kreplay_cuda::cupti::{CUcontext, CUdevice, Cupti};
use kreplay_cuda::debug;
use kreplay_cuda::error::CudaError;
use std::collections::HashMap;
use std::time::Duration;

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
        let layout = PassLayout::pack(groups, switches.pack_groups, one_pass, &mut laps)?;
        drop(_host);
        let sequence = Sequence::from_switch(&switches.range_profiler_sequence)?;
        let mut profiler = RangeProfiler {
            cupti,
            chip,
            identity,
            availability,
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
        self.layout.executions_of_group(group)
    }

    /// Executions each hardware pass takes (see [`RangeProfiler::packing`]).
    pub fn pass_spans(&self) -> &[usize] {
        &self.layout.pass_spans
    }

    /// The groups each hardware pass collects, pass by pass.
    pub fn packing(&self) -> Vec<Vec<usize>> {
        self.layout.packing()
    }

    /// How a unit collecting `groups` (pass by pass; `None`: timestamps only) runs: which
    /// execution measures each pass, and the hardware pass of each execution.
    pub fn plan(&self, groups: &[Option<usize>]) -> (UnitPlan, Vec<usize>) {
        self.layout.plan(groups)
    }

    /// The schedule the enabled object is programmed for, if any.
    pub fn enabled_schedule(&self) -> Option<&[usize]> {
        self.enabled.as_deref()
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
}
