//! The in-process switches (`KREPLAY_*` on/off variables) and the retired ones, read once.

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
///
/// [`ToolConfig::from_env`]: crate::config::ToolConfig::from_env
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
