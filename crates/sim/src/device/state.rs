//! What the device keeps besides kernels: allocations, snapshots, captured writes, the units
//! being measured and the counts of what it did.

use crate::device::stats::ExecStats;
use kreplay_core::backend::{AllocKind, DeviceId, UnitPlan};
use kreplay_format::Staging;

#[derive(Debug, Clone)]
pub(super) struct Allocation {
    pub(super) kind: AllocKind,
    pub(super) data: Vec<u8>,
}

/// Where a snapshot's copy lives.
#[derive(Debug)]
pub struct SimSnapshot {
    pub(super) device: DeviceId,
    pub(super) place: Staging,
    pub(super) bytes: u64,
    pub(super) regions: Vec<(u64, Vec<u8>)>,
}

impl SimSnapshot {
    pub fn place(&self) -> Staging {
        self.place
    }
    pub fn device(&self) -> DeviceId {
        self.device
    }
}

/// Counts of what the device did, for tests.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DeviceActivity {
    pub executions: u64,
    pub relaunches: u64,
    pub snapshots: u64,
    pub restores: u64,
    pub drains: u64,
    /// Writes captured for later executions.
    pub captures: u64,
    /// Cache flushes before measured launches (`--cache-control all`; the device has no
    /// cache, so a flush only counts).
    pub flushes: u64,
}

/// One measured launch of an execution: a range of its own.
#[derive(Debug, Clone, Copy)]
pub(super) struct Range {
    pub(super) stats: ExecStats,
    pub(super) start_ns: u64,
    pub(super) end_ns: u64,
}

/// A replay unit being measured (see [`Measurement::plan_unit`]).
#[derive(Debug)]
pub(super) struct SimUnit {
    /// The group of each pass and the execution that measures it.
    pub(super) groups: Vec<Option<usize>>,
    pub(super) plan: UnitPlan,
    /// The running execution and its ranges so far.
    pub(super) running: Option<usize>,
    pub(super) ranges: Vec<Range>,
    /// The launch between `launch_starts` and `launch_ends`: what it executed so far.
    pub(super) pending: Option<Range>,
    /// Started for several launches: another thread may stop it (the one closing the window)
    /// and then runs its later executions.
    pub(super) shareable: bool,
    /// Each execution's ranges, once stopped.
    pub(super) measured: Vec<Option<Vec<Range>>>,
}

/// Where (device, address) a captured write came from, and its bytes.
#[derive(Debug, Clone)]
pub struct SimCapture {
    pub(super) device: DeviceId,
    pub(super) base: u64,
    pub(super) bytes: Vec<u8>,
}
