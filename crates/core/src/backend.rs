//! What the replay engine needs from a device. The CUDA backend (`kreplay-cuda`) and the reference
//! software device (`kreplay-sim`) implement its job traits
//! ([`Memory`], [`Measurement`], [`Relaunch`]: a [`ReplayBackend`]); the engine never sees CUDA types.
//!
//! Everything the engine measures is a *replay unit*: up to K consecutive launches of one thread
//! on one device (K = 1 for per-dispatch replay and for a dispatch that runs once), measured by
//! one or more *executions*. The backend plans how the unit's passes (one counter group each) map
//! onto executions ([`Measurement::plan_unit`]): groups that share a hardware pass share an
//! execution. Execution 0 is the application's own launches; every later execution re-runs the
//! unit from its snapshot. Counters may become available only after the unit's last execution
//! (CUPTI decodes a multi-pass configuration at the end), so results are collected per unit:
//!
//! ```text
//! open:   [executions > 1] fence + drain + snapshot S0
//!         plan_unit(groups); start_execution(0, K ranges)
//! member: launch_starts; the application's own launch; launch_ends      (one range each)
//!         between members, calls the unit may stay open across; writes to device memory
//!         by them are captured after they ran (`capture`)
//! close:  stop_execution -> timings of execution 0
//!         [the unit stayed open across calls] save F (tracked memory now)
//!         per further execution: restore S0, start_execution(e), re-run the unit's log in order
//!         (relaunch each member between launch_starts/launch_ends, apply each capture),
//!         stop_execution
//!         [F saved] restore F (the application went on from execution 0's results)
//!         unit_counters -> per pass, per member, the counters
//! ```
//!
//! The close may run on another thread than the launches (the thread whose API call closed the
//! unit): a backend that opens units of several launches must accept `stop_execution`,
//! `relaunch` and `apply` there.
//!
//! The trait uses three plain types of the record model (`kreplay_format`'s [`CounterSample`],
//! [`Staging`], [`CacheState`]): what a backend measures goes into the records as it is, and the
//! engine depends on the record model for its records anyway. No other format type (writers,
//! readers, the database) is part of the trait.
//!
//! [`CounterSample`]: kreplay_format::CounterSample
//! [`Staging`]: kreplay_format::Staging
//! [`CacheState`]: kreplay_format::CacheState

mod dispatch;
mod error;
mod jobs;
mod memory;
mod results;
mod shared;

pub use dispatch::{CallEffect, DeviceScope, DispatchInfo, LaunchKind};
pub use error::BackendError;
pub use jobs::{Backend, DeviceOf, Measurement, Memory, Relaunch, ReplayBackend};
pub use memory::{AllocKind, DeviceId, Region};
pub use results::{PassCounters, PassResult, Timing, UnitConditions, UnitPlan};
pub use shared::{CaptureOf, LaunchOf, SharedDevice, SnapshotOf};

#[cfg(test)]
mod tests;
