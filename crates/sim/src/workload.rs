//! The fixed workload of `kreplay-sim-app` and its verification against a single execution.
//!
//! Each iteration updates buffers in place (so a missing restore compounds and shows), copies a
//! value device → host → device, bumps a module-variable launch counter, mixes a buffer with
//! its neighbours, adds one buffer into another (a kernel reading another's output) and
//! increments managed memory. After the loop a graph is launched (two kernel nodes, replayed like
//! any launch when counters are collected, around a memcpy and a memset node, which run once),
//! a launch is recorded into a stream capture (it never executes), and a last kernel consumes
//! the graph's output.
//!
//! The phases are marked with NVTX-style ranges (see [`run`]).
//!
//! Managed memory is snapshotted and restored between replay passes like device memory, so the
//! verification compares it too: every buffer must match a single execution.

use crate::device::SimError;
use crate::runtime::{GraphNode, SimRuntime};
use kreplay_core::backend::{AllocKind, DeviceId};

mod kernels;
mod outcome;
mod verify;

pub use kernels::{
    accumulate_kernel, bump_counter_kernel, launch, managed_touch_kernel, neighbor_mix_kernel,
    scale_add_kernel,
};
pub use outcome::{WorkloadOptions, WorkloadOutcome, MAX_PROFILE_REGIONS};
pub use verify::{verify, verify_all, Verification};

/// The NVTX domain of the workload's last range (the others are in the default domain).
pub const MARKER_DOMAIN: &str = "kreplay-sim";

/// Runs the workload on `runtime` and reads every buffer back. Its phases are NVTX-style ranges
/// (recorded under `--marker-trace`): a push/pop range `iteration N` per iteration holding
/// `update` (the first kernel and the host copies) and `mix` (the other four kernels), a mark
/// `loop done`, and a range `tail` of domain [`MARKER_DOMAIN`] (category 2) around the graph,
/// the capture and the last kernel. Its copies and its allocations of every kind (device,
/// pitched, managed, pinned host, stream-ordered pool, a virtual mapping) and their frees are
/// what `--memory-copy-trace` and `--memory-allocation-trace` record.
pub fn run(
    runtime: &mut SimRuntime,
    options: WorkloadOptions,
) -> Result<WorkloadOutcome, SimError> {
    let n = options.elements.max(1);
    let bytes = u64::from(n) * 4;
    let a = runtime.alloc(AllocKind::Device, bytes)?;
    let b = runtime.alloc(AllocKind::Pitched, bytes)?;
    let c = runtime.alloc(AllocKind::Device, bytes)?;
    let d = runtime.alloc(AllocKind::Device, bytes)?;
    let launches = runtime.alloc(AllocKind::ModuleVariable, 4)?;
    let managed = runtime.alloc(AllocKind::Managed, bytes)?;

    let init = |f: &dyn Fn(u32) -> u32| (0..n).map(f).collect::<Vec<u32>>();
    runtime.write_u32s(a, &init(&|i| i))?;
    runtime.write_u32s(b, &init(&|i| 1000 + i))?;
    runtime.write_u32s(c, &init(&|i| i.wrapping_mul(2_654_435_761)))?;
    runtime.write_u32s(d, &init(&|i| i ^ 0x55))?;

    let scale_add = scale_add_kernel();
    let accumulate = accumulate_kernel();
    let bump = bump_counter_kernel();
    let mix = neighbor_mix_kernel();
    let touch = managed_touch_kernel();
    let n64 = u64::from(n);

    for iteration in 0..options.iterations {
        for _ in 0..options.profiler_calls(iteration, true) {
            runtime.profiler_start();
        }
        runtime.range_push(&format!("iteration {iteration}"));
        runtime.range_push("update");
        runtime.launch(&launch(&scale_add, n, vec![a, n64, 3, 1]))?;
        // A host-side update between kernels (a cudaMemcpy each way). With several threads it
        // must not land between another thread's replay passes: that replay's restore covers
        // every tracked buffer of the device and would undo it.
        let head = runtime.read_u32s(a, 1)?[0];
        let total = runtime.read_u32s(d, 1)?[0];
        runtime.write_u32s(d, &[total.wrapping_add(head ^ iteration)])?;
        runtime.range_pop();
        runtime.range_push("mix");
        runtime.launch(&launch(&accumulate, n, vec![b, a, n64]))?;
        runtime.launch(&launch(&bump, 1, vec![launches]))?;
        runtime.launch(&launch(&mix, n, vec![c, n64]))?;
        runtime.launch(&launch(&touch, n, vec![managed, n64]))?;
        runtime.range_pop();
        runtime.range_pop();
        for _ in 0..options.profiler_calls(iteration, false) {
            runtime.profiler_stop();
        }
    }
    runtime.mark("loop done");
    runtime.domain_range_push(MARKER_DOMAIN, "tail", 2);
    // A graph: two kernel nodes around a memcpy and a memset node, whose writes the second
    // kernel reads.
    runtime.launch_graph(&[
        GraphNode::Kernel(launch(&scale_add, n, vec![d, n64, 5, 7])),
        GraphNode::Copy {
            dst: c,
            src: d,
            bytes,
        },
        GraphNode::Fill {
            dst: a,
            value: 7,
            count: 1,
        },
        GraphNode::Kernel(launch(&accumulate, n, vec![d, a, n64])),
    ])?;
    // Captured, never executed: must leave `a` untouched.
    runtime.capture(&launch(&scale_add, n, vec![a, n64, 0, 0]));
    runtime.launch(&launch(&accumulate, n, vec![b, d, n64]))?;
    runtime.domain_range_pop(MARKER_DOMAIN);
    // Memory of every other kind, after the last kernel: pinned host memory, a stream-ordered
    // scratch buffer and a virtual mapping, a device-to-device copy into the scratch, then each
    // freed (what `--memory-allocation-trace` and `--memory-copy-trace` record).
    let pinned = runtime.alloc(AllocKind::Host, bytes)?;
    let scratch = runtime.alloc(AllocKind::Pool, bytes)?;
    let mapped = runtime.alloc(AllocKind::VirtualMapping, bytes)?;
    runtime.copy(scratch, d, bytes)?;
    for buffer in [mapped, scratch, pinned] {
        runtime.free(buffer)?;
    }

    let count = n as usize;
    Ok(WorkloadOutcome {
        tracked: vec![
            ("a", runtime.read_u32s(a, count)?),
            ("b", runtime.read_u32s(b, count)?),
            ("c", runtime.read_u32s(c, count)?),
            ("d", runtime.read_u32s(d, count)?),
            ("g_launches", runtime.read_u32s(launches, 1)?),
        ],
        managed: runtime.read_u32s(managed, count)?,
    })
}

/// Runs the workload on `threads` application threads at once, each on its own buffers (a
/// runtime shared from `runtime`; thread `t` on device `t` modulo the process's devices), and
/// returns each thread's outcome.
pub fn run_threads(
    runtime: &SimRuntime,
    options: WorkloadOptions,
    threads: u32,
) -> Result<Vec<WorkloadOutcome>, SimError> {
    let threads = threads.max(1);
    // Start together, so that the threads' work interleaves rather than runs one after another.
    let start = std::sync::Barrier::new(threads as usize);
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let mut mine = runtime.share();
                mine.set_device((t as usize % runtime.device_count()) as DeviceId);
                let start = &start;
                scope.spawn(move || {
                    start.wait();
                    run(&mut mine, options)
                })
            })
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
            .collect()
    })
}

#[cfg(test)]
mod tests;
