//! The workload's size and what the application reads back at the end.

/// How big the workload is; `kreplay-sim-app --iterations N --elements N`, and where it calls
/// the profiler start and stop (`--profile-region A-B`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadOptions {
    pub iterations: u32,
    pub elements: u32,
    /// Up to [`MAX_PROFILE_REGIONS`] (first, last) iterations, 0-based: a profiler start
    /// before the first's range, a stop after the last's (nested when they overlap).
    pub profile_regions: [Option<(u32, u32)>; MAX_PROFILE_REGIONS],
}

/// How many `--profile-region`s the workload takes.
pub const MAX_PROFILE_REGIONS: usize = 4;

impl Default for WorkloadOptions {
    fn default() -> Self {
        WorkloadOptions {
            iterations: 3,
            elements: 1024,
            profile_regions: [None; MAX_PROFILE_REGIONS],
        }
    }
}

impl WorkloadOptions {
    /// How many profiler starts (`true`) or stops come at iteration `iteration`'s beginning
    /// (`start`) or end.
    pub fn profiler_calls(&self, iteration: u32, start: bool) -> usize {
        self.profile_regions
            .iter()
            .flatten()
            .filter(|(first, last)| {
                if start {
                    *first == iteration
                } else {
                    *last == iteration
                }
            })
            .count()
    }
}

/// What the application reads back at the end.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadOutcome {
    /// Tracked device buffers and the module variable, by name.
    pub tracked: Vec<(&'static str, Vec<u32>)>,
    /// The managed buffer (restored between passes like the tracked buffers).
    pub managed: Vec<u32>,
}
