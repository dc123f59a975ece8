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
use crate::messages::{msg_empty_group, msg_no_tracing, MSG_PMC_AND_GROUPS};
use kreplay_core::config::{CounterGroup, InProcessMode};
use kreplay_format::CacheControl;

mod aggregate;
mod checks;
mod groups;
mod resolver;
mod run_spec;
mod sections;
mod settings;
mod values;

use checks::{
    check_application, check_replay_options, check_switches, nsight_compute_controls,
    refuse_tracing,
};
use groups::{counter_error, job_groups, metrics_groups, repeated_groups};
use sections::planned_sections;
use settings::{cli_given, merge_job, Settings};

pub use resolver::CounterResolver;
pub use run_spec::{Plan, RunSpec, SummaryOutput};
pub use values::check_formats;

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
    check_switches(crate::env::var)?;

    let cli = cli_given(args)?;
    let mut notices: Vec<String> = crate::env::retired_switches()
        .into_iter()
        .map(|name| format!("kreplay: warning: {name} is retired and has no effect (docs/DECISIONS.md, \"Retired switches\"); unset it"))
        .collect();
    notices.extend(repeated_groups(&cli_pmc, "--pmc group"));
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
        if let Some(groups) = &job.pmc_groups {
            let words: Vec<Vec<String>> = groups.iter().map(|g| g.words()).collect();
            notices.extend(repeated_groups(
                &words,
                &format!("{origin}: pmc_groups entry"),
            ));
        }
        let (groups, mode) = job_groups(job, &origin, replay, resolver)?;
        let settings = merge_job(&cli, job, &origin)?;
        if groups.is_empty() && !settings.traces_anything() {
            // As the command line without --pmc, --metrics or --kernel-trace: a run that
            // records nothing is a mistake, found before the application starts.
            return Err(UsageError::new(format!(
                "{origin} has nothing to collect: give it pmc (e.g. `- pmc: [A, B]`), pmc_groups, or a trace (kernel_trace, marker_trace, memory_copy_trace, memory_allocation_trace, runtime_trace, sys_trace: true)"
            ))
            .into());
        }
        runs.push((origin, job_prefix, groups, mode, settings));
    }
    if runs.is_empty() {
        let traces = cli.kernel_trace == Some(true)
            || cli.marker_trace == Some(true)
            || cli.kernel_rename == Some(true)
            || cli.runtime_trace == Some(true)
            || cli.sys_trace == Some(true)
            || cli.memory_copy_trace == Some(true)
            || cli.memory_allocation_trace == Some(true);
        if !traces {
            if let Some(option) = cli.first_stats_option() {
                return Err(UsageError::new(msg_no_tracing(option)).into());
            }
            return Err(UsageError::new(
                "nothing to collect: give counters with --pmc or --metrics (list them with `kreplay avail list`), or use a trace (--kernel-trace, --marker-trace, --memory-copy-trace, --memory-allocation-trace, -r/--runtime-trace, -s/--sys-trace)",
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
            marker_trace: s.marker_trace,
            kernel_rename: s.kernel_rename,
            api_trace: s.api_trace,
            mangled_kernels: s.mangled_kernels,
            truncate_kernels: s.truncate_kernels,
            memory_copy_trace: s.memory_copy_trace,
            memory_allocation_trace: s.memory_allocation_trace,
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

#[cfg(test)]
mod tests;
