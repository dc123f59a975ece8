//! Interception: CUPTI's driver and resource callbacks turned into engine calls.
//!
//! [`initialize`] (the injected library's `InitializeInjection`, inside `cuInit`) loads the
//! driver and CUPTI, builds the engine with the CUDA backend and a database writer, and
//! subscribes its CUPTI callbacks: launches go through `Engine::launch_enter`/`launch_exit`,
//! allocations and frees into the engine's inventory, loaded modules' `__device__` and
//! `__constant__` variables into the inventory at their kernels' first launch, and every other
//! driver call of an application thread holds the engine's fence. Records go to a `DbWriter`
//! (its own thread); at process exit they are flushed.
//!
//! Panic safety: the CUPTI callback runs inside `catch_unwind`; a panic switches the tool off
//! (callbacks return at once from then on) and the application goes on unprofiled.

mod callbacks;
pub mod classify;
mod graph_launch;
mod tool;

pub use tool::{initialize, say};
