//! Safe wrappers over the CUDA driver and CUPTI, the CUDA replay backend, and the CUPTI metric catalog.
pub mod backend;
pub mod catalog;
pub mod classify;
pub mod clocks;
pub mod debug;
mod drain;
pub mod error;
pub mod flush;
pub mod guard;
pub mod intercept;
pub mod kernel;
pub mod launch;
pub mod loader;
pub mod module_symbols;
pub mod modules;
pub mod profiler;
pub mod query;
pub mod setup;
