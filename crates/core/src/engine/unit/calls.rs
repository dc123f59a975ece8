//! A unit that stays open across its owner's calls: whether it may at a call's start, and
//! the bytes the call wrote, captured at its end.
//!
//! Staying open across calls ([`Engine::enter_call`], switched off by `KREPLAY_WINDOW_SPANS=0`):
//! - a unit measured by one execution (every group in one hardware pass) restores nothing and
//!   runs nothing again: it stays open across any call that is not [`CallEffect::Unknown`];
//! - a unit that restores stays open across calls that write no device memory (synchronisation,
//!   copies to the host, events, module loads, allocations) and across writes into tracked
//!   device memory (copies to the device, memsets): the application goes on with execution
//!   0's results, the written bytes are captured after the call ran (never re-read from the
//!   application's host buffer, which it may reuse) and written again at that point of every
//!   later execution, and the tracked memory the application saw when the unit closes (F) is
//!   saved before the later executions and put back after them. It closes first for a free,
//!   for a write into untracked memory or another device, once the captures would pass
//!   [`CAPTURE_BUDGET_BYTES`], when F would not fit device staging, and after a member whose
//!   parameters hold an address of host or managed memory (a later execution would write
//!   what the application may already have read). A unit whose S0 holds managed memory saves
//!   F when it closes even without staying open: the host writes managed memory with no call
//!   at all, and what the member computed from those writes is the application's. Later
//!   executions never show: copies to the host and host functions are not repeated, and
//!   nothing runs again until the application's view is saved.
//!
//! The device is drained before such a call and before the next member's launch, so that no
//! measured kernel overlaps the call's work. Another thread that closes the unit while its owner
//! is inside such a call waits for the call to end. A unit that lost its counters after staying
//! open across calls switches staying open off for the run.

use super::*;
use crate::engine::sys::lock;
use crate::engine::tickets::PendingWrite;

impl<K: Backend> Engine<K> {
    /// The fence of a call the caller's parked unit stays open across, if it may (see the
    /// module documentation), and the write to capture at the call's exit. `Err`: the call
    /// takes the ordinary fence (which closes the unit), with why the unit could not stay open
    /// when that is its own state (not deferrable) rather than the call's.
    pub(in crate::engine) fn stay_in_unit<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        effect: CallEffect,
        scope: DeviceScope,
    ) -> Result<(FenceGuard, Option<PendingWrite>), Option<&'static str>> {
        // A call that may touch several devices closes the units of all of them.
        let DeviceScope::One(device) = scope else {
            return Err(None);
        };
        if !self.window_spans.load(Ordering::Relaxed) || effect == CallEffect::Unknown {
            return Err(None);
        }
        let me = std::thread::current().id();
        let lane = self.lane(device);
        let (capture, fence) = {
            let open = lock(&lane.open_unit);
            let unit = open.as_ref().ok_or(None)?;
            if unit.owner != me || !unit.log.replayable {
                return Err(None);
            }
            let capture = if unit.plan.restores() {
                if let Some(why) = unit.spans.undeferrable {
                    return Err(Some(why));
                }
                match effect {
                    CallEffect::Unknown | CallEffect::Frees => return Err(None),
                    CallEffect::NoDeviceWrite => None,
                    CallEffect::DeviceWrite {
                        device,
                        base,
                        bytes,
                    } => {
                        let region = self.inventory.find(device, base).ok_or(None)?;
                        let inside =
                            base.saturating_add(bytes) <= region.base.saturating_add(region.bytes);
                        let fits =
                            unit.spans.captured_bytes.saturating_add(bytes) <= CAPTURE_BUDGET_BYTES;
                        if device != unit.device || !region.kind.is_tracked() || !inside || !fits {
                            return Err(None);
                        }
                        Some(PendingWrite {
                            device,
                            base,
                            bytes,
                        })
                    }
                }
            } else {
                None
            };
            // Counted as a reader from here, under the unit's lock: a thread that would close
            // the unit meanwhile waits for the call to end.
            let fence = lane.gate.fence_in_parked_window().ok_or(None)?;
            (capture, FenceGuard::of(fence))
        };
        // The members launched so far finish before the call's work starts.
        if let Err(error) = backend.drain(device, self.config.drain_timeout()) {
            self.backend_notice("drain", &error);
            return Err(None);
        }
        let mut open = lock(&lane.open_unit);
        match open.as_mut().filter(|u| u.owner == me) {
            Some(unit) => {
                unit.spans.calls += 1;
                unit.spans.drain_before_member = true;
                if let Some(write) = capture {
                    unit.spans.captured_bytes += write.bytes;
                }
                Ok((fence, capture))
            }
            None => Ok((fence, None)),
        }
    }

    /// At the exit of a call the open unit stayed open across: keeps what it wrote for the
    /// unit's later executions.
    pub(in crate::engine) fn capture_write<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        write: PendingWrite,
    ) {
        let PendingWrite {
            device,
            base,
            bytes,
        } = write;
        // An asynchronous copy or memset has finished before its bytes are read.
        let captured = backend
            .drain(device, self.config.drain_timeout())
            .and_then(|()| backend.capture(device, base, bytes));
        let me = std::thread::current().id();
        let lane = self.lane(device);
        let mut open = lock(&lane.open_unit);
        match (open.as_mut().filter(|u| u.owner == me), captured) {
            (Some(unit), Ok(capture)) => {
                unit.log.push_write(capture);
                unit.spans.captures += 1;
            }
            (Some(unit), Err(error)) => {
                // Later executions would miss the write: the unit ends with execution 0.
                unit.log.replayable = false;
                self.backend_notice("capture", &error);
            }
            (None, Ok(capture)) => backend.release_capture(capture),
            (None, Err(_)) => {}
        }
    }
}
