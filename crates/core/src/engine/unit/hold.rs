//! A new unit's exclusive hold of its device's replay gate: taken, or why the dispatch runs
//! once instead.

use super::*;

impl<K: Backend> Engine<K> {
    /// The exclusive hold for a new unit (closing a parked unit of another thread
    /// first), or why the dispatch runs once.
    pub(super) fn exclusive_hold<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        lane: &Lane<K>,
        dispatch_id: u64,
    ) -> Result<ExclusiveHold, Refused> {
        let deadline = self.config.drain_timeout();
        // Inside a call on another device: waiting for this device's readers could wait for a
        // thread that waits, inside a call on this device, for that other device (a cycle no
        // one gate sees). Such a launch runs once.
        if self.holds_fence_elsewhere(lane) {
            self.notice_contended();
            return Err((ReplayOutcome::DeclinedError, 0));
        }
        let hold = loop {
            match lane.gate.exclusive(deadline) {
                Err(ExclusiveRefused::Parked) => {
                    if !self.close_parked_unit(backend, lane, "another thread's launch") {
                        std::thread::yield_now();
                    }
                }
                other => break other,
            }
        };
        match hold {
            Ok(hold) => Ok(hold),
            Err(ExclusiveRefused::Parked) => unreachable!("the loop ends on another answer"),
            // A launch from inside a replay (a tool's pass callback): run it once.
            Err(ExclusiveRefused::Reentrant) => Err((ReplayOutcome::DeclinedError, 0)),
            Err(ExclusiveRefused::Contended) => {
                self.notice_contended();
                Err((ReplayOutcome::DeclinedError, 0))
            }
            Err(ExclusiveRefused::Timeout) => {
                self.fatal(&format!(
                    "other application threads kept the device busy for more than {deadline:?} while dispatch {dispatch_id} waited to be replayed; raise KREPLAY_DRAIN_TIMEOUT (seconds) or profile without --replay-mode kernel"
                ));
                Err((ReplayOutcome::DeclinedError, 0))
            }
        }
    }

    pub(super) fn notice_contended(&self) {
        self.notice(
            "window-contended",
            "a launch made inside another API call while a second thread was starting a replay (or inside a call on another device) ran once, unreplayed (waiting could deadlock)",
        );
    }
}

/// Why a unit could not be opened: the dispatch runs once with this outcome, and the bytes of
/// tracked memory it saw.
pub(super) type Refused = (ReplayOutcome, u64);
