//! Replay units: up to K consecutive dispatches of one thread on one device, measured together.
//! This file joins and parks units; `open` opens one, `close` runs its later executions when it
//! closes; `parts` holds what an open unit is made of (its plan, snapshots, execution log, stay
//! across calls and cost).
//!
//! ```text
//! first member's launch_enter  take the exclusive hold, drain, plan the unit's executions
//!                              (backend), snapshot S0 when there is more than one, start
//!                              execution 0 for K ranges
//! every member                 [allocations made since the last member] drain, snapshot
//!                              them; its own launch is part of execution 0 (one range each); at
//!                              its launch_exit the backend keeps a copy of the launch and the
//!                              unit is *parked*: its owner returns to user code
//! owner's calls in between     the unit may stay open across them (below)
//! close                        execution 0's timings; [stayed open across calls, or S0 holds
//!                              managed memory] save F; per further execution: restore the new
//!                              allocations' snapshots, then S0, start it, re-run the unit's log
//!                              (every member relaunched, every captured write applied, in
//!                              order), stop it; [timing execution] once more the same way
//!                              with no counters, its launch times the records' durations;
//!                              [F] restore F; the counters of every pass; records; release
//!                              everything
//! ```
//!
//! A unit closes when it holds K members; when a dispatch arrives on its device that cannot join it
//! (another thread, other pass groups, a launch that runs once, a change of the allocations it
//! cannot cover); when another thread needs the device; when its owner makes a call it cannot stay
//! open across, or a call that may touch every device; and at [`Engine::finish_with`]. Launches and
//! calls on other devices leave it open (each device has its own unit: `lanes`). A unit that
//! restores takes in allocations made while it is open (the application's allocator growing, a
//! module variable resolved at its kernel's first launch): each is snapshotted when the next member
//! joins, after a drain, before any member can use it, and restored before S0 in every later
//! execution; new managed memory or new memory that cannot be staged closes it instead. A unit that
//! finds, when it closes, a region it covers gone or changed with no free it saw ends with
//! execution 0 (the region's memory may be another allocation's now). The thread that meets a
//! parked unit adopts and closes it, so no thread waits for an owner that is in user code.
//! Per-dispatch replay (`--replay-window 1`) is a unit of one, closed at its member's exit with the
//! application's own launch parameters (no copy).
//!
//! Staying open across calls ([`Engine::enter_call`], switched off by `KREPLAY_WINDOW_SPANS=0`):
//! - a unit measured by one execution (every group in one hardware pass) restores nothing and
//!   runs nothing again: it stays open across any call that is not [`CallEffect::Unknown`];
//! - a unit that restores stays open across calls that write no device memory (synchronisation,
//!   copies to the host, events, module loads, allocations) and across writes into tracked
//!   device memory (copies to the device, memsets): the application goes on with execution
//!   0's results, the written bytes are captured after the call ran (never re-read from the
//!   application's host buffer, which it may reuse) and written again at that point of every
//!   later execution, and the tracked memory the application saw when the unit closes (F) is
//!   saved before the later executions and put back after them. It closes first for a free,
//!   for a write into untracked memory or another device, once the captures would pass
//!   [`CAPTURE_BUDGET_BYTES`], when F would not fit device staging, and after a member whose
//!   parameters hold an address of host or managed memory (a later execution would write
//!   what the application may already have read). A unit whose S0 holds managed memory saves
//!   F when it closes even without staying open: the host writes managed memory with no call
//!   at all, and what the member computed from those writes is the application's. Later
//!   executions never show: copies to the host and host functions are not repeated, and
//!   nothing runs again until the application's view is saved.
//!
//! The device is drained before such a call and before the next member's launch, so that no
//! measured kernel overlaps the call's work. Another thread that closes the unit while its owner
//! is inside such a call waits for the call to end. A unit that lost its counters after staying
//! open across calls switches staying open off for the run.
//!
//! A member whose ticket is dropped without `launch_exit` (its launch did not execute) is left
//! out: no record, no range expected from the backend, no relaunch.
//!
//! A dispatch joins only with the same pass groups as the unit's first member, so every member
//! gets the passes per-dispatch replay would give it. With a policy that makes continue decisions
//! each pass is planned and measured on its own (its results before the decision), and the
//! decision stops the whole unit when it stops any member; [`PassCount::UntilStopped`]
//! dispatches are units of one.
//!
//! Costs: the unit's shared costs (drain, snapshots, restores, bytes staged and restored, the
//! wall time of each execution and of the timing execution) are recorded on its first member's
//! `ReplayCost`; the others carry 0 there (`pass_ns` zeros, same length), so sums over
//! dispatches stay right.

