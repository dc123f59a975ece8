//! The one immutable configuration of a profiled process.
//!
//! The `kreplay` CLI builds a [`ToolConfig`] and passes it to the application as JSON in the
//! `KREPLAY_CONFIG` environment variable; the injected library (and the reference software
//! device's app) parse it once with [`ToolConfig::from_env`]. A few settings can also be given
//! as their own variables (documented on each field) and override the JSON.

use serde::{Deserialize, Serialize};
use std::time::Duration;

/// Environment variable holding the JSON-encoded [`ToolConfig`].
pub const ENV_CONFIG: &str = "KREPLAY_CONFIG";
/// Longest configuration JSON passed in the environment itself; longer ones go through a file
/// ([`ToolConfig::to_env_value`]).
pub const CONFIG_IN_ENV_MAX: usize = 32 * 1024;
/// Environment variable overriding [`ToolConfig::drain_timeout_ms`], in seconds (may be fractional).
pub const ENV_DRAIN_TIMEOUT: &str = "KREPLAY_DRAIN_TIMEOUT";
/// Default drain deadline.
pub const DEFAULT_DRAIN_TIMEOUT_MS: u64 = 60_000;
/// Environment variable switching group packing off (`0`) or on (`1`, the default): whether
/// whole groups whose counters fit one hardware pass together are measured by one execution.
pub const ENV_PACK_GROUPS: &str = "KREPLAY_PACK_GROUPS";

/// Environment variable: `0` closes every replay unit at its owner's next API call.
pub const ENV_WINDOW_SPANS: &str = "KREPLAY_WINDOW_SPANS";
/// Environment variable choosing the range profiler's sequence (`scheduled`, `reenable`,
/// `switch`; the CUDA backend checks the name).
pub const ENV_SEQUENCE: &str = "KREPLAY_RANGE_PROFILER_SEQUENCE";
/// Environment variable: `0` skips building the counter configurations before the first
/// dispatch.
pub const ENV_WARM_UP: &str = "KREPLAY_WARM_UP";
/// Environment variable: `0` begins the counter set-up at the first dispatch instead of at
/// context creation.
pub const ENV_EARLY_SETUP: &str = "KREPLAY_EARLY_SETUP";
/// Environment variable: `1` orders each L2 flush from the host (the launch's stream drained,
/// the flush run and waited for) instead of with events across the two contexts; off by
/// default, for comparing the two.
pub const ENV_HOST_ORDERED_FLUSH: &str = "KREPLAY_HOST_ORDERED_FLUSH";
/// Environment variable: `0` runs CUDA graph launches whole, once, unmeasured, instead of node
/// by node with every kernel node a dispatch of its own.
pub const ENV_GRAPH_NODES: &str = "KREPLAY_GRAPH_NODES";
/// Environment variable: `0` closes a replay window before the empty stand-in of a graph launch
/// run node by node launches, instead of keeping it open across the launch.
pub const ENV_GRAPH_WINDOW_SPANS: &str = "KREPLAY_GRAPH_WINDOW_SPANS";
/// Environment variable: `0` leaves out the execution that measures no counters, added to every
/// replayed unit after its measured ones, whose launch times become the records' durations.
pub const ENV_TIMING_EXECUTION: &str = "KREPLAY_TIMING_EXECUTION";
/// Environment variable: `1` stages every snapshot in pinned host memory, none on the device
/// (for a device whose memory the application needs, and to compare the two).
pub const ENV_HOST_STAGING: &str = "KREPLAY_HOST_STAGING";
/// Environment variable: `1` prints diagnostic lines of the tool's own phases on stderr.
pub const ENV_DEBUG: &str = "KREPLAY_DEBUG";

/// Switches whose question is answered (docs/DECISIONS.md, "Retired switches"): setting one
/// has no effect, and the CLI says so.
pub const RETIRED_SWITCHES: [&str; 5] = [
    "KREPLAY_BATCH_COPIES",
    "KREPLAY_FLUSH_DISCARD",
    "KREPLAY_FLUSH_IN_APPLICATION",
    "KREPLAY_FLUSH_GPC_CACHES",
    "KREPLAY_FLUSH_GRID_BARRIER",
];

/// The retired switches `is_set` finds set (an environment lookup).
pub fn retired_switches_set(is_set: impl Fn(&str) -> bool) -> impl Iterator<Item = &'static str> {
    RETIRED_SWITCHES
        .into_iter()
        .filter(move |name| is_set(name))
}

