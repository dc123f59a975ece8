//! What the replay engine needs from a device. The CUDA backend (`kreplay-cuda`) and the reference
//! software device (`kreplay-sim`) implement its job traits
//! ([`Memory`], [`Measurement`], [`Relaunch`]: a [`ReplayBackend`]); the engine never sees CUDA types.
//!
//! Everything the engine measures is a *replay unit*: up to K consecutive launches of one thread
//! on one device (K = 1 for per-dispatch replay and for a dispatch that runs once), measured by
//! one or more *executions*. The backend plans how the unit's passes (one counter group each) map
//! onto executions ([`Measurement::plan_unit`]): groups that share a hardware pass share an
//! execution. Execution 0 is the application's own launches; every later execution re-runs the
//! unit from its snapshot. Counters may become available only after the unit's last execution
//! (CUPTI decodes a multi-pass configuration at the end), so results are collected per unit:
//!
//! ```text
//! open:   [executions > 1] fence + drain + snapshot S0
//!         plan_unit(groups); start_execution(0, K ranges)
//! member: launch_starts; the application's own launch; launch_ends      (one range each)
//!         between members, calls the unit may stay open across; writes to device memory
//!         by them are captured after they ran (`capture`)
//! close:  stop_execution -> timings of execution 0
//!         [the unit stayed open across calls] save F (tracked memory now)
//!         per further execution: restore S0, start_execution(e), re-run the unit's log in order
//!         (relaunch each member between launch_starts/launch_ends, apply each capture),
//!         stop_execution
//!         [F saved] restore F (the application went on from execution 0's results)
//!         unit_counters -> per pass, per member, the counters
//! ```
//!
//! The close may run on another thread than the launches (the thread whose API call closed the
//! unit): a backend that opens units of several launches must accept `stop_execution`,
//! `relaunch` and `apply` there.
//!
//! The trait uses three plain types of the record model (`kreplay_format`'s [`CounterSample`],
//! [`Staging`], [`CacheState`]): what a backend measures goes into the records as it is, and the
//! engine depends on the record model for its records anyway. No other format type (writers,
//! readers, the database) is part of the trait.

use kreplay_format::{CacheState, CounterSample, Staging};
use std::time::Duration;

/// A device ordinal within the process (the CUDA device index; 0 for the software device).
pub type DeviceId = u32;

/// The kinds of memory the inventory knows. Only the tracked kinds are snapshotted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AllocKind {
    /// `cuMemAlloc` and what the runtime maps onto it: tracked.
    Device,
    /// `cuMemAllocPitch`: tracked.
    Pitched,
    /// A module-scope `__device__` or writable `__constant__` variable: tracked.
    ModuleVariable,
    /// `cuMemAllocManaged`: tracked (copied like device memory; the copies migrate its pages
    /// to the device).
    Managed,
    /// Stream-ordered pool memory (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`, what
    /// `cudaMallocAsync` and its pools give): tracked, from the allocation until its free.
    Pool,
    /// Host, pinned or mapped host memory: not restored.
    Host,
    /// A `cuMemMap` of `cuMemCreate`'d memory (PyTorch's expandable segments, JAX and other
    /// allocators on the virtual-memory API): tracked, from the map until its unmap.
    VirtualMapping,
}

impl AllocKind {
    /// Whether snapshots cover this kind.
    pub fn is_tracked(self) -> bool {
        matches!(
            self,
            AllocKind::Device
                | AllocKind::Pitched
                | AllocKind::ModuleVariable
                | AllocKind::Managed
                | AllocKind::Pool
                | AllocKind::VirtualMapping
        )
    }

    /// How the once-per-process "not restored" notice names this kind.
    pub fn describe(self) -> &'static str {
        match self {
            AllocKind::Device => "device memory",
            AllocKind::Pitched => "pitched device memory",
            AllocKind::ModuleVariable => "module variable",
            AllocKind::Managed => "managed memory",
            AllocKind::Pool => "stream-ordered pool memory",
            AllocKind::Host => "host memory",
            AllocKind::VirtualMapping => "virtual-memory mapping",
        }
    }
}

/// A contiguous range of device-visible memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Region {
    pub device: DeviceId,
    /// Device address.
    pub base: u64,
    pub bytes: u64,
    pub kind: AllocKind,
}

/// Why a launch cannot be replayed, as the backend sees it at launch time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LaunchKind {
    /// An ordinary single-device kernel launch: replayable.
    Kernel,
    /// A graph launch: runs once.
    Graph,
    /// Recorded into a stream capture: does not execute, never profiled.
    StreamCapture,
    /// A multi-device cooperative launch: runs once.
    MultiDevice,
    /// A kernel whose code calls `printf`: runs once (each execution prints).
    DevicePrintf,
    /// A kernel whose code calls the device heap (`malloc`, `free`, device `new`/`delete`):
    /// runs once (the heap's state is not restored between executions).
    DeviceHeap,
    /// A kernel of a collective-communication library (NCCL, NVSHMEM): it waits for peers that
    /// would not run it again, so it runs once (the CUDA backend knows them by name).
    Collective,
    /// A kernel whose parameters hold an address of ordinary (pageable) host memory, which the
    /// device reaches through pageable memory access (HMM, ATS): no snapshot covers that
    /// memory, so it runs once.
    PageableHost,
    /// A kernel whose parameters hold an address of another device's tracked memory (peer
    /// access): a unit's snapshot covers its own device only, so it runs once, with every
    /// device's replays held off while it is launched.
    PeerMemory,
}