use super::lanes::Lane;
use super::*;
use crate::backend::{AllocKind, UnitPlan};
use crate::gate::{ExclusiveHold, ExclusiveRefused};
use std::sync::atomic::AtomicBool;
use std::thread::ThreadId;
use std::time::Duration;

mod calls;
mod close;
mod executions;
mod open;
mod parts;
mod stats;

use parts::{Cost, ExecutionLog, LogEntry, Member, PassPlan, Snapshots, Spans};
pub(super) use stats::WindowStats;

/// Why a restoring unit cannot stay open across calls when F (the application's view when it
/// closes) would not fit device staging next to its snapshots.
pub(super) const UNDEFERRABLE_STAGING: &str = "F would not fit device staging";

/// What a unit member's [`LaunchTicket`] carries; the dispatch itself is in the unit.
pub(super) struct MemberTicket {
    pub(super) dispatch_id: u64,
    /// The device whose lane holds the unit.
    pub(super) device: DeviceId,
    entered: Instant,
    /// Parks the unit if the ticket is dropped without `launch_exit`, so that another thread
    /// can close it.
    parker: Option<Arc<ReplayGate>>,
    /// Set when the ticket is dropped without `launch_exit`: the launch did not execute, so
    /// the unit leaves that member out (shared with its [`Member`]).
    abandoned: Arc<AtomicBool>,
}

impl Drop for MemberTicket {
    fn drop(&mut self) {
        if let Some(gate) = self.parker.take() {
            self.abandoned.store(true, Ordering::Release);
            gate.park_writer();
        }
    }
}

/// A replay unit while it is open: one value made of its named parts (`parts`).
pub(super) struct OpenUnit<K: Backend> {
    /// The thread whose launches it holds.
    owner: ThreadId,
    device: DeviceId,
    /// The most members it may hold.
    capacity: usize,
    /// Its exclusive hold of the device's replay gate (parked while its owner is in user code).
    hold: ExclusiveHold,
    plan: PassPlan,
    snapshots: Snapshots<K::Snapshot>,
    log: ExecutionLog<K::Launch, K::Capture>,
    spans: Spans,
    cost: Cost,
}

impl<K: Backend> Engine<K> {
    /// The unit size for a replayed dispatch on `device`: 1 for per-dispatch replay.
    fn window_capacity<B: DeviceOf<K>>(&self, backend: &mut B, device: DeviceId) -> usize {
        let configured = self.config.replay_window.dispatches() as usize;
        if configured <= 1 {
            return 1;
        }
        // A launch made inside another API call of this thread (the runtime nesting driver
        // calls) is replayed alone: its unit could not be parked while that call goes on.
        if self.holds_fence() {
            return 1;
        }
        let capacity = configured.min(backend.max_window(device));
        if capacity <= 1 {
            self.notice(
                "window-unsupported",
                "this device replays one dispatch at a time (no replay windows); each dispatch is replayed alone",
            );
            return 1;
        }
        capacity
    }

    /// Whether a unit is open on any device.
    pub(super) fn unit_is_open(&self) -> bool {
        self.lanes()
            .iter()
            .any(|lane| lock(&lane.open_unit).is_some())
    }

    /// Whether the lane's open unit holds as many members as it may.
    pub(super) fn unit_is_full(&self, lane: &Lane<K>) -> bool {
        lock(&lane.open_unit)
            .as_ref()
            .is_some_and(|u| u.log.members.len() >= u.capacity)
    }

