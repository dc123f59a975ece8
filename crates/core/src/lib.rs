//! The kreplay engine: configuration, counter groups, the replay plan and pass loop, and the
//! allocation inventory. No FFI: devices are reached through [`backend::ReplayBackend`], metric
//! catalogs through [`catalog::MetricCatalog`].

pub mod aliases;
pub mod api_trace;
pub mod backend;
pub mod catalog;
pub mod config;
pub mod engine;
pub mod filter;
mod gate;
pub mod inventory;
pub mod lifecycle;
pub mod markers;
pub mod memory_trace;
pub mod notice;
pub mod reference_chip;
pub mod sdk;

pub use engine::{Engine, EngineError, EngineOptions, FenceGuard, LaunchTicket};
pub use sdk::{CounterGroupsPolicy, PassCount, PolicyDispatch, ReplayPolicy};
