//! The named parts of an open replay unit ([`OpenUnit`], at the end): what it measures (its plan),
//! what its later executions start from (its snapshots), what they re-run (its execution log),
//! its stay across the application's calls, and what it has cost so far.

use crate::backend::{Backend, DeviceId, Memory, Region, Relaunch, UnitConditions, UnitPlan};
use crate::engine::tickets::Dispatch;
use crate::gate::ExclusiveHold;
use kreplay_format::{ReplayCost, ReplayOutcome, Staging};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;

/// What a unit measures: the passes every member gets and how they map onto executions.
pub(super) struct PassPlan {
    /// Passes per dispatch; `None`: until the policy stops.
    pub(super) total: Option<u32>,
    /// The group of each pass (only pass 0's for [`PassCount::UntilStopped`]).
    pub(super) groups: Vec<Option<usize>>,
    /// The policy decides after each pass: passes are planned and measured one at a time.
    pub(super) stepwise: bool,
    /// How the passes map onto executions (of pass 0 alone when stepwise).
    pub(super) executions: UnitPlan,
}

impl PassPlan {
    /// Whether executions after the first run, from the unit's snapshots (S0 is taken).
    pub(super) fn restores(&self) -> bool {
        self.stepwise || self.executions.executions > 1
    }

    /// Whether a dispatch whose passes are `total` of `groups` gets the passes the unit's
    /// members get (the condition for it to join).
    pub(super) fn admits(&self, total: Option<u32>, groups: &[Option<usize>]) -> bool {
        self.total == total && total.is_some() && self.groups == groups
    }
}

/// What a unit's later executions restore first, and what that covers.
pub(super) struct Snapshots<S> {
    /// S0 (none when nothing is restored or the device had no tracked memory), then each
    /// allocation the unit took in while it was open, as it was before any member could use
    /// it; every later execution restores them in reverse order (S0 last).
    pub(super) taken: Vec<S>,
    /// The tracked regions `taken` covers.
    pub(super) covered: Vec<Region>,
    /// S0 covers managed memory, which the host may write at any time, with no CUDA call (while
    /// pass 0 runs, while the unit is parked): F is saved and put back around the later
    /// executions, or restoring S0 would undo those writes.
    pub(super) host_writable: bool,
    /// Where they are staged (host staging if any of them is there).
    pub(super) staging: Staging,
    /// The bytes of tracked memory the unit saw (every region it covers).
    pub(super) bytes_tracked: u64,
    /// The inventory's generation when `covered` was last brought up to date: a launch after
    /// a change joins a unit that restores only once the change is covered (new allocations
    /// snapshotted; anything else closes the unit).
    pub(super) inventory_generation: u64,
}

impl<S> Snapshots<S> {
    /// Takes in the snapshot of allocations made while the unit was open.
    pub(super) fn add(&mut self, staged: S, place: Staging, regions: Vec<Region>, bytes: u64) {
        self.taken.push(staged);
        // The costs name one place: host staging if any snapshot is there.
        if self.staging == Staging::None || place == Staging::Host {
            self.staging = place;
        }
        self.bytes_tracked += bytes;
        self.covered.extend(regions);
    }

    /// The bytes staged when the unit opened and took in allocations (0 when nothing was).
    pub(super) fn bytes_snapshotted(&self) -> u64 {
        if self.taken.is_empty() {
            0
        } else {
            self.bytes_tracked
        }
    }

    /// Frees their staging.
    pub(super) fn release<B: Memory<Snapshot = S>>(self, backend: &mut B) {
        for staged in self.taken {
            backend.release(staged);
        }
    }
}

pub(super) struct Member<L> {
    pub(super) dispatch: Dispatch,
    /// The backend's retained copy; `None` until the member's launch_exit, and for the last
    /// member of a unit closed at its exit (relaunched from the application's parameters).
    pub(super) launch: Option<L>,
    /// Its ticket was dropped without `launch_exit`: it did not execute and is left out.
    pub(super) abandoned: Arc<AtomicBool>,
}

impl<L> Member<L> {
    pub(super) fn new(dispatch: Dispatch) -> Self {
        Member {
            dispatch,
            launch: None,
            abandoned: Arc::default(),
        }
    }

    pub(super) fn live(&self) -> bool {
        !self.abandoned.load(Ordering::Acquire)
    }
}

/// The unit's device work after its first launch, in the order the application issued it.
pub(super) enum LogEntry<C> {
    /// A member's launch (index into the unit's members).
    Launch(usize),
    /// Bytes a call wrote into tracked device memory, captured after it ran.
    Write(C),
}