/// The in-process switches for diagnosis and comparison, each read once from its environment
/// variable by [`ToolConfig::from_env`] (the table in docs/environment.md). A correct run never
/// needs one; every default is on but [`ENV_HOST_ORDERED_FLUSH`]'s, [`ENV_HOST_STAGING`]'s and
/// [`ENV_DEBUG`]'s.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Switches {
    /// [`ENV_PACK_GROUPS`]: groups that fit one hardware pass together share it.
    pub pack_groups: bool,
    /// [`ENV_WINDOW_SPANS`]: replay units stay open across the application's calls.
    pub window_spans: bool,
    /// [`ENV_SEQUENCE`]: the range profiler's sequence, as given (empty: the default).
    pub range_profiler_sequence: String,
    /// [`ENV_WARM_UP`]: counter configurations are built before the first dispatch.
    pub warm_up: bool,
    /// [`ENV_EARLY_SETUP`]: the counter set-up begins at context creation.
    pub early_setup: bool,
    /// [`ENV_HOST_ORDERED_FLUSH`]: the L2 flush is ordered from the host (off by default).
    pub host_ordered_flush: bool,
    /// [`ENV_GRAPH_NODES`]: graph launches run node by node, each kernel node a dispatch.
    pub graph_nodes: bool,
    /// [`ENV_GRAPH_WINDOW_SPANS`]: a window stays open across a graph launch.
    pub graph_window_spans: bool,
    /// [`ENV_TIMING_EXECUTION`]: a replayed unit's records take their durations from an extra
    /// execution that measures no counters (on by default).
    pub timing_execution: bool,
    /// [`ENV_HOST_STAGING`]: snapshots are staged on the host only (off by default).
    pub host_staging: bool,
    /// [`ENV_DEBUG`]: diagnostic lines on stderr (off by default).
    pub debug: bool,
    /// Why a switch's value was refused (its default is used meanwhile): the CLI refuses it
    /// before the application starts; inside the application the counters are then not set
    /// up, as they would not have been before (timestamps are still recorded).
    pub refused: Option<String>,
}

impl Default for Switches {
    fn default() -> Self {
        Switches {
            pack_groups: true,
            window_spans: true,
            range_profiler_sequence: String::new(),
            warm_up: true,
            early_setup: true,
            host_ordered_flush: false,
            graph_nodes: true,
            graph_window_spans: true,
            timing_execution: true,
            host_staging: false,
            debug: false,
            refused: None,
        }
    }
}

impl Switches {
    /// The switches `get` (an environment lookup) gives. Every on/off switch is `0` or `1`
    /// (unset or empty: its default); another value is [`Switches::refused`] and the default
    /// kept.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Switches {
        let mut refused = None;
        let mut switch = |name: &str, default: bool| match get(name).as_deref().map(str::trim) {
            None | Some("") => default,
            Some("0") => false,
            Some("1") => true,
            Some(other) => {
                let (on, off) = if default {
                    (" (the default)", "")
                } else {
                    ("", " (the default)")
                };
                refused.get_or_insert(format!(
                    "{name}={other:?} is not 0 or 1; use 1{on} to turn it on, 0{off} to turn it off"
                ));
                default
            }
        };
        let defaults = Switches::default();
        Switches {
            pack_groups: switch(ENV_PACK_GROUPS, defaults.pack_groups),
            window_spans: switch(ENV_WINDOW_SPANS, defaults.window_spans),
            range_profiler_sequence: get(ENV_SEQUENCE).unwrap_or_default(),
            warm_up: switch(ENV_WARM_UP, defaults.warm_up),
            early_setup: switch(ENV_EARLY_SETUP, defaults.early_setup),
            host_ordered_flush: switch(ENV_HOST_ORDERED_FLUSH, defaults.host_ordered_flush),
            graph_nodes: switch(ENV_GRAPH_NODES, defaults.graph_nodes),
            graph_window_spans: switch(ENV_GRAPH_WINDOW_SPANS, defaults.graph_window_spans),
            timing_execution: switch(ENV_TIMING_EXECUTION, defaults.timing_execution),
            host_staging: switch(ENV_HOST_STAGING, defaults.host_staging),
            debug: switch(ENV_DEBUG, defaults.debug),
            refused,
        }
    }
}

