//! The one immutable configuration of a profiled process.
//!
//! The `kreplay` CLI builds a [`ToolConfig`] and passes it to the application as JSON in the
//! `KREPLAY_CONFIG` environment variable; the injected library (and the reference software
//! device's app) parse it once with [`ToolConfig::from_env`]. A few settings can also be given
//! as their own variables (documented on each field) and override the JSON.

mod drain;
mod groups;
mod host_staging;
mod switches;
mod tool;
mod window;

#[cfg(test)]
mod tests;

pub use drain::{
    drain_timeout_ms, drain_timeout_seconds, is_drain_timeout, DEFAULT_DRAIN_TIMEOUT_MS,
    ENV_DRAIN_TIMEOUT,
};
pub use groups::{CounterGroup, CounterSpec, InProcessMode, KernelFilter, SelectedRegions};
pub use host_staging::{parse_size, DEFAULT_HOST_STAGING_MAX_BYTES};
pub use switches::{
    retired_switches_set, Switches, ENV_DEBUG, ENV_EARLY_SETUP, ENV_GRAPH_NODES,
    ENV_GRAPH_WINDOW_SPANS, ENV_HOST_ORDERED_FLUSH, ENV_HOST_STAGING, ENV_PACK_GROUPS,
    ENV_SEQUENCE, ENV_TIMING_EXECUTION, ENV_WARM_UP, ENV_WINDOW_SPANS, RETIRED_SWITCHES,
};
pub use tool::{ConfigError, LauncherRank, ToolConfig, CONFIG_IN_ENV_MAX, ENV_CONFIG};
pub use window::{ReplayWindow, DEFAULT_AUTO_REPLAY_WINDOW};
