//! The options [`super::plan`] refuses before it shapes any run: each a one-line usage error
//! naming the option and the fix.

use crate::args::ProfileArgs;
use crate::error::UsageError;
use crate::input::Job;
use crate::messages::{
    msg_conflict, MSG_BETA, MSG_HOST_STAGING_WITHOUT_REPLAY, MSG_NO_COUNTERS,
    MSG_WINDOW_WITHOUT_REPLAY,
};
use kreplay_core::config::Switches;
use kreplay_format::CacheControl;

/// Tracing options rocprofv3 has and kreplay does not: one line naming them.
pub(super) fn refuse_tracing(args: &ProfileArgs) -> Result<(), UsageError> {
    let tracing: Vec<&str> = [
        (args.hip_trace, "--hip-trace"),
        (args.hsa_trace, "--hsa-trace"),
        (args.scratch_memory_trace, "--scratch-memory-trace"),
        (args.rccl_trace, "--rccl-trace"),
    ]
    .iter()
    .filter(|(given, _)| *given == Some(true))
    .map(|(_, name)| *name)
    .collect();
    if !tracing.is_empty() {
        return Err(UsageError::new(format!(
            "{}: kreplay traces CUDA, not HIP or HSA, and no scratch memory or collective operations; use --kernel-trace for the dispatches, --marker-trace for the NVTX markers, --memory-copy-trace and --memory-allocation-trace for copies and allocations, -r/--runtime-trace for the CUDA runtime API (HIP's runtime API), -s/--sys-trace for everything including the CUDA driver API (HSA's), or Nsight Systems for a system trace",
            tracing.join(", ")
        )));
    }
    Ok(())
}

/// Nsight Compute's cache, clock and graph controls: `--cache-control all|none` (default
/// `all`), and only `--clock-control none` and `--graph-profiling node`, which are what every
/// run does.
pub(super) fn nsight_compute_controls(args: &ProfileArgs) -> Result<CacheControl, UsageError> {
    let cache_control = match args.cache_control.as_deref() {
        None => CacheControl::default(),
        Some(text) => CacheControl::parse(text).ok_or_else(|| {
            UsageError::new(format!(
                "--cache-control '{text}' is not a cache control; use all (flush L2 before every measured execution of a kernel, the default) or none (leave the caches as the work before left them)"
            ))
        })?,
    };
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
    match args.graph_profiling.as_deref().map(str::trim) {
        None | Some("node") => {}
        Some("graph") => {
            return Err(UsageError::new(
                "--graph-profiling graph: CUPTI's range profiler cannot measure a graph launch as one range; use --graph-profiling node (what every run does: each kernel node of a graph is a dispatch of its own)",
            ))
        }
        Some(other) => {
            return Err(UsageError::new(format!(
                "--graph-profiling '{other}' is not a graph profiling mode; use node"
            )))
        }
    }
    Ok(cache_control)
}

/// The options that need kernel replay, or that kreplay does not have, against `--replay-mode`.
pub(super) fn check_replay_options(
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
            || !args.sections.is_empty()
            || !args.sets.is_empty()
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
    } else if args.host_staging_max.is_some() {
        return Err(UsageError::new(MSG_HOST_STAGING_WITHOUT_REPLAY));
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

/// The in-process switches kreplay's environment hands the application (`get` looks them up),
/// checked before it starts: the injected library would refuse them there.
pub(super) fn check_switches(get: impl Fn(&str) -> Option<String>) -> Result<(), UsageError> {
    let switches = Switches::from_lookup(get);
    if let Some(why) = switches.refused {
        return Err(UsageError::new(why));
    }
    let sequence = &switches.range_profiler_sequence;
    if kreplay_counters::profiler::Sequence::parse(sequence).is_none() {
        return Err(UsageError::new(
            kreplay_counters::profiler::Sequence::unknown(sequence),
        ));
    }
    Ok(())
}

/// The application after `--`, and the settings of its run that are checked alone.
pub(super) fn check_application(args: &ProfileArgs) -> Result<(), UsageError> {
    if args.app.is_empty() {
        // Bare `kreplay` too, as rocprofv3 ("No application provided"), with the way to the
        // help and the demo for a first try.
        return Err(UsageError::new(
            "no application given: put it after `--`, e.g. kreplay --pmc sm__warps_launched.sum -- ./app args (`kreplay --help` lists the options; `kreplay demo` runs an example)",
        ));
    }
    if let Some(seconds) = args.drain_timeout {
        if !kreplay_core::config::is_drain_timeout(seconds) {
            return Err(UsageError::new(format!(
                "--drain-timeout {seconds} is not a positive number of seconds; give e.g. --drain-timeout 60"
            )));
        }
    }
    Ok(())
}
