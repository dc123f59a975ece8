//! One later execution of a unit: restore, start, re-run of the log (every member relaunched,
//! every captured write applied, in order), stop.

use super::executions::Replay;
use super::job::UnitJob;
use super::*;
use crate::engine::sys::elapsed_ns;

impl<K: Backend> Engine<K> {
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
