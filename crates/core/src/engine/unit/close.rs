//! A unit's close: execution 0 stopped and read, the later executions (and the timing execution)
//! run on restored memory (`executions`), the application's view put back, and every pass's
//! records sent.

use super::executions::Replay;
use super::job::UnitJob;
use super::*;
use std::cell::Cell;

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

    /// Saves F, every tracked region as the application sees it, before the later executions;
    /// false (said once) when it cannot be staged: the unit then ends with execution 0, whose
    /// results the application already has. Also when the unit stayed open across no call but
    /// S0 holds managed memory: the host may have written it while a member ran or between
    /// members, and what members computed from those writes (in any tracked memory) is the
    /// application's, which the later executions, run without them, would not reproduce.
    fn save_view<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        replay: &mut Replay<K::Snapshot>,
    ) -> bool {
        let regions = self.inventory.tracked(job.device);
        if regions.is_empty() {
            return true;
        }
        let bytes: u64 = regions.iter().map(|r| r.bytes).sum();
        let started = Instant::now();
        match self.snapshot_staged(backend, job.device, &regions, bytes) {
            Ok(Some((view, _))) => {
                replay.view = Some(view);
                replay.cost.bytes_snapshotted += bytes;
                replay.cost.snapshot_ns += elapsed_ns(started);
                true
            }
            Ok(None) => {
                self.unit_counters_notice(
                    "the memory the application saw could not be staged before the later passes",
                );
                false
            }
            Err(error) => {
                self.backend_notice("snapshot", &error);
                false
            }
        }
    }

    /// Restores F after the later executions (or after one failed).
    fn put_back_view<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        view: K::Snapshot,
        replay: &mut Replay<K::Snapshot>,
    ) {
        let started = Instant::now();
        match backend.restore(&view) {
            Ok(bytes) => replay.cost.bytes_restored += bytes,
            Err(error) => self.fatal(&format!(
                "putting back device {} memory after the replay window of dispatches {} failed ({error}); the application's memory can no longer be trusted",
                job.device,
                job.describe()
            )),
        }
        replay.cost.restore_ns += elapsed_ns(started);
        backend.release(view);
    }

    /// A later execution failed: counters are lost; memory is put back from F when it was
    /// saved, and is otherwise fatal when it cannot be trusted.
    pub(super) fn pass_failed<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        job: &UnitJob<'_, K>,
        failure: PassFailure,
        replay: &mut Replay<K::Snapshot>,
    ) {
        match failure {
            PassFailure::Counters(message) => self.unit_counters_notice(&message),
            PassFailure::Fatal(message) => match replay.view.take() {
                Some(view) => {
                    self.unit_counters_notice(&format!(
                        "{message} (put back from the memory saved before the later passes)"
                    ));
                    self.put_back_view(backend, job, view, replay);
                }
                None => self.fatal(&message),
            },
        }
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

    pub(super) fn unit_counters_notice(&self, message: &str) {
        self.notice(
            "window-pass-counters",
            &format!("a replay window lost its counters and its replay stopped ({message}); the application's memory is what it would be without kreplay"),
        );
    }
}