/// The devices an application call or launch may touch: it holds off replays on them (their
/// replay gates' fences) while it runs, and replay units on other devices stay open.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeviceScope {
    /// Only this device's memory and work (the calling context's device, every address the
    /// call names on it or in host memory).
    One(DeviceId),
    /// Any device: a call the backend cannot pin to one (a peer copy, a context switch, an
    /// unknown call, an address on another device).
    All,
}

/// What the engine (and a replay policy, through the SDK) knows of a dispatch before it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct DispatchInfo {
    pub device: DeviceId,
    pub kind: LaunchKind,
    /// The kernel's name as the module spells it (mangled for C++).
    pub kernel_name: String,
    pub kernel_id: u64,
    pub stream_id: u64,
    pub correlation_id: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub dynamic_shared_bytes: u32,
}

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

/// How a unit's passes map onto executions (see [`Measurement::plan_unit`]).
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

/// What a call other than a launch does, as far as a replay unit is concerned (the backend
/// classifies its API calls; see [`crate::Engine::enter_call`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallEffect {
    /// Not known to be harmless: an open unit closes (its passes run) before the call.
    Unknown,
    /// Releases memory (a free, an unmap): a unit that restores memory closes first, since its
    /// snapshot or its later executions may touch what goes away.
    Frees,
    /// Writes no device memory: a synchronisation, an event or stream call, a copy to the host,
    /// a module load, an allocation, a query. The application may look at results, so a unit
    /// that stays open across it puts the application's view back after its later executions.
    NoDeviceWrite,
    /// Writes `bytes` at `base` of the calling context's device (a copy to the device, a
    /// memset). A unit that restores memory stays open only when the bytes lie in tracked
    /// memory: they are captured after the call and written again at that point of every later
    /// execution.
    DeviceWrite {
        device: DeviceId,
        base: u64,
        bytes: u64,
    },
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum BackendError {
    /// The staging place has no room for the snapshot; the engine tries the next place.
    #[error("not enough {0:?} memory to stage {1} bytes")]
    OutOfStagingMemory(Staging, u64),
    /// A drain did not finish within its deadline.
    #[error("device {device} did not become idle within {deadline:?}")]
    DrainTimeout {
        device: DeviceId,
        deadline: Duration,
    },
    /// Anything else, with the API call that failed.
    #[error("{0}")]
    Failed(String),
}

mod jobs;
mod shared;
pub use jobs::{Backend, DeviceOf, Measurement, Memory, Relaunch, ReplayBackend};
pub use shared::{CaptureOf, LaunchOf, SharedDevice, SnapshotOf};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clock_varied_when_its_readings_differ_by_more_than_one_percent() {
        let with = |sm: [u32; 2], memory: [u32; 2]| UnitConditions {
            sm_clock_mhz: sm,
            memory_clock_mhz: memory,
            ..UnitConditions::default()
        };
        assert_eq!(with([0, 0], [0, 0]).varied_clock(), None);
        assert_eq!(with([1980, 1980], [3201, 3201]).varied_clock(), None);
        assert_eq!(with([1970, 1980], [3201, 3201]).varied_clock(), None);
        assert_eq!(
            with([1755, 1980], [3201, 3201]).varied_clock(),
            Some(("SM", [1755, 1980]))
        );
        assert_eq!(
            with([1980, 1980], [2619, 3201]).varied_clock(),
            Some(("memory", [2619, 3201]))
        );
    }

    #[test]
    fn plans_number_executions_by_first_use_of_their_hardware_pass() {
        // Groups 0, 1, 2 share hardware pass 7; group 3 has pass 4.
        let (plan, order) = UnitPlan::from_hardware_passes(&[7, 7, 7, 4]);
        assert_eq!(plan.executions, 2);
        assert_eq!(plan.execution_of_pass, vec![0, 0, 0, 1]);
        assert_eq!(order, vec![7, 4]);
        // A hardware pass asked for twice is measured once.
        let (plan, _) = UnitPlan::from_hardware_passes(&[4, 7, 4]);
        assert_eq!(
            (plan.executions, plan.execution_of_pass),
            (2, vec![0, 1, 0])
        );
        assert_eq!(UnitPlan::one_per_pass(3).execution_of_pass, vec![0, 1, 2]);
        assert_eq!(UnitPlan::one_per_pass(0).executions, 1);
    }

    #[test]
    fn a_hardware_pass_spanning_several_executions_takes_them_in_a_row() {
        // Group 1's hardware pass 9 needs 3 executions; groups 0 and 2 share pass 7.
        let span = |h: usize| if h == 9 { 3 } else { 1 };
        let (plan, order) = UnitPlan::from_hardware_passes_spanning(&[7, 9, 7, 4], span);
        assert_eq!(plan.executions, 5);
        assert_eq!(plan.execution_of_pass, vec![0, 1, 0, 4]);
        assert_eq!(order, vec![7, 9, 4]);
    }
}
