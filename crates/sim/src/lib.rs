//! A reference software device for testing kreplay without a GPU. It is a test instrument, not
//! a GPU backend: memories are byte buffers, kernels are Rust closures over them, and counters
//! are computed from what a kernel does.

pub mod catalog;

pub use catalog::{SimCatalog, SimMetric, COUNTERS_PER_PASS, SIM_CHIP};
