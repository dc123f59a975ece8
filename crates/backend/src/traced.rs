//! Launches timed without waiting (`--kernel-trace` without counters), instead of a unit of one
//! execution that waits for the launch. A kernel launch is timed by CUPTI's record of its
//! execution (`traced_activity`), found by its correlation id: nothing is done on the launching
//! thread but noting it. A graph or multi-device launch, or any launch once CUPTI records no
//! kernels, is bracketed by a pair of events on its own stream, reused, and placed on the host
//! clock through the anchor of its generation (see `timestamps`). Either is read once it has
//! completed (queried, never waited for, unless the engine asks), in the order issued.

use crate::backend::{failed, CudaBackend};
use crate::state::{TracedLaunch, TracedTimer};
use crate::traced_activity::RecordTimes;
use kreplay_core::backend::{BackendError, DeviceId, Timing};
use kreplay_cuda::error::CudaError;
use kreplay_cuda::handles::Event;
use kreplay_cuda::ContextGuard;
use std::collections::VecDeque;

/// Tags of launches timed with events start here: below are correlation ids (32 bits).
const EVENT_TAGS: u64 = 1 << 32;

impl CudaBackend {
    /// The tag of the application's launch about to be issued, started timing (`None`: no
    /// launch of the application's is current).
    pub(crate) fn traced_start(&mut self, device: DeviceId) -> Result<Option<u64>, BackendError> {
        let Some(current) = self.current.filter(|c| !c.passive) else {
            return Ok(None);
        };
        if let Some(correlation) = current
            .correlation
            .filter(|_| self.activity_failed.is_none())
        {
            let tag = u64::from(correlation);
            self.state(device)?.traced.open.push(TracedLaunch {
                tag,
                stream: current.stream,
                timer: TracedTimer::Activity,
            });
            self.inbox.expect(tag);
            return Ok(Some(tag));
        }
        let d = self.driver;
        // In the launch's callback its context is current: no driver call to make it so.
        let ctx = self.state(device)?.ctx;
        let _ctx = if current.ctx == ctx {
            None
        } else {
            Some(ContextGuard::make_current(d, ctx).map_err(failed)?)
        };
        self.ensure_anchor(device).map_err(failed)?;
        self.next_traced_tag += 1;
        let tag = EVENT_TAGS + self.next_traced_tag;
        let state = self.state(device)?;
        let (start, end) = match state.traced.free.pop() {
            Some(pair) => pair,
            None => (
                Event::timed(d).map_err(failed)?,
                Event::timed(d).map_err(failed)?,
            ),
        };
        if let Err(e) = start.record(current.stream) {
            state.traced.free.push((start, end));
            return Err(failed(e));
        }
        state.traced.open.push(TracedLaunch {
            tag,
            stream: current.stream,
            timer: TracedTimer::Events {
                anchor: state.anchor_generation,
                start,
                end,
            },
        });
        Ok(Some(tag))
    }

    /// Launch `tag` was issued (its end event goes in behind it on its stream).
    pub(crate) fn traced_end(&mut self, device: DeviceId, tag: u64) -> Result<(), BackendError> {
        let traced = &mut self.state(device)?.traced;
        let Some(at) = traced.open.iter().position(|p| p.tag == tag) else {
            return Err(BackendError::Failed(format!(
                "traced launch {tag} was not started (internal error)"
            )));
        };
        let launch = traced.open.swap_remove(at);
        if let TracedTimer::Events { end, .. } = &launch.timer {
            if let Err(e) = end.record(launch.stream) {
                traced.release(launch);
                return Err(failed(e));
            }
        }
        traced.issued.push_back(launch);
        Ok(())
    }

    /// Launch `tag` did not execute: it has no timing.
    pub(crate) fn traced_abandon(&mut self, device: DeviceId, tag: u64) {
        self.inbox.forget(tag);
        if let Ok(state) = self.state(device) {
            if let Some(at) = state.traced.open.iter().position(|p| p.tag == tag) {
                let launch = state.traced.open.swap_remove(at);
                state.traced.release(launch);
            }
        }
    }

    /// The issued launches that have completed, oldest first, waiting for the oldest until
    /// `at_least` came back (or none is left); first those read when their context went away.
    /// `usize::MAX` is the engine's last read, at the end of the process.
    pub(crate) fn traced_read(
        &mut self,
        device: DeviceId,
        at_least: usize,
    ) -> Vec<(u64, Result<Timing, BackendError>)> {
        let (mut read, others): (Vec<_>, Vec<_>) = std::mem::take(&mut self.traced_orphans)
            .into_iter()
            .partition(|(d, _, _)| *d == device);
        self.traced_orphans = others;
        let mut read: Vec<(u64, Result<Timing, BackendError>)> = read
            .drain(..)
            .map(|(_, tag, timing)| (tag, timing))
            .collect();
        let finish = at_least == usize::MAX;
        for (tag, times) in self.inbox.take_detached(device, finish) {
            let timing = times.and_then(|times| activity_timing(Some(times), tag));
            read.push((tag, timing.map_err(failed)));
        }
        let at_least = at_least.saturating_sub(read.len());
        read.extend(self.read_issued(device, at_least, finish));
        read
    }

