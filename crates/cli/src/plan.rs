//! From the command line and the input file to the list of application runs (rocprofv3's "run
//! shaping", reference rocprofv3.md §1.4 and §2.2), with every rejection decided here, before any
//! application starts:
//!
//! - kernel replay: all command-line groups are ONE run (every dispatch replayed once per group);
//!   each input-file job is a run of its own, replayed within itself;
//! - otherwise (application replay): one run per command-line group, into `pass_1/`, `pass_2/`...
//!   (a single group and no input file: no sub-folder); each job one run (`pass_N/`, or `pmc_N/`
//!   for the text form); a job's `pmc_groups` + `pmc_group_interval` is one run that rotates groups.

use crate::args::{ProfileArgs, ReplayMode};
use crate::error::UsageError;
use crate::input::{split_words, InputFile, InputKind, Job};
use kreplay_core::config::{CounterGroup, InProcessMode, KernelFilter, ReplayWindow};
use kreplay_format::stats_out::{SummaryTable, SummaryUnit, KERNEL_DISPATCH_DOMAIN};
use kreplay_format::OutputFormat;

/// Turns counter names into groups the device can collect (the catalog's job; a trait so that
/// run shaping is testable without one).
pub trait CounterResolver {
    /// Each inner list is one group; errors name the group and the fix.
    fn resolve_groups(&self, groups: &[Vec<String>]) -> anyhow::Result<Vec<CounterGroup>>;
    /// Packs a flat list into the fewest single-pass groups; a metric that alone needs several
    /// hardware passes is a group of its own. Each group comes with the passes it needs.
    fn pack(&self, metrics: &[String]) -> anyhow::Result<Vec<(CounterGroup, u32)>>;
}

pub const DEFAULT_OUTPUT_FILE: &str = "%hostname%/%pid%";
const LOG_LEVELS: [&str; 7] = [
    "fatal", "error", "warning", "info", "trace", "env", "config",
];

pub const MSG_BETA: &str = "--replay-mode kernel requires acknowledgement that kernel replay is a beta feature via --kernel-replay-beta-enabled";
pub const MSG_NO_COUNTERS: &str =
    "--replay-mode kernel requires counter collection (--pmc, input-file pmc, or pmc_groups)";
pub const MSG_PMC_AND_GROUPS: &str = "Cannot specify both --pmc and (input file) pmc_groups";

pub const MSG_WINDOW_WITHOUT_REPLAY: &str = "--replay-window (input-file replay_window) applies only to kernel replay; add --replay-mode kernel --kernel-replay-beta-enabled, or remove it";

pub fn msg_conflict(services: &[&str]) -> String {
    format!(
        "--replay-mode kernel cannot be combined with {}. Kernel replay only varies counter groups from one pass to the next; every other service stays on for all of the passes and would report each kernel once per pass. Collect them in a separate run.",
        services.join(" or ")
    )
}

/// rocprofv3's refusal of a stats or summary option when nothing is traced.
pub fn msg_no_tracing(option: &str) -> String {
    format!("No tracing options were enabled for --{option} option; kreplay traces kernel dispatches with --pmc, --metrics or --kernel-trace")
}

pub const MSG_STATS_WITHOUT_CSV: &str = "kreplay: warning: --stats writes <o>_kernel_stats.csv and <o>_domain_stats.csv with -f csv only, as rocprofv3 does; add -f csv";
pub const MSG_SUMMARY_SETTINGS_ALONE: &str = "kreplay: warning: --summary-output-file and -u/--summary-units take effect only with -S/--summary, -D/--summary-per-domain or --summary-groups; no summary is printed";

pub fn msg_group_matches_nothing(regex: &str) -> String {
    format!("kreplay: warning: --summary-groups '{regex}' matches no domain kreplay traces (it traces {KERNEL_DISPATCH_DOMAIN} only); it adds no table")
}

/// Where the summary tables go (`--summary-output-file`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryOutput {
    Stderr,
    Stdout,
    /// `<d>/<o>_<name>.txt`, as rocprofv3 names it.
    File(String),
}

