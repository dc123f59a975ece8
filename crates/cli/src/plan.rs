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
use kreplay_core::catalog::MetricCatalog;
use kreplay_core::config::{CounterGroup, InProcessMode, KernelFilter, ReplayWindow};
use kreplay_format::sections_out::{chip_arch, SectionSpec};
use kreplay_format::stats_out::{SummaryTable, SummaryUnit, KERNEL_DISPATCH_DOMAIN};
use kreplay_format::{CacheControl, OutputFormat};

mod checks;
mod settings;

use checks::{
    check_application, check_replay_options, check_switches, nsight_compute_controls,
    refuse_tracing,
};
use kreplay_core::config::retired_switches_set;
use settings::{cli_given, merge_job, Settings};

/// Turns counter names into groups the device can collect (the catalog's job; a trait so that
/// run shaping is testable without one).
pub trait CounterResolver {
    /// Each inner list is one group; errors name the group and the fix.
    fn resolve_groups(&self, groups: &[Vec<String>]) -> anyhow::Result<Vec<CounterGroup>>;
    /// Packs a flat list into the fewest single-pass groups; a metric that alone needs several
    /// hardware passes is a group of its own, and with `share` (kernel replay) such groups
    /// share passes where that takes fewer. Each group comes with the passes it needs.
    fn pack(&self, metrics: &[String], share: bool) -> anyhow::Result<Vec<(CounterGroup, u32)>>;
    /// The catalog of the device that would collect `metrics` (for choosing the rows of
    /// Nsight Compute's sections: the chip, and which names it knows).
    fn catalog(&self, metrics: &[String]) -> anyhow::Result<Box<dyn MetricCatalog>>;
    /// The digest of the device identity the groups resolved so far were checked with (GPU
    /// 0's; `None` when no GPU was asked): the injected library compares it with the one it
    /// reads in the application.
    fn checked_identity(&self) -> Option<String>;
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
    /// `--cache-control` (the same for every run).
    pub cache_control: kreplay_format::CacheControl,
    /// `--section`/`--set`: the sections resolved for the device (the command line's run only).
    pub sections: Vec<SectionSpec>,
    /// The digest of the device identity the groups were checked with (see
    /// [`CounterResolver::checked_identity`]); `None` without groups.
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
    let cache_control = nsight_compute_controls(args)?;
    check_replay_options(args, &cli_pmc, jobs, pc_sampling_env, replay)?;
    check_application(args)?;
    check_switches(|name| std::env::var(name).ok())?;

    let cli = cli_given(args)?;
    let mut notices: Vec<String> = retired_switches_set(|name| std::env::var_os(name).is_some())
        .map(|name| format!("kreplay: warning: {name} is retired and has no effect (docs/DECISIONS.md, \"Retired switches\"); unset it"))
        .collect();
    let mut cli_groups = resolver
        .resolve_groups(&cli_pmc)
        .map_err(|e| counter_error(e, None))?;
    let mut flat: Vec<String> = args.metrics.iter().flat_map(|m| split_words(m)).collect();
    let sections = planned_sections(args, replay, resolver)?;
    if let Some((resolution, notice)) = &sections {
        notices.push(notice.clone());
        for metric in &resolution.collect {
            if !flat.contains(metric) {
                flat.push(metric.clone());
            }
        }
    }
    if !flat.is_empty() {
        let (groups, notice) = metrics_groups(&flat, resolver, replay)?;
        notices.push(notice);
        cli_groups.extend(groups);
    }
    let sections = sections.map(|(r, _)| r.specs).unwrap_or_default();

    // (origin, subdir prefix, groups, mode, settings)
    let mut runs: Vec<ShapedRun> = Vec::new();
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
    let split = runs.len() > 1 || !jobs.is_empty();
    let mut runs = run_specs(runs, split, cache_control, resolver.checked_identity());
    if let Some(run) = runs.iter_mut().find(|r| r.origin == "command line") {
        run.sections = sections;
    }
    Ok(Plan { runs, notices })
}

/// A run as shaped: where it came from, its sub-folder prefix, groups, mode and settings.
type ShapedRun = (
    String,
    &'static str,
    Vec<CounterGroup>,
    InProcessMode,
    Settings,
);

