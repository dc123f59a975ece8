//! A unit's later executions: one loop over them (planned up front, or pass by pass when the
//! policy decides after each), the timing execution, and one execution's restore, start, re-run
//! of the log and stop.

use super::*;
use std::cell::Cell;

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

    /// Unless `KREPLAY_TIMING_EXECUTION=0`, for a unit that is replayed (its start restorable)
    /// with its passes planned at once, on a device that runs them: the unit's launches once
    /// more, from its restored start, measuring no counters; their times, for every pass's records. `Ok(None)`: not run, or it
    /// failed with memory intact (said once: the records keep their own executions' times);
    /// `Err`: memory can no longer be trusted.
    pub(super) fn run_timing_execution<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        plan: &UnitPlan,
        replay: &mut Replay<K::Snapshot>,
    ) -> Result<Option<Vec<Timing>>, ReplayOutcome> {
        // A unit of one execution took no snapshot: running it again would apply it twice.
        if !self.config.switches.timing_execution
            || plan.executions < 2
            || !backend.runs_timing_executions(job.device)
        {
            return Ok(None);
        }
        match self.run_execution(backend, job, None, replay) {
            Ok(times) => Ok(Some(times)),
            Err(PassFailure::Counters(message)) => {
                self.notice(
                    "timing-execution",
                    &format!("an execution without counters for the records' durations failed ({message}); those records keep their measured executions' times"),
                );
                Ok(None)
            }
            Err(fatal) => {
                self.pass_failed(backend, job, fatal, replay);
                backend.abandon_unit(job.device);
                Err(ReplayOutcome::DeclinedError)
            }
        }
    }

    /// One later execution: restore the unit's snapshots (S0 last), start, re-run the log (its
    /// launches and captured writes), stop. `planned`: the execution of the unit's plan, or
    /// `None` for the timing execution (no counters).
    pub(super) fn run_execution<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        planned: Option<usize>,
        replay: &mut Replay<K::Snapshot>,
    ) -> Result<Vec<Timing>, PassFailure> {
        let device = job.device;
        let execution = match planned {
            Some(e) => e.to_string(),
            None => "timing".to_string(),
        };
        let restore_started = Instant::now();
        // Newest first: where a later snapshot overlaps S0 (a second mapping of its memory),
        // S0's bytes, the oldest, are the ones that stay.
        for staged in job.snapshots.iter().rev() {
            match backend.restore(staged) {
                Ok(bytes) => replay.cost.bytes_restored += bytes,
                Err(error) => {
                    return Err(PassFailure::Fatal(format!(
                        "restoring device {device} memory before execution {execution} of the replay window of dispatches {} failed ({error}); the application's memory can no longer be trusted",
                        job.describe()
                    )))
                }
            }
        }
        replay.cost.restore_ns += elapsed_ns(restore_started);
        let pass_started = Instant::now();
        let ranges = job.live.len().max(1);
        let started = match planned {
            Some(e) => backend.start_execution(device, e, ranges),
            None => backend.start_timing_execution(device, ranges),
        };
        let mut boundary_lost = None;
        for entry in job.log {
            match entry {
                LogEntry::Launch(index) => {
                    let member = &job.members[*index];
                    if !member.live() {
                        continue;
                    }
                    let launch = member.launch.as_ref().or_else(|| {
                        (job.live.last() == Some(index))
                            .then_some(job.current)
                            .flatten()
                    });
                    let Some(launch) = launch else {
                        return Err(PassFailure::Fatal(format!(
                            "dispatch {} of the replay window of dispatches {} has no launch to re-execute; the application's memory can no longer be trusted",
                            member.dispatch.dispatch_id,
                            job.describe()
                        )));
                    };
                    if started.is_ok() {
                        if let Err(error) = backend.launch_starts(device) {
                            boundary_lost.get_or_insert(error);
                        }
                    }
                    if let Err(error) = backend.relaunch(launch) {
                        return Err(PassFailure::Fatal(format!(
                            "re-executing kernel {:?} for execution {execution} of dispatch {} (replay window of dispatches {}) failed after memory was restored ({error}); the application's memory can no longer be trusted",
                            member.dispatch.info.kernel_name,
                            member.dispatch.dispatch_id,
                            job.describe()
                        )));
                    }
                    if started.is_ok() {
                        if let Err(error) = backend.launch_ends(device) {
                            boundary_lost.get_or_insert(error);
                        }
                    }
                }
                LogEntry::Write(capture) => {
                    if let Err(error) = backend.apply(capture) {
                        return Err(PassFailure::Fatal(format!(
                            "writing back a captured copy during execution {execution} of the replay window of dispatches {} failed ({error}); the application's memory can no longer be trusted",
                            job.describe()
                        )));
                    }
                }
            }
        }
        if let Err(error) = started {
            // Every kernel ran (memory is right) but unmeasured.
            return Err(PassFailure::Counters(format!("start_execution: {error}")));
        }
        let stopped = backend.stop_execution(device);
        match planned {
            Some(_) => replay.cost.pass_ns.push(elapsed_ns(pass_started)),
            None => replay.cost.timing_execution_ns += elapsed_ns(pass_started),
        }
        if let Some(error) = boundary_lost {
            return Err(PassFailure::Counters(format!("launch boundary: {error}")));
        }
        match stopped {
            Ok(timings) if timings.len() == job.live.len() => Ok(timings),
            Ok(timings) => Err(PassFailure::Counters(format!(
                "execution {execution} measured {} of {} dispatches",
                timings.len(),
                job.live.len()
            ))),
            Err(error) => Err(PassFailure::Counters(format!("stop_execution: {error}"))),
        }
    }
}

