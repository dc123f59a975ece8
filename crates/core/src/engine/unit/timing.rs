//! The timing execution: the unit once more with no counters, whose launch times become the
//! records' durations.

use super::executions::Replay;
use super::job::UnitJob;
use super::*;

impl<K: Backend> Engine<K> {
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
}

/// `timings` with each one's duration taken from `durations` (same order, the launches' order;
/// `streams[i]` is the stream of the `i`-th): a record keeps when its execution began and gets
/// the duration of the execution without counters, but never ends after the next launch on its
/// stream began (a stream runs one kernel at a time; a duration that came out longer than its
/// measured interval is cut there, to nothing when that launch began at the same time).
pub(super) fn with_durations(
    timings: &[Timing],
    durations: &[Timing],
    streams: &[u64],
) -> Vec<Timing> {
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
