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

mod create;
mod execution;
#[cfg(test)]
mod host_config;
mod initialize;
mod layout;
mod schedule;
mod sequence;
mod state;

pub use initialize::{initialize_profiler, try_initialize_profiler};
pub use kreplay_cuda::cupti::profiler_device::chip_name;
pub use sequence::Sequence;
pub use state::{GroupValues, RangeProfiler, MAX_RANGES};