    /// The launches issued in `device`'s current context that have completed, in order,
    /// waiting for the oldest until `at_least` came back; CUPTI's buffers are flushed by this
    /// thread only at the `finish` (elsewhere it may be inside a CUPTI callback).
    fn read_issued(
        &mut self,
        device: DeviceId,
        at_least: usize,
        finish: bool,
    ) -> Vec<(u64, Result<Timing, BackendError>)> {
        let mut read = Vec::new();
        let d = self.driver;
        self.inbox.collect();
        let Some(state) = self.devices.get_mut(&device) else {
            return read;
        };
        if state.traced.issued.is_empty() {
            return read;
        }
        // Made current for the first launch that needs the driver.
        let mut ctx: Option<ContextGuard> = None;
        while let Some(launch) = state.traced.issued.front() {
            let wait = read.len() < at_least;
            let done = match &launch.timer {
                TracedTimer::Activity if self.inbox.has(launch.tag) => Ok(true),
                // Once CUPTI failed to give a record, those not come are not waited for.
                TracedTimer::Activity if self.activity_failed.is_some() => Ok(true),
                TracedTimer::Activity if !wait => Ok(false),
                TracedTimer::Activity => current(&mut ctx, d, state.ctx)
                    .and_then(|()| self.inbox.wait_for(d, launch.tag, finish))
                    .map(|()| true)
                    .inspect_err(|e| self.activity_failed = Some(e.to_string())),
                TracedTimer::Events { end, .. } => current(&mut ctx, d, state.ctx).and_then(|()| {
                    if wait {
                        end.synchronize().map(|()| true)
                    } else {
                        end.completed()
                    }
                }),
            };
            if matches!(done, Ok(false)) {
                break;
            }
            let Some(launch) = state.traced.issued.pop_front() else {
                break;
            };
            let timing = done.and_then(|_| match &launch.timer {
                TracedTimer::Activity => activity_timing(self.inbox.take(launch.tag), launch.tag),
                TracedTimer::Events { .. } => state.traced_timing(&launch),
            });
            if matches!(launch.timer, TracedTimer::Activity) {
                self.inbox.forget(launch.tag);
            }
            read.push((launch.tag, timing.map_err(failed)));
            state.traced.release(launch);
        }
        // Anchors no pending launch is placed with any more.
        let oldest = state
            .traced
            .issued
            .iter()
            .chain(&state.traced.open)
            .filter_map(|p| match p.timer {
                TracedTimer::Events { anchor, .. } => Some(anchor),
                TracedTimer::Activity => None,
            })
            .min()
            .unwrap_or(u64::MAX);
        state
            .old_anchors
            .retain(|(generation, _, _)| *generation >= oldest);
        read
    }
}

/// Makes `ctx` current for the rest of a read, once.
fn current(
    guard: &mut Option<ContextGuard>,
    d: &'static kreplay_cuda::Driver,
    ctx: kreplay_cuda::CUcontext,
) -> Result<(), CudaError> {
    if guard.is_none() {
        *guard = Some(ContextGuard::make_current(d, ctx)?);
    }
    Ok(())
}

/// A launch's times from its CUPTI record.
fn activity_timing(record: Option<RecordTimes>, tag: u64) -> Result<Timing, CudaError> {
    match record {
        Some(Some((start_ns, end_ns))) => Ok(Timing { start_ns, end_ns }),
        Some(None) => Err(CudaError::Load(format!(
            "CUPTI's record of launch {tag} has no times"
        ))),
        None => Err(CudaError::Load(format!(
            "CUPTI gave no record of launch {tag}'s execution"
        ))),
    }
}

impl CudaBackend {
    /// `device`'s context is going away (the driver's callback: nothing else is waited for).
    /// The launches issued in it with events are read now, waiting for them while their events
    /// exist, and kept for the engine's next read; those timed by CUPTI's records wait for them
    /// in the inbox. Those never issued have no end to wait for.
    pub(crate) fn traced_orphaned(&mut self, device: DeviceId) {
        if let Some(state) = self.devices.get_mut(&device) {
            let issued = std::mem::take(&mut state.traced.issued);
            let (by_record, by_events): (VecDeque<TracedLaunch>, VecDeque<TracedLaunch>) = issued
                .into_iter()
                .partition(|l| matches!(l.timer, TracedTimer::Activity));
            state.traced.issued = by_events;
            self.inbox.detach(device, by_record.iter().map(|l| l.tag));
        }
        for (tag, timing) in self.read_issued(device, usize::MAX, false) {
            self.traced_orphans.push((device, tag, timing));
        }
    }
}

impl crate::state::Traced {
    /// A launch read or abandoned: its events go back to the pool.
    fn release(&mut self, launch: TracedLaunch) {
        if let TracedTimer::Events { start, end, .. } = launch.timer {
            self.free.push((start, end));
        }
    }
}

impl crate::state::DeviceState {
    /// A completed launch's times on the host clock, through the anchor it was started under.
    fn traced_timing(&self, launch: &TracedLaunch) -> Result<Timing, CudaError> {
        let TracedTimer::Events {
            anchor: generation,
            start,
            end,
        } = &launch.timer
        else {
            return Err(CudaError::Load(
                "a launch timed by CUPTI's record has no events (internal error)".into(),
            ));
        };
        let (anchor, host_ns) = if *generation == self.anchor_generation {
            (&self.anchor, self.anchor_host_ns)
        } else {
            match self.old_anchors.iter().find(|(g, _, _)| g == generation) {
                Some((_, event, host_ns)) => (event, *host_ns),
                None => {
                    return Err(CudaError::Load(
                        "the anchor of a traced launch is gone (internal error)".into(),
                    ))
                }
            }
        };
        let start_ns = host_ns + crate::timestamps::elapsed_ns(anchor, start)?;
        let end_ns = start_ns + crate::timestamps::elapsed_ns(start, end)?;
        Ok(Timing { start_ns, end_ns })
    }

    /// Whether launches timed with events are started or pending (their anchor is needed).
    pub(crate) fn traced_pending(&self) -> bool {
        self.traced
            .open
            .iter()
            .chain(&self.traced.issued)
            .any(|p| matches!(p.timer, TracedTimer::Events { .. }))
    }
}
