//! The safe layer over the CUDA driver, CUPTI and NVML: libraries loaded at run time, errors that
//! name the failed call, typed calls, and owned objects that free on drop. The only crate that
//! imports the bindings (`kreplay-cupti-sys`).
pub mod activity;
pub mod callback;
pub mod callback_launch;
pub mod clocks;
pub mod context;
pub mod cupti;
pub mod debug;
pub mod device;
pub mod drain;
pub mod error;
pub mod graph;
pub mod guard;
pub mod handles;
pub mod kernel;
pub mod launch;
pub mod loader;
pub mod memory;
pub mod module;
pub mod nvtx_injection;
pub mod query;
pub mod symbols;

pub use context::ContextGuard;

/// CUPTI's function table, loaded at run time ([`loader::cupti`]).
pub use kreplay_cupti_sys::cupti::Cupti;
/// The driver's function table, loaded at run time ([`loader::driver`]).
pub use kreplay_cupti_sys::driver::Driver;
/// Opaque handles of the driver's objects, passed between the safe layer's calls.
pub use kreplay_cupti_sys::{
    CUcontext, CUdevice, CUdeviceptr, CUevent, CUfunction, CUgraph, CUgraphExec, CUgraphNode,
    CUmodule, CUstream,
};

/// A mutex's guard, also after a panic elsewhere poisoned it (the tool never leaves state
/// half-changed across a panic: each holder's writes are single assignments).
pub fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