/// [`ENV_DRAIN_TIMEOUT`]'s value as seconds: a finite number above 0.
pub fn drain_timeout_seconds(value: &str) -> Option<f64> {
    value
        .trim()
        .parse()
        .ok()
        .filter(|s: &f64| is_drain_timeout(*s))
}

/// Whether `seconds` is a drain deadline: a finite number above 0 (the flag and the variable).
pub fn is_drain_timeout(seconds: f64) -> bool {
    seconds.is_finite() && seconds > 0.0
}

/// A drain deadline in seconds as [`ToolConfig::drain_timeout_ms`] (rounded up).
pub fn drain_timeout_ms(seconds: f64) -> u64 {
    (seconds * 1000.0).ceil() as u64
}

/// One counter as the user asked for it, and the device metric it is collected as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CounterSpec {
    /// The name the user typed (an alias such as `SQ_WAVES`, or a metric name); outputs use it.
    pub requested: String,
    /// The device metric (e.g. `sm__warps_launched.sum`, or `sim__warps_launched.sum`).
    pub metric: String,
}

/// Counters collected together in one hardware pass.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct CounterGroup {
    pub counters: Vec<CounterSpec>,
}

impl CounterGroup {
    pub fn metrics(&self) -> impl Iterator<Item = &str> {
        self.counters.iter().map(|c| c.metric.as_str())
    }
}

/// How several counter groups are collected within one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InProcessMode {
    /// One group for every dispatch (application replay gives each process one group).
    #[default]
    Single,
    /// Kernel replay: every dispatch runs once per group, memory restored between passes.
    KernelReplay,
    /// Rotation: group i for `interval` dispatches per device, then group i+1, and so on.
    Rotation { interval: u64 },
}

/// Which dispatches are profiled.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct KernelFilter {
    /// Keep only kernels whose (demangled) name matches.
    pub include_regex: Option<String>,
    /// Then drop kernels whose name matches.
    pub exclude_regex: Option<String>,
    /// rocprofv3's iteration range, e.g. `"[1-2],[3-4]"` or `"5"`: which occurrences of each
    /// kernel (counted per kernel name, from 1... see `core::filter`) are profiled.
    pub iteration_range: Option<String>,
}

/// How many consecutive dispatches kernel replay snapshots, then re-runs once per counter group.
///
/// On NVIDIA GPUs a pass costs mostly the counter reprogramming (reference nvidia-cupti.md §10),
/// paid once per group per *replay unit*; a window of K dispatches pays it once per K.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayWindow {
    /// One dispatch per unit (`--replay-window 1`, the default).
    #[default]
    Dispatch,
    /// Up to K consecutive replayable dispatches per unit (`--replay-window K`).
    Count(u32),
    /// [`DEFAULT_AUTO_REPLAY_WINDOW`] dispatches, capped by what the device supports.
    Auto,
}

/// The window size of [`ReplayWindow::Auto`]: long enough that the per-group reprogramming is
/// spread thin, short enough that a window's pass-0 records are not held back for long.
pub const DEFAULT_AUTO_REPLAY_WINDOW: u32 = 64;

impl ReplayWindow {
    /// The configured dispatches per window (1 for per-dispatch replay).
    pub fn dispatches(self) -> u32 {
        match self {
            ReplayWindow::Dispatch => 1,
            ReplayWindow::Count(k) => k.max(1),
            ReplayWindow::Auto => DEFAULT_AUTO_REPLAY_WINDOW,
        }
    }

    /// Parses the CLI / input-file spelling: a positive count or `auto`.
    pub fn parse(text: &str) -> Result<ReplayWindow, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            return Ok(ReplayWindow::Auto);
        }
        match text.parse::<u32>() {
            Ok(1) => Ok(ReplayWindow::Dispatch),
            Ok(k) if k > 1 => Ok(ReplayWindow::Count(k)),
            _ => Err(format!(
                "replay window {text:?} is not a positive number of dispatches or `auto`; use e.g. 8 or auto"
            )),
        }
    }
}

