//! The API entry point both devices call (see [`crate::api_trace`]): the CUDA backend from
//! CUPTI's runtime- and driver-API callbacks, the reference device from its runtime.

use super::*;
use crate::api_trace::{ApiCall, ApiLevel};
use crate::engine::sys::current_tid;

impl<K: Backend> Engine<K> {
    /// Which API calls the run records (`--runtime-trace`, `--sys-trace`): a backend need not
    /// time or decode calls when it is [`ApiLevel::Off`].
    pub fn api_level(&self) -> ApiLevel {
        self.config.api_trace
    }

    /// One API call of the calling application thread, at its return: sends its record to the
    /// record sink when the run records calls of its kind. Never blocks on I/O.
    pub fn api_call(&self, call: &ApiCall) {
        if self
            .config
            .api_trace
            .records(call.domain, call.parent_id != 0)
        {
            self.sink
                .send(Record::Api(call.record(self.pid, current_tid())));
        }
    }
}