    /// A replayed dispatch joins its thread's open unit on its device, or closes whatever unit
    /// is open on the device and opens one of its own (units of other devices stay open).
    pub(super) fn unit_member_enter<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        dispatch: Dispatch,
        total: Option<u32>,
    ) -> LaunchTicket {
        let view = dispatch.policy_view();
        let groups: Vec<Option<usize>> = (0..total.unwrap_or(1))
            .map(|pass| self.policy.pass_group(&view, pass))
            .collect();
        let device = dispatch.info.device;
        let capacity = if total.is_some() {
            self.window_capacity(backend, device)
        } else {
            1
        };
        let me = std::thread::current().id();
        let lane = self.lane(device);
        let mut dispatch = Some(dispatch);
        loop {
            let mut open = lock(&lane.open_unit);
            let mut reason = "a launch that cannot join";
            if let Some(unit) = open.as_mut() {
                let joinable = unit.owner == me
                    && unit.plan.admits(total, &groups)
                    && unit.log.replayable
                    && unit.log.members.len() < unit.capacity
                    && lane.gate.is_parked();
                reason = if unit.owner != me {
                    "another thread's launch"
                } else {
                    "a launch with other counter groups"
                };
                if joinable {
                    match self.join_unit(backend, &lane, unit, &mut dispatch) {
                        Ok(ticket) => return ticket,
                        Err(why) => reason = why,
                    }
                }
            }
            let parked = open.is_some() && lane.gate.is_parked();
            drop(open);
            if !parked {
                break;
            }
            // A unit this dispatch cannot join: finish it first (on this thread).
            self.close_parked_unit(backend, &lane, reason);
        }
        let Some(dispatch) = dispatch else {
            unreachable!("a dispatch that did not join is still at hand")
        };
        self.open_new_unit(backend, &lane, dispatch, total, groups, capacity)
    }

    /// Adds a dispatch to its thread's open unit; `Err` with why it could not join (the
    /// dispatch left in `dispatch`) when the unit cannot cover the allocations made since it
    /// opened or the device could not be made ready for it.
    fn join_unit<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        lane: &Lane<K>,
        unit: &mut OpenUnit<K>,
        dispatch: &mut Option<Dispatch>,
    ) -> Result<LaunchTicket, &'static str> {
        let allocations_changed = unit.plan.restores()
            && unit.snapshots.inventory_generation != self.inventory.generation();
        // After a call the unit stayed open across: its work ends before this kernel. Before
        // new allocations are snapshotted too: nothing measured may overlap the copy.
        if unit.spans.drain_before_member || allocations_changed {
            if let Err(error) = backend.drain(unit.device, self.config.drain_timeout()) {
                self.backend_notice("drain", &error);
                return Err("a drain that failed");
            }
            unit.spans.drain_before_member = false;
        }
        if allocations_changed {
            self.cover_new_allocations(backend, unit)?;
        }
        if let Err(error) = backend.launch_starts(unit.device) {
            self.backend_notice("launch_starts", &error);
            return Err("a launch that could not start");
        }
        unit.hold.adopt();
        let Some(dispatch) = dispatch.take() else {
            unreachable!("a dispatch joins once")
        };
        self.policy.on_pass_start(&dispatch.policy_view(), 0);
        let member = Member::new(dispatch);
        let ticket = self.member_ticket(lane, &member);
        unit.log.push_member(member);
        Ok(ticket)
    }

    /// Brings a restoring unit's snapshots up to date with the inventory before a member joins.
    /// Allocations made since (the application's allocator growing, a module variable resolved
    /// at its kernel's first launch) are snapshotted now: no member so far can have used them
    /// (a unit closes at every free, so their addresses are new to it), and every write into
    /// them since they appeared was a call the unit stayed open across, captured and written
    /// again in order. Memory reachable before it entered the inventory (a second mapping of
    /// memory S0 covers) may hold earlier members' writes: later executions restore the
    /// snapshots newest first and S0 last, so bytes S0 covers come back as S0 holds them. `Err`
    /// with the reason the unit closes when it cannot cover the change: a new region is managed
    /// memory (the host writes it with no call), the new regions cannot be staged, or a region
    /// it covers is gone or changed with no free the unit saw (its memory may now be another
    /// allocation's: the unit then ends with execution 0, restoring nothing).
    fn cover_new_allocations<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        unit: &mut OpenUnit<K>,
    ) -> Result<(), &'static str> {
        // Read before the regions: a change in between makes the next comparison fail.
        let generation = self.inventory.generation();
        if !self.still_tracked(unit.device, &unit.snapshots.covered) {
            // Closed now; `run_unit` finds the same and restores nothing.
            return Err("a tracked allocation that changed");
        }
        let now = self.inventory.tracked(unit.device);
        let covered: HashSet<&Region> = unit.snapshots.covered.iter().collect();
        let added: Vec<Region> = now
            .iter()
            .filter(|r| !covered.contains(r))
            .copied()
            .collect();
        if added.iter().any(|r| r.kind == AllocKind::Managed) {
            return Err("new managed memory");
        }
        if !added.is_empty() {
            let bytes: u64 = added.iter().map(|r| r.bytes).sum();
            let started = Instant::now();
            match self.snapshot_staged(backend, unit.device, &added, bytes) {
                Ok(Some((staged, place))) => unit.snapshots.add(staged, place, added, bytes),
                Ok(None) => return Err("new memory that could not be staged"),
                Err(error) => {
                    self.backend_notice("snapshot", &error);
                    return Err("new memory that could not be staged");
                }
            }
            unit.cost.snapshot_ns += elapsed_ns(started);
            // F (saved when the unit closes) has grown by as much.
            if unit.spans.undeferrable.is_none()
                && backend
                    .device_free_bytes(unit.device)
                    .saturating_sub(self.options.staging_reserve_bytes)
                    < unit.snapshots.bytes_tracked
            {
                unit.spans.undeferrable = Some(UNDEFERRABLE_STAGING);
            }
        }
        unit.snapshots.inventory_generation = generation;
        Ok(())
    }

    /// Whether every region of `covered` is still tracked on `device`, unchanged. One that is
    /// not went with no free a unit saw: its memory may be another allocation's now, and no
    /// snapshot may be restored into it.
    pub(super) fn still_tracked(&self, device: DeviceId, covered: &[Region]) -> bool {
        let now: HashSet<Region> = self.inventory.tracked(device).into_iter().collect();
        covered.iter().all(|r| now.contains(r))
    }

    fn member_ticket(&self, lane: &Lane<K>, member: &Member<K::Launch>) -> LaunchTicket {
        LaunchTicket {
            kind: TicketKind::Member(MemberTicket {
                dispatch_id: member.dispatch.dispatch_id,
                device: member.dispatch.info.device,
                entered: Instant::now(),
                parker: Some(lane.gate.clone()),
                abandoned: member.abandoned.clone(),
            }),
        }
    }

    /// After a member's own launch: keep a copy of it, then park the unit (or close it when
    /// full, or when the launch could not be kept: then with the application's parameters).
    pub(super) fn unit_member_exit<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        mut ticket: MemberTicket,
        launch: &K::Launch,
    ) {
        ticket.parker = None;
        let lane = self.lane(ticket.device);
        let mut open = lock(&lane.open_unit);
        let Some(unit) = open.as_mut() else {
            return;
        };
        let Some(index) = unit
            .log
            .members
            .iter()
            .rposition(|m| m.dispatch.dispatch_id == ticket.dispatch_id)
        else {
            return;
        };
        unit.cost.pass0_ns += elapsed_ns(ticket.entered);
        if let Err(error) = backend.launch_ends(unit.device) {
            self.backend_notice("launch_ends", &error);
            unit.log.replayable = false;
        }
        let mut reason = (unit.log.members.len() >= unit.capacity).then_some("full");
        if reason.is_none() && unit.log.replayable {
            match backend.retain_launch(launch) {
                Ok(kept) => unit.log.members[index].launch = Some(kept),
                Err(_) => reason = Some("a launch that could not be kept"),
            }
        }
        if reason.is_none() && unit.plan.restores() && unit.spans.undeferrable.is_none() {
            let kept = unit.log.members[index].launch.as_ref().unwrap_or(launch);
            if self.reaches_host_memory(backend, kept) {
                unit.spans.undeferrable = Some("a kernel of it reaches host or managed memory");
            }
        }
        if !unit.log.replayable {
            reason = Some("a lost launch boundary");
        }
        match reason {
            Some(reason) => {
                let Some(unit) = open.take() else { return };
                drop(open);
                self.run_unit(backend, unit, reason, Some(launch));
            }
            None => unit.hold.park(),
        }
    }

    /// Whether one of `launch`'s parameters is an address of host or managed memory.
    fn reaches_host_memory<B: DeviceOf<K>>(&self, backend: &mut B, launch: &K::Launch) -> bool {
        let addresses = backend.launch_addresses(launch);
        addresses.iter().any(|&address| {
            self.inventory
                .find_anywhere(address)
                .is_some_and(|region| matches!(region.kind, AllocKind::Host | AllocKind::Managed))
        })
    }

    /// Adopts and closes the lane's parked unit, if there is one. Returns whether it closed one.
    pub(super) fn close_parked_unit<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        lane: &Lane<K>,
        reason: &str,
    ) -> bool {
        let me = std::thread::current().id();
        let waiting_since = Instant::now();
        let unit = loop {
            let mut open = lock(&lane.open_unit);
            let Some(unit) = open.as_ref() else {
                return false;
            };
            if !lane.gate.is_parked() {
                return false;
            }
            // Its owner is inside a call the unit stays open across: a restore now would
            // race that call's work. Wait for the call to end.
            if unit.plan.restores() && unit.owner != me && lane.gate.in_call(unit.owner) {
                drop(open);
                if waiting_since.elapsed() > self.config.drain_timeout() {
                    self.fatal(&format!(
                        "a replay window's owner stayed inside a CUDA call for more than {:?}; raise KREPLAY_DRAIN_TIMEOUT (seconds) or set KREPLAY_WINDOW_SPANS=0",
                        self.config.drain_timeout()
                    ));
                    return false;
                }
                lane.gate.wait_for_change(Duration::from_millis(5));
                continue;
            }
            let Some(unit) = open.take() else {
                return false;
            };
            unit.hold.adopt();
            break unit;
        };
        self.run_unit(backend, unit, reason, None);
        true
    }

    pub(super) fn window_summary(&self) -> Option<String> {
        lock(&self.window_stats).line()
    }
}
