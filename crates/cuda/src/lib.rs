//! The safe layer over the CUDA driver, CUPTI and NVML: libraries loaded at run time, errors that
//! name the failed call, typed calls, and owned objects that free on drop. The only crate that
//! imports the bindings (`kreplay-cupti-sys`).
pub mod callback;
pub mod clocks;
pub mod context;
pub mod debug;
pub mod drain;
pub mod error;
pub mod guard;
pub mod handles;
pub mod kernel;
pub mod launch;
pub mod loader;
pub mod query;

pub use context::ContextGuard;

/// A mutex's guard, also after a panic elsewhere poisoned it (the tool never leaves state
/// half-changed across a panic: each holder's writes are single assignments).
pub fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
