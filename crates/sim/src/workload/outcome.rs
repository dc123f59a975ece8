//! The workload's size and what the application reads back at the end.

/// How big the workload is; `kreplay-sim-app --iterations N --elements N`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WorkloadOptions {
    pub iterations: u32,
    pub elements: u32,
}

impl Default for WorkloadOptions {
    fn default() -> Self {
        WorkloadOptions {
            iterations: 3,
            elements: 1024,
        }
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
