//! A unit's opening: the exclusive hold, the drain, the plan of its executions,
//! S0 and the start of execution 0 with its first member.

use super::hold::Refused;
use super::stage::Staged;
use super::*;
use crate::engine::lane::Lane;
use crate::engine::sys::{elapsed_ns, lock};
use crate::engine::tickets::Dispatch;

impl<K: Backend> Engine<K> {
    /// Window, drain, plan, snapshot, execution 0 started. Falls back to [`Engine::once`] with
    /// the reason when any of them cannot be had.
    pub(super) fn open_new_unit<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        lane: &Lane<K>,
        dispatch: Dispatch,
        total: Option<u32>,
        groups: Vec<Option<usize>>,
        capacity: usize,
    ) -> LaunchTicket {
        let device = dispatch.info.device;
        let group0 = groups.first().copied().flatten();
        let refused = |this: &Self, backend: &mut B, dispatch, (outcome, bytes): Refused| {
            this.once(backend, dispatch, outcome, group0, bytes)
        };
        let hold = match self.exclusive_hold(backend, lane, dispatch.dispatch_id) {
            Ok(hold) => hold,
            Err(why) => return refused(self, backend, dispatch, why),
        };
        let (hold, drain_ns) = match self.drained(backend, device, hold, dispatch.dispatch_id) {
            Ok(drained) => drained,
            Err(why) => return refused(self, backend, dispatch, why),
        };

        // With continue decisions every pass is planned on its own, as it comes.
        let stepwise = self.policy.has_continue_decision();
        let planned = if stepwise { &groups[..1] } else { &groups[..] };
        let plan = match backend.plan_unit(device, planned) {
            Ok(plan) => plan,
            Err(error) => {
                drop(hold);
                self.backend_notice("plan_unit", &error);
                return refused(self, backend, dispatch, (ReplayOutcome::DeclinedError, 0));
            }
        };
        let plan = PassPlan {
            total,
            groups,
            stepwise,
            executions: plan,
        };
        let restorable = plan.restores();
        let (hold, staged) = match self.staged(backend, device, hold, restorable) {
            Ok(staged) => staged,
            Err(why) => return refused(self, backend, dispatch, why),
        };
        let Staged {
            snapshots,
            undeferrable,
            snapshot_ns,
        } = staged;
        if restorable {
            self.notice_untracked_kinds();
        }

        let started = Instant::now();
        self.policy.on_pass_start(&dispatch.policy_view(), 0);
        if let Err(error) = backend
            .start_execution(device, 0, capacity)
            .and_then(|()| backend.launch_starts(device))
        {
            backend.abandon_unit(device);
            // It runs unmeasured: a flush or clock reading before the failure is not its.
            let _ = backend.take_unit_conditions(device);
            let bytes_tracked = snapshots.bytes_tracked;
            snapshots.release(backend);
            drop(hold);
            self.backend_notice("start_execution", &error);
            return self.once_unmeasured(backend, dispatch, bytes_tracked, started);
        }
        let member = Member::new(dispatch);
        let ticket = self.member_ticket(lane, &member);
        let unit = OpenUnit {
            owner: std::thread::current().id(),
            device,
            capacity,
            hold,
            plan,
            snapshots,
            log: ExecutionLog::new(member),
            spans: Spans {
                undeferrable,
                ..Spans::default()
            },
            cost: Cost {
                drain_ns,
                snapshot_ns,
                ..Cost::default()
            },
        };
        *lock(&lane.open_unit) = Some(unit);
        ticket
    }

    /// The device drained before a new unit, and how long that took; on failure the hold is
    /// given back before the failure is said.
    fn drained<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        hold: ExclusiveHold,
        dispatch_id: u64,
    ) -> Result<(ExclusiveHold, u64), Refused> {
        let drain_started = Instant::now();
        match backend.drain(device, self.config.drain_timeout()) {
            Ok(()) => Ok((hold, elapsed_ns(drain_started))),
            Err(BackendError::DrainTimeout { device, deadline }) => {
                drop(hold);
                self.fatal(&format!(
                    "device {device} did not finish its queued work within {deadline:?} before dispatch {dispatch_id} could be replayed; raise KREPLAY_DRAIN_TIMEOUT (seconds) or profile without --replay-mode kernel"
                ));
                Err((ReplayOutcome::DeclinedError, 0))
            }
            Err(error) => {
                drop(hold);
                self.backend_notice("drain", &error);
                Err((ReplayOutcome::DeclinedError, 0))
            }
        }
    }
}
