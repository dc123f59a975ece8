//! The CUDA implementation of the engine's [`kreplay_core::backend::ReplayBackend`].
//!
//! The injected library calls [`CudaBackend::begin_dispatch`] with the launch's context, device
//! and stream before it hands a dispatch to the engine; the engine then calls the trait methods
//! from application threads, inside their CUPTI callbacks. Its driver calls are the safe layer's
//! ([`kreplay_cuda`]), inside a [`ToolScope`](kreplay_cuda::guard::ToolScope), so the callbacks
//! they fire are ignored; its streams, events, log and staging memory are owned objects there
//! ([`kreplay_cuda::handles`], [`kreplay_cuda::memory`]).
//!
//! - drain: `cuCtxSynchronize` on the tool's drain thread, waited for until the deadline
//!   ([`kreplay_cuda::drain`]), so a device that never finishes hits the deadline instead of blocking
//!   forever.
//! - snapshots: staging buffers per device, kept for reuse after release (device memory
//!   (`cuMemAlloc`) first, pinned host memory (`cuMemHostAlloc`) when the engine falls back);
//!   several may be alive at once (a unit's start and the application's view). Copies run on a
//!   non-blocking stream of the tool's own and are waited for.
//! - captures: bytes written by a call a unit stays open across, copied device-to-device into
//!   a log arena (chunks of device memory reused across units).
//! - timestamps: a pair of events around each measured launch (execution 0 on the launch's
//!   stream, later executions on the tool stream). Events give durations; they are placed on
//!   the host clock (nanoseconds since the Unix epoch) through an anchor event recorded on the
//!   tool's idle stream and synchronised, re-anchored every second. A launch that needs its
//!   timestamps only (`--kernel-trace` without counters) is not waited for: a kernel launch is
//!   timed by CUPTI's record of its execution (`traced_activity`), a graph launch by its pair of
//!   events, each read once it has completed (`traced`).
//! - counters: [`RangeProfiler`](kreplay_counters::profiler::RangeProfiler), hardware passes scheduled by CUPTI.
//! - relaunch: on the tool's stream, with the application's parameter block (valid while the
//!   launch's callback runs) or a kept copy.
//!
//! With counters on, the events also enclose CUPTI's range work around the launch (≈ 1 ms per
//! kernel in a pass that reads hardware counters on an H200), so a replayed unit's records take
//! their durations from its timing execution, which starts no range (docs/kernel-replay.md,
//! "Timestamps").
//!
//! Files, each importing only those listed before it: `staging` (how much pinned host memory a
//! snapshot may take), `options`, `current` (the dispatch in progress), `seen` (what a unit ran
//! under), `state` (per device), `snapshot`, `backend` ([`CudaBackend`] itself), then its jobs:
//! `counters` (the range profiler), `timestamps`, `conditions` (L2 flush, clocks), `copies`,
//! `traced_activity` and `traced` (launches timed without waiting), `memory`, `measurement`, `relaunch` (the
//! engine's three job traits), and `dispatch` (the
//! engine's per-dispatch view of the shared backend, and the gate serialising measurements
//! between threads).

pub mod code_objects;
pub mod flush;
pub mod graphs;
pub mod module_symbols;
pub mod modules;

mod backend;
mod conditions;
mod copies;
mod counters;
mod current;
mod dispatch;
mod measurement;
mod memory;
mod options;
mod relaunch;
mod seen;
mod snapshot;
mod staging;
mod state;
mod timestamps;
mod traced;
mod traced_activity;

pub use backend::{CudaBackend, CudaEngine, WarnFn};
pub use current::{resolve_stream, CurrentDispatch, STREAM_LEGACY, STREAM_PER_THREAD};
pub use dispatch::{DispatchBackend, MeasureGate};
pub use kreplay_counters::MetricGroups;
pub use kreplay_cuda::launch::CudaLaunch;
pub use options::CounterOptions;
pub use snapshot::{CudaCapture, CudaSnapshot};
