//! The workload's copies and allocations, recorded through the engine's memory entry points:
//! every one of the application's once, the same with kernel replay as without, none of the
//! engine's own snapshots and restores, nothing without the options.

use super::*;
use kreplay_format::{AllocationOperation, CopyDirection};

/// The copies (direction, bytes) and allocations (operation, memory, size) recorded.
type Traced = (
    Vec<(CopyDirection, u64)>,
    Vec<(AllocationOperation, String, u64)>,
);

fn traced(records: &[Record]) -> Traced {
    let copies = records
        .iter()
        .filter_map(|r| match r {
            Record::MemoryCopy(c) => Some((c.direction, c.bytes)),
            _ => None,
        })
        .collect();
    let allocations = records
        .iter()
        .filter_map(|r| match r {
            Record::MemoryAllocation(a) => Some((a.operation, a.memory.clone(), a.size)),
            _ => None,
        })
        .collect();
    (copies, allocations)
}

fn traced_run(mode: InProcessMode, groups: usize) -> (WorkloadOutcome, Traced) {
    let (outcome, records) = profiled_with(mode, groups, |c| {
        c.memory_copy_trace = true;
        c.memory_allocation_trace = true;
    });
    (outcome, traced(&records))
}

#[test]
fn every_copy_and_allocation_of_the_application_is_recorded_once() {
    let (outcome, (copies, allocations)) = traced_run(InProcessMode::KernelReplay, 2);
    assert!(verify(&outcome, &reference()).passed);
    let options = WorkloadOptions::default();
    let bytes = u64::from(options.elements) * 4;
    let iterations = options.iterations as usize;
    // Four initial writes, two reads and a write per iteration, the copy into the scratch,
    // then five buffers and a counter read back.
    assert_eq!(copies.len(), 4 + 3 * iterations + 1 + 6);
    assert_eq!(copies[0], (CopyDirection::HostToDevice, bytes));
    assert_eq!(copies[4], (CopyDirection::DeviceToHost, 4));
    assert_eq!(
        copies[4 + 3 * iterations],
        (CopyDirection::DeviceToDevice, bytes)
    );
    use AllocationOperation::*;
    let expected: Vec<(AllocationOperation, String, u64)> = [
        (Allocate, "device", bytes),
        (Allocate, "pitched", bytes),
        (Allocate, "device", bytes),
        (Allocate, "device", bytes),
        (Allocate, "managed", bytes),
        (Allocate, "host", bytes),
        (Allocate, "pool", bytes),
        (VmemAllocate, "virtual", bytes),
        (VmemFree, "virtual", 0),
        (Free, "pool", 0),
        (Free, "host", 0),
    ]
    .into_iter()
    .map(|(op, memory, size)| (op, memory.to_string(), size))
    .collect();
    // The module variable is the loader's, not an allocation of the application.
    assert_eq!(allocations, expected);
}

#[test]
fn kernel_replay_records_the_same_copies_and_allocations_as_a_run_without_replay() {
    let (_, replayed) = traced_run(InProcessMode::KernelReplay, 3);
    let (_, once) = traced_run(InProcessMode::Single, 1);
    assert_eq!(replayed, once);
    assert!(!replayed.0.is_empty() && !replayed.1.is_empty());
}

#[test]
fn without_the_options_no_copy_or_allocation_is_recorded() {
    let (_, records) = profiled(InProcessMode::KernelReplay, 2);
    assert_eq!(traced(&records), (Vec::new(), Vec::new()));
}