impl SummaryOutput {
    fn from_name(name: Option<&str>) -> SummaryOutput {
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

pub fn msg_empty_group(index_from_1: usize) -> String {
    format!("Empty counter group in --pmc flag {index_from_1}. Each --pmc must specify at least one counter.")
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

/// Settings that the command line and a job can both give, as given (None = not given). The
/// command line's win, and giving both with different values is an error (as in rocprofv3's
/// input merging).
#[derive(Debug, Clone, Default)]
struct Given {
    include: Option<String>,
    exclude: Option<String>,
    range: Option<String>,
    kernel_trace: Option<bool>,
    output_directory: Option<String>,
    output_file: Option<String>,
    formats: Option<Vec<OutputFormat>>,
    log_level: Option<String>,
    replay_window: Option<ReplayWindow>,
    stats: Option<bool>,
    summary: Option<bool>,
    summary_per_domain: Option<bool>,
    summary_groups: Option<Vec<String>>,
    summary_output_file: Option<String>,
    summary_units: Option<SummaryUnit>,
}

/// [`Given`] with the defaults filled in.
struct Settings {
    filter: KernelFilter,
    kernel_trace: bool,
    output_directory: String,
    output_file: String,
    formats: Vec<OutputFormat>,
    log_level: String,
    replay_window: ReplayWindow,
    stats: bool,
    summary: Option<SummarySpec>,
    /// Lines to print before the runs (settings that do nothing).
    warnings: Vec<String>,
}

impl Given {
    /// The first stats or summary option given, by rocprofv3's name, in rocprofv3's order.
    fn first_stats_option(&self) -> Option<&'static str> {
        [
            (self.stats == Some(true), "stats"),
            (self.summary == Some(true), "summary"),
            (self.summary_per_domain == Some(true), "summary-per-domain"),
            (
                self.summary_groups.as_ref().is_some_and(|g| !g.is_empty()),
                "summary-groups",
            ),
            (self.summary_output_file.is_some(), "summary-output-file"),
            (self.summary_units.is_some(), "summary-units"),
        ]
        .into_iter()
        .find(|(given, _)| *given)
        .map(|(_, name)| name)
    }

    /// The summary tables asked for (None when none is), and warnings for what adds nothing.
    fn summary_spec(&self, warnings: &mut Vec<String>) -> Option<SummarySpec> {
        let groups = self.summary_groups.clone().unwrap_or_default();
        let per_domain = self.summary_per_domain == Some(true);
        let total = self.summary == Some(true);
        if !per_domain && !total && groups.is_empty() {
            if self.summary_output_file.is_some() || self.summary_units.is_some() {
                warnings.push(MSG_SUMMARY_SETTINGS_ALONE.to_string());
            }
            return None;
        }
        let mut tables = Vec::new();
        if per_domain {
            tables.push(SummaryTable::Domain);
        }
        for group in &groups {
            // rocprofv3 matches the whole domain name (std::regex_match); checked before.
            let matches = regex::Regex::new(&format!("^(?:{group})$"))
                .is_ok_and(|r| r.is_match(KERNEL_DISPATCH_DOMAIN));
            if matches {
                tables.push(SummaryTable::Domain);
            } else {
                warnings.push(msg_group_matches_nothing(group));
            }
        }
        if total {
            tables.push(SummaryTable::Total);
        }
        Some(SummarySpec {
            tables,
            output: SummaryOutput::from_name(self.summary_output_file.as_deref()),
            unit: self.summary_units.unwrap_or_default(),
        })
    }

    fn settings(self) -> Settings {
        let mut warnings = Vec::new();
        let summary = self.summary_spec(&mut warnings);
        let stats = self.stats == Some(true);
        let formats = self
            .formats
            .filter(|f| !f.is_empty())
            .unwrap_or_else(|| vec![OutputFormat::Rocpd]);
        if stats && !formats.contains(&OutputFormat::Csv) {
            warnings.push(MSG_STATS_WITHOUT_CSV.to_string());
        }
        Settings {
            filter: KernelFilter {
                include_regex: self.include,
                exclude_regex: self.exclude,
                iteration_range: self.range,
            },
            kernel_trace: self.kernel_trace.unwrap_or(false),
            output_directory: self.output_directory.unwrap_or_else(|| ".".into()),
            output_file: self
                .output_file
                .unwrap_or_else(|| DEFAULT_OUTPUT_FILE.into()),
            formats,
            log_level: self.log_level.unwrap_or_else(|| "warning".into()),
            // Windows are the default: packed groups and one configuration per window make
            // them many times cheaper than per-dispatch replay (docs/BENCHMARKS.md), and the GPU
            // checks show them equal to it. `--replay-window 1` replays each dispatch alone.
            replay_window: self.replay_window.unwrap_or(ReplayWindow::Auto),
            stats,
            summary,
            warnings,
        }
    }
}

/// Validates everything and shapes the runs. `input` is the parsed `-i` file, if any.
pub fn plan(
    args: &ProfileArgs,
    input: Option<&InputFile>,
    pc_sampling_env: bool,
    resolver: &dyn CounterResolver,
) -> anyhow::Result<Plan> {
    // The --pmc occurrences, each split on spaces and commas.
    let cli_pmc: Vec<Vec<String>> = args
        .pmc
        .iter()
        .map(|g| g.iter().flat_map(|w| split_words(w)).collect())
        .collect();
    if let Some(idx) = cli_pmc.iter().position(Vec::is_empty) {
        return Err(UsageError::new(msg_empty_group(idx + 1)).into());
    }
    let jobs: &[Job] = input.map(|i| i.jobs.as_slice()).unwrap_or(&[]);
    if !cli_pmc.is_empty() && jobs.iter().any(|j| j.pmc_groups.is_some()) {
        return Err(UsageError::new(MSG_PMC_AND_GROUPS).into());
    }

    let replay = args.replay_mode == Some(ReplayMode::Kernel);
    refuse_tracing(args)?;
    refuse_cache_and_clock_control(args)?;
    check_replay_options(args, &cli_pmc, jobs, pc_sampling_env, replay)?;
    check_application(args)?;

    let cli = cli_given(args)?;
    let mut notices = Vec::new();
    let mut cli_groups = resolver
        .resolve_groups(&cli_pmc)
        .map_err(|e| counter_error(e, None))?;
    if !args.metrics.is_empty() {
        let (groups, notice) = metrics_groups(args, resolver, replay)?;
        notices.push(notice);
        cli_groups.extend(groups);
    }

    // (origin, subdir prefix, groups, mode, settings)
    let mut runs: Vec<(String, &str, Vec<CounterGroup>, InProcessMode, Settings)> = Vec::new();
    if !cli_groups.is_empty() {
        if replay {
            runs.push((
                "command line".into(),
                "pass_",
                cli_groups,
                InProcessMode::KernelReplay,
                cli.clone().settings(),
            ));
        } else {
            for (i, group) in cli_groups.into_iter().enumerate() {
                runs.push((
                    format!("--pmc group {}", i + 1),
                    "pass_",
                    vec![group],
                    InProcessMode::Single,
                    cli.clone().settings(),
                ));
            }
        }
    }
    let job_prefix = match input.map(|i| i.kind) {
        Some(InputKind::Text) => "pmc_",
        _ => "pass_",
    };
    for (j, job) in jobs.iter().enumerate() {
        let origin = format!("input job {}", j + 1);
        let (groups, mode) = job_groups(job, &origin, replay, resolver)?;
        let settings = merge_job(&cli, job, &origin)?;
        runs.push((origin, job_prefix, groups, mode, settings));
    }
    if runs.is_empty() {
        if cli.kernel_trace != Some(true) {
            if let Some(option) = cli.first_stats_option() {
                return Err(UsageError::new(msg_no_tracing(option)).into());
            }
            return Err(UsageError::new(
                "nothing to collect: give counters with --pmc or --metrics (list them with `kreplay avail list`), or use --kernel-trace",
            ).into());
        }
        runs.push((
            "kernel trace".into(),
            "pass_",
            Vec::new(),
            InProcessMode::Single,
            cli.settings(),
        ));
    }

    for (_, _, _, _, settings) in &runs {
        for warning in &settings.warnings {
            if !notices.contains(warning) {
                notices.push(warning.clone());
            }
        }
    }
    let total = runs.len();
    let split = total > 1 || !jobs.is_empty();
    let runs = runs
        .into_iter()
        .enumerate()
        .map(|(i, (origin, prefix, groups, mode, s))| RunSpec {
            index: i + 1,
            total,
            origin,
            subdir: split.then(|| format!("{prefix}{}", i + 1)),
            groups,
            mode,
            filter: s.filter,
            kernel_trace: s.kernel_trace,
            output_directory: s.output_directory,
            output_file: s.output_file,
            formats: s.formats,
            log_level: s.log_level,
            replay_window: s.replay_window,
            stats: s.stats,
            summary: s.summary,
        })
        .collect();
    Ok(Plan { runs, notices })
}

/// Tracing options rocprofv3 has and kreplay does not: one line naming them.
fn refuse_tracing(args: &ProfileArgs) -> Result<(), UsageError> {
    let tracing: Vec<&str> = [
        (args.sys_trace, "-T/--sys-trace"),
        (args.runtime_trace, "-r/--runtime-trace"),
        (args.hip_trace, "--hip-trace"),
        (args.hsa_trace, "--hsa-trace"),
        (args.marker_trace, "--marker-trace"),
        (args.memory_copy_trace, "--memory-copy-trace"),
        (args.memory_allocation_trace, "--memory-allocation-trace"),
        (args.scratch_memory_trace, "--scratch-memory-trace"),
        (args.rccl_trace, "--rccl-trace"),
    ]
    .iter()
    .filter(|(given, _)| *given == Some(true))
    .map(|(_, name)| *name)
    .collect();
    if !tracing.is_empty() {
        return Err(UsageError::new(format!(
            "{}: kreplay traces kernel dispatches only (no API, marker, memory or collective tracing); use --kernel-trace for the dispatches, or Nsight Systems for a system trace",
            tracing.join(", ")
        )));
    }
    Ok(())
}

/// Nsight Compute's cache and clock controls: only `none`, which is what every run does.
fn refuse_cache_and_clock_control(args: &ProfileArgs) -> Result<(), UsageError> {
    match args.cache_control.as_deref().map(str::trim) {
        None | Some("none") => {}
        Some("all") => {
            return Err(UsageError::new(
                "--cache-control all: kreplay cannot flush the GPU caches between passes (CUDA 13.0's CUPTI has no cache control), so a later pass may find in L2 what pass 0 read from DRAM; use --cache-control none (what every run does, recorded in the outputs)",
            ))
        }
        Some(other) => {
            return Err(UsageError::new(format!(
                "--cache-control '{other}' is not a cache control; use none"
            )))
        }
    }
    match args.clock_control.as_deref().map(str::trim) {
        None | Some("none") => {}
        Some("base") => {
            return Err(UsageError::new(
                "--clock-control base: kreplay never changes the GPU's clocks (it runs on shared machines); use --clock-control none (what every run does, recorded in the outputs)",
            ))
        }
        Some(other) => {
            return Err(UsageError::new(format!(
                "--clock-control '{other}' is not a clock control; use none"
            )))
        }
    }
    Ok(())
}

/// The options that need kernel replay, or that kreplay does not have, against `--replay-mode`.
fn check_replay_options(
    args: &ProfileArgs,
    cli_pmc: &[Vec<String>],
    jobs: &[Job],
    pc_sampling_env: bool,
    replay: bool,
) -> Result<(), UsageError> {
    let mut refused: Vec<&str> = Vec::new();
    if args.att == Some(true) {
        refused.push("--att");
    }
    // rocprofv3 counts the variable as set whatever its value (even 0 or empty).
    if args.pc_sampling_beta_enabled == Some(true) || pc_sampling_env {
        refused.push("PC sampling");
    }
    if args.spm.is_some() {
        refused.push("--spm");
    }
    if replay {
        if args.kernel_replay_beta_enabled != Some(true) {
            return Err(UsageError::new(MSG_BETA));
        }
        let any_counters = !cli_pmc.is_empty()
            || !args.metrics.is_empty()
            || jobs.iter().any(|j| {
                j.pmc.as_ref().is_some_and(|p| !p.words().is_empty()) || j.pmc_groups.is_some()
            });
        if !any_counters {
            return Err(UsageError::new(MSG_NO_COUNTERS));
        }
        if !refused.is_empty() {
            return Err(UsageError::new(msg_conflict(&refused)));
        }
    } else if args.replay_window.is_some() || jobs.iter().any(|j| j.replay_window.is_some()) {
        return Err(UsageError::new(MSG_WINDOW_WITHOUT_REPLAY));
    } else {
        // Without replay these services are still not something kreplay can collect; the
        // environment variable alone is not a request, so only the flags are refused.
        let flags: Vec<&str> = [
            (args.att == Some(true), "--att"),
            (
                args.pc_sampling_beta_enabled == Some(true),
                "--pc-sampling-beta-enabled",
            ),
            (args.spm.is_some(), "--spm"),
        ]
        .iter()
        .filter(|(given, _)| *given)
        .map(|(_, name)| *name)
        .collect();
        if !flags.is_empty() {
            return Err(UsageError::new(format!(
                "{} not available in kreplay (it collects hardware counters only); remove {}",
                flags.join(" and "),
                if flags.len() == 1 { "it" } else { "them" }
            )));
        }
    }
    Ok(())
}

/// The application after `--`, and the settings of its run that are checked alone.
fn check_application(args: &ProfileArgs) -> Result<(), UsageError> {
    if args.app.is_empty() {
        return Err(UsageError::new(
            "no application given: put it after `--`, e.g. kreplay --pmc sm__warps_launched.sum -- ./app args",
        ));
    }
    if let Some(seconds) = args.drain_timeout {
        if !(seconds.is_finite() && seconds > 0.0) {
            return Err(UsageError::new(format!(
                "--drain-timeout {seconds} is not a positive number of seconds; give e.g. --drain-timeout 60"
            )));
        }
    }
    Ok(())
}

/// `--metrics` packed into groups (single-pass groups, and metrics that need several hardware
/// passes alone), and the notice that says how.
fn metrics_groups(
    args: &ProfileArgs,
    resolver: &dyn CounterResolver,
    replay: bool,
) -> anyhow::Result<(Vec<CounterGroup>, String)> {
    let metrics: Vec<String> = args.metrics.iter().flat_map(|m| split_words(m)).collect();
    let packed = resolver
        .pack(&metrics)
        .map_err(|e| counter_error(e, None))?;
    let spanning: Vec<String> = packed
        .iter()
        .filter(|(_, passes)| *passes > 1)
        .map(|(g, passes)| {
            format!(
                "{} ({passes} passes)",
                g.metrics().collect::<Vec<_>>().join(" ")
            )
        })
        .collect();
    if !spanning.is_empty() && !replay {
        return Err(UsageError::new(format!(
            "--metrics {} needs several hardware passes on its own; kernel replay measures it by running each dispatch that many times: add --replay-mode kernel --kernel-replay-beta-enabled",
            spanning.join(", ")
        ))
        .into());
    }
    let single: Vec<&CounterGroup> = packed
        .iter()
        .filter(|(_, passes)| *passes <= 1)
        .map(|(g, _)| g)
        .collect();
    let mut notice = format!(
        "kreplay: --metrics packed into {} single-pass group(s): {}",
        single.len(),
        single
            .iter()
            .map(|g| format!("--pmc {}", g.metrics().collect::<Vec<_>>().join(" ")))
            .collect::<Vec<_>>()
            .join(" ")
    );
    if !spanning.is_empty() {
        notice += &format!(
            "; measured over several replay passes each: {}",
            spanning.join(", ")
        );
    }
    Ok((packed.into_iter().map(|(g, _)| g).collect(), notice))
}

/// A catalog error as one line, prefixed with where the counters came from. Usage errors (an
/// unknown name, a group that needs several passes) stay usage errors; others (no GPU to ask)
/// are errors of the machine and keep their kind.
fn counter_error(error: anyhow::Error, origin: Option<&str>) -> anyhow::Error {
    let line = format!("{error:#}").replace('\n', " ");
    let line = match origin {
        Some(origin) => format!("{origin}: {line}"),
        None => line,
    };
    if error.downcast_ref::<UsageError>().is_some() {
        UsageError::new(line).into()
    } else {
        anyhow::anyhow!(line)
    }
}

fn job_groups(
    job: &Job,
    origin: &str,
    replay: bool,
    resolver: &dyn CounterResolver,
) -> anyhow::Result<(Vec<CounterGroup>, InProcessMode)> {
    let names: Vec<Vec<String>> = match (&job.pmc, &job.pmc_groups) {
        (Some(_), Some(_)) => {
            return Err(UsageError::new(format!(
                "{origin} has both pmc and pmc_groups; give one of them"
            ))
            .into())
        }
        (Some(pmc), None) => {
            let words = pmc.words();
            if words.is_empty() {
                return Err(UsageError::new(format!(
                    "{origin} has an empty pmc list; name at least one counter or remove the key"
                ))
                .into());
            }
            vec![words]
        }
        (None, Some(groups)) => {
            let groups: Vec<Vec<String>> = groups.iter().map(|g| g.words()).collect();
            if groups.is_empty() {
                return Err(UsageError::new(format!(
                    "{origin} has an empty pmc_groups list; give at least one group"
                ))
                .into());
            }
            if let Some(i) = groups.iter().position(Vec::is_empty) {
                return Err(UsageError::new(format!(
                    "{origin}: pmc_groups entry {} is empty; each group needs at least one counter",
                    i + 1
                ))
                .into());
            }
            groups
        }
        (None, None) => Vec::new(),
    };
    let resolved = if names.is_empty() {
        Vec::new()
    } else {
        resolver
            .resolve_groups(&names)
            .map_err(|e| counter_error(e, Some(origin)))?
    };
    let mode = if resolved.is_empty() {
        InProcessMode::Single
    } else if replay {
        // Under replay the interval is ignored: every group runs on every dispatch.
        InProcessMode::KernelReplay
    } else if job.pmc_groups.is_some() {
        match job.pmc_group_interval {
            Some(interval) if interval > 0 => InProcessMode::Rotation { interval },
            Some(_) => {
                return Err(UsageError::new(format!(
                    "{origin}: pmc_group_interval must be at least 1 (dispatches per group)"
                )).into())
            }
            None => {
                return Err(UsageError::new(format!(
                    "{origin}: pmc_groups needs pmc_group_interval (dispatches per group), or run with --replay-mode kernel --kernel-replay-beta-enabled to collect every group on every dispatch"
                )).into())
            }
        }
    } else {
        InProcessMode::Single
    };
    Ok((resolved, mode))
}

/// `-f` values (words separated by spaces or commas, any case) as formats, each once.
pub fn check_formats(formats: &[String], what: &str) -> Result<Vec<OutputFormat>, UsageError> {
    let mut out: Vec<OutputFormat> = Vec::new();
    for f in formats.iter().flat_map(|f| split_words(f)) {
        let format: OutputFormat = f.parse().map_err(|_| {
            UsageError::new(format!(
                "{what}: output format '{f}' is not supported; use one or several of rocpd, csv, json, pftrace"
            ))
        })?;
        if !out.contains(&format) {
            out.push(format);
        }
    }
    Ok(out)
}

fn check_regex(pattern: &str, what: &str) -> Result<(), UsageError> {
    regex::Regex::new(pattern).map(|_| ()).map_err(|e| {
        let detail = e.to_string();
        let detail = detail
            .lines()
            .last()
            .unwrap_or("invalid")
            .trim()
            .to_string();
        UsageError::new(format!(
            "{what} '{pattern}' is not a valid regular expression ({detail}); fix or quote it"
        ))
    })
}

/// rocprofv3's iteration range: split on "[], ", each token `A-B` or `N`.
fn check_range(range: &str, what: &str) -> Result<(), UsageError> {
    let tokens: Vec<&str> = range
        .split(['[', ']', ',', ' '])
        .filter(|t| !t.is_empty())
        .collect();
    let ok = !tokens.is_empty()
        && tokens.iter().all(|t| match t.split_once('-') {
            Some((a, b)) => match (a.parse::<u64>(), b.parse::<u64>()) {
                (Ok(a), Ok(b)) => a <= b,
                _ => false,
            },
            None => t.parse::<u64>().is_ok(),
        });
    if ok {
        Ok(())
    } else {
        Err(UsageError::new(format!(
            "{what} '{range}' is not an iteration range; write e.g. \"[1-2],[5]\" or 3"
        )))
    }
}

fn cli_given(args: &ProfileArgs) -> Result<Given, UsageError> {
    if let Some(p) = &args.kernel_include_regex {
        check_regex(p, "--kernel-include-regex")?;
    }
    if let Some(p) = &args.kernel_exclude_regex {
        check_regex(p, "--kernel-exclude-regex")?;
    }
    let range =
        (!args.kernel_iteration_range.is_empty()).then(|| args.kernel_iteration_range.join(", "));
    if let Some(r) = &range {
        check_range(r, "--kernel-iteration-range")?;
    }
    let formats = check_formats(&args.output_format, "-f/--output-format")?;
    for group in &args.summary_groups {
        check_regex(group, "--summary-groups")?;
    }
    if let Some(name) = &args.summary_output_file {
        check_summary_file(name, "--summary-output-file")?;
    }
    Ok(Given {
        include: args.kernel_include_regex.clone(),
        exclude: args.kernel_exclude_regex.clone(),
        range,
        kernel_trace: args.kernel_trace,
        output_directory: args.output_directory.clone(),
        output_file: args.output_file.clone(),
        formats: (!formats.is_empty()).then_some(formats),
        log_level: args.log_level.map(|l| l.as_str().to_string()),
        replay_window: args.replay_window,
        stats: args.stats,
        summary: args.summary,
        summary_per_domain: args.summary_per_domain,
        summary_groups: (!args.summary_groups.is_empty()).then(|| args.summary_groups.clone()),
        summary_output_file: args.summary_output_file.clone(),
        summary_units: args.summary_units,
    })
}

/// A summary file name: not empty (stdout and stderr name the streams).
fn check_summary_file(name: &str, what: &str) -> Result<(), UsageError> {
    if name.trim().is_empty() {
        return Err(UsageError::new(format!(
            "{what} needs a value: stderr, stdout, or a name NAME for the file <d>/<o>_NAME.txt"
        )));
    }
    Ok(())
}

/// One setting from the command line and a job: the job's value fills in, the same value twice
/// is fine, two different values are an error.
fn pick<T: PartialEq + std::fmt::Debug + Clone>(
    cli: &Option<T>,
    job: Option<T>,
    option: &str,
    key: &str,
    origin: &str,
) -> Result<Option<T>, UsageError> {
    match (cli, job) {
        (Some(c), Some(j)) if *c != j => Err(UsageError::new(format!(
            "{origin} sets {key} to {j:?} but the command line gives {option} {c:?}; give it in one place"
        ))),
        (Some(c), _) => Ok(Some(c.clone())),
        (None, j) => Ok(j),
    }
}

fn merge_job(cli: &Given, job: &Job, origin: &str) -> Result<Settings, UsageError> {
    let include = pick(
        &cli.include,
        job.kernel_include_regex.clone(),
        "--kernel-include-regex",
        "kernel_include_regex",
        origin,
    )?;
    let exclude = pick(
        &cli.exclude,
        job.kernel_exclude_regex.clone(),
        "--kernel-exclude-regex",
        "kernel_exclude_regex",
        origin,
    )?;
    for (pattern, key) in [
        (&include, "kernel_include_regex"),
        (&exclude, "kernel_exclude_regex"),
    ] {
        if let Some(p) = pattern {
            check_regex(p, &format!("{origin}: {key}"))?;
        }
    }
    let job_range = job
        .kernel_iteration_range
        .as_ref()
        .map(|r| r.items().join(", "));
    let range = pick(
        &cli.range,
        job_range,
        "--kernel-iteration-range",
        "kernel_iteration_range",
        origin,
    )?;
    if let Some(r) = &range {
        check_range(r, &format!("{origin}: kernel_iteration_range"))?;
    }
    let job_formats = match &job.output_format {
        Some(f) => Some(check_formats(
            &f.words(),
            &format!("{origin}: output_format"),
        )?),
        None => None,
    };
    if let Some(level) = &job.log_level {
        if !LOG_LEVELS.contains(&level.to_ascii_lowercase().as_str()) {
            return Err(UsageError::new(format!(
                "{origin}: log_level '{level}' is not one of {}",
                LOG_LEVELS.join(", ")
            )));
        }
    }
    let job_window = match &job.replay_window {
        Some(size) => Some(ReplayWindow::parse(&size.text()).map_err(|e| {
            UsageError::new(format!(
                "{origin}: {}",
                e.replace("replay window", "replay_window")
            ))
        })?),
        None => None,
    };
    let job_groups = job.summary_groups.as_ref().map(|g| g.items());
    for group in job_groups.iter().flatten() {
        check_regex(group, &format!("{origin}: summary_groups"))?;
    }
    if let Some(name) = &job.summary_output_file {
        check_summary_file(name, &format!("{origin}: summary_output_file"))?;
    }
    let job_units = match &job.summary_units {
        Some(text) => Some(SummaryUnit::parse(text).ok_or_else(|| {
            UsageError::new(format!(
                "{origin}: summary_units '{text}' is not one of sec, msec, usec, nsec"
            ))
        })?),
        None => None,
    };
    let merged = Given {
        stats: pick(&cli.stats, job.stats, "--stats", "stats", origin)?,
        summary: pick(&cli.summary, job.summary, "--summary", "summary", origin)?,
        summary_per_domain: pick(
            &cli.summary_per_domain,
            job.summary_per_domain,
            "--summary-per-domain",
            "summary_per_domain",
            origin,
        )?,
        summary_groups: pick(
            &cli.summary_groups,
            job_groups,
            "--summary-groups",
            "summary_groups",
            origin,
        )?,
        summary_output_file: pick(
            &cli.summary_output_file,
            job.summary_output_file.clone(),
            "--summary-output-file",
            "summary_output_file",
            origin,
        )?,
        summary_units: pick(
            &cli.summary_units,
            job_units,
            "--summary-units",
            "summary_units",
            origin,
        )?,
        include,
        exclude,
        range,
        kernel_trace: pick(
            &cli.kernel_trace,
            job.kernel_trace,
            "--kernel-trace",
            "kernel_trace",
            origin,
        )?,
        output_directory: pick(
            &cli.output_directory,
            job.output_directory.clone(),
            "-d",
            "output_directory",
            origin,
        )?,
        output_file: pick(
            &cli.output_file,
            job.output_file.clone(),
            "-o",
            "output_file",
            origin,
        )?,
        formats: pick(&cli.formats, job_formats, "-f", "output_format", origin)?,
        log_level: pick(
            &cli.log_level,
            job.log_level.as_ref().map(|l| l.to_ascii_lowercase()),
            "--log-level",
            "log_level",
            origin,
        )?,
        replay_window: pick(
            &cli.replay_window,
            job_window,
            "--replay-window",
            "replay_window",
            origin,
        )?,
    };
    Ok(merged.settings())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::Cli;
    use crate::input::{InputFile, InputKind, Job, WindowSize, WordList};
    use kreplay_core::config::CounterSpec;

    /// Two counters per pass, like the reference software device.
    struct FakeCatalog;

    fn group(names: &[String]) -> CounterGroup {
        CounterGroup {
            counters: names
                .iter()
                .map(|n| CounterSpec {
                    requested: n.clone(),
                    metric: n.clone(),
                })
                .collect(),
        }
    }

    impl CounterResolver for FakeCatalog {
        fn resolve_groups(&self, groups: &[Vec<String>]) -> anyhow::Result<Vec<CounterGroup>> {
            groups
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    if g.len() > 2 {
                        // As the real catalogs report it: a usage error.
                        return Err(UsageError::new(format!(
                            "group {} needs {} passes (limit 2 counters per pass)",
                            i + 1,
                            g.len().div_ceil(2)
                        ))
                        .into());
                    }
                    Ok(group(g))
                })
                .collect()
        }
        fn pack(&self, metrics: &[String]) -> anyhow::Result<Vec<(CounterGroup, u32)>> {
            // "MULTI" stands for a metric that alone needs 3 passes.
            let (multi, single): (Vec<String>, Vec<String>) =
                metrics.iter().cloned().partition(|m| m == "MULTI");
            Ok(single
                .chunks(2)
                .map(|c| (group(c), 1))
                .chain(multi.chunks(1).map(|c| (group(c), 3)))
                .collect())
        }
    }

