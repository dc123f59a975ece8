//! Safe wrappers over the CUDA driver and CUPTI, the CUDA replay backend, and the CUPTI metric catalog.
pub mod loader;
pub mod catalog;
pub mod backend;
pub mod classify;
pub mod error;
pub mod guard;
pub mod module_symbols;
pub mod profiler;
pub mod kernel;
