//! The command line, as clap sees it. Option names, value forms and defaults follow rocprofv3's
//! (`rocprofv3 [options] -- <app> [args]`), so that a rocprofv3 command line works with `kreplay`
//! in its place. What the options mean together is decided in [`crate::plan`].

use clap::builder::{PossibleValuesParser, TypedValueParser};
use clap::{ArgAction, Args, CommandFactory, FromArgMatches, Parser, Subcommand, ValueEnum};
use kreplay_format::stats_out::SummaryUnit;
use std::path::PathBuf;

#[derive(Debug, Parser)]
#[command(
    name = "kreplay",
    version,
    about = "Hardware-counter profiler for NVIDIA GPUs with in-process kernel replay",
    long_about = "Collects CUPTI counters on every kernel dispatch of an application.\n\n\
        kreplay --pmc A B --pmc C --replay-mode kernel --kernel-replay-beta-enabled -- ./app args\n\
        collects both groups in ONE run of ./app by re-executing each dispatch once per hardware\n\
        pass the groups need (groups that fit one pass together share it), with device memory\n\
        restored between passes. Without --replay-mode kernel, several groups re-run\n\
        the application once per group (application replay).",
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  kreplay demo\n  kreplay --pmc sm__warps_launched.sum --pmc dram__bytes_read.sum \
        --replay-mode kernel --kernel-replay-beta-enabled -f json csv -d out -- ./app\n  \
        kreplay avail list --chip GH100"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    #[command(flatten)]
    pub profile: ProfileArgs,
}

impl Cli {
    /// Parses a command line (program name first), keeping each `--pmc` occurrence as a group.
    pub fn parse_args<I, T>(args: I) -> Result<Cli, clap::Error>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        let matches = Cli::command().try_get_matches_from(args)?;
        let mut cli = Cli::from_arg_matches(&matches)?;
        if cli.command.is_none() {
            if let Ok(Some(occurrences)) = matches.try_get_occurrences::<String>("pmc") {
                cli.profile.pmc = occurrences.map(|o| o.cloned().collect()).collect();
            }
        }
        Ok(cli)
    }
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// List and check the counters of a GPU (or of a chip, with --chip, without a GPU).
    Avail {
        #[command(subcommand)]
        command: AvailCommand,
    },
    /// Merge rocpd databases and write them again as rocpd, CSV, JSON and/or pftrace (Perfetto).
    Convert(ConvertArgs),
    /// Run the bundled demo: kernel replay with two counter groups, on the GPU when there is one,
    /// else on the reference software device.
    Demo(DemoArgs),
}

#[derive(Debug, Args)]
pub struct ConvertArgs {
    /// rocpd databases (`*_results.db`, or a process database) to merge.
    #[arg(short = 'i', long = "input", required = true, num_args = 1..)]
    pub inputs: Vec<PathBuf>,
    /// Formats to write: one or several of rocpd, csv, json, pftrace (space or comma separated).
    #[arg(short = 'f', long = "output-format", num_args = 1.., value_delimiter = ',', default_values_t = ["csv".to_string()])]
    pub formats: Vec<String>,
    /// Output directory.
    #[arg(
        short = 'd',
        long = "output-path",
        visible_alias = "output-directory",
        default_value = "rocpd-output-data"
    )]
    pub output_dir: PathBuf,
    /// Output file name prefix.
    #[arg(short = 'o', long = "output-file", default_value = "out")]
    pub output_file: String,
}

#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Where the demo writes its files.
    #[arg(
        short = 'd',
        long = "output-directory",
        default_value = "kreplay-demo-output"
    )]
    pub output_dir: PathBuf,
    /// Use the reference software device even when a GPU is present.
    #[arg(long)]
    pub sim: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ReplayMode {
    /// Collect all counter groups in one run by replaying each dispatch once per hardware pass.
    Kernel,
    /// Re-run the whole application once per counter group (the default).
    Application,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogLevel {
    Fatal,
    Error,
    Warning,
    Info,
    Trace,
    Env,
    Config,
}

impl LogLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            LogLevel::Fatal => "fatal",
            LogLevel::Error => "error",
            LogLevel::Warning => "warning",
            LogLevel::Info => "info",
            LogLevel::Trace => "trace",
            LogLevel::Env => "env",
            LogLevel::Config => "config",
        }
    }
}

