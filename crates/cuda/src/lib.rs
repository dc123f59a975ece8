//! Safe wrappers over the CUDA driver and CUPTI, the CUDA replay backend, and the CUPTI metric catalog.
pub mod backend;
pub mod catalog;
pub mod classify;
pub mod clocks;
pub mod debug;
mod drain;
pub mod error;
pub mod flush;
pub mod graphs;
pub mod guard;
pub mod handles;
pub mod intercept;
pub mod kernel;
pub mod launch;
pub mod loader;
pub mod module_symbols;
pub mod modules;
pub mod profiler;
pub mod query;
pub mod setup;

/// A mutex's guard, also after a panic elsewhere poisoned it (the tool never leaves state
/// half-changed across a panic: each holder's writes are single assignments).
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}
