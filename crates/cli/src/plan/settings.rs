//! The settings a run takes from the command line and from an input-file job ([`Given`]), merged
//! as rocprofv3 merges them (the command line wins; a job that contradicts it is an error), with
//! the defaults filled in ([`Settings`]).

use super::run_spec::{SummaryOutput, SummarySpec};
use super::values::{check_formats, check_range, check_regex, range_warning};
use crate::args::ProfileArgs;
use crate::error::UsageError;
use crate::input::Job;
use crate::messages::{
    msg_group_matches_nothing, MSG_STATS_WITHOUT_CSV, MSG_SUMMARY_SETTINGS_ALONE,
};
use kreplay_core::config::{KernelFilter, ReplayWindow, SelectedRegions};
use kreplay_core::filter::nvtx::NvtxFilter;
use kreplay_format::stats_out::{SummaryTable, SummaryUnit, DOMAINS};
use kreplay_format::OutputFormat;

/// `-o` when none is given, rocprofv3's default.
pub(super) const DEFAULT_OUTPUT_FILE: &str = "%hostname%/%pid%";
/// `--log-level`'s values (and an input file's `log_level`), rocprofv3's.
const LOG_LEVELS: [&str; 7] = [
    "fatal", "error", "warning", "info", "trace", "env", "config",
];

/// Settings that the command line and a job can both give, as given (None = not given). The
/// command line's win, and giving both with different values is an error (as in rocprofv3's
/// input merging).
#[derive(Debug, Clone, Default)]
pub(super) struct Given {
    pub(super) include: Option<String>,
    pub(super) exclude: Option<String>,
    pub(super) range: Option<String>,
    pub(super) nvtx_include: Option<Vec<String>>,
    pub(super) nvtx_exclude: Option<Vec<String>>,
    pub(super) selected_regions: Option<SelectedRegions>,
    pub(super) kernel_trace: Option<bool>,
    pub(super) marker_trace: Option<bool>,
    pub(super) kernel_rename: Option<bool>,
    pub(super) runtime_trace: Option<bool>,
    pub(super) sys_trace: Option<bool>,
    pub(super) mangled_kernels: Option<bool>,
    pub(super) truncate_kernels: Option<bool>,
    pub(super) memory_copy_trace: Option<bool>,
    pub(super) memory_allocation_trace: Option<bool>,
    pub(super) output_directory: Option<String>,
    pub(super) output_file: Option<String>,
    pub(super) formats: Option<Vec<OutputFormat>>,
    pub(super) log_level: Option<String>,
    pub(super) replay_window: Option<ReplayWindow>,
    pub(super) stats: Option<bool>,
    pub(super) summary: Option<bool>,
    pub(super) summary_per_domain: Option<bool>,
    pub(super) summary_groups: Option<Vec<String>>,
    pub(super) summary_output_file: Option<String>,
    pub(super) summary_units: Option<SummaryUnit>,
}

/// [`Given`] with the defaults filled in.
pub(super) struct Settings {
    pub(super) filter: KernelFilter,
    pub(super) kernel_trace: bool,
    /// `--marker-trace` (also on with `--kernel-rename`, which needs the ranges).
    pub(super) marker_trace: bool,
    pub(super) kernel_rename: bool,
    /// `-r/--runtime-trace`, `-s/--sys-trace` (see `aggregate`).
    pub(super) api_trace: kreplay_core::api_trace::ApiLevel,
    /// `-M/--mangled-kernels`, `-T/--truncate-kernels`.
    pub(super) mangled_kernels: bool,
    pub(super) truncate_kernels: bool,
    pub(super) memory_copy_trace: bool,
    pub(super) memory_allocation_trace: bool,
    pub(super) output_directory: String,
    pub(super) output_file: String,
    pub(super) formats: Vec<OutputFormat>,
    pub(super) log_level: String,
    pub(super) replay_window: ReplayWindow,
    pub(super) stats: bool,
    pub(super) summary: Option<SummarySpec>,
    /// Lines to print before the runs (settings that do nothing).
    pub(super) warnings: Vec<String>,
}

impl Settings {
    /// Whether the run traces any domain (a run without counters needs one).
    pub(super) fn traces_anything(&self) -> bool {
        self.kernel_trace
            || self.marker_trace
            || self.memory_copy_trace
            || self.memory_allocation_trace
            || self.api_trace != kreplay_core::api_trace::ApiLevel::Off
    }
}