    fn args(cmd: &[&str]) -> ProfileArgs {
        Cli::parse_args(std::iter::once("kreplay").chain(cmd.iter().copied()))
            .unwrap()
            .profile
    }

    fn shape(cmd: &[&str], input: Option<&InputFile>) -> anyhow::Result<Plan> {
        plan(&args(cmd), input, false, &FakeCatalog)
    }

    fn names(run: &RunSpec) -> Vec<Vec<String>> {
        run.groups
            .iter()
            .map(|g| g.metrics().map(str::to_string).collect())
            .collect()
    }

    fn jobs(kind: InputKind, jobs: Vec<Job>) -> InputFile {
        InputFile { kind, jobs }
    }

    fn pmc_job(words: &[&str]) -> Job {
        Job {
            pmc: Some(WordList::Many(
                words.iter().map(|s| s.to_string()).collect(),
            )),
            ..Job::default()
        }
    }

    #[test]
    fn rejections_have_rocprofv3_texts() {
        let err = |cmd: &[&str]| shape(cmd, None).unwrap_err().to_string();
        assert_eq!(
            err(&[
                "--pmc",
                "A",
                "--pmc",
                "B",
                "--replay-mode",
                "kernel",
                "--",
                "true"
            ]),
            MSG_BETA
        );
        assert_eq!(
            err(&[
                "--replay-mode",
                "kernel",
                "--kernel-replay-beta-enabled",
                "--",
                "true"
            ]),
            MSG_NO_COUNTERS
        );
        assert_eq!(
            err(&[
                "--pmc",
                "A",
                "--replay-mode",
                "kernel",
                "--kernel-replay-beta-enabled",
                "--spm",
                "--att",
                "--",
                "a"
            ]),
            msg_conflict(&["--att", "--spm"])
        );
        assert_eq!(err(&["--pmc", "A", "--pmc", "--", "a"]), msg_empty_group(2));
        let with_env = plan(
            &args(&[
                "--pmc",
                "A",
                "--replay-mode",
                "kernel",
                "--kernel-replay-beta-enabled",
                "--",
                "a",
            ]),
            None,
            true,
            &FakeCatalog,
        );
        assert_eq!(
            with_env.unwrap_err().to_string(),
            msg_conflict(&["PC sampling"])
        );
        let input = jobs(
            InputKind::Structured,
            vec![Job {
                pmc_groups: Some(vec![WordList::One("X".into())]),
                pmc_group_interval: Some(2),
                ..Job::default()
            }],
        );
        assert_eq!(
            shape(&["--pmc", "A", "--", "a"], Some(&input))
                .unwrap_err()
                .to_string(),
            MSG_PMC_AND_GROUPS
        );
    }

