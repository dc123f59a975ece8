//! What a device answers about a unit: its plan of executions, timings, counters and the
//! conditions it ran under.

use kreplay_format::{CacheState, CounterSample};

/// One pass's results, read after the kernel completed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PassResult {
    pub counters: Vec<CounterSample>,
    /// Kernel start and end, nanoseconds.
    pub start_ns: u64,
    pub end_ns: u64,
}

/// When one measured launch of an execution ran, nanoseconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Timing {
    pub start_ns: u64,
    pub end_ns: u64,
}

/// The conditions a unit's measured executions ran under, recorded with its costs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UnitConditions {
    /// `Flushed` when L2 was flushed before every measured launch of every execution.
    pub cache: CacheState,
    /// Lowest and highest SM clock read around the unit's executions, MHz; `[0, 0]`: not read.
    pub sm_clock_mhz: [u32; 2],
    /// The same for the memory clock.
    pub memory_clock_mhz: [u32; 2],
}

impl UnitConditions {
    /// The clock (SM or memory) whose highest reading exceeds its lowest by more than 1%, with
    /// its readings: the unit's passes ran at different clocks.
    pub fn varied_clock(&self) -> Option<(&'static str, [u32; 2])> {
        let varied =
            |[low, high]: [u32; 2]| low > 0 && u64::from(high) * 100 > u64::from(low) * 101;
        if varied(self.sm_clock_mhz) {
            Some(("SM", self.sm_clock_mhz))
        } else if varied(self.memory_clock_mhz) {
            Some(("memory", self.memory_clock_mhz))
        } else {
            None
        }
    }
}

/// A unit's counters: for each pass, the counters of each launch in launch order (`None`: the
/// pass was not measured).
pub type PassCounters = Vec<Option<Vec<Vec<CounterSample>>>>;

/// How a unit's passes map onto executions (see [`Measurement::plan_unit`](crate::backend::Measurement::plan_unit)).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnitPlan {
    /// Executions the unit needs; 1: the application's own launches measure every pass.
    pub executions: usize,
    /// For each pass, the execution that measures it (whose timing its records carry).
    pub execution_of_pass: Vec<usize>,
}

impl UnitPlan {
    /// One execution per pass, in pass order: what a backend that does not pack groups plans.
    pub fn one_per_pass(passes: usize) -> UnitPlan {
        UnitPlan {
            executions: passes.max(1),
            execution_of_pass: (0..passes).collect(),
        }
    }

    /// Passes measured by one execution each, the executions numbered in order of first use:
    /// `hardware_pass_of[p]` names the hardware pass (any identifier) that measures pass `p`.
    /// Returns the plan and the hardware passes in execution order.
    pub fn from_hardware_passes(hardware_pass_of: &[usize]) -> (UnitPlan, Vec<usize>) {
        Self::from_hardware_passes_spanning(hardware_pass_of, |_| 1)
    }

    /// [`UnitPlan::from_hardware_passes`] where hardware pass `h` takes `span(h)` executions in
    /// a row (at least one); a pass's records carry the timing of its first.
    pub fn from_hardware_passes_spanning(
        hardware_pass_of: &[usize],
        span: impl Fn(usize) -> usize,
    ) -> (UnitPlan, Vec<usize>) {
        let mut order: Vec<usize> = Vec::new();
        let mut first_execution: Vec<usize> = Vec::new();
        let mut executions = 0;
        let execution_of_pass = hardware_pass_of
            .iter()
            .map(|hw| match order.iter().position(|o| o == hw) {
                Some(i) => first_execution[i],
                None => {
                    order.push(*hw);
                    first_execution.push(executions);
                    executions += span(*hw).max(1);
                    executions - span(*hw).max(1)
                }
            })
            .collect();
        (
            UnitPlan {
                executions: executions.max(1),
                execution_of_pass,
            },
            order,
        )
    }
}