/// What a unit's later executions re-run: its members' launches and the writes captured
/// between them, in order.
pub(super) struct ExecutionLog<L, C> {
    pub(super) members: Vec<Member<L>>,
    pub(super) entries: Vec<LogEntry<C>>,
    /// False once something the later executions need was lost (a launch end, a capture):
    /// the unit then closes with execution 0 alone.
    pub(super) replayable: bool,
}

impl<L, C> ExecutionLog<L, C> {
    /// A log of one member, the unit's first.
    pub(super) fn new(first: Member<L>) -> Self {
        ExecutionLog {
            members: vec![first],
            entries: vec![LogEntry::Launch(0)],
            replayable: true,
        }
    }

    pub(super) fn push_member(&mut self, member: Member<L>) {
        self.entries.push(LogEntry::Launch(self.members.len()));
        self.members.push(member);
    }

    pub(super) fn push_write(&mut self, capture: C) {
        self.entries.push(LogEntry::Write(capture));
    }

    /// The indices of the members whose launch executed.
    pub(super) fn live(&self) -> Vec<usize> {
        (0..self.members.len())
            .filter(|&i| self.members[i].live())
            .collect()
    }

    /// Frees the captured writes (the log keeps its members).
    pub(super) fn release_captures<B: Relaunch<Capture = C>>(&mut self, backend: &mut B) {
        for entry in self.entries.drain(..) {
            if let LogEntry::Write(capture) = entry {
                backend.release_capture(capture);
            }
        }
    }
}

/// A unit's stay across its owner's calls (see the `unit` module's documentation).
#[derive(Default)]
pub(super) struct Spans {
    /// Why a restoring unit may not stay open across calls (`None`: it may: F fits device
    /// staging and no member reaches host or managed memory).
    pub(super) undeferrable: Option<&'static str>,
    /// Calls of the owner the unit stayed open across.
    pub(super) calls: u64,
    /// Bytes captured from calls so far.
    pub(super) captured_bytes: u64,
    pub(super) captures: u64,
    /// A call since the last member: drain before the next member's launch.
    pub(super) drain_before_member: bool,
}

/// What a unit has cost, recorded on its first member's `ReplayCost` (see the `unit` module).
#[derive(Default)]
pub(super) struct Cost {
    pub(super) drain_ns: u64,
    pub(super) snapshot_ns: u64,
    /// Execution 0's wall time so far: the members' launches, enter to exit (its stop is
    /// added when the unit closes).
    pub(super) pass0_ns: u64,
    /// From here on, filled when the unit closes.
    pub(super) bytes_snapshotted: u64,
    pub(super) bytes_restored: u64,
    pub(super) restore_ns: u64,
    /// Each measured execution's wall time, execution 0 first.
    pub(super) pass_ns: Vec<u64>,
    pub(super) timing_execution_ns: u64,
}

impl Cost {
    /// The replay cost record of a member: the unit's shared costs on its first member only
    /// (`first`), 0 on the others (`pass_ns` zeros, same length), so that sums over dispatches
    /// stay right.
    pub(super) fn record(
        &self,
        dispatch_id: u64,
        device: DeviceId,
        outcome: ReplayOutcome,
        snapshots: (Staging, u64),
        conditions: &UnitConditions,
        first: bool,
    ) -> ReplayCost {
        let shared = |value: u64| if first { value } else { 0 };
        let (staging, bytes_tracked) = snapshots;
        ReplayCost {
            dispatch_id,
            agent_id: u64::from(device),
            outcome,
            passes: self.pass_ns.len() as u32,
            bytes_tracked,
            bytes_snapshotted: shared(self.bytes_snapshotted),
            bytes_restored: shared(self.bytes_restored),
            staging,
            drain_ns: shared(self.drain_ns),
            snapshot_ns: shared(self.snapshot_ns),
            pass_ns: self.pass_ns.iter().map(|ns| shared(*ns)).collect(),
            restore_ns: shared(self.restore_ns),
            timing_execution_ns: shared(self.timing_execution_ns),
            cache: conditions.cache,
            sm_clock_mhz: conditions.sm_clock_mhz,
            memory_clock_mhz: conditions.memory_clock_mhz,
        }
    }
}

/// A replay unit while it is open: one value made of its named parts (`parts`).
pub(in crate::engine) struct OpenUnit<K: Backend> {
    /// The thread whose launches it holds.
    pub(super) owner: ThreadId,
    pub(super) device: DeviceId,
    /// The most members it may hold.
    pub(super) capacity: usize,
    /// Its exclusive hold of the device's replay gate (parked while its owner is in user code).
    pub(super) hold: ExclusiveHold,
    pub(super) plan: PassPlan,
    pub(super) snapshots: Snapshots<K::Snapshot>,
    pub(super) log: ExecutionLog<K::Launch, K::Capture>,
    pub(super) spans: Spans,
    pub(super) cost: Cost,
}