    #[test]
    fn beta_flag_false_is_not_an_acknowledgement() {
        let err = shape(
            &[
                "--pmc",
                "A",
                "--replay-mode",
                "kernel",
                "--kernel-replay-beta-enabled",
                "false",
                "--",
                "a",
            ],
            None,
        )
        .unwrap_err();
        assert_eq!(err.to_string(), MSG_BETA);
    }

    #[test]
    fn replay_window_is_carried_only_with_kernel_replay() {
        const REPLAY: [&str; 6] = ["--pmc", "A", "--pmc", "B", "--replay-mode", "kernel"];
        let with = |extra: &[&str]| {
            let mut cmd: Vec<&str> = REPLAY.to_vec();
            cmd.push("--kernel-replay-beta-enabled");
            cmd.extend_from_slice(extra);
            cmd.extend_from_slice(&["--", "a"]);
            shape(&cmd, None)
        };
        assert_eq!(with(&[]).unwrap().runs[0].replay_window, ReplayWindow::Auto);
        assert_eq!(
            with(&["--replay-window", "1"]).unwrap().runs[0].replay_window,
            ReplayWindow::Dispatch
        );
        assert_eq!(
            with(&["--replay-window", "8"]).unwrap().runs[0].replay_window,
            ReplayWindow::Count(8)
        );
        assert_eq!(
            with(&["--replay-window", "auto"]).unwrap().runs[0].replay_window,
            ReplayWindow::Auto
        );
        let err = shape(&["--pmc", "A", "--replay-window", "8", "--", "a"], None)
            .unwrap_err()
            .to_string();
        assert_eq!(err, MSG_WINDOW_WITHOUT_REPLAY);
        let bad = Cli::parse_args(["kreplay", "--replay-window", "0", "--", "a"])
            .unwrap_err()
            .to_string();
        assert!(bad.contains("e.g. 8 or auto"), "{bad}");

        // The input-file key: a number or `auto`; the command line must agree with it.
        let job = |size: WindowSize| Job {
            replay_window: Some(size),
            ..pmc_job(&["A"])
        };
        let replay_job = |input: &InputFile, extra: &[&str]| {
            let mut cmd = vec!["--replay-mode", "kernel", "--kernel-replay-beta-enabled"];
            cmd.extend_from_slice(extra);
            cmd.extend_from_slice(&["--", "a"]);
            shape(&cmd, Some(input))
        };
        let input = jobs(InputKind::Structured, vec![job(WindowSize::Count(4))]);
        assert_eq!(
            replay_job(&input, &[]).unwrap().runs[0].replay_window,
            ReplayWindow::Count(4)
        );
        let err = replay_job(&input, &["--replay-window", "auto"])
            .unwrap_err()
            .to_string();
        assert!(err.contains("give it in one place"), "{err}");
        let input = jobs(
            InputKind::Structured,
            vec![job(WindowSize::Text("many".into()))],
        );
        let err = replay_job(&input, &[]).unwrap_err().to_string();
        assert!(
            err.starts_with("input job 1: replay_window \"many\""),
            "{err}"
        );
        let err = shape(&["--", "a"], Some(&input)).unwrap_err().to_string();
        assert_eq!(err, MSG_WINDOW_WITHOUT_REPLAY);
    }

