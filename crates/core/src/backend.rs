//! What the replay engine needs from a device. The CUDA backend (`kreplay-cuda`) and the reference
//! software device (`kreplay-sim`) implement [`ReplayBackend`]; the engine never sees CUDA types.
//!
//! The engine drives a dispatch in two halves around the application's own launch, because with
//! CUDA the launch itself happens between the tool's API-enter and API-exit callbacks:
//!
//! ```text
//! launch enter: decide (filter, decline reasons, pass count)
//!               [N>1] fence + drain(device) + snapshot(tracked regions)
//!               start_pass(group 0)
//! -- the application's launch executes: pass 0 --
//! launch exit:  stop_pass -> records of pass 0
//!               for i in 1..N: restore, start_pass(group i), relaunch, stop_pass -> records of pass i
//!               (the last pass is never followed by a restore)
//!               release snapshot, lift fence
//! ```
//!
//! Window replay (`--replay-window K`, only where [`ReplayBackend::max_window`] is above 1) runs
//! a *window* of up to K consecutive launches per pass instead of one:
//!
//! ```text
//! first launch enter: fence + drain + snapshot; start_window_pass(group 0, K ranges)
//! each launch:        the application's launch executes (pass 0, one range each);
//!                     launch exit: retain_launch (a copy the engine keeps for later passes)
//! window close:       stop_window_pass -> one result per launch, in launch order
//!   (K launches, any other API call of any thread, another device, a launch that cannot
//!    join, process exit)
//!                     for i in 1..N: restore, start_window_pass(group i, n), relaunch each
//!                     kept launch in order, stop_window_pass -> n results
//! ```
//!
//! The close may run on another thread than the launches (the thread whose API call closed the
//! window): a backend that opens windows must accept `stop_window_pass` and `relaunch` there.

use kreplay_format::{CounterSample, Staging};
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
    /// `cuMemAllocManaged`: not restored.
    Managed,
    /// Stream-ordered pool memory (`cuMemAllocAsync`, `cuMemAllocFromPoolAsync`): not restored.
    Pool,
    /// Host, pinned or mapped host memory: not restored.
    Host,
    /// `cuMemCreate` + `cuMemMap`: not restored.
    VirtualMapping,
}

impl AllocKind {
    /// Whether snapshots cover this kind.
    pub fn is_tracked(self) -> bool {
        matches!(
            self,
            AllocKind::Device | AllocKind::Pitched | AllocKind::ModuleVariable
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
}

/// What the engine (and the tool SDK) knows of a dispatch before it runs.
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

/// A device the engine can replay on. Calls come from the thread that launched the dispatch.
pub trait ReplayBackend {
    /// Whatever the backend needs to re-execute a launch (for CUDA: the function, its
    /// configuration and a copy of its parameters).
    type Launch;
    /// A staged copy of regions, in device or host memory.
    type Snapshot;

    /// Waits until every piece of work already submitted to `device` has finished, or `deadline` passes.
    fn drain(&mut self, device: DeviceId, deadline: Duration) -> Result<(), BackendError>;

    /// Free device memory now, bytes (for the staging decision).
    fn device_free_bytes(&mut self, device: DeviceId) -> u64;

    /// Copies `regions` into staging at `place` (`Device` or `Host`).
    fn snapshot(
        &mut self,
        device: DeviceId,
        regions: &[Region],
        place: Staging,
    ) -> Result<Self::Snapshot, BackendError>;

    /// Writes the staged copy back, returns the bytes written.
    fn restore(&mut self, snapshot: &Self::Snapshot) -> Result<u64, BackendError>;

    /// Frees the staging of a snapshot.
    fn release(&mut self, snapshot: Self::Snapshot);

    /// Programs the counters of `group` (index into the configuration's groups) for the next
    /// execution on `device`. `group == None`: no counters, timestamps only (kernel trace).
    fn start_pass(&mut self, device: DeviceId, group: Option<usize>) -> Result<(), BackendError>;

    /// Waits for the execution started after `start_pass` and reads its counters.
    fn stop_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
    ) -> Result<PassResult, BackendError>;

    /// Executes `launch` again, with the parameters it had the first time.
    fn relaunch(&mut self, launch: &Self::Launch) -> Result<(), BackendError>;

    /// How many of the configuration's `configured` counter groups `device` can collect (the
    /// pass count of a replayed dispatch). A device that cannot collect some groups says fewer.
    fn collectable_groups(&mut self, device: DeviceId, configured: usize) -> usize {
        let _ = device;
        configured
    }

    /// The most launches one replay window may hold on `device` (the number of counter ranges
    /// one pass can collect). 1, the default: no windows, every dispatch is replayed alone.
    fn max_window(&mut self, device: DeviceId) -> usize {
        let _ = device;
        1
    }

    /// Programs the counters of `group` for the next `ranges` executions on `device`, one
    /// result per execution (a window's pass). Only called with `ranges` above 1 when
    /// [`ReplayBackend::max_window`] allows it.
    fn start_window_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
        ranges: usize,
    ) -> Result<(), BackendError> {
        if ranges <= 1 {
            self.start_pass(device, group)
        } else {
            Err(BackendError::Failed(format!(
                "this device measures one dispatch per pass, not a window of {ranges}"
            )))
        }
    }

    /// Waits for the executions started after [`ReplayBackend::start_window_pass`] and returns
    /// one result per execution, in execution order (`ranges` of them are expected; fewer or
    /// more is an error the engine reports). May be called from another thread than the start.
    fn stop_window_pass(
        &mut self,
        device: DeviceId,
        group: Option<usize>,
        ranges: usize,
    ) -> Result<Vec<PassResult>, BackendError> {
        if ranges <= 1 {
            self.stop_pass(device, group).map(|r| vec![r])
        } else {
            Err(BackendError::Failed(format!(
                "this device measures one dispatch per pass, not a window of {ranges}"
            )))
        }
    }

    /// How many executions a replay whose passes collect `groups` (in pass order) needs on
    /// `device`, when the backend packs groups into shared hardware passes. `Some(1)`: the
    /// first execution measures every group, so the engine takes no snapshot (nothing will
    /// be restored). `None` (the default): one execution per pass.
    fn executions_for(&mut self, device: DeviceId, groups: &[Option<usize>]) -> Option<usize> {
        let _ = (device, groups);
        None
    }

    /// A replay (a dispatch alone, or a window) is about to start its first pass on `device`:
    /// results the backend held from an earlier replay (see [`ReplayBackend::held_results`])
    /// no longer apply.
    fn replay_starts(&mut self, device: DeviceId) {
        let _ = device;
    }

    /// The results of `group` for the `executions` executions of the current replay, when an
    /// earlier pass of that replay already collected them: a backend that packs several
    /// groups into one hardware pass measures them together and hands the others out here.
    /// The engine then neither restores memory nor re-executes for that group's pass.
    /// `None` (the default): the pass must run.
    fn held_results(
        &mut self,
        device: DeviceId,
        group: usize,
        executions: usize,
    ) -> Option<Vec<PassResult>> {
        let _ = (device, group, executions);
        None
    }

    /// A copy of `launch` that stays valid after its launch callback returned (window replay
    /// re-executes it later, possibly from another thread). Only asked when
    /// [`ReplayBackend::max_window`] is above 1.
    fn retain_launch(&mut self, launch: &Self::Launch) -> Result<Self::Launch, BackendError> {
        let _ = launch;
        Err(BackendError::Failed(
            "this device cannot keep a launch for later replay".to_string(),
        ))
    }
}