/// The runs, numbered; each in a sub-folder of its own (`prefix` and its number) when `split`.
fn run_specs(
    runs: Vec<ShapedRun>,
    split: bool,
    cache_control: CacheControl,
    checked_identity: Option<String>,
) -> Vec<RunSpec> {
    let total = runs.len();
    runs.into_iter()
        .enumerate()
        .map(|(i, (origin, prefix, groups, mode, s))| RunSpec {
            checked_identity: (!groups.is_empty())
                .then(|| checked_identity.clone())
                .flatten(),
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
            cache_control,
            sections: Vec::new(),
        })
        .collect()
}

/// `--section`/`--set`: the sections chosen, resolved for the device that collects them, and the
/// notice that says where they came from and which rows this run cannot give. `None` without
/// those options.
fn planned_sections(
    args: &ProfileArgs,
    replay: bool,
    resolver: &dyn CounterResolver,
) -> anyhow::Result<Option<(crate::sections::Resolution, String)>> {
    use crate::sections::{candidate_metrics, resolve, Library, SearchPlaces};
    if args.sections.is_empty() && args.sets.is_empty() {
        if !args.section_folders.is_empty() || args.print_details.is_some() {
            return Err(UsageError::new("--section-folder and --print-details only say where sections come from and which rows they show; choose them with --section NAME or --set NAME").into());
        }
        return Ok(None);
    }
    if !replay {
        return Err(UsageError::new("--section and --set collect Nsight Compute's sections by kernel replay (their metrics need several passes): add --replay-mode kernel --kernel-replay-beta-enabled").into());
    }
    let library = Library::load(&args.section_folders, &SearchPlaces::from_process())?;
    let chosen = library.select(&args.sections, &args.sets)?;
    // Which device answers (the software device's catalog for sim__ names) is decided by the
    // names alone; then the rows are chosen for its architecture.
    let details = args.print_details.unwrap_or_default();
    let catalog = resolver.catalog(&candidate_metrics(&chosen, None, details))?;
    let chip = catalog.chip().to_string();
    let arch = chip_arch(&chip);
    let known = |metric: &str| crate::sections::collectable(catalog.as_ref(), metric);
    let resolution = resolve(&chosen, arch, details, &chip, &known);
    if resolution.collect.is_empty() {
        return Err(UsageError::new(format!(
            "the chosen sections ({}) collect no counter on {chip}; choose sections with counters, e.g. --section SpeedOfLight (list them with `kreplay avail sections`)",
            chosen.iter().map(|s| s.identifier.as_str()).collect::<Vec<_>>().join(", ")
        ))
        .into());
    }
    let mut notice = format!(
        "kreplay: sections {} from {}: {} metric(s) to collect",
        chosen
            .iter()
            .map(|s| s.identifier.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        library.origin,
        resolution.collect.len()
    );
    if arch.is_none() {
        notice += &format!(
            "; {chip} has no known compute capability: rows with architecture filters are left out"
        );
    }
    if !library.errors.is_empty() {
        let files = library
            .errors
            .iter()
            .map(|(file, why)| format!("{file} ({why})"));
        notice += &format!("; not read: {}", first_few(files, "kreplay avail sections"));
    }
    if !resolution.unavailable.is_empty() {
        let rows = resolution
            .unavailable
            .iter()
            .map(|(metric, why)| format!("{metric} ({why})"));
        let list_them = format!("kreplay avail sections --chip {chip} --section NAME");
        notice += &format!("; shown as n/a on {chip}: {}", first_few(rows, &list_them));
    }
    Ok(Some((resolution, notice)))
}

/// The first entries of a list for a one-line notice, then how many more and the command that
/// lists them all.
fn first_few(items: impl Iterator<Item = String>, list_them: &str) -> String {
    const SHOWN: usize = 8;
    let items: Vec<String> = items.collect();
    let mut text = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text += &format!(
            " and {} more (`{list_them}` lists them)",
            items.len() - SHOWN
        );
    }
    text
}

/// `--metrics` (and the metrics of the sections) packed into groups (single-pass groups, and
/// metrics that need several hardware passes), and the notice that says how.
fn metrics_groups(
    metrics: &[String],
    resolver: &dyn CounterResolver,
    replay: bool,
) -> anyhow::Result<(Vec<CounterGroup>, String)> {
    let packed = resolver
        .pack(metrics, replay)
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

#[cfg(test)]
mod tests;
