//! The whole configuration of one process: its JSON form, its passage through the
//! environment, and the settings read from the application's environment.

use serde::{Deserialize, Serialize};
use std::time::Duration;

use crate::config::drain::{
    drain_timeout_ms, drain_timeout_seconds, DEFAULT_DRAIN_TIMEOUT_MS, ENV_DRAIN_TIMEOUT,
};
use crate::config::groups::{CounterGroup, InProcessMode, KernelFilter};
use crate::config::host_staging::DEFAULT_HOST_STAGING_MAX_BYTES;
use crate::config::switches::Switches;
use crate::config::window::ReplayWindow;

/// Environment variable holding the JSON-encoded [`ToolConfig`].
pub const ENV_CONFIG: &str = "KREPLAY_CONFIG";
/// Longest configuration JSON passed in the environment itself; longer ones go through a file
/// ([`ToolConfig::to_env_value`]).
pub const CONFIG_IN_ENV_MAX: usize = 32 * 1024;

/// The whole configuration of one profiled process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolConfig {
    /// Counter groups; pass i collects group i. Empty for a trace-only run.
    pub groups: Vec<CounterGroup>,
    pub mode: InProcessMode,
    pub filter: KernelFilter,
    /// Record every dispatch (also those without counters) as a kernel-trace row.
    pub kernel_trace: bool,
    /// `--marker-trace`: record the application's NVTX ranges and marks, and give every
    /// dispatch the range stack of its launching thread.
    #[serde(default)]
    pub marker_trace: bool,
    /// `--runtime-trace` / `--sys-trace`: which CUDA API calls are recorded.
    #[serde(default)]
    pub api_trace: crate::api_trace::ApiLevel,
    /// `--memory-copy-trace`: record every copy the application makes.
    #[serde(default)]
    pub memory_copy_trace: bool,
    /// `--memory-allocation-trace`: record every allocation and free the application makes.
    #[serde(default)]
    pub memory_allocation_trace: bool,
    /// Where this process writes its database. `%pid%` is replaced by the process id, so that
    /// child processes write files of their own.
    pub database_path: String,
    /// Drain deadline; `KREPLAY_DRAIN_TIMEOUT` (seconds) overrides it.
    pub drain_timeout_ms: u64,
    /// `--host-staging-max`: the largest snapshot staged in pinned host memory; a dispatch
    /// whose snapshot is larger (and does not fit device staging) runs once.
    #[serde(default = "default_host_staging_max")]
    pub host_staging_max_bytes: u64,
    /// `fatal error warning info trace` as rocprofv3 spells them.
    pub log_level: String,
    /// Kernel replay's unit; absent in older configurations (per-dispatch replay).
    #[serde(default)]
    pub replay_window: ReplayWindow,
    /// A digest of the device identity (chip and counter-availability image of GPU 0) the CLI
    /// checked the groups with, possibly from its cache; the CUDA backend compares it with the
    /// device it profiles and warns when they differ. `None`: not checked on a device.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked_identity: Option<String>,
    /// `--cache-control`: `All` flushes L2 before every measured execution of a kernel.
    #[serde(default)]
    pub cache_control: kreplay_format::CacheControl,
    /// Read from the application's environment, not from the configuration.
    #[serde(skip)]
    pub switches: Switches,
    /// The process's place in a parallel launch (MPI, Slurm, torchrun), read from the
    /// application's environment.
    #[serde(skip)]
    pub launcher: LauncherRank,
}

/// A process's rank and world size as its launcher's variables give them (each the first of
/// [`kreplay_format::RANK_VARIABLES`] / [`kreplay_format::SIZE_VARIABLES`] that is set).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LauncherRank {
    pub rank: Option<String>,
    pub size: Option<String>,
}

impl LauncherRank {
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Self {
        LauncherRank {
            rank: kreplay_format::launcher_rank(kreplay_format::RANK_VARIABLES, &get),
            size: kreplay_format::launcher_rank(kreplay_format::SIZE_VARIABLES, &get),
        }
    }
}

