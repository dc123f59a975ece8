//! The memory entry points: the application's copies and allocations reach the sink once each,
//! from the calling thread, with kernel replay on; nothing without the options.

use super::*;
use crate::memory_trace::{AllocationCall, CopyCall, CopySide};
use kreplay_format::AllocationOperation;

fn copy() -> CopyCall<'static> {
    CopyCall {
        operation: "cuMemcpyHtoD_v2",
        src: CopySide {
            device: None,
            address: 0x1000,
        },
        dst: CopySide {
            device: Some(0),
            address: 0x7000,
        },
        bytes: 64,
        stream_id: 0,
    }
}

fn allocation() -> AllocationCall<'static> {
    AllocationCall {
        operation: AllocationOperation::Allocate,
        kind: crate::backend::AllocKind::Device,
        api: "cuMemAlloc_v2",
        device: Some(0),
        address: 0x7000,
        size: 4096,
        stream_id: None,
    }
}

fn memory_records(h: &Harness) -> (usize, usize) {
    let records = h.sink.records.lock().unwrap();
    let copies = records
        .iter()
        .filter(|r| matches!(r, Record::MemoryCopy(_)))
        .count();
    let allocations = records
        .iter()
        .filter(|r| matches!(r, Record::MemoryAllocation(_)))
        .count();
    (copies, allocations)
}

#[test]
fn copies_and_allocations_are_recorded_once_each_around_replayed_dispatches() {
    let h = harness_with(
        ToolConfig {
            memory_copy_trace: true,
            memory_allocation_trace: true,
            ..config(2, InProcessMode::KernelReplay)
        },
        None,
    );
    let mut backend = MockBackend::new();
    assert!(h.engine.memory_copies_enabled() && h.engine.memory_allocations_enabled());
    h.engine.memory_allocation(&allocation(), 10, 20);
    h.engine.memory_copy(&copy(), 30, 40);
    launch(&h, &mut backend, LaunchKind::Kernel);
    h.engine.memory_copy(&copy(), 50, 60);
    h.engine.finish_with(&mut backend);
    assert_eq!(memory_records(&h), (2, 1));
    let records = h.sink.records.lock().unwrap();
    let tid = crate::engine::sys::current_tid();
    assert!(records.iter().all(|r| match r {
        Record::MemoryCopy(c) => c.tid == tid && c.bytes == 64,
        Record::MemoryAllocation(a) => a.tid == tid && a.size == 4096,
        _ => true,
    }));
}

#[test]
fn nothing_is_recorded_without_the_options() {
    let h = harness_with(config(2, InProcessMode::KernelReplay), None);
    assert!(!h.engine.memory_copies_enabled() && !h.engine.memory_allocations_enabled());
    h.engine.memory_allocation(&allocation(), 10, 20);
    h.engine.memory_copy(&copy(), 30, 40);
    assert_eq!(memory_records(&h), (0, 0));
}
