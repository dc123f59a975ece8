//! The marker entry point both devices call (see [`crate::markers`]): the CUDA backend from
//! CUPTI's NVTX callbacks, the reference device from its runtime.

use super::*;
use crate::engine::sys::current_tid;
use crate::markers::MarkerCall;

impl<K: Backend> Engine<K> {
    /// Whether the run follows markers (`--marker-trace`, or NVTX filters): a backend need not
    /// decode marker calls otherwise.
    pub fn markers_enabled(&self) -> bool {
        self.markers.enabled()
    }

    /// One marker call of the calling application thread at `now_ns` (the clock of the
    /// dispatches' timestamps); sends the range it completes, or the mark, to the record sink
    /// (under `--marker-trace`).
    /// Returns a start's key (what the caller passes to its end). Never blocks on I/O.
    pub fn marker(&self, call: MarkerCall<'_>, now_ns: u64) -> Option<u64> {
        let (record, key) = self.markers.call(call, current_tid(), now_ns);
        if let Some(record) = record {
            self.sink.send(Record::Marker(record));
        }
        key
    }

    /// The application's profiler start (`start`) or stop call (`cuProfilerStart` /
    /// `cuProfilerStop`, which `cudaProfilerStart` / `cudaProfilerStop` call): under
    /// `--selected-regions` only the launches between them are collected
    /// ([`crate::filter::regions`]); otherwise it does nothing.
    pub fn profiler_control(&self, start: bool) {
        self.regions.control(start);
    }
}