impl Given {
    /// The first stats or summary option given, by rocprofv3's name, in rocprofv3's order.
    pub(super) fn first_stats_option(&self) -> Option<&'static str> {
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
    pub(super) fn summary_spec(&self, warnings: &mut Vec<String>) -> Option<SummarySpec> {
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
            let matched: Vec<&'static str> = regex::Regex::new(&format!("^(?:{group})$"))
                .map(|r| {
                    DOMAINS
                        .iter()
                        .map(|(domain, _)| *domain)
                        .filter(|domain| r.is_match(domain))
                        .collect()
                })
                .unwrap_or_default();
            if !matched.is_empty() {
                tables.push(SummaryTable::Group(matched));
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

    pub(super) fn settings(mut self) -> Settings {
        self.apply_aggregates();
        let api_trace = self.api_level();
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
        warnings.extend(self.range.as_deref().and_then(range_warning));
        Settings {
            filter: KernelFilter {
                include_regex: self.include,
                exclude_regex: self.exclude,
                iteration_range: self.range,
                nvtx_include: self.nvtx_include.unwrap_or_default(),
                nvtx_exclude: self.nvtx_exclude.unwrap_or_default(),
                selected_regions: self.selected_regions,
            },
            kernel_trace: self.kernel_trace.unwrap_or(false),
            marker_trace: self.marker_trace == Some(true) || self.kernel_rename == Some(true),
            kernel_rename: self.kernel_rename == Some(true),
            api_trace,
            mangled_kernels: self.mangled_kernels == Some(true),
            truncate_kernels: self.truncate_kernels == Some(true),
            memory_copy_trace: self.memory_copy_trace == Some(true),
            memory_allocation_trace: self.memory_allocation_trace == Some(true),
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

pub(super) fn cli_given(args: &ProfileArgs) -> Result<Given, UsageError> {
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
    check_nvtx(&args.nvtx_include, &args.nvtx_exclude, None)?;
    let selected_regions = selected_regions(
        args.selected_regions,
        args.selected_regions_ref_count,
        args.profile_from_start,
    )?;
    let formats = check_formats(&args.output_format, "-f/--output-format")?;
    check_output_names(
        args.output_directory.as_deref(),
        args.output_file.as_deref(),
        ("-d/--output-directory", "-o/--output-file"),
    )?;
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
        nvtx_include: (!args.nvtx_include.is_empty()).then(|| args.nvtx_include.clone()),
        nvtx_exclude: (!args.nvtx_exclude.is_empty()).then(|| args.nvtx_exclude.clone()),
        selected_regions,
        kernel_trace: args.kernel_trace,
        marker_trace: args.marker_trace,
        kernel_rename: args.kernel_rename,
        runtime_trace: args.runtime_trace,
        sys_trace: args.sys_trace,
        mangled_kernels: args.mangled_kernels,
        truncate_kernels: args.truncate_kernels,
        memory_copy_trace: args.memory_copy_trace,
        memory_allocation_trace: args.memory_allocation_trace,
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

/// The NVTX filter configurations, parsed as the engine will (a bad one is a usage error
/// before the application starts); `origin` names the input job they come from.
fn check_nvtx(
    include: &[String],
    exclude: &[String],
    origin: Option<&str>,
) -> Result<(), UsageError> {
    NvtxFilter::new(include, exclude).map(|_| ()).map_err(|e| {
        let message = match origin {
            Some(origin) => format!(
                "{origin}: {}",
                e.to_string()
                    .replacen("--nvtx-include", "nvtx_include", 1)
                    .replacen("--nvtx-exclude", "nvtx_exclude", 1)
            ),
            None => e.to_string(),
        };
        UsageError::new(message)
    })
}

/// `--selected-regions`, `--selected-regions-ref-count` (implies it) and Nsight Compute's
/// `--profile-from-start` (`off`: selected regions; `on`: from the start, until a stop).
fn selected_regions(
    selected: Option<bool>,
    ref_count: Option<bool>,
    from_start: Option<bool>,
) -> Result<Option<SelectedRegions>, UsageError> {
    let ref_count = ref_count == Some(true);
    let selected = selected == Some(true) || ref_count || from_start == Some(false);
    match from_start {
        Some(true) if selected => Err(UsageError::new(
            "--profile-from-start on collects from the start but --selected-regions waits for cudaProfilerStart; give one of them",
        )),
        Some(true) => Ok(Some(SelectedRegions {
            from_start: true,
            ref_count,
        })),
        _ => Ok(selected.then_some(SelectedRegions {
            from_start: false,
            ref_count,
        })),
    }
}

/// `-d` and `-o` (or a job's output_directory and output_file) when given: not empty, and `-o`
/// names a file, not a folder (`-o ''` or `-o dir/` would write `_counter_collection.csv`).
fn check_output_names(
    directory: Option<&str>,
    file: Option<&str>,
    (d_name, o_name): (&str, &str),
) -> Result<(), UsageError> {
    if directory.is_some_and(|d| d.trim().is_empty()) {
        return Err(UsageError::new(format!(
            "{d_name} is empty; give a folder (e.g. -d out), or leave it out for the current directory"
        )));
    }
    if let Some(name) = file {
        if name.trim().is_empty() || name.ends_with('/') {
            return Err(UsageError::new(format!(
                "{o_name} '{name}' names no file; give a file name such as `-o run` (files run_results.db, ...), put folders in -d, or leave it out for the default {DEFAULT_OUTPUT_FILE}"
            )));
        }
    }
    Ok(())
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

/// A job's settings merged with the command line's: a setting given in both must agree (the
/// error names the key and the option), one given in one place is taken from there.
pub(super) fn merge_job(cli: &Given, job: &Job, origin: &str) -> Result<Settings, UsageError> {
    let job = job_given(job, origin)?;
    macro_rules! merged {
        ($($field:ident: $option:literal, $key:literal;)*) => {
            Given { $($field: pick(&cli.$field, job.$field, $option, $key, origin)?,)* }
        };
    }
    let merged = merged! {
        include: "--kernel-include-regex", "kernel_include_regex";
        exclude: "--kernel-exclude-regex", "kernel_exclude_regex";
        range: "--kernel-iteration-range", "kernel_iteration_range";
        nvtx_include: "--nvtx-include", "nvtx_include";
        nvtx_exclude: "--nvtx-exclude", "nvtx_exclude";
        selected_regions: "--selected-regions", "selected_regions";
        stats: "--stats", "stats";
        summary: "--summary", "summary";
        summary_per_domain: "--summary-per-domain", "summary_per_domain";
        summary_groups: "--summary-groups", "summary_groups";
        summary_output_file: "--summary-output-file", "summary_output_file";
        summary_units: "--summary-units", "summary_units";
        kernel_trace: "--kernel-trace", "kernel_trace";
        marker_trace: "--marker-trace", "marker_trace";
        kernel_rename: "--kernel-rename", "kernel_rename";
        runtime_trace: "--runtime-trace", "runtime_trace";
        sys_trace: "--sys-trace", "sys_trace";
        mangled_kernels: "--mangled-kernels", "mangled_kernels";
        truncate_kernels: "--truncate-kernels", "truncate_kernels";
        memory_copy_trace: "--memory-copy-trace", "memory_copy_trace";
        memory_allocation_trace: "--memory-allocation-trace", "memory_allocation_trace";
        output_directory: "-d", "output_directory";
        output_file: "-o", "output_file";
        formats: "-f", "output_format";
        log_level: "--log-level", "log_level";
        replay_window: "--replay-window", "replay_window";
    };
    Ok(merged.settings())
}

/// A job's own settings, each checked as its command-line option is (errors name the job and
/// the key).
fn job_given(job: &Job, origin: &str) -> Result<Given, UsageError> {
    for (pattern, key) in [
        (&job.kernel_include_regex, "kernel_include_regex"),
        (&job.kernel_exclude_regex, "kernel_exclude_regex"),
    ] {
        if let Some(p) = pattern {
            check_regex(p, &format!("{origin}: {key}"))?;
        }
    }
    let range = job
        .kernel_iteration_range
        .as_ref()
        .map(|r| r.items().join(", "));
    if let Some(r) = &range {
        check_range(r, &format!("{origin}: kernel_iteration_range"))?;
    }
    let nvtx_include = job.nvtx_include.as_ref().map(|l| l.items());
    let nvtx_exclude = job.nvtx_exclude.as_ref().map(|l| l.items());
    check_nvtx(
        nvtx_include.as_deref().unwrap_or_default(),
        nvtx_exclude.as_deref().unwrap_or_default(),
        Some(origin),
    )?;
    let selected_regions =
        selected_regions(job.selected_regions, job.selected_regions_ref_count, None)?;
    let formats = match &job.output_format {
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
    let replay_window = match &job.replay_window {
        Some(size) => Some(ReplayWindow::parse(&size.text()).map_err(|e| {
            UsageError::new(format!(
                "{origin}: {}",
                e.replace("replay window", "replay_window")
            ))
        })?),
        None => None,
    };
    let summary_groups = job.summary_groups.as_ref().map(|g| g.items());
    for group in summary_groups.iter().flatten() {
        check_regex(group, &format!("{origin}: summary_groups"))?;
    }
    if let Some(name) = &job.summary_output_file {
        check_summary_file(name, &format!("{origin}: summary_output_file"))?;
    }
    check_output_names(
        job.output_directory.as_deref(),
        job.output_file.as_deref(),
        (
            &format!("{origin}: output_directory"),
            &format!("{origin}: output_file"),
        ),
    )?;
    let summary_units = match &job.summary_units {
        Some(text) => Some(SummaryUnit::parse(text).ok_or_else(|| {
            UsageError::new(format!(
                "{origin}: summary_units '{text}' is not one of sec, msec, usec, nsec"
            ))
        })?),
        None => None,
    };
    Ok(Given {
        include: job.kernel_include_regex.clone(),
        exclude: job.kernel_exclude_regex.clone(),
        range,
        nvtx_include,
        nvtx_exclude,
        selected_regions,
        kernel_trace: job.kernel_trace,
        marker_trace: job.marker_trace,
        kernel_rename: job.kernel_rename,
        runtime_trace: job.runtime_trace,
        sys_trace: job.sys_trace,
        mangled_kernels: job.mangled_kernels,
        truncate_kernels: job.truncate_kernels,
        memory_copy_trace: job.memory_copy_trace,
        memory_allocation_trace: job.memory_allocation_trace,
        output_directory: job.output_directory.clone(),
        output_file: job.output_file.clone(),
        formats,
        log_level: job.log_level.as_ref().map(|l| l.to_ascii_lowercase()),
        replay_window,
        stats: job.stats,
        summary: job.summary,
        summary_per_domain: job.summary_per_domain,
        summary_groups,
        summary_output_file: job.summary_output_file.clone(),
        summary_units,
    })
}