/// What a unit's later executions work on.
pub(super) struct UnitJob<'a, K: Backend> {
    pub(super) device: DeviceId,
    pub(super) members: &'a [Member<K::Launch>],
    pub(super) log: &'a [LogEntry<K::Capture>],
    /// The last member's launch when it has no kept copy.
    pub(super) current: Option<&'a K::Launch>,
    /// Indices of the members whose launch executed.
    pub(super) live: &'a [usize],
    /// What each later execution restores first (the unit's `snapshots`, in reverse order).
    pub(super) snapshots: &'a [K::Snapshot],
    /// A pass's records were sent.
    pub(super) sent: Cell<bool>,
}

impl<K: Backend> UnitJob<'_, K> {
    /// The stream of each member whose launch executed, in their order.
    fn live_streams(&self) -> Vec<u64> {
        self.live
            .iter()
            .map(|&i| self.members[i].dispatch.info.stream_id)
            .collect()
    }

    /// `first..last` dispatch ids, for messages.
    pub(super) fn describe(&self) -> String {
        let ids: Vec<u64> = self
            .live
            .iter()
            .map(|&i| self.members[i].dispatch.dispatch_id)
            .collect();
        match (ids.first(), ids.last()) {
            (Some(first), Some(last)) if ids.len() > 1 => format!("{first}..{last}"),
            (Some(only), _) => only.to_string(),
            _ => "(none)".to_string(),
        }
    }
}

/// `timings` with each one's duration taken from `durations` (same order, the launches' order;
/// `streams[i]` is the stream of the `i`-th): a record keeps when its execution began and gets
/// the duration of the execution without counters, but never ends after the next launch on its
/// stream began (a stream runs one kernel at a time; a duration that came out longer than its
/// measured interval is cut there, to nothing when that launch began at the same time).
fn with_durations(timings: &[Timing], durations: &[Timing], streams: &[u64]) -> Vec<Timing> {
    debug_assert_eq!(timings.len(), streams.len(), "a stream for every timing");
    // Latest first: when each launch's stream next began, from the launches after it.
    let mut next_start: HashMap<u64, u64> = HashMap::new();
    let mut ends = vec![u64::MAX; timings.len()];
    for (i, (t, stream)) in timings.iter().zip(streams).enumerate().rev() {
        if let Some(&next) = next_start.get(stream) {
            ends[i] = next.max(t.start_ns);
        }
        next_start.insert(*stream, t.start_ns);
    }
    timings
        .iter()
        .zip(durations)
        .zip(ends)
        .map(|((t, d), limit)| Timing {
            start_ns: t.start_ns,
            end_ns: t
                .start_ns
                .saturating_add(d.end_ns.saturating_sub(d.start_ns))
                .min(limit),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(start_ns: u64, end_ns: u64) -> Timing {
        Timing { start_ns, end_ns }
    }

    #[test]
    fn durations_replace_the_measured_ones_but_never_overlap_the_next_launch_on_a_stream() {
        // Streams 1, 2, 1: the first record's untimed duration (60) would reach past the next
        // launch on stream 1 (at 50), so it ends there; stream 2's may overlap stream 1's.
        let measured = [t(0, 40), t(10, 30), t(50, 90)];
        let untimed = [t(1000, 1060), t(1000, 1080), t(1100, 1105)];
        assert_eq!(
            with_durations(&measured, &untimed, &[1, 2, 1]),
            vec![t(0, 50), t(10, 90), t(50, 55)]
        );
        // Two launches on one stream that began at the same time: the first ends there; the
        // last on its stream is never cut.
        assert_eq!(
            with_durations(&[t(0, 5), t(0, 9)], &[t(0, 4), t(0, 7)], &[3, 3]),
            vec![t(0, 0), t(0, 7)]
        );
    }
}
