//! The memory domains' entry points both devices call (see [`crate::memory_trace`]): the CUDA
//! backend from CUPTI's callbacks of the application's driver calls, the reference device from
//! its runtime.

use super::*;
use crate::engine::sys::current_tid;
use crate::memory_trace::{AllocationCall, CopyCall};

impl<K: Backend> Engine<K> {
    /// Whether the run records copies (`--memory-copy-trace`): a backend need not decode or
    /// time copies otherwise.
    pub fn memory_copies_enabled(&self) -> bool {
        self.memory_trace.copies()
    }

    /// Whether the run records allocations and frees (`--memory-allocation-trace`).
    pub fn memory_allocations_enabled(&self) -> bool {
        self.memory_trace.allocations()
    }

    /// One copy the calling application thread made, from `start_ns` to `end_ns` (the clock of
    /// the dispatches' timestamps); sends its record to the sink. Never blocks on I/O.
    pub fn memory_copy(&self, call: &CopyCall<'_>, start_ns: u64, end_ns: u64) {
        if let Some(record) = self
            .memory_trace
            .copy(call, current_tid(), start_ns, end_ns)
        {
            self.sink.send(Record::MemoryCopy(record));
        }
    }

    /// One allocation or free the calling application thread made, as
    /// [`Engine::memory_copy`].
    pub fn memory_allocation(&self, call: &AllocationCall<'_>, start_ns: u64, end_ns: u64) {
        if let Some(record) = self
            .memory_trace
            .allocation(call, current_tid(), start_ns, end_ns)
        {
            self.sink.send(Record::MemoryAllocation(record));
        }
    }
}
