//! The application's API calls other than launches, and the end of the process.

use super::*;
use crate::engine::sys::unix_now_ns;

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
        match self.stay_in_unit(backend, effect, scope) {
            Ok((fence, capture)) => CallGuard { fence, capture },
            Err(None) => CallGuard {
                fence: self.fence_for(backend, call, scope),
                capture: None,
            },
            // The window summary says why the window could not stay open.
            Err(Some(why)) => CallGuard {
                fence: self.fence_for(backend, &format!("{call} (not deferrable: {why})"), scope),
                capture: None,
            },
        }
    }

    /// The end of a call begun with [`Engine::enter_call`]: what it wrote into device memory is
    /// captured for the open unit's later executions, then the fence is released.
    pub fn exit_call<B: DeviceOf<K>>(&self, backend: &mut B, guard: CallGuard) {
        let CallGuard { fence, capture } = guard;
        if let Some(write) = capture {
            self.capture_write(backend, write);
        }
        drop(fence);
    }

    /// Closes the open replay units of every device, if any (their remaining passes run on
    /// this thread), then flushes every record and sends the end of the process.
    pub fn finish_with<B: DeviceOf<K>>(&self, backend: &mut B) {
        for lane in self.lanes() {
            self.close_parked_unit(backend, &lane, "process exit");
        }
        self.finish();
    }

    /// Flushes every record and sends the end of the process. A backend that opens replay
    /// units of several dispatches calls [`Engine::finish_with`] instead.
    pub fn finish(&self) {
        if let Some(line) = self.window_summary() {
            self.options.logger.warn(&line);
        }
        if self.unit_is_open() {
            self.notices.once(
                "window-open-at-exit",
                "a replay window was still open at exit: its dispatches ran once and their records are lost (the backend must finish with Engine::finish_with)",
                self.sink.as_ref(),
                self.options.logger.as_ref(),
            );
        }
        self.sink.send(Record::ProcessEnd {
            end_ns: unix_now_ns(),
        });
        self.sink.flush();
    }
}
