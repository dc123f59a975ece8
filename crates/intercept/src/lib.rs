//! Interception: CUPTI's driver and resource callbacks turned into engine calls.
//!
//! [`initialize`] (the injected library's `InitializeInjection`, inside `cuInit`) loads the
//! driver and CUPTI, builds the engine with the CUDA backend and a database writer, subscribes
//! its CUPTI callbacks and hands the process's endings to `kreplay_core::lifecycle`, which
//! runs the tool's finish (`finish.rs`) once at exit or on a signal. From the callback
//! (`callbacks.rs`): launches go through `Engine::launch_enter`/`launch_exit` (`launches.rs`;
//! graph launches node by node, `graph_launch.rs`), every other driver call of an application
//! thread holds the engine's fence (`calls.rs`), allocations and frees enter the engine's
//! inventory (`memory.rs`), and loaded modules' `__device__` and `__constant__` variables enter
//! it at their kernels' first launch (`resources.rs`), and the application's NVTX calls become
//! the engine's markers under `--marker-trace` (`markers.rs`; [`initialize_nvtx`] is the
//! injected library's `InitializeInjectionNvtx2`). Records go to a `DbWriter` (its own thread).
//! In a run without counters, a thread of its own reads the launches timed without waiting and
//! flushes CUPTI's records of kernel executions (`traced_reader.rs`). A launch makes no driver
//! call of the tool's while no stream capture is open (`captures.rs`) and its stream's id is
//! known to its thread (`stream_ids.rs`).
//!
//! Files, from the top: `start` → `callbacks` → `launches`, `graph_launch`, `calls`,
//! `resources` → `memory`, `graph_exec`, `dispatch`, `captures`, `stream_ids` → `tool` (the
//! state); `classify` tells what a driver call is, `kreplay_cuda::callback` reads what CUPTI
//! passes.
//!
//! Panic safety: the CUPTI callback runs inside `catch_unwind`; a panic switches the tool off
//! (callbacks return at once from then on) and the application goes on unprofiled.

mod api_trace;
mod callbacks;
mod calls;
mod captures;
pub mod classify;
mod dispatch;
mod finish;
mod graph_exec;
mod graph_launch;
mod launches;
mod markers;
mod memory;
mod memory_trace;
mod process_info;
mod resources;
mod start;
mod stream_ids;
mod tool;
mod traced_reader;

pub use markers::initialize_nvtx;
pub use start::initialize;
pub use tool::say;
