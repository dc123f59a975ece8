//! The software device: allocations are byte buffers, kernels are Rust closures over them, and
//! counters are computed from what a kernel does. It implements the engine's
//! job traits ([`kreplay_core::backend::ReplayBackend`]), so the whole replay contract runs in
//! CI without a GPU.

use kreplay_core::backend::{
    AllocKind, Backend, BackendError, DeviceId, Measurement, Memory, PassCounters, Region,
    Relaunch, Timing, UnitConditions, UnitPlan,
};
use kreplay_core::reference_chip::COUNTERS_PER_PASS;
use kreplay_format::{CacheState, CounterSample, Staging};
use std::thread;
use std::time::Duration;

mod backend;
mod error;
mod execute;
mod kernel;
mod measurement;
mod memory;
mod relaunch;
mod shared;
mod sim;
mod state;
mod stats;
mod traced;

pub use error::SimError;
pub use kernel::{KernelBody, KernelContext, SimKernel, SimLaunch, WARP_SIZE};
pub use shared::SharedSimDevice;
pub use sim::{SimDevice, DEFAULT_CAPACITY_BYTES, DEFAULT_HOST_STAGING_BYTES, DEFAULT_MAX_WINDOW};
use state::{Allocation, Range, SimUnit};
pub use state::{DeviceActivity, SimCapture, SimSnapshot};
pub use stats::ExecStats;

#[cfg(test)]
mod tests;
