//! Dispatches that run once (no replay unit): filtered, declined or single-pass launches,
//! measured by their own execution when a group fits it.

use super::*;
use crate::backend::Measurement;
use crate::engine::launch::launch_scope;
use crate::engine::records::pass_result;
use crate::engine::sys::elapsed_ns;
use crate::engine::tickets::{passthrough, Dispatch, OnceTicket, TicketKind};
use crate::engine::traced::{RanOnce, TracedLaunch};

impl<K: Backend> Engine<K> {
    /// The ordinary path: one execution, counters of `group` if any, a record only when there
    /// is something to say (counters, kernel trace, or a decline).
    pub(super) fn once<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        dispatch: Dispatch,
        outcome: ReplayOutcome,
        group: Option<usize>,
        bytes_tracked: u64,
    ) -> LaunchTicket {
        let fence = self.fence_for(backend, once_reason(outcome), launch_scope(&dispatch.info));
        let declined = !matches!(outcome, ReplayOutcome::SinglePass | ReplayOutcome::Filtered);
        if group.is_none() && !self.config.kernel_trace && !declined {
            return passthrough(fence);
        }
        let started = Instant::now();
        let device = dispatch.info.device;
        // A group measured over several executions cannot be measured by one: timestamps only.
        let spanning = group.is_some_and(|g| backend.executions_of_group(device, g) > 1);
        let group = group.filter(|_| !spanning);
        // Timestamps only, in a run that collects no counters (whose units could see this
        // launch run during theirs): timed without waiting for it, where the device can.
        let traced = match group {
            None if self.config.groups.is_empty() => self.trace_launch(backend, device),
            _ => None,
        };
        if traced.is_some() {
            return LaunchTicket {
                kind: TicketKind::Once(OnceTicket {
                    dispatch,
                    measuring: false,
                    traced,
                    outcome,
                    bytes_tracked,
                    started,
                    _fence: fence,
                }),
                inside: None,
            };
        }
        let planned = match backend.plan_unit(device, &[group]) {
            Ok(_) => Ok(()),
            Err(error) => {
                // The group cannot be measured now: timestamps only.
                self.backend_notice("plan_unit", &error);
                backend.plan_unit(device, &[None]).map(|_| ())
            }
        };
        let measuring = match planned {
            // No unit was planned: there is none to abandon.
            Err(error) => {
                self.backend_notice("plan_unit", &error);
                false
            }
            Ok(()) => match backend
                .start_execution(device, 0, 1)
                .and_then(|()| backend.launch_starts(device))
            {
                Ok(()) => true,
                Err(error) => {
                    self.backend_notice("start_execution", &error);
                    backend.abandon_unit(device);
                    // It runs unmeasured: a flush or clock reading before the failure is not its.
                    let _ = backend.take_unit_conditions(device);
                    false
                }
            },
        };
        LaunchTicket {
            kind: TicketKind::Once(OnceTicket {
                dispatch,
                measuring,
                traced: None,
                outcome,
                bytes_tracked,
                started,
                _fence: fence,
            }),
            inside: None,
        }
    }

    pub(super) fn finish_once<B: DeviceOf<K>>(&self, backend: &mut B, once: OnceTicket) {
        let device = once.dispatch.info.device;
        if let Some(tag) = once.traced {
            let run = RanOnce {
                pass_ns: elapsed_ns(once.started),
                conditions: self.unit_conditions(backend, device),
                dispatch: once.dispatch,
                outcome: once.outcome,
                bytes_tracked: once.bytes_tracked,
            };
            // Issued while its fence is held (a launch timed by events has its end event put in
            // behind it).
            return self.traced_issued(backend, TracedLaunch { tag, run });
        }
        let result = if once.measuring {
            match measure_once(backend, device) {
                Ok(result) => Some(result),
                Err(error) => {
                    self.backend_notice("stop_execution", &error);
                    None
                }
            }
        } else {
            None
        };
        let pass_ns = elapsed_ns(once.started);
        drop(once._fence);
        let conditions = self.unit_conditions(backend, device);
        let run = RanOnce {
            dispatch: once.dispatch,
            outcome: once.outcome,
            bytes_tracked: once.bytes_tracked,
            pass_ns,
            conditions,
        };
        self.send_once_results(&run, result);
    }

    /// A dispatch whose unit was set up but whose first execution could not be started:
    /// nothing ran yet, so it runs once, unmeasured, recorded as declined (the caller has
    /// released the snapshot and the window).
    pub(super) fn once_unmeasured<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        dispatch: Dispatch,
        bytes_tracked: u64,
        started: Instant,
    ) -> LaunchTicket {
        let scope = launch_scope(&dispatch.info);
        let fence = self.fence_for(backend, "a launch that could not be measured", scope);
        LaunchTicket {
            kind: TicketKind::Once(OnceTicket {
                dispatch,
                measuring: false,
                traced: None,
                outcome: ReplayOutcome::DeclinedError,
                bytes_tracked,
                started,
                _fence: fence,
            }),
            inside: None,
        }
    }
}

/// Stops a one-execution measurement and reads it.
/// The unit ends here whatever fails: abandoned when its execution could not be stopped, ended
/// by `unit_counters` (which ends it also when it fails) otherwise. Abandoning it after that
/// would abandon the next unit on the device, perhaps another thread's.
fn measure_once<B: Measurement>(
    backend: &mut B,
    device: DeviceId,
) -> Result<PassResult, BackendError> {
    let stopped = backend
        .launch_ends(device)
        .and_then(|()| backend.stop_execution(device));
    let timings = match stopped {
        Ok(timings) => timings,
        Err(error) => {
            backend.abandon_unit(device);
            return Err(error);
        }
    };
    let counters = backend.unit_counters(device)?;
    let timing = timings.first().copied().unwrap_or_default();
    let counters = counters
        .into_iter()
        .next()
        .flatten()
        .and_then(|mut per_launch| (!per_launch.is_empty()).then(|| per_launch.remove(0)))
        .unwrap_or_default();
    Ok(pass_result(timing, counters))
}

/// Why a launch that runs once closed a replay unit, for the window summary.
fn once_reason(outcome: ReplayOutcome) -> &'static str {
    match outcome {
        ReplayOutcome::Filtered => "a filtered launch",
        ReplayOutcome::DeclinedGraphLaunch => "a graph launch",
        ReplayOutcome::DeclinedMultiDevice => "a multi-device launch",
        ReplayOutcome::DeclinedDevicePrintf => "a kernel calling printf",
        ReplayOutcome::DeclinedDeviceHeap => "a kernel using the device heap",
        ReplayOutcome::DeclinedCollective => "a collective kernel",
        ReplayOutcome::DeclinedPageableHost => "a kernel reaching pageable host memory",
        ReplayOutcome::DeclinedPeerMemory => "a kernel reaching another device's memory",
        ReplayOutcome::SinglePass => "a single-pass launch",
        _ => "a launch that runs once",
    }
}