/// `-u/--summary-units`: one of [`SummaryUnit::ALL`], listed as clap lists possible values.
fn summary_unit_parser() -> impl TypedValueParser<Value = SummaryUnit> {
    PossibleValuesParser::new(SummaryUnit::ALL.map(SummaryUnit::as_str))
        .map(|text| SummaryUnit::parse(&text).unwrap_or_default())
}

/// rocprofv3's boolean option values (`--kernel-trace`, `--kernel-trace true`, `--att off`, ...).
pub fn parse_bool(text: &str) -> Result<bool, String> {
    match text.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" | "y" | "t" => Ok(true),
        "0" | "false" | "no" | "off" | "n" | "f" => Ok(false),
        other => Err(format!("'{other}' is not a boolean; use true or false")),
    }
}

#[derive(Debug, Default, Args)]
pub struct ProfileArgs {
    /// One counter group (one hardware pass); repeat for several groups. Names separated by
    /// spaces or commas, e.g. `--pmc sm__warps_launched.sum smsp__inst_executed.sum --pmc dram__bytes_read.sum`.
    #[arg(long = "pmc", id = "pmc", num_args = 0.., action = ArgAction::Append, value_name = "PMC", help_heading = "Counter collection")]
    pub pmc_values: Vec<String>,

    /// The `--pmc` occurrences, one group each (filled by [`Cli::parse_args`] from clap's
    /// occurrences: clap's derive flattens them).
    #[arg(skip)]
    pub pmc: Vec<Vec<String>>,

    /// A flat list of counters that kreplay packs into the fewest single-pass groups (printed before the run).
    #[arg(long, num_args = 1.., value_delimiter = ',', value_name = "A,B,C", help_heading = "Counter collection")]
    pub metrics: Vec<String>,

    /// Nsight Compute's section NAME (its identifier, e.g. `SpeedOfLight`); repeat for several.
    /// Its metrics are collected by kernel replay over as many passes as they need, and its rows
    /// are written to `<o>_sections.csv` with `-f csv` (`ncu --csv --page details` columns), to
    /// every other format, and summarised per kernel after the run. Sections come from --section-folder, else the Nsight Compute
    /// installation (`ncu` on PATH, /usr/local/cuda*/nsight-compute-*, /opt/nvidia/nsight-compute),
    /// else kreplay's built-in ones; `kreplay avail sections` lists them.
    #[arg(long = "section", value_name = "NAME", action = ArgAction::Append, help_heading = "Nsight Compute sections")]
    pub sections: Vec<String>,

    /// Every section of Nsight Compute's set NAME (`basic`, `detailed`, `full`, ...), as for --section.
    #[arg(long = "set", value_name = "NAME", action = ArgAction::Append, help_heading = "Nsight Compute sections")]
    pub sets: Vec<String>,

