//! A unit's later executions: one loop over them (planned up front, or pass by pass when the
//! policy decides after each); the timing execution is in `timing`, one execution in `rerun`,
//! the records in `pass_records`.

use super::job::UnitJob;
use super::*;

/// The state of a unit's later executions, for the failure paths.
pub(super) struct Replay<S> {
    /// F: the application's view, saved before the later executions when the unit stayed open
    /// across calls or its S0 holds managed memory (put back after them, and after a failure).
    pub(super) view: Option<S>,
    pub(super) cost: Cost,
}

impl<K: Backend> Engine<K> {
    /// The unit's later executions, in one loop for both ways of planning them: every pass
    /// planned up front (the plan's executions, then the timing execution, then every pass's
    /// records), or passes one at a time (each planned, measured and recorded before the policy
    /// decides whether another follows).
    pub(super) fn run_later_executions<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        plan: &PassPlan,
        timings0: Vec<Timing>,
        replay: &mut Replay<K::Snapshot>,
    ) -> ReplayOutcome {
        if plan.stepwise {
            if let Err(outcome) = self.record_pass(backend, job, 0, &timings0) {
                return outcome;
            }
        } else {
            // Passes measured together with pass 0 started with it.
            self.announce_passes(job, &plan.executions, 0);
        }
        // Each execution's timings (planned up front: the records are sent after the last).
        let mut timings = vec![timings0];
        // The next planned execution, or the next pass when stepwise.
        let mut next = 1;
        loop {
            let execution = match self.next_execution(backend, job, plan, next) {
                Ok(Some(execution)) => execution,
                Ok(None) => break,
                Err(outcome) => return outcome,
            };
            let measured = match self.run_execution(backend, job, Some(execution), replay) {
                Ok(measured) => measured,
                Err(failure) => {
                    self.pass_failed(backend, job, failure, replay);
                    backend.abandon_unit(job.device);
                    return ReplayOutcome::DeclinedError;
                }
            };
            if plan.stepwise {
                if let Err(outcome) = self.record_pass(backend, job, next as u32, &measured) {
                    return outcome;
                }
            } else {
                timings.push(measured);
            }
            next += 1;
        }
        self.record_planned(backend, job, plan, timings, replay)
    }

    /// What runs as execution `next` of the unit (its plan's, or pass `next` planned now when
    /// stepwise, as execution 0 of a plan of its own), its passes announced to the policy;
    /// `Ok(None)`: the plan's executions are done; `Err`: the unit ends here, with this outcome
    /// (stepwise: the last pass ran, or the policy stopped, or the pass could not be planned).
    pub(super) fn next_execution<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        plan: &PassPlan,
        next: usize,
    ) -> Result<Option<usize>, ReplayOutcome> {
        if !plan.stepwise {
            if next >= plan.executions.executions {
                return Ok(None);
            }
            self.announce_passes(job, &plan.executions, next);
            return Ok(Some(next));
        }
        let pass = next as u32;
        let total = plan.total;
        if total.is_some_and(|t| pass >= t) {
            return Err(ReplayOutcome::Replayed);
        }
        let go_on = job.live.iter().all(|&i| {
            self.policy
                .continue_after(&job.members[i].dispatch.policy_view(), pass - 1, total)
        });
        if !go_on {
            return Err(if total.is_some() {
                ReplayOutcome::StoppedEarly
            } else {
                ReplayOutcome::Replayed
            });
        }
        let group = match plan.groups.get(pass as usize) {
            Some(group) => *group,
            None => job.live.first().and_then(|&i| {
                self.policy
                    .pass_group(&job.members[i].dispatch.policy_view(), pass)
            }),
        };
        if let Err(error) = backend.plan_unit(job.device, &[group]) {
            self.unit_counters_notice(&format!("plan_unit: {error}"));
            return Err(ReplayOutcome::DeclinedError);
        }
        for &i in job.live {
            self.policy
                .on_pass_start(&job.members[i].dispatch.policy_view(), pass);
        }
        Ok(Some(0))
    }

    /// Tells the policy that the passes `plan` measures by `execution` start (pass 0 started
    /// with the members' own launches).
    pub(super) fn announce_passes(&self, job: &UnitJob<'_, K>, plan: &UnitPlan, execution: usize) {
        for (pass, _) in plan
            .execution_of_pass
            .iter()
            .enumerate()
            .filter(|(pass, e)| *pass > 0 && **e == execution)
        {
            for &i in job.live {
                self.policy
                    .on_pass_start(&job.members[i].dispatch.policy_view(), pass as u32);
            }
        }
    }
}