    #[test]
    fn kernel_replay_cli_groups_are_one_run_without_subfolder() {
        let plan = shape(
            &[
                "--pmc",
                "A B",
                "--pmc",
                "A,C",
                "--replay-mode",
                "kernel",
                "--kernel-replay-beta-enabled",
                "--",
                "a",
            ],
            None,
        )
        .unwrap();
        assert_eq!(plan.runs.len(), 1);
        let run = &plan.runs[0];
        assert_eq!(run.mode, InProcessMode::KernelReplay);
        assert_eq!(names(run), vec![vec!["A", "B"], vec!["A", "C"]]);
        assert_eq!(run.subdir, None);
        assert_eq!(run.formats, vec![OutputFormat::Rocpd]);
        assert_eq!(run.output_file, DEFAULT_OUTPUT_FILE);
    }

    #[test]
    fn application_replay_runs_once_per_group_into_pass_folders() {
        let plan = shape(&["--pmc", "A", "B", "--pmc", "C", "--", "a"], None).unwrap();
        assert_eq!(plan.runs.len(), 2);
        assert_eq!(plan.runs[0].subdir.as_deref(), Some("pass_1"));
        assert_eq!(plan.runs[1].subdir.as_deref(), Some("pass_2"));
        assert_eq!(names(&plan.runs[1]), vec![vec!["C"]]);
        assert!(plan.runs.iter().all(|r| r.mode == InProcessMode::Single));
        assert!(plan.runs[1]
            .progress_line()
            .starts_with("kreplay: pass 2/2: C"));
        let one = shape(&["--pmc", "A", "--", "a"], None).unwrap();
        assert_eq!(one.runs[0].subdir, None);
    }

