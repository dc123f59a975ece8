//! Launches timed without waiting (`--kernel-trace` without counters): a pair of events around
//! the application's launch on its own stream, read once the end event has completed (queried,
//! never waited for, unless the engine asks), instead of a unit of one execution that waits for
//! the launch. The events are reused; their times are placed on the host clock through the
//! anchor of their generation (see `timestamps`).

use crate::backend::{failed, CudaBackend};
use crate::state::TracedPair;
use kreplay_core::backend::{BackendError, DeviceId, Timing};
use kreplay_cuda::error::CudaError;
use kreplay_cuda::handles::Event;
use kreplay_cuda::ContextGuard;

impl CudaBackend {
    /// The start event of the application's launch about to be issued (`None`: no launch of
    /// the application's is current).
    pub(crate) fn traced_start(&mut self, device: DeviceId) -> Result<Option<u64>, BackendError> {
        let Some(current) = self.current.filter(|c| !c.passive) else {
            return Ok(None);
        };
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
        let tag = self.next_traced_tag;
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
        state.traced.open.push(TracedPair {
            tag,
            anchor: state.anchor_generation,
            start,
            end,
            stream: current.stream,
        });
        Ok(Some(tag))
    }

    /// The end event of launch `tag`, behind it on its stream.
    pub(crate) fn traced_end(&mut self, device: DeviceId, tag: u64) -> Result<(), BackendError> {
        let traced = &mut self.state(device)?.traced;
        let Some(at) = traced.open.iter().position(|p| p.tag == tag) else {
            return Err(BackendError::Failed(format!(
                "traced launch {tag} was not started (internal error)"
            )));
        };
        let pair = traced.open.swap_remove(at);
        if let Err(e) = pair.end.record(pair.stream) {
            traced.free.push((pair.start, pair.end));
            return Err(failed(e));
        }
        traced.issued.push_back(pair);
        Ok(())
    }

    /// Launch `tag` did not execute: its events go back to the pool.
    pub(crate) fn traced_abandon(&mut self, device: DeviceId, tag: u64) {
        if let Ok(state) = self.state(device) {
            if let Some(at) = state.traced.open.iter().position(|p| p.tag == tag) {
                let pair = state.traced.open.swap_remove(at);
                state.traced.free.push((pair.start, pair.end));
            }
        }
    }

    /// The issued launches whose end has completed, oldest first, waiting for the oldest until
    /// `at_least` came back (or none is left); first those read when their context went away.
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
        let at_least = at_least.saturating_add(read.len());
        let d = self.driver;
        let Some(state) = self.devices.get_mut(&device) else {
            return read;
        };
        if state.traced.issued.is_empty() {
            return read;
        }
        let Ok(_ctx) = ContextGuard::make_current(d, state.ctx) else {
            return read;
        };
        while let Some(pair) = state.traced.issued.front() {
            let done = if read.len() < at_least {
                pair.end.synchronize().map(|()| true)
            } else {
                pair.end.completed()
            };
            if matches!(done, Ok(false)) {
                break;
            }
            let Some(pair) = state.traced.issued.pop_front() else {
                break;
            };
            let timing = done.and_then(|_| state.traced_timing(&pair));
            read.push((pair.tag, timing.map_err(failed)));
            state.traced.free.push((pair.start, pair.end));
        }
        // Anchors no pending launch is placed with any more.
        let oldest = state
            .traced
            .issued
            .iter()
            .chain(&state.traced.open)
            .map(|p| p.anchor)
            .min()
            .unwrap_or(u64::MAX);
        state
            .old_anchors
            .retain(|(generation, _, _)| *generation >= oldest);
        read
    }
}

impl CudaBackend {
    /// `device`'s context is going away with its events: the launches issued in it are read
    /// now, waiting for them, and kept for the engine's next read (those never issued have no
    /// end to wait for).
    pub(crate) fn traced_orphaned(&mut self, device: DeviceId) {
        for (tag, timing) in self.traced_read(device, usize::MAX) {
            self.traced_orphans.push((device, tag, timing));
        }
    }
}

impl crate::state::DeviceState {
    /// A completed launch's times on the host clock, through the anchor it was started under.
    fn traced_timing(&self, pair: &TracedPair) -> Result<Timing, CudaError> {
        let (anchor, host_ns) = if pair.anchor == self.anchor_generation {
            (&self.anchor, self.anchor_host_ns)
        } else {
            match self.old_anchors.iter().find(|(g, _, _)| *g == pair.anchor) {
                Some((_, event, host_ns)) => (event, *host_ns),
                None => {
                    return Err(CudaError::Load(
                        "the anchor of a traced launch is gone (internal error)".into(),
                    ))
                }
            }
        };
        let start_ns = host_ns + crate::timestamps::elapsed_ns(anchor, &pair.start)?;
        let end_ns = start_ns + crate::timestamps::elapsed_ns(&pair.start, &pair.end)?;
        Ok(Timing { start_ns, end_ns })
    }

    /// Whether launches timed without waiting are started or pending.
    pub(crate) fn traced_pending(&self) -> bool {
        !self.traced.open.is_empty() || !self.traced.issued.is_empty()
    }
}
