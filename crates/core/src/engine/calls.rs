//! The application's API calls other than launches, and the end of the process.

use super::*;
use crate::engine::sys::{lock, unix_now_ns};
use std::time::Duration;

/// How long the finish waits for a window's owner to leave the launch it is inside.
const OWNER_WAIT: Duration = Duration::from_secs(5);
use crate::lifecycle::InsideTool;

impl<K: Backend> Engine<K> {
    /// Every CUDA API call of an application thread other than a launch, at its start, with
    /// what the backend knows the call does and the devices it may touch: the caller's parked
    /// unit on its device stays open across it when `effect` allows (see the `unit` module),
    /// otherwise the parked units of `scope` close first; units of other devices stay open.
    /// The guard is handed to [`Engine::exit_call`] when the call returns.
    pub fn enter_call<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        call: &str,
        effect: CallEffect,
        scope: DeviceScope,
    ) -> CallGuard {
        // First: a signal from here on waits until the call's exit (`lifecycle`).
        let inside = InsideTool::enter();
        match self.stay_in_unit(backend, effect, scope) {
            Ok((fence, capture)) => CallGuard {
                fence,
                capture,
                inside,
            },
            Err(None) => CallGuard {
                fence: self.fence_for(backend, call, scope),
                capture: None,
                inside,
            },
            // The window summary says why the window could not stay open.
            Err(Some(why)) => CallGuard {
                fence: self.fence_for(backend, &format!("{call} (not deferrable: {why})"), scope),
                capture: None,
                inside,
            },
        }
    }

    /// The end of a call begun with [`Engine::enter_call`]: what it wrote into device memory is
    /// captured for the open unit's later executions, then the fence is released.
    pub fn exit_call<B: DeviceOf<K>>(&self, backend: &mut B, guard: CallGuard) {
        // `inside` drops last: a deferred signal is delivered once the call is done.
        let CallGuard {
            inside,
            fence,
            capture,
        } = guard;
        if let Some(write) = capture {
            self.capture_write(backend, write);
        }
        drop(fence);
        // A call that waited for the device (a synchronisation, a copy) completed the launches
        // traced before it: recorded now rather than at the next launch.
        self.collect_ready_traced(backend);
        drop(inside);
    }

    /// Closes the open replay units of every device, if any (their remaining passes run on
    /// this thread), then flushes every record and sends the end of the process. A unit whose
    /// owner is still inside a launch (a signal's finish, see `lifecycle`) is waited for until
    /// the owner parks it, at most `OWNER_WAIT` (5 s).
    pub fn finish_with<B: DeviceOf<K>>(&self, backend: &mut B) {
        for lane in self.lanes() {
            let since = std::time::Instant::now();
            while !self.close_parked_unit(backend, &lane, "process exit")
                && lock(&lane.open_unit).is_some()
                && since.elapsed() < OWNER_WAIT
            {
                lane.gate.wait_for_change(Duration::from_millis(5));
            }
        }
        self.collect_every_traced(backend);
        self.finish();
    }

    /// Sends the end of the process and closes the sink (every record stored). A backend that
    /// opens replay units of several dispatches calls [`Engine::finish_with`] instead.
    pub fn finish(&self) {
        if let Some(line) = self.window_summary() {
            self.options.logger.warn(&line);
        }
        // Without the backend (a finish without `finish_with`) no timing can be read any more.
        for device in self.traced.devices() {
            self.traced_lost(device);
        }
        let unrecorded = self.open_unit_members();
        if unrecorded > 0 {
            // Only when the process ends with a thread still inside a launch (the finish cannot
            // run a window's passes under it) or its owner never closed it.
            self.notices.once(
                "window-open-at-exit",
                &format!(
                    "the process ended while a thread was still inside a launch, with a replay window of {unrecorded} dispatch(es) open: they ran once and have no records"
                ),
                self.sink.as_ref(),
                self.options.logger.as_ref(),
            );
        }
        self.sink.send(Record::ProcessEnd {
            end_ns: unix_now_ns(),
        });
        // Closed, not only flushed: the sink is held to the end by whatever ends the process (a
        // static, the lifecycle's finisher), so no one else closes it, and a database left open
        // keeps its last rows in its WAL file and its record counts unstored (issue 49).
        self.sink.close();
    }
}
