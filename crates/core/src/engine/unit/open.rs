//! A unit's opening: the exclusive hold, the drain, the plan of its executions,
//! S0 and the start of execution 0 with its first member.

use super::super::lanes::Lane;
use super::*;

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

    /// The exclusive hold for a new unit (closing a parked unit of another thread
    /// first), or why the dispatch runs once.
    fn exclusive_hold<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        lane: &Lane<K>,
        dispatch_id: u64,
    ) -> Result<ExclusiveHold, Refused> {
        let deadline = self.config.drain_timeout();
        // Inside a call on another device: waiting for this device's readers could wait for a
        // thread that waits, inside a call on this device, for that other device (a cycle no
        // one gate sees). Such a launch runs once.
        if self.holds_fence_elsewhere(lane) {
            self.notice_contended();
            return Err((ReplayOutcome::DeclinedError, 0));
        }
        let hold = loop {
            match lane.gate.exclusive(deadline) {
                Err(ExclusiveRefused::Parked) => {
                    if !self.close_parked_unit(backend, lane, "another thread's launch") {
                        std::thread::yield_now();
                    }
                }
                other => break other,
            }
        };
        match hold {
            Ok(hold) => Ok(hold),
            Err(ExclusiveRefused::Parked) => unreachable!("the loop ends on another answer"),
            // A launch from inside a replay (a tool's pass callback): run it once.
            Err(ExclusiveRefused::Reentrant) => Err((ReplayOutcome::DeclinedError, 0)),
            Err(ExclusiveRefused::Contended) => {
                self.notice_contended();
                Err((ReplayOutcome::DeclinedError, 0))
            }
            Err(ExclusiveRefused::Timeout) => {
                self.fatal(&format!(
                    "other application threads kept the device busy for more than {deadline:?} while dispatch {dispatch_id} waited to be replayed; raise KREPLAY_DRAIN_TIMEOUT (seconds) or profile without --replay-mode kernel"
                ));
                Err((ReplayOutcome::DeclinedError, 0))
            }
        }
    }

    fn notice_contended(&self) {
        self.notice(
            "window-contended",
            "a launch made inside another API call while a second thread was starting a replay (or inside a call on another device) ran once, unreplayed (waiting could deadlock)",
        );
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

    /// S0, the snapshot of the device's tracked memory a unit that restores starts from (none
    /// when it does not restore, or nothing is tracked), staged on the device while that leaves
    /// the reserve free and on the host otherwise; on failure the hold is given back first.
    fn staged<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        hold: ExclusiveHold,
        restorable: bool,
    ) -> Result<(ExclusiveHold, Staged<K::Snapshot>), Refused> {
        // Read before the regions: a change in between makes a later comparison fail, never pass.
        let inventory_generation = self.inventory.generation();
        let regions = self.inventory.tracked(device);
        let bytes_tracked: u64 = regions.iter().map(|r| r.bytes).sum();
        let snapshot_started = Instant::now();
        // No tracked byte on the device: nothing to stage, every restore would be empty
        // (untracked kinds are never restored anyway).
        let (snapshot, staging) = if regions.is_empty() || !restorable {
            (None, Staging::None)
        } else {
            match self.snapshot_staged(backend, device, &regions, bytes_tracked) {
                Ok(Some((staged, place))) => (Some(staged), place),
                Ok(None) => {
                    drop(hold);
                    self.decline_notice(ReplayOutcome::DeclinedSnapshotTooLarge);
                    return Err((ReplayOutcome::DeclinedSnapshotTooLarge, bytes_tracked));
                }
                Err(error) => {
                    drop(hold);
                    self.backend_notice("snapshot", &error);
                    return Err((ReplayOutcome::DeclinedError, bytes_tracked));
                }
            }
        };
        let snapshot_ns = elapsed_ns(snapshot_started);
        // F, the application's view when the unit closes, is staged on the device too.
        let undeferrable = if !restorable || regions.is_empty() {
            None
        } else if staging != Staging::Device {
            Some("its snapshot is staged on the host")
        } else if backend
            .device_free_bytes(device)
            .saturating_sub(self.options.staging_reserve_bytes)
            < bytes_tracked
        {
            Some(super::UNDEFERRABLE_STAGING)
        } else {
            None
        };
        Ok((
            hold,
            Staged {
                snapshots: Snapshots {
                    host_writable: restorable
                        && regions.iter().any(|r| r.kind == AllocKind::Managed),
                    taken: snapshot.into_iter().collect(),
                    covered: regions,
                    staging,
                    bytes_tracked,
                    inventory_generation,
                },
                undeferrable,
                snapshot_ns,
            },
        ))
    }

    /// Said once the replay is certain (several executions): memory that is not restored
    /// matters only then.
    fn notice_untracked_kinds(&self) {
        for kind in self.inventory.untracked_kinds() {
            self.notice(
                &format!("untracked-{kind:?}"),
                &format!(
                    "{} is not restored between replay passes; kernels that write it see their own earlier passes' writes",
                    kind.describe()
                ),
            );
        }
    }
}

/// Why a unit could not be opened: the dispatch runs once with this outcome, and the bytes of
/// tracked memory it saw.
type Refused = (ReplayOutcome, u64);

/// A new unit's S0 and what its staging decided.
struct Staged<S> {
    snapshots: Snapshots<S>,
    /// As [`Spans::undeferrable`], as far as staging decides: F fits device staging.
    undeferrable: Option<&'static str>,
    snapshot_ns: u64,
}
