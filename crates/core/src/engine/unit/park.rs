//! A member's exit parks its unit (its owner returns to user code) or closes it when full;
//! any thread that meets a parked unit adopts and closes it.

use super::*;
use crate::engine::lane::Lane;
use crate::engine::sys::{elapsed_ns, lock};
use crate::engine::tickets::MemberTicket;

impl<K: Backend> Engine<K> {
    /// After a member's own launch: keep a copy of it, then park the unit (or close it when
    /// full, or when the launch could not be kept: then with the application's parameters).
    pub(in crate::engine) fn unit_member_exit<B: DeviceOf<K>>(
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
    pub(super) fn reaches_host_memory<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        launch: &K::Launch,
    ) -> bool {
        let addresses = backend.launch_addresses(launch);
        addresses.iter().any(|&address| {
            self.inventory
                .find_anywhere(address)
                .is_some_and(|region| matches!(region.kind, AllocKind::Host | AllocKind::Managed))
        })
    }

    /// Adopts and closes the lane's parked unit, if there is one. Returns whether it closed one.
    pub(in crate::engine) fn close_parked_unit<B: DeviceOf<K>>(
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
}