    #[test]
    fn cli_groups_plus_jobs_under_replay() {
        let input = jobs(
            InputKind::Structured,
            vec![
                pmc_job(&["D"]),
                Job {
                    pmc_groups: Some(vec![WordList::One("E F".into()), WordList::One("G".into())]),
                    pmc_group_interval: Some(2),
                    ..Job::default()
                },
            ],
        );
        let cmd = [
            "--pmc",
            "A",
            "--pmc",
            "B",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--",
            "a",
        ];
        // --pmc with pmc_groups is refused, so check the replay shape with pmc-only jobs first.
        let only_pmc = jobs(
            InputKind::Structured,
            vec![pmc_job(&["D"]), pmc_job(&["E", "F"])],
        );
        let plan = shape(&cmd, Some(&only_pmc)).unwrap();
        assert_eq!(plan.runs.len(), 3);
        assert_eq!(names(&plan.runs[0]), vec![vec!["A"], vec!["B"]]);
        assert_eq!(names(&plan.runs[2]), vec![vec!["E", "F"]]);
        assert!(plan
            .runs
            .iter()
            .all(|r| r.mode == InProcessMode::KernelReplay));
        let dirs: Vec<_> = plan
            .runs
            .iter()
            .map(|r| r.subdir.clone().unwrap())
            .collect();
        assert_eq!(dirs, vec!["pass_1", "pass_2", "pass_3"]);
        // A pmc_groups job is replayed too, and its interval ignored.
        let plan = shape(&cmd[4..], Some(&input)).unwrap();
        assert_eq!(plan.runs[1].mode, InProcessMode::KernelReplay);
        assert_eq!(names(&plan.runs[1]), vec![vec!["E", "F"], vec!["G"]]);
    }

