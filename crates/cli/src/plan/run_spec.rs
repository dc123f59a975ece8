//! The plan's result: the application runs, each with everything it needs to be started and its
//! outputs written.

use kreplay_core::config::{CounterGroup, InProcessMode, KernelFilter, ReplayWindow};
use kreplay_format::sections_out::SectionSpec;
use kreplay_format::stats_out::{SummaryTable, SummaryUnit};
use kreplay_format::OutputFormat;

/// Where the summary tables go (`--summary-output-file`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryOutput {
    Stderr,
    Stdout,
    /// `<d>/<o>_<name>.txt`, as rocprofv3 names it.
    File(String),
}

impl SummaryOutput {
    pub(super) fn from_name(name: Option<&str>) -> SummaryOutput {
        match name {
            None => SummaryOutput::Stderr,
            Some(n) if n.eq_ignore_ascii_case("stderr") => SummaryOutput::Stderr,
            Some(n) if n.eq_ignore_ascii_case("stdout") => SummaryOutput::Stdout,
            Some(n) => SummaryOutput::File(n.to_string()),
        }
    }
}

/// What `-S`, `-D` and `--summary-groups` ask for, decided before the run.
#[derive(Debug, Clone, PartialEq)]
pub struct SummarySpec {
    /// In rocprofv3's order: per domain, one per matching group, then the total.
    pub tables: Vec<SummaryTable>,
    pub output: SummaryOutput,
    pub unit: SummaryUnit,
}

impl SummarySpec {
    /// For `--echo`.
    fn describe(&self) -> String {
        let tables: Vec<String> = self.tables.iter().map(|t| t.label()).collect();
        let place = match &self.output {
            SummaryOutput::Stderr => "stderr".to_string(),
            SummaryOutput::Stdout => "stdout".to_string(),
            SummaryOutput::File(name) => format!("file _{name}.txt"),
        };
        format!(
            "summary to {place} in {}: {}",
            self.unit.as_str(),
            if tables.is_empty() {
                "no table".to_string()
            } else {
                tables.join(", ")
            }
        )
    }
}

/// One application run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// 1-based position among all runs.
    pub index: usize,
    pub total: usize,
    /// Where this run came from, for progress lines and errors.
    pub origin: String,
    /// `pass_N` / `pmc_N` under the output directory, when the runs are split.
    pub subdir: Option<String>,
    pub groups: Vec<CounterGroup>,
    pub mode: InProcessMode,
    pub filter: KernelFilter,
    pub kernel_trace: bool,
    /// `--marker-trace` (on with `--kernel-rename` too).
    pub marker_trace: bool,
    /// `--kernel-rename`: the outputs name a dispatch by its innermost range.
    pub kernel_rename: bool,
    /// `-r/--runtime-trace`, `-s/--sys-trace`: the CUDA API calls recorded.
    pub api_trace: kreplay_core::api_trace::ApiLevel,
    /// `-M/--mangled-kernels`, `-T/--truncate-kernels`: how the outputs name kernels.
    pub mangled_kernels: bool,
    pub truncate_kernels: bool,
    /// `--memory-copy-trace`, `--memory-allocation-trace`.
    pub memory_copy_trace: bool,
    pub memory_allocation_trace: bool,
    /// Templates, placeholders not yet expanded.
    pub output_directory: String,
    pub output_file: String,
    /// Each format once, in the order given.
    pub formats: Vec<OutputFormat>,
    pub log_level: String,
    /// Kernel replay's unit (per dispatch unless `--replay-window` / `replay_window` says so).
    pub replay_window: ReplayWindow,
    /// `--stats`: the stats CSV files (written with the csv format).
    pub stats: bool,
    /// `-S`, `-D`, `--summary-groups`: the summary tables after the run.
    pub summary: Option<SummarySpec>,
    /// `--cache-control` (the same for every run).
    pub cache_control: kreplay_format::CacheControl,
    /// `--section`/`--set`: the sections resolved for the device (the command line's run only).
    pub sections: Vec<SectionSpec>,
    /// The digest of the device identity the groups were checked with (see the resolver's
    /// `checked_identity`); `None` without groups.
    pub checked_identity: Option<String>,
}

impl RunSpec {
    /// The progress line of application replay.
    pub fn progress_line(&self) -> String {
        let groups: Vec<String> = self
            .groups
            .iter()
            .map(|g| {
                g.counters
                    .iter()
                    .map(|c| c.requested.as_str())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .collect();
        let what = match self.mode {
            InProcessMode::KernelReplay => format!(
                "kernel replay of {} group(s): {}",
                groups.len(),
                groups.join(" | ")
            ),
            InProcessMode::Rotation { interval } => format!(
                "rotating {} groups every {interval} dispatches: {}",
                groups.len(),
                groups.join(" | ")
            ),
            InProcessMode::Single if groups.is_empty() => "kernel trace only".to_string(),
            InProcessMode::Single => groups.join(" | "),
        };
        let place = self
            .subdir
            .as_ref()
            .map(|s| format!(" -> {s}/"))
            .unwrap_or_default();
        format!(
            "kreplay: pass {}/{}: {what} ({}){place}",
            self.index, self.total, self.origin
        )
    }

    /// What `--stats` and the summary options add, for `--echo` (empty without them).
    pub fn post_processing(&self) -> String {
        let mut out = String::new();
        if self.stats {
            out += " stats";
        }
        if let Some(summary) = &self.summary {
            out += &format!(" {}", summary.describe());
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub runs: Vec<RunSpec>,
    /// Lines to print before the first run (e.g. how `--metrics` was packed).
    pub notices: Vec<String>,
}