impl Default for ToolConfig {
    fn default() -> Self {
        ToolConfig {
            groups: Vec::new(),
            mode: InProcessMode::Single,
            filter: KernelFilter::default(),
            kernel_trace: false,
            marker_trace: false,
            api_trace: crate::api_trace::ApiLevel::Off,
            memory_copy_trace: false,
            memory_allocation_trace: false,
            database_path: "kreplay_%pid%.db".to_string(),
            drain_timeout_ms: DEFAULT_DRAIN_TIMEOUT_MS,
            host_staging_max_bytes: DEFAULT_HOST_STAGING_MAX_BYTES,
            log_level: "warning".to_string(),
            replay_window: ReplayWindow::Dispatch,
            checked_identity: None,
            cache_control: kreplay_format::CacheControl::All,
            switches: Switches::default(),
            launcher: LauncherRank::default(),
        }
    }
}

fn default_host_staging_max() -> u64 {
    DEFAULT_HOST_STAGING_MAX_BYTES
}

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{ENV_CONFIG} is not set: run the application under `kreplay`")]
    Missing,
    #[error("{ENV_CONFIG} is not valid kreplay configuration JSON ({0}); run the application under `kreplay` of the same version")]
    Invalid(String),
    #[error("cannot read the kreplay configuration file {path} named by {ENV_CONFIG} ({error}); it lives in the run's staging directory until the run ends: do not remove that directory while the application runs")]
    Unreadable { path: String, error: String },
    #[error("{ENV_DRAIN_TIMEOUT}={0:?} is not a number of seconds; set it to e.g. 60 or 0.5")]
    BadDrainTimeout(String),
}

impl ToolConfig {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("ToolConfig serializes")
    }

    pub fn from_json(text: &str) -> Result<Self, ConfigError> {
        serde_json::from_str(text).map_err(|e| ConfigError::Invalid(e.to_string()))
    }

    /// The value of `KREPLAY_CONFIG` for this configuration: the JSON itself, or, when it is
    /// too long for one environment variable (Linux takes at most 128 KiB per variable and
    /// the application's whole environment and arguments share a limit), `@` and the path of
    /// a file holding it, written now at `spill_path`.
    pub fn to_env_value(&self, spill_path: &std::path::Path) -> std::io::Result<String> {
        let json = self.to_json();
        if json.len() <= CONFIG_IN_ENV_MAX {
            return Ok(json);
        }
        std::fs::write(spill_path, &json)?;
        Ok(format!("@{}", spill_path.display()))
    }

    /// Reads `KREPLAY_CONFIG` (the JSON, or `@` and the path of a file holding it), the
    /// override variables and the [`Switches`].
    pub fn from_env() -> Result<Self, ConfigError> {
        let value = std::env::var(ENV_CONFIG).map_err(|_| ConfigError::Missing)?;
        let mut config = Self::from_env_value(&value)?;
        config.switches = Switches::from_lookup(|name| std::env::var(name).ok());
        config.launcher = LauncherRank::from_lookup(|name| std::env::var(name).ok());
        // Set by hand for a run without the CLI (the CLI passes its value in the configuration
        // and removes the variable from the application's environment).
        if let Ok(value) = std::env::var(ENV_DRAIN_TIMEOUT) {
            let seconds = drain_timeout_seconds(&value)
                .ok_or_else(|| ConfigError::BadDrainTimeout(value.clone()))?;
            config.drain_timeout_ms = drain_timeout_ms(seconds);
        }
        Ok(config)
    }

    /// The configuration a `KREPLAY_CONFIG` value holds ([`ToolConfig::to_env_value`]'s
    /// inverse).
    pub fn from_env_value(value: &str) -> Result<Self, ConfigError> {
        match value.strip_prefix('@') {
            Some(path) => {
                let text = std::fs::read_to_string(path).map_err(|e| ConfigError::Unreadable {
                    path: path.to_string(),
                    error: e.to_string(),
                })?;
                Self::from_json(&text)
            }
            None => Self::from_json(value),
        }
    }

    /// Whether the application's NVTX ranges are followed: recorded (`--marker-trace`) or
    /// needed by the NVTX filters.
    pub fn tracks_markers(&self) -> bool {
        self.marker_trace || self.filter.tracks_ranges()
    }

    pub fn drain_timeout(&self) -> Duration {
        Duration::from_millis(self.drain_timeout_ms)
    }

    /// The database path with `%pid%` resolved for `pid`.
    pub fn database_path_for(&self, pid: u32) -> String {
        self.database_path.replace("%pid%", &pid.to_string())
    }
}
