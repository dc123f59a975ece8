//! A unit's records: one pass's when passes are planned one at a time, or every pass's after
//! the planned executions and the timing execution; one pass's records of every member.

use super::executions::Replay;
use super::job::UnitJob;
use super::timing::with_durations;
use super::*;
use crate::engine::records::pass_result;

impl<K: Backend> Engine<K> {
    /// Stepwise: reads the counters of the pass just measured and sends its records; `Err`
    /// (said once) when they could not be read.
    pub(super) fn record_pass<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        pass: u32,
        timings: &[Timing],
    ) -> Result<(), ReplayOutcome> {
        match backend.unit_counters(job.device) {
            Ok(counters) => {
                let counters = counters.into_iter().next().flatten();
                self.send_unit_pass(job, pass, timings, counters);
                Ok(())
            }
            Err(error) => {
                self.unit_counters_notice(&format!("unit_counters: {error}"));
                Err(ReplayOutcome::DeclinedError)
            }
        }
    }

    /// Planned up front, after the plan's executions: the timing execution, the counters of
    /// every pass and their records, each pass with the timings of the execution measuring it.
    pub(super) fn record_planned<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        plan: &PassPlan,
        mut timings: Vec<Vec<Timing>>,
        replay: &mut Replay<K::Snapshot>,
    ) -> ReplayOutcome {
        let durations = match self.run_timing_execution(backend, job, &plan.executions, replay) {
            Ok(durations) => durations,
            Err(outcome) => return outcome,
        };
        let counters = match backend.unit_counters(job.device) {
            Ok(counters) => counters,
            Err(error) => {
                self.unit_counters_notice(&format!("unit_counters: {error}"));
                return ReplayOutcome::DeclinedError;
            }
        };
        if let Some(durations) = &durations {
            let streams = job.live_streams();
            for execution in &mut timings {
                *execution = with_durations(execution, durations, &streams);
            }
        }
        for (pass, counters) in counters.into_iter().enumerate().take(plan.groups.len()) {
            let execution = plan
                .executions
                .execution_of_pass
                .get(pass)
                .copied()
                .unwrap_or(0);
            let Some(timings) = timings.get(execution) else {
                continue;
            };
            self.send_unit_pass(job, pass as u32, timings, counters);
        }
        ReplayOutcome::Replayed
    }

    /// The records of one pass of every live member.
    pub(super) fn send_unit_pass(
        &self,
        job: &UnitJob<'_, K>,
        pass: u32,
        timings: &[Timing],
        counters: Option<Vec<Vec<CounterSample>>>,
    ) {
        job.sent.set(true);
        let mut counters = counters.map(|c| c.into_iter());
        for (&index, timing) in job.live.iter().zip(timings) {
            let member = &job.members[index];
            let view = member.dispatch.policy_view();
            let samples = counters.as_mut().and_then(|c| c.next()).unwrap_or_default();
            let result = pass_result(*timing, samples);
            self.policy.on_pass_stop(&view, pass, &result);
            self.send_dispatch(&member.dispatch, Some(pass), result);
        }
    }
}