    /// Which rows of each section to collect and show, as `ncu --print-details`: `header` (the
    /// default, what `ncu --page details` prints), `body` (its tables and charts) or `all`.
    #[arg(
        long = "print-details",
        value_enum,
        value_name = "PART",
        help_heading = "Nsight Compute sections"
    )]
    pub print_details: Option<crate::sections::Details>,

    /// A folder of `.section` files to use instead of Nsight Compute's (repeatable).
    #[arg(long = "section-folder", value_name = "DIR", action = ArgAction::Append, help_heading = "Nsight Compute sections")]
    pub section_folders: Vec<PathBuf>,

    /// `kernel` collects all counter groups in a single application run via in-process kernel
    /// replay (requires --pmc and --kernel-replay-beta-enabled); `application` (default) re-runs
    /// the whole application once per counter group. CUDA graph launches run node by node: each
    /// kernel node is a dispatch, measured in every pass (docs/kernel-replay.md, "CUDA graphs").
    #[arg(long, value_enum, help_heading = "Kernel replay options (beta)")]
    pub replay_mode: Option<ReplayMode>,

    /// Acknowledge that kernel replay is a beta feature.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Kernel replay options (beta)")]
    pub kernel_replay_beta_enabled: Option<bool>,

    /// Kernel replay unit: `auto` (default) picks a window the device supports; N snapshots
    /// once per window of N consecutive dispatches and runs the window once per hardware pass
    /// (the counters are programmed once per window); 1 replays each dispatch alone.
    /// Only with --replay-mode kernel.
    #[arg(long, value_name = "N|auto", value_parser = kreplay_core::config::ReplayWindow::parse, help_heading = "Kernel replay options (beta)")]
    pub replay_window: Option<kreplay_core::config::ReplayWindow>,

    /// Seconds to wait for the device to drain before a replay; a stuck drain aborts the app
    /// after writing every record so far (default 60, or KREPLAY_DRAIN_TIMEOUT when set).
    #[arg(
        long,
        value_name = "SECONDS",
        help_heading = "Kernel replay options (beta)"
    )]
    pub drain_timeout: Option<f64>,

    /// The largest snapshot staged in pinned host memory when device memory cannot hold it
    /// (bytes, or with a unit: 8G, 512MiB; default 8G; 0 never stages on the host): staged
    /// there it crosses PCIe once per pass. A larger one runs once, and every output says so.
    #[arg(long, value_name = "SIZE", value_parser = kreplay_core::config::parse_size, help_heading = "Kernel replay options (beta)")]
    pub host_staging_max: Option<u64>,

    /// Input file: .yaml/.yml/.json with `jobs`, or a deprecated .txt with `pmc:` lines.
    #[arg(short = 'i', long, value_name = "FILE", help_heading = "I/O options")]
    pub input: Option<PathBuf>,

    /// Output directory (default: the current directory). Placeholders as for -o.
    #[arg(short = 'd', long, value_name = "DIR", help_heading = "I/O options")]
    pub output_directory: Option<String>,

    /// Output file name (default `%hostname%/%pid%`). Placeholders: %pid% %ppid% %pgid% %psid%
    /// %hostname% %rank% %size% %nid% %job% %env{NAME}% $env{NAME} %launch_time% %argv% %argt% %args% %tag% %cwd%.
    /// Each process's files take its own values (%rank% from the rank its launcher gave it).
    #[arg(short = 'o', long, value_name = "NAME", help_heading = "I/O options")]
    pub output_file: Option<String>,

    /// Output formats: one or several of rocpd, csv, json, pftrace (default rocpd).
    #[arg(short = 'f', long, num_args = 1.., value_delimiter = ',', value_name = "FORMAT", help_heading = "I/O options")]
    pub output_format: Vec<String>,

    /// fatal, error, warning, info, trace, env or config.
    #[arg(long, value_enum, help_heading = "I/O options")]
    pub log_level: Option<LogLevel>,

    /// Profile only kernels whose name matches this regular expression.
    #[arg(long, value_name = "REGEX", help_heading = "Filtering options")]
    pub kernel_include_regex: Option<String>,

    /// Then skip kernels whose name matches this regular expression.
    #[arg(long, value_name = "REGEX", help_heading = "Filtering options")]
    pub kernel_exclude_regex: Option<String>,

    /// Which iterations of each kernel to profile, e.g. "[1-2],[5]" or 3.
    #[arg(long, num_args = 1.., value_name = "RANGE", help_heading = "Filtering options")]
    pub kernel_iteration_range: Vec<String>,

    /// Nsight Compute's NVTX filter (repeatable): profile only dispatches inside these NVTX
    /// ranges (inside any one). `A/` push/pop range A anywhere in the launching thread's stack,
    /// `A/B` B directly inside A, `A/*/B` with any ranges between, `A/+/B` with one, `[A` A at
    /// the bottom, `B]` B at the top; `A` (no `/`) a start/end range, `A,B` inside both;
    /// `DOMAIN@...` a domain's ranges (default: the default domain); `regex:...` names as
    /// regular expressions. See docs/kernel-replay.md, "Which dispatches are profiled".
    #[arg(long, value_name = "CONFIG", action = ArgAction::Append, help_heading = "Filtering options")]
    pub nvtx_include: Vec<String>,

    /// Nsight Compute's NVTX filter (repeatable): skip dispatches inside these NVTX ranges
    /// (inside any one); same syntax as --nvtx-include.
    #[arg(long, value_name = "CONFIG", action = ArgAction::Append, help_heading = "Filtering options")]
    pub nvtx_exclude: Vec<String>,

    /// Nsight Compute's switch for NVTX support; kreplay follows NVTX ranges whenever
    /// --nvtx-include/--nvtx-exclude or --marker-trace need them (accepted for ncu command lines).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Filtering options")]
    pub nvtx: Option<bool>,

    /// Collect only between the application's cudaProfilerStart and cudaProfilerStop
    /// (cuProfilerStart/cuProfilerStop; rocprofv3's roctxProfilerResume/Pause): collection
    /// starts paused. Launches outside are not recorded at all.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Filtering options")]
    pub selected_regions: Option<bool>,

    /// With --selected-regions (implied): count nested start/stop pairs, so that collection
    /// goes on until every start has had its stop.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Filtering options")]
    pub selected_regions_ref_count: Option<bool>,

    /// Nsight Compute's: `off` is --selected-regions; `on` collects from the start and then
    /// only while no cudaProfilerStop is in force (without the option those calls do nothing).
    #[arg(long, value_parser = parse_bool, value_name = "on|off", help_heading = "Filtering options")]
    pub profile_from_start: Option<bool>,

    /// Record every kernel dispatch (kernel_trace.csv), also those without counters.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Tracing")]
    pub kernel_trace: Option<bool>,

    /// Record the application's NVTX ranges and marks (push/pop and start/end ranges, marks,
    /// their domain, message and category, from every thread): marker_api_trace.csv and the
    /// database's regions; every dispatch carries the push/pop ranges open on its thread.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Tracing")]
    pub marker_trace: Option<bool>,

    /// Name each dispatch by the innermost NVTX push/pop range open on its thread at launch
    /// (rocprofv3's ROCTx rename); implies --marker-trace.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Tracing")]
    pub kernel_rename: Option<bool>,

    /// Record every copy the application makes (cuMemcpy* and their async and peer forms:
    /// direction, bytes, source and destination device and address, stream, start and end):
    /// memory_copy_trace.csv and the database's memory_copies.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Tracing")]
    pub memory_copy_trace: Option<bool>,

    /// Record every allocation and free the application makes (device, pitched, stream-ordered
    /// pool, managed, pinned host, virtual-memory map/unmap, with address and size):
    /// memory_allocation_trace.csv and the database's memory_allocations.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Tracing")]
    pub memory_allocation_trace: Option<bool>,

    /// Write `<o>_kernel_stats.csv`, `<o>_domain_stats.csv` and, per traced domain,
    /// `<o>_cuda_api_stats.csv`, `_marker_api_stats.csv`, `_memory_copy_stats.csv`,
    /// `_memory_allocation_stats.csv` (with `-f csv`, as rocprofv3): per name, its calls and their
    /// total, average, min and max duration, share of the domain's time and standard deviation.
    /// A replayed dispatch counts once, with its first pass's duration. Needs something to trace
    /// (--pmc, --metrics or --kernel-trace).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Post-processing tracing options")]
    pub stats: Option<bool>,

    /// Print rocprofv3's summary table of every traced domain's durations after the run (to
    /// stderr unless --summary-output-file says otherwise).
    #[arg(short = 'S', long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Post-processing tracing options")]
    pub summary: Option<bool>,

    /// Print a summary table per tracing domain (CUDA_API, MARKER_API, KERNEL_DISPATCH,
    /// MEMORY_COPY, MEMORY_ALLOCATION).
    #[arg(short = 'D', long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Post-processing tracing options")]
    pub summary_per_domain: Option<bool>,

    /// A summary table for the domains each regular expression matches in full, e.g.
    /// 'KERNEL_DISPATCH|MEMORY_COPY' (kreplay's domains: see -D).
    #[arg(long, num_args = 1.., value_name = "REGULAR_EXPRESSION", help_heading = "Post-processing tracing options")]
    pub summary_groups: Vec<String>,

    /// Where the summary goes: stderr (default), stdout, or NAME for the file `<d>/<o>_NAME.txt`.
    #[arg(long, value_name = "FILE", help_heading = "Summary options")]
    pub summary_output_file: Option<String>,

    /// Timing units of the summary table.
    #[arg(
        short = 'u',
        long,
        value_parser = summary_unit_parser(),
        value_name = "UNIT",
        help_heading = "Summary options"
    )]
    pub summary_units: Option<SummaryUnit>,

    /// List the counters of the GPU and exit.
    #[arg(short = 'L', long, help_heading = "Display")]
    pub list_avail: bool,

    /// Nsight Compute's `--list-sections` / `--list-sets`: the sections and sets --section and
    /// --set can use (from --section-folder, the Nsight Compute installation or the built-in
    /// ones), as `kreplay avail sections`, and exit.
    #[arg(
        long = "list-sections",
        visible_alias = "list-sets",
        help_heading = "Display"
    )]
    pub list_sections: bool,

    /// Thread trace: not available in kreplay (recognised so that it is refused with replay).
    #[arg(long, visible_alias = "advanced-thread-trace", num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Not available")]
    pub att: Option<bool>,

    /// PC sampling: not available in kreplay (recognised so that it is refused with replay).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Not available")]
    pub pc_sampling_beta_enabled: Option<bool>,

    /// Streaming performance monitoring: not available in kreplay (recognised so that it is refused with replay).
    #[arg(long, num_args = 0.., value_name = "EVENTS", help_heading = "Not available")]
    pub spm: Option<Vec<String>>,

    /// Nsight Compute's cache control. `all` (the default): L2 is flushed before every measured
    /// execution of a kernel, in every pass, so that each pass measures it from a cold cache as
    /// if it ran alone (≈1–2 ms per kernel per pass on the H200). `none`: pass 0 finds the
    /// caches as the application left them, later passes as the restore and earlier passes
    /// left them. Recorded in every output, with the clocks seen.
    #[arg(
        long,
        value_name = "all|none",
        help_heading = "Kernel replay options (beta)"
    )]
    pub cache_control: Option<String>,

    /// Nsight Compute's clock control: `none`, what every kreplay run does (clocks are never
    /// changed; the SM and memory clocks seen around every replay unit are recorded, and a
    /// warning says when they varied). `base` is refused: kreplay runs on shared machines.
    #[arg(
        long,
        value_name = "base|none",
        help_heading = "Kernel replay options (beta)"
    )]
    pub clock_control: Option<String>,

    /// Nsight Compute's graph profiling: `node`, what every kreplay run does (with counters, a
    /// CUDA graph launch runs node by node and each kernel node is a dispatch of its own).
    /// `graph` (one result per graph launch) is refused: CUPTI 13.0's range profiler cannot
    /// measure a graph launch as one range.
    #[arg(
        long,
        value_name = "node|graph",
        help_heading = "Kernel replay options (beta)"
    )]
    pub graph_profiling: Option<String>,

    /// Everything --runtime-trace records and also the CUDA driver calls the runtime makes for
    /// the application (rocprofv3's HSA API beneath HIP): every domain kreplay traces.
    #[arg(short = 's', long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Aggregate tracing options")]
    pub sys_trace: Option<bool>,

    /// The CUDA API calls the application makes itself (runtime calls, and driver calls made
    /// outside any: cuda_api_trace.csv, the database's regions), with the kernel dispatches
    /// (a launch's call shares its dispatch's correlation id), NVTX markers, copies and
    /// allocations.
    #[arg(short = 'r', long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Aggregate tracing options")]
    pub runtime_trace: Option<bool>,

    /// Name kernels by their mangled names in every output but the Perfetto trace (trace and
    /// stats files, summary tables, the JSON's summary, rocpd's display_name), as rocprofv3.
    #[arg(short = 'M', long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Kernel naming options")]
    pub mangled_kernels: Option<bool>,

    /// Name kernels by their base names, where -M would name them mangled (the demangled name
    /// without its scope, template and parameters: `void ns::scale<float>(float*, int)` is `scale`).
    #[arg(short = 'T', long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Kernel naming options")]
    pub truncate_kernels: Option<bool>,

    /// rocprofv3's HIP, HSA, scratch memory and RCCL tracing (--hip-trace, --hsa-trace,
    /// --scratch-memory-trace, --rccl-trace): not available (CUDA's API: --runtime-trace,
    /// --sys-trace).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", help_heading = "Not available")]
    pub hip_trace: Option<bool>,
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", hide = true)]
    pub hsa_trace: Option<bool>,
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", hide = true)]
    pub scratch_memory_trace: Option<bool>,
    #[arg(long, num_args = 0..=1, default_missing_value = "true", value_parser = parse_bool, value_name = "BOOL", hide = true)]
    pub rccl_trace: Option<bool>,

    /// Print the planned runs (progress line, KREPLAY_CONFIG, output place) instead of running
    /// them, as rocprofv3's hidden --echo prints its command.
    #[arg(long, hide = true)]
    pub echo: bool,

    /// The application and its arguments, after `--`.
    #[arg(last = true, value_name = "APP")]
    pub app: Vec<String>,
}

