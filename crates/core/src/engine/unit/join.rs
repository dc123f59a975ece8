//! A dispatch joining its thread's open unit: the allocations made since the unit opened
//! covered, the member added, its ticket made.

use super::*;
use crate::engine::lane::Lane;
use crate::engine::sys::elapsed_ns;
use crate::engine::tickets::{Dispatch, MemberTicket, TicketKind};

impl<K: Backend> Engine<K> {
    /// Adds a dispatch to its thread's open unit; `Err` with why it could not join (the
    /// dispatch left in `dispatch`) when the unit cannot cover the allocations made since it
    /// opened or the device could not be made ready for it.
    pub(super) fn join_unit<B: DeviceOf<K>>(
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
    pub(super) fn cover_new_allocations<B: DeviceOf<K>>(
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
    pub(in crate::engine) fn still_tracked(&self, device: DeviceId, covered: &[Region]) -> bool {
        let now: HashSet<Region> = self.inventory.tracked(device).into_iter().collect();
        covered.iter().all(|r| now.contains(r))
    }

    pub(super) fn member_ticket(&self, lane: &Lane<K>, member: &Member<K::Launch>) -> LaunchTicket {
        LaunchTicket {
            kind: TicketKind::Member(MemberTicket {
                dispatch_id: member.dispatch.dispatch_id,
                device: member.dispatch.info.device,
                entered: Instant::now(),
                parker: Some(lane.gate.clone()),
                abandoned: member.abandoned.clone(),
            }),
            inside: None,
        }
    }
}
