//! The range profiler's state ([`RangeProfiler`]: what it packed, the schedules it built, the
//! unit it measures) and the values it gives. Its methods live by job in the sibling files:
//! `create` (set-up and questions), `execution` (units), `schedule` (configurations).

use super::layout::PassLayout;
use super::sequence::Sequence;
use kreplay_cuda::cupti::host_config::HostConfig;
use kreplay_cuda::cupti::range_profiler::RangeProfilerObject;
use kreplay_cuda::cupti::Cupti;
use std::collections::HashMap;
use std::time::Duration;

/// The most kernels one execution measures (each is one range of the counter-data image).
pub const MAX_RANGES: usize = 128;

/// One group's values from a unit: `(group, per range the values in the order the group lists
/// its metrics)`.
pub type GroupValues = (usize, Vec<Vec<f64>>);

/// One hardware pass's values: `(pass, per range the values in the pass's metric order)`.
pub(super) type PassValues = (usize, Vec<Vec<f64>>);

/// A schedule's configuration and the counter data it collects into.
pub(super) struct Schedule {
    pub(super) config: HostConfig,
    /// For each hardware pass of the schedule, where each of its metrics sits in `config`'s
    /// names (each pass lists all of its metrics).
    pub(super) positions: Vec<Vec<usize>>,
    pub(super) counter_data: Vec<u8>,
}

/// The unit being measured.
#[derive(Debug)]
pub(super) struct Unit {
    /// Hardware passes, in order.
    pub(super) passes: Vec<usize>,
    /// The hardware pass of each execution: a pass whose metrics need several of CUPTI's
    /// passes (a metric that alone does not fit one) runs that many executions in a row.
    pub(super) executions: Vec<usize>,
    /// Executions stopped so far.
    pub(super) stopped: usize,
    pub(super) running: bool,
    /// Values per range of each hardware pass already decoded (one-pass sequences decode after
    /// every execution, the scheduled one after the last).
    pub(super) values: HashMap<usize, Vec<Vec<f64>>>,
}

/// The Range Profiler of one CUDA context.
pub struct RangeProfiler {
    pub(super) cupti: &'static Cupti,
    pub(super) chip: String,
    /// [`crate::catalog::identity_cache::digest`] of the chip and the counter-availability image read here.
    pub(super) identity: String,
    pub(super) availability: Vec<u8>,
    /// The hardware pass of each group.
    pub(super) layout: PassLayout,
    pub(super) sequence: Sequence,
    /// [`kreplay_core::config::Switches::warm_up`]: [`RangeProfiler::warm_up`] programs the counters ahead.
    pub(super) warm_up: bool,
    pub(super) ranges: usize,
    /// The context's range-profiler object, enabled or not.
    pub(super) object: RangeProfilerObject,
    /// The schedule the enabled object is configured for.
    pub(super) enabled: Option<Vec<usize>>,
    pub(super) schedules: HashMap<Vec<usize>, Schedule>,
    pub(super) unit: Option<Unit>,
    /// Configuration changes (a new object, or a switch of configuration) since creation.
    pub config_changes: u64,
    /// Time spent starting passes, and how many: `[0]` with a change of configuration, `[1]`
    /// on the configuration already programmed (for `KREPLAY_DEBUG`).
    pub(super) start_time: [Duration; 2],
    pub(super) starts: [u64; 2],
}
