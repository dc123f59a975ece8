//! A unit's close: execution 0 stopped and read, the later executions (and the timing execution)
//! run on restored memory (`executions`), the application's view saved and put back (`view`),
//! and every pass's records sent (`pass_records`; a failed pass: `failure`).

use super::executions::Replay;
use super::job::UnitJob;
use super::*;
use crate::engine::records::pass_result;
use crate::engine::sys::{elapsed_ns, lock};
use std::cell::Cell;

/// How long the owner of a closed window waits at most for its records to be committed (about a
/// millisecond when the writer keeps up): a slow disk, or a writer far behind, delays the commit,
/// never the application for longer.
const WINDOW_COMMIT_WAIT: std::time::Duration = std::time::Duration::from_millis(100);

impl<K: Backend> Engine<K> {
    /// Closes a unit: execution 0's results, the later executions, records and costs.
    /// `current`: the application's own launch of the last member, when the unit closes at
    /// that member's exit (it has no kept copy then).
    pub(super) fn run_unit<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        unit: OpenUnit<K>,
        reason: &str,
        current: Option<&K::Launch>,
    ) {
        let OpenUnit {
            device,
            capacity,
            hold,
            plan,
            snapshots,
            mut log,
            spans,
            cost,
            ..
        } = unit;
        // Launches that did not execute: no record, nothing to measure or replay.
        let live = log.live();
        let n = live.len();
        if capacity > 1 {
            lock(&self.window_stats).record(
                n,
                reason,
                spans.calls,
                spans.captures,
                spans.captured_bytes,
            );
        }
        let mut replay = Replay {
            view: None,
            cost: Cost {
                bytes_snapshotted: snapshots.bytes_snapshotted(),
                ..cost
            },
        };

        let timings0 = self.stop_first_execution(backend, device, n, spans.calls, &mut replay);

        let last_live = live.last().copied();
        let job = UnitJob {
            device,
            members: &log.members,
            log: &log.entries,
            current: current.filter(|_| last_live.is_some_and(|i| log.members[i].launch.is_none())),
            live: &live,
            snapshots: &snapshots.taken,
            sent: Cell::new(false),
        };
        let later = plan.restores();
        let covered_intact = !later || self.still_tracked(device, &snapshots.covered);
        let kernel_times = timings0.clone();
        let outcome = match timings0 {
            None => {
                backend.abandon_unit(device);
                ReplayOutcome::DeclinedError
            }
            Some(_) if later && (!log.replayable || !covered_intact) => {
                self.unit_counters_notice(
                    "a launch boundary, a captured write or a tracked allocation was lost",
                );
                backend.abandon_unit(device);
                ReplayOutcome::DeclinedError
            }
            Some(_)
                if later
                    && (spans.calls > 0 || snapshots.host_writable)
                    && !self.save_view(backend, &job, &mut replay) =>
            {
                backend.abandon_unit(device);
                ReplayOutcome::DeclinedError
            }
            Some(timings0) => {
                self.run_later_executions(backend, &job, &plan, timings0, &mut replay)
            }
        };
        // The kernels ran: a unit that lost its counters before any pass was recorded still
        // records each one's launch, with the times execution 0 measured and no counters.
        if let (ReplayOutcome::DeclinedError, false, Some(times)) =
            (outcome, job.sent.get(), kernel_times)
        {
            self.send_uncounted(&log.members, &live, times);
        }
        if let Some(view) = replay.view.take() {
            self.put_back_view(backend, &job, view, &mut replay);
        }
        let recorded = (snapshots.staging, snapshots.bytes_tracked);
        snapshots.release(backend);
        log.release_captures(backend);
        drop(hold);
        let conditions = self.unit_conditions(backend, device);
        // One replay cost per live member, the unit's shared costs on its first.
        for (position, &index) in live.iter().enumerate() {
            let dispatch_id = log.members[index].dispatch.dispatch_id;
            let record = replay.cost.record(
                dispatch_id,
                device,
                outcome,
                recorded,
                &conditions,
                position == 0,
            );
            self.sink.send(Record::ReplayCost(record));
        }
        // Committed before the unit's owner goes on: a process killed from now on (SIGKILL,
        // the OOM killer, a crash: nothing runs at its end) keeps this window's records; only
        // the window open then is lost. A disk slower than the wait only delays the commit.
        self.sink.commit_within(WINDOW_COMMIT_WAIT);
    }

    /// A record per live member with execution 0's `times` and no counters.
    fn send_uncounted(&self, members: &[Member<K::Launch>], live: &[usize], times: Vec<Timing>) {
        for (&index, timing) in live.iter().zip(times) {
            self.send_dispatch(
                &members[index].dispatch,
                None,
                pass_result(timing, Vec::new()),
            );
        }
    }

    /// Stops execution 0 (whose own time so far is in the cost) and reads its timings: `None`
    /// when it did not measure every live member. A unit that stayed open across calls and lost
    /// its measurement switches spanning off for the rest of the run.
    fn stop_first_execution<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        device: DeviceId,
        n: usize,
        spanned: u64,
        replay: &mut Replay<K::Snapshot>,
    ) -> Option<Vec<Timing>> {
        let stop_started = Instant::now();
        let first = if n == 0 {
            // Every member's launch failed: nothing ran, nothing to read.
            backend.abandon_unit(device);
            Ok(Vec::new())
        } else {
            backend.stop_execution(device)
        };
        let pass0_ns = replay.cost.pass0_ns + elapsed_ns(stop_started);
        replay.cost.pass_ns.push(pass0_ns);
        let timings0 = match first {
            Ok(timings) if timings.len() == n && n > 0 => Some(timings),
            Ok(timings) => {
                if n > 0 {
                    self.unit_counters_notice(&format!(
                        "execution 0 measured {} of {n} dispatches",
                        timings.len()
                    ));
                }
                None
            }
            Err(error) => {
                self.backend_notice("stop_execution", &error);
                None
            }
        };
        if timings0.is_none() && spanned > 0 && self.window_spans.swap(false, Ordering::Relaxed) {
            self.notice(
                "window-spans-off",
                &format!("a replay window that stayed open across {spanned} other CUDA call(s) did not measure its kernels; windows now close at every call for the rest of the run ({ENV_WINDOW_SPANS}=0 does so from the start)"),
            );
        }
        timings0
    }
}