    #[test]
    fn jobs_without_replay_and_rotation() {
        let input = jobs(
            InputKind::Structured,
            vec![Job {
                pmc_groups: Some(vec![WordList::One("A".into()), WordList::One("B".into())]),
                pmc_group_interval: Some(2),
                ..Job::default()
            }],
        );
        let plan = shape(&["--", "a"], Some(&input)).unwrap();
        assert_eq!(plan.runs.len(), 1);
        assert_eq!(plan.runs[0].mode, InProcessMode::Rotation { interval: 2 });
        assert_eq!(plan.runs[0].subdir.as_deref(), Some("pass_1"));
        let no_interval = jobs(
            InputKind::Structured,
            vec![Job {
                pmc_groups: Some(vec![WordList::One("A".into())]),
                ..Job::default()
            }],
        );
        assert!(shape(&["--", "a"], Some(&no_interval))
            .unwrap_err()
            .to_string()
            .contains("pmc_group_interval"));
        let text = jobs(InputKind::Text, vec![pmc_job(&["A"]), pmc_job(&["B"])]);
        let plan = shape(&["--", "a"], Some(&text)).unwrap();
        assert_eq!(plan.runs[1].subdir.as_deref(), Some("pmc_2"));
    }

    #[test]
    fn job_settings_merge_with_the_command_line() {
        let mut job = pmc_job(&["A"]);
        job.output_file = Some("job_out".into());
        job.kernel_include_regex = Some("saxpy".into());
        job.output_format = Some(WordList::Many(vec!["csv".into(), "JSON".into()]));
        let input = jobs(InputKind::Structured, vec![job]);
        let plan = shape(&["-d", "dir", "--", "a"], Some(&input)).unwrap();
        let run = &plan.runs[0];
        assert_eq!(run.output_file, "job_out");
        assert_eq!(run.output_directory, "dir");
        assert_eq!(run.formats, vec![OutputFormat::Csv, OutputFormat::Json]);
        assert_eq!(run.filter.include_regex.as_deref(), Some("saxpy"));
        let err = shape(&["-o", "cli_out", "--", "a"], Some(&input)).unwrap_err();
        assert!(err.to_string().contains("give it in one place"), "{err}");
    }

