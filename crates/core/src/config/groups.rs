//! What is measured: counter groups, how several are collected in one process, and which
//! dispatches are profiled.

use serde::{Deserialize, Serialize};

/// One counter as the user asked for it, and the device metric it is collected as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSpec {
    /// The name the user typed (an alias such as `SQ_WAVES`, or a metric name); outputs use it.
    pub requested: String,
    /// The device metric (e.g. `sm__warps_launched.sum`, or `sim__warps_launched.sum`).
    pub metric: String,
}

/// Counters collected together in one hardware pass.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CounterGroup {
    pub counters: Vec<CounterSpec>,
}

impl CounterGroup {
    pub fn metrics(&self) -> impl Iterator<Item = &str> {
        self.counters.iter().map(|c| c.metric.as_str())
    }
}

/// How several counter groups are collected within one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InProcessMode {
    /// One group for every dispatch (application replay gives each process one group).
    #[default]
    Single,
    /// Kernel replay: every dispatch runs once per group, memory restored between passes.
    KernelReplay,
    /// Rotation: group i for `interval` dispatches per device, then group i+1, and so on.
    Rotation { interval: u64 },
}

/// Which dispatches are profiled.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KernelFilter {
    /// Keep only kernels whose (demangled) name matches.
    pub include_regex: Option<String>,
    /// Then drop kernels whose name matches.
    pub exclude_regex: Option<String>,
    /// rocprofv3's iteration range, e.g. `"[1-2],[3-4]"` or `"5"`: which occurrences of each
    /// kernel (counted per kernel name, from 1... see `core::filter`) are profiled.
    pub iteration_range: Option<String>,
    /// `--nvtx-include` configurations, Nsight Compute's syntax (see `core::filter::nvtx`): a
    /// dispatch inside the NVTX ranges of any of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvtx_include: Vec<String>,
    /// `--nvtx-exclude` configurations: not a dispatch inside the ranges of any of them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub nvtx_exclude: Vec<String>,
    /// `--selected-regions` / `--profile-from-start`: collection only between the application's
    /// profiler start and stop calls (see `core::filter::regions`); `None`: those calls do
    /// nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selected_regions: Option<SelectedRegions>,
}

impl KernelFilter {
    /// Whether the NVTX filters need the application's ranges tracked.
    pub fn tracks_ranges(&self) -> bool {
        !self.nvtx_include.is_empty() || !self.nvtx_exclude.is_empty()
    }
}

/// How the application's profiler start and stop calls scope collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct SelectedRegions {
    /// Collecting before the first call (Nsight Compute's `--profile-from-start on`); off for
    /// rocprofv3's `--selected-regions` and `--profile-from-start off`.
    pub from_start: bool,
    /// `--selected-regions-ref-count`: nested start/stop pairs are counted.
    pub ref_count: bool,
}
