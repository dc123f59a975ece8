//! Replay units: up to K consecutive dispatches of one thread on one device, measured together.
//! This file sends a replayed dispatch to its unit; `join` adds a member,
//! `park` parks or closes a unit at a member's exit, `open` opens one, `close` runs its later
//! executions when it closes (`executions`, `rerun`, `timing`, `pass_records`, on a `job`);
//! `parts` holds the open unit and what it is made of (its plan, snapshots, execution log, stay
//! across calls and cost); `calls` keeps it open across its owner's calls.
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
//! Staying open across calls: see `calls`.
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

use super::*;
use crate::backend::{AllocKind, UnitPlan};
use crate::engine::lane::Lane;
use crate::engine::sys::lock;
use crate::engine::tickets::Dispatch;
use crate::gate::{ExclusiveHold, ExclusiveRefused};
use std::time::Duration;

mod calls;
mod close;
mod executions;
mod failure;
mod hold;
mod job;
mod join;
mod open;
mod park;
pub(super) mod parts;
mod pass_records;
mod rerun;
mod stage;
pub(super) mod stats;
mod timing;
mod view;

use parts::{Cost, ExecutionLog, LogEntry, Member, OpenUnit, PassPlan, Snapshots, Spans};

/// Why a restoring unit cannot stay open across calls when F (the application's view when it
/// closes) would not fit device staging next to its snapshots.
pub(super) const UNDEFERRABLE_STAGING: &str = "F would not fit device staging";

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

    /// The members of the units open on every device.
    pub(super) fn open_unit_members(&self) -> usize {
        self.lanes()
            .iter()
            .filter_map(|lane| lock(&lane.open_unit).as_ref().map(|u| u.log.members.len()))
            .sum()
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

    pub(super) fn window_summary(&self) -> Option<String> {
        lock(&self.window_stats).line()
    }
}