/// `kreplay avail`'s subcommands ([`crate::avail`] runs them).
#[derive(Debug, Clone, PartialEq, Eq, clap::Subcommand)]
pub enum AvailCommand {
    /// List every metric with its roll-ups (`--chip GH100` works with no GPU).
    List {
        /// Chip to describe instead of GPU 0 (any case: GH100, gh100; SIM for the software device).
        #[arg(long, value_name = "CHIP")]
        chip: Option<String>,
    },
    /// Describe metrics: description, hardware unit, unit, type and sub-metrics.
    Info {
        #[arg(long, value_name = "CHIP")]
        chip: Option<String>,
        /// Metrics (or rocprofv3 aliases) to describe, separated by spaces or commas.
        #[arg(long, num_args = 1.., required = true, value_name = "NAME")]
        pmc: Vec<String>,
    },
    /// Check that counters can be collected together in one pass; if not, print a split.
    PmcCheck {
        #[arg(long, value_name = "CHIP")]
        chip: Option<String>,
        /// Metrics (or rocprofv3 aliases), separated by spaces or commas.
        #[arg(required = true, num_args = 1.., value_name = "NAME")]
        names: Vec<String>,
    },
    /// List Nsight Compute's sections and sets that --section and --set can use, and where they
    /// come from; with --chip, the metrics each collects there and the hardware passes they need.
    Sections {
        #[arg(long, value_name = "CHIP")]
        chip: Option<String>,
        /// A folder of `.section` files instead of Nsight Compute's (repeatable).
        #[arg(long = "section-folder", value_name = "DIR")]
        section_folders: Vec<std::path::PathBuf>,
        /// Also list the rows of section NAME (repeatable): label, metric, how its value is
        /// obtained (with --chip, for that chip).
        #[arg(long = "section", value_name = "NAME")]
        sections: Vec<String>,
        /// The rows shown: header (the default), body or all, as `--print-details`.
        #[arg(long = "print-details", value_enum, value_name = "PART")]
        print_details: Option<crate::sections::Details>,
    },
}

#[cfg(test)]
mod tests;