    #[test]
    fn counter_errors_and_bad_values_are_usage_errors() {
        // Exit status 2 depends on the kind surviving run shaping, not only on the message.
        let usage_error = |cmd: &[&str], needle: &str| {
            let err = shape(cmd, None).unwrap_err();
            assert!(err.to_string().contains(needle), "{err}");
            assert!(
                err.downcast_ref::<UsageError>().is_some(),
                "not a usage error: {err}"
            );
        };
        usage_error(
            &["--pmc", "A", "B", "C", "--", "a"],
            "group 1 needs 2 passes",
        );
        usage_error(
            &["--pmc", "A", "-f", "otf2", "--", "a"],
            "'otf2' is not supported",
        );
        usage_error(
            &["--pmc", "A", "--kernel-include-regex", "(", "--", "a"],
            "--kernel-include-regex '('",
        );
        usage_error(
            &["--pmc", "A", "--kernel-iteration-range", "[x]", "--", "a"],
            "not an iteration range",
        );
        usage_error(&["--", "a"], "nothing to collect");
        usage_error(&["--att", "--pmc", "A", "--", "a"], "--att not available");
    }

    #[test]
    fn metrics_are_packed_and_announced() {
        let plan = shape(
            &[
                "--metrics",
                "A,B,C",
                "--replay-mode",
                "kernel",
                "--kernel-replay-beta-enabled",
                "--",
                "a",
            ],
            None,
        )
        .unwrap();
        assert_eq!(names(&plan.runs[0]), vec![vec!["A", "B"], vec!["C"]]);
        assert_eq!(
            plan.notices,
            vec!["kreplay: --metrics packed into 2 single-pass group(s): --pmc A B --pmc C"]
        );
        let app_replay = shape(&["--metrics", "A,B,C", "--", "a"], None).unwrap();
        assert_eq!(app_replay.runs.len(), 2);
    }

    #[test]
    fn a_metric_needing_several_passes_is_a_replay_group_of_its_own() {
        let plan = shape(
            &[
                "--metrics",
                "A,MULTI,B",
                "--replay-mode",
                "kernel",
                "--kernel-replay-beta-enabled",
                "--",
                "a",
            ],
            None,
        )
        .unwrap();
        assert_eq!(names(&plan.runs[0]), vec![vec!["A", "B"], vec!["MULTI"]]);
        assert_eq!(
            plan.notices,
            vec!["kreplay: --metrics packed into 1 single-pass group(s): --pmc A B; measured over several replay passes each: MULTI (3 passes)"]
        );
        // Without kernel replay the application would have to run once per pass.
        let error = shape(&["--metrics", "A,MULTI", "--", "a"], None).unwrap_err();
        assert!(
            error.to_string().contains("add --replay-mode kernel"),
            "{error}"
        );
    }

    #[test]
    fn stats_and_summary_options_shape_the_run() {
        let plan = shape(
            &[
                "--pmc",
                "A",
                "--stats",
                "-f",
                "csv",
                "-S",
                "-D",
                "--summary-groups",
                "KERNEL_.*",
                "KERNEL",
                "--summary-output-file",
                "STDOUT",
                "-u",
                "msec",
                "--",
                "a",
            ],
            None,
        )
        .unwrap();
        let run = &plan.runs[0];
        assert!(run.stats);
        let summary = run.summary.as_ref().unwrap();
        // -D, the group that matches the whole name (not the partial `KERNEL`), then -S.
        assert_eq!(
            summary.tables,
            [
                SummaryTable::Domain,
                SummaryTable::Domain,
                SummaryTable::Total
            ]
        );
        assert_eq!(summary.output, SummaryOutput::Stdout);
        assert_eq!(summary.unit, SummaryUnit::Msec);
        assert_eq!(plan.notices, [msg_group_matches_nothing("KERNEL")]);
        assert_eq!(
            run.post_processing(),
            " stats summary to stdout in msec: KERNEL_DISPATCH SUMMARY, KERNEL_DISPATCH SUMMARY, SUMMARY"
        );

        let plain = shape(&["--pmc", "A", "--", "a"], None).unwrap();
        assert!(!plain.runs[0].stats && plain.runs[0].summary.is_none());
        assert_eq!(plain.runs[0].post_processing(), "");
        let file = shape(
            &[
                "--pmc",
                "A",
                "-S",
                "--summary-output-file",
                "sum",
                "--",
                "a",
            ],
            None,
        )
        .unwrap();
        let summary = file.runs[0].summary.as_ref().unwrap();
        assert_eq!(summary.output, SummaryOutput::File("sum".into()));
        assert_eq!(summary.unit, SummaryUnit::Nsec);

        let alone = shape(&["--pmc", "A", "--stats", "-u", "sec", "--", "a"], None).unwrap();
        assert!(alone.runs[0].summary.is_none());
        assert_eq!(
            alone.notices,
            [MSG_SUMMARY_SETTINGS_ALONE, MSG_STATS_WITHOUT_CSV]
        );

        let error = shape(&["--summary-groups", "X", "-S", "--", "a"], None).unwrap_err();
        assert_eq!(error.to_string(), msg_no_tracing("summary"));
        assert!(error.downcast_ref::<UsageError>().is_some());
        // --kernel-trace is something traced.
        assert!(shape(&["--kernel-trace", "--stats", "--", "a"], None).is_ok());
    }

    #[test]
    fn filters_reach_the_run() {
        let plan = shape(
            &[
                "--pmc",
                "A",
                "--kernel-include-regex",
                "k.*",
                "--kernel-exclude-regex",
                "x",
                "--kernel-iteration-range",
                "[1-2]",
                "[4]",
                "--kernel-trace",
                "--",
                "a",
            ],
            None,
        )
        .unwrap();
        let run = &plan.runs[0];
        assert_eq!(run.filter.iteration_range.as_deref(), Some("[1-2], [4]"));
        assert_eq!(run.filter.exclude_regex.as_deref(), Some("x"));
        assert!(run.kernel_trace);
    }
}
