//! A reference software device for testing kreplay without a GPU. It is a test instrument, not
//! a GPU backend: memories are byte buffers, kernels are Rust closures over them, and counters
//! are computed from what a kernel does.
//!
//! - the metric catalog of chip `SIM` (2 counters per pass) is `kreplay_core::reference_chip`,
//!   re-exported here, so that the CLI checks groups without depending on this crate.
//! - [`device`]: the device, implementing the engine's `ReplayBackend`.
//! - [`runtime`]: the calls an application makes, routed through the engine as the CUDA
//!   backend routes CUDA calls.
//! - [`workload`]: the fixed workload of `kreplay-sim-app`, and its verification.

pub mod device;
pub mod runtime;
pub mod workload;

pub use device::{
    SharedSimDevice, SimCapture, SimDevice, SimError, SimKernel, SimLaunch, SimSnapshot,
};
pub use kreplay_core::reference_chip::{SimCatalog, SimMetric, COUNTERS_PER_PASS, SIM_CHIP};
pub use runtime::{GraphNode, SimEngine, SimRuntime};