/// The whole configuration of one profiled process.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolConfig {
    /// Counter groups; pass i collects group i. Empty for a trace-only run.
    pub groups: Vec<CounterGroup>,
    pub mode: InProcessMode,
    pub filter: KernelFilter,
    /// Record every dispatch (also those without counters) as a kernel-trace row.
    pub kernel_trace: bool,
    /// Where this process writes its database. `%pid%` is replaced by the process id, so that
    /// child processes write files of their own.
    pub database_path: String,
    /// Drain deadline; `KREPLAY_DRAIN_TIMEOUT` (seconds) overrides it.
    pub drain_timeout_ms: u64,
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
            database_path: "kreplay_%pid%.db".to_string(),
            drain_timeout_ms: DEFAULT_DRAIN_TIMEOUT_MS,
            log_level: "warning".to_string(),
            replay_window: ReplayWindow::Dispatch,
            checked_identity: None,
            cache_control: kreplay_format::CacheControl::All,
            switches: Switches::default(),
            launcher: LauncherRank::default(),
        }
    }
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

    pub fn drain_timeout(&self) -> Duration {
        Duration::from_millis(self.drain_timeout_ms)
    }

    /// The database path with `%pid%` resolved for `pid`.
    pub fn database_path_for(&self, pid: u32) -> String {
        self.database_path.replace("%pid%", &pid.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn switches_are_on_unless_set_to_0_and_a_bad_packing_value_is_refused() {
        let lookup = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(Switches::from_lookup(lookup(&[])), Switches::default());
        let off = Switches::from_lookup(lookup(&[
            (ENV_PACK_GROUPS, "0"),
            (ENV_WINDOW_SPANS, " 0"),
            (ENV_SEQUENCE, "reenable"),
            (ENV_WARM_UP, "0"),
            (ENV_EARLY_SETUP, "0"),
            (ENV_HOST_ORDERED_FLUSH, "1"),
            (ENV_GRAPH_NODES, "0"),
            (ENV_GRAPH_WINDOW_SPANS, "0"),
            (ENV_TIMING_EXECUTION, "0"),
            (ENV_HOST_STAGING, "1"),
            (ENV_DEBUG, "1"),
        ]));
        assert_eq!(
            off,
            Switches {
                pack_groups: false,
                window_spans: false,
                range_profiler_sequence: "reenable".into(),
                warm_up: false,
                early_setup: false,
                host_ordered_flush: true,
                graph_nodes: false,
                graph_window_spans: false,
                timing_execution: false,
                host_staging: true,
                debug: true,
                refused: None,
            }
        );
        assert!(!Switches::from_lookup(lookup(&[(ENV_DEBUG, "")])).debug);
        // The switches that must be 0 or 1: anything else is refused, the default kept.
        let flush = Switches::from_lookup(lookup(&[(ENV_HOST_ORDERED_FLUSH, "yes")]));
        assert!(!flush.host_ordered_flush);
        assert!(flush
            .refused
            .unwrap_or_default()
            .contains("KREPLAY_HOST_ORDERED_FLUSH=\"yes\" is not 0 or 1"));
        let timing = Switches::from_lookup(lookup(&[(ENV_TIMING_EXECUTION, "off")]));
        assert!(timing.timing_execution, "the default meanwhile");
        assert!(timing
            .refused
            .unwrap_or_default()
            .contains("KREPLAY_TIMING_EXECUTION=\"off\" is not 0 or 1"));
        let on = Switches::from_lookup(lookup(&[(ENV_WINDOW_SPANS, "1"), (ENV_WARM_UP, "1")]));
        assert_eq!(on, Switches::default());
        // Every on/off switch: on by default (a window across calls) or off (debug lines).
        let spans = Switches::from_lookup(lookup(&[(ENV_WINDOW_SPANS, "yes")]));
        assert!(spans.window_spans, "the default meanwhile");
        let why = spans.refused.unwrap_or_default();
        assert_eq!(
            why,
            "KREPLAY_WINDOW_SPANS=\"yes\" is not 0 or 1; use 1 (the default) to turn it on, 0 to turn it off"
        );
        let debug = Switches::from_lookup(lookup(&[(ENV_DEBUG, "on")]));
        assert!(!debug.debug);
        assert!(debug
            .refused
            .unwrap_or_default()
            .ends_with("use 1 to turn it on, 0 (the default) to turn it off"));
        assert!(!Switches::from_lookup(lookup(&[(ENV_DEBUG, "0")])).debug);
        let bad = Switches::from_lookup(lookup(&[(ENV_PACK_GROUPS, "2")]));
        assert!(bad.pack_groups, "the default meanwhile");
        let why = bad.refused.unwrap_or_default();
        assert!(
            why.contains("KREPLAY_PACK_GROUPS=\"2\" is not 0 or 1"),
            "{why}"
        );
    }

    #[test]
    fn json_round_trip_keeps_every_field() {
        let config = ToolConfig {
            groups: vec![CounterGroup {
                counters: vec![CounterSpec {
                    requested: "SQ_WAVES".into(),
                    metric: "sm__warps_launched.sum".into(),
                }],
            }],
            mode: InProcessMode::Rotation { interval: 2 },
            filter: KernelFilter {
                include_regex: Some("saxpy".into()),
                exclude_regex: None,
                iteration_range: Some("[1-2]".into()),
            },
            kernel_trace: true,
            database_path: "/tmp/x/%pid%.db".into(),
            drain_timeout_ms: 5,
            log_level: "info".into(),
            replay_window: ReplayWindow::Count(8),
            checked_identity: Some("0123456789abcdef".into()),
            cache_control: kreplay_format::CacheControl::None,
            switches: Switches::default(),
            launcher: LauncherRank::default(),
        };
        assert_eq!(ToolConfig::from_json(&config.to_json()).unwrap(), config);
        assert_eq!(config.database_path_for(42), "/tmp/x/42.db");
    }

    #[test]
    fn a_configuration_too_long_for_the_environment_goes_through_a_file() {
        let dir = std::env::temp_dir().join(format!("kreplay-config-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let spill = dir.join("config.json");
        let small = ToolConfig::default();
        let inline = small.to_env_value(&spill).unwrap();
        assert!(inline.starts_with('{') && !spill.exists(), "{inline}");
        assert_eq!(ToolConfig::from_env_value(&inline).unwrap(), small);

        let big = ToolConfig {
            groups: vec![
                CounterGroup {
                    counters: vec![CounterSpec {
                        requested: "SQ_WAVES".into(),
                        metric: "sm__warps_launched.sum".into(),
                    }],
                };
                1000
            ],
            ..ToolConfig::default()
        };
        assert!(big.to_json().len() > CONFIG_IN_ENV_MAX);
        let value = big.to_env_value(&spill).unwrap();
        assert_eq!(value, format!("@{}", spill.display()));
        assert_eq!(ToolConfig::from_env_value(&value).unwrap(), big);

        std::fs::remove_dir_all(&dir).unwrap();
        let message = ToolConfig::from_env_value(&value).unwrap_err().to_string();
        assert!(
            message.starts_with("cannot read the kreplay configuration file")
                && message.contains("config.json"),
            "{message}"
        );
    }

    #[test]
    fn replay_window_parses_counts_and_auto_and_defaults_to_per_dispatch() {
        assert_eq!(ReplayWindow::parse("8"), Ok(ReplayWindow::Count(8)));
        assert_eq!(ReplayWindow::parse("1"), Ok(ReplayWindow::Dispatch));
        assert_eq!(ReplayWindow::parse(" AUTO "), Ok(ReplayWindow::Auto));
        for bad in ["0", "-3", "x", ""] {
            let err = ReplayWindow::parse(bad).unwrap_err();
            assert!(err.contains("e.g. 8 or auto"), "{err}");
        }
        assert_eq!(ReplayWindow::Auto.dispatches(), DEFAULT_AUTO_REPLAY_WINDOW);
        let mut json: serde_json::Value =
            serde_json::from_str(&ToolConfig::default().to_json()).unwrap();
        json.as_object_mut().unwrap().remove("replay_window");
        let old = ToolConfig::from_json(&json.to_string()).unwrap();
        assert_eq!(old.replay_window, ReplayWindow::Dispatch);
        // The spellings tests/gpu/run.py writes into KREPLAY_CONFIG.
        for (text, window) in [
            (r#""auto""#, ReplayWindow::Auto),
            (r#"{"count": 8}"#, ReplayWindow::Count(8)),
            (r#""dispatch""#, ReplayWindow::Dispatch),
        ] {
            json["replay_window"] = serde_json::from_str(text).unwrap();
            let parsed = ToolConfig::from_json(&json.to_string()).unwrap();
            assert_eq!(parsed.replay_window, window, "{text}");
        }
    }

    #[test]
    fn invalid_json_is_a_clear_error() {
        let err = ToolConfig::from_json("{").unwrap_err().to_string();
        assert!(err.contains("KREPLAY_CONFIG"), "{err}");
    }
}
