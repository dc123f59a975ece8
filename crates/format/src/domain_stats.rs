//! The statistics of every traced domain, as rocprofv3 keeps them per domain (rocprofiler-sdk
//! `source/lib/output`): kernel dispatches by kernel name ([`crate::stats`]), CUDA API calls by
//! function (rocprofv3's `HIP_API`), NVTX markers by message (`MARKER_API`), memory copies by
//! direction (`MEMORY_COPY`) and allocations by operation (`MEMORY_ALLOCATION`). Every record of
//! a traced domain counts once, with its end minus its start; a domain without records has no
//! statistics.

use crate::files::suffix;
use crate::run::{ProcessRun, RunData};
use crate::stats::{kernel_stats, merged, DurationStats, KernelStats, KERNEL_DISPATCH_DOMAIN};
use std::collections::BTreeMap;

/// The CUDA runtime and driver API calls (rocprofv3's `HIP_API`, named for CUDA).
pub const CUDA_API_DOMAIN: &str = "CUDA_API";
pub const MARKER_API_DOMAIN: &str = "MARKER_API";
pub const MEMORY_COPY_DOMAIN: &str = "MEMORY_COPY";
pub const MEMORY_ALLOCATION_DOMAIN: &str = "MEMORY_ALLOCATION";

/// Every domain, with its `--stats` file, in the order the stats files and summary tables list
/// them: rocprofv3's (`domain_type.hpp`: HIP, marker, kernel dispatch, copy, allocation).
pub const DOMAINS: [(&str, &str); 5] = [
    (CUDA_API_DOMAIN, suffix::CUDA_API_STATS),
    (MARKER_API_DOMAIN, suffix::MARKER_API_STATS),
    (KERNEL_DISPATCH_DOMAIN, suffix::KERNEL_STATS),
    (MEMORY_COPY_DOMAIN, suffix::MEMORY_COPY_STATS),
    (MEMORY_ALLOCATION_DOMAIN, suffix::MEMORY_ALLOCATION_STATS),
];

/// One domain's statistics: per name, largest total first, and all together.
#[derive(Debug, Clone, PartialEq)]
pub struct DomainStats {
    pub domain: &'static str,
    pub stats: KernelStats,
}

/// Durations by name, largest total first (equal totals by name).
fn by_name<'a>(durations: impl Iterator<Item = (&'a str, u64)>) -> KernelStats {
    let mut names: BTreeMap<&str, DurationStats> = BTreeMap::new();
    for (name, ns) in durations {
        names.entry(name).or_default().add(ns);
    }
    let mut kernels: Vec<(String, DurationStats)> = names
        .into_iter()
        .map(|(name, stats)| (name.to_string(), stats))
        .collect();
    kernels.sort_by_key(|(_, stats)| std::cmp::Reverse(stats.sum));
    let total = merged(kernels.iter().map(|(_, stats)| stats));
    KernelStats { kernels, total }
}

/// Durations of the records of one tracing domain of `process`, by name: its API calls
/// (`CUDA_API`), markers (`MARKER_API`), copies (`MEMORY_COPY`) or allocations
/// (`MEMORY_ALLOCATION`); empty for another domain.
fn trace_durations<'a>(
    process: &'a ProcessRun,
    domain: &str,
) -> Box<dyn Iterator<Item = (&'a str, u64)> + 'a> {
    let span = |start: u64, end: u64| end.saturating_sub(start);
    match domain {
        CUDA_API_DOMAIN => Box::new(
            (process.api_calls.iter()).map(move |c| (&*c.function, span(c.start_ns, c.end_ns))),
        ),
        MARKER_API_DOMAIN => Box::new(
            (process.markers.iter()).map(move |m| (m.function(), span(m.start_ns, m.end_ns))),
        ),
        MEMORY_COPY_DOMAIN => Box::new(
            (process.copies.iter())
                .map(move |c| (c.direction.as_str(), span(c.start_ns, c.end_ns))),
        ),
        MEMORY_ALLOCATION_DOMAIN => Box::new(
            (process.allocations.iter())
                .map(move |a| (a.operation.as_str(), span(a.start_ns, a.end_ns))),
        ),
        _ => Box::new(std::iter::empty()),
    }
}

/// The statistics of each domain `run` has records of, in [`DOMAINS`]' order.
pub fn run_stats(run: &RunData) -> Vec<DomainStats> {
    run_stats_with(run, kernel_stats(run))
}

/// [`run_stats`] with the kernel dispatches' statistics already gathered (`kernels`: the
/// run's, [`crate::stats::kernel_stats_from`]); the other domains' records are in memory.
pub fn run_stats_with(run: &RunData, kernels: KernelStats) -> Vec<DomainStats> {
    let mut kernels = Some(kernels);
    DOMAINS
        .iter()
        .map(|(domain, _)| {
            let stats = if *domain == KERNEL_DISPATCH_DOMAIN {
                kernels.take().unwrap_or_default()
            } else {
                by_name((run.processes.iter()).flat_map(|process| trace_durations(process, domain)))
            };
            DomainStats { domain, stats }
        })
        .filter(|d| !d.stats.is_empty())
        .collect()
}

/// The tracing domains' statistics of one process (the JSON's `summary` beside its kernel
/// dispatches), each domain with records in the order rocprofv3's JSON lists them (its
/// outputs' order: API calls, copies, allocations, markers), per name in name order.
pub fn process_trace_stats(
    process: &ProcessRun,
) -> Vec<(&'static str, BTreeMap<String, DurationStats>)> {
    [
        CUDA_API_DOMAIN,
        MEMORY_COPY_DOMAIN,
        MEMORY_ALLOCATION_DOMAIN,
        MARKER_API_DOMAIN,
    ]
    .into_iter()
    .map(|domain| {
        let mut names: BTreeMap<String, DurationStats> = BTreeMap::new();
        for (name, ns) in trace_durations(process, domain) {
            match names.get_mut(name) {
                Some(stats) => stats.add(ns),
                None => names.entry(name.to_string()).or_default().add(ns),
            }
        }
        (domain, names)
    })
    .filter(|(_, names)| !names.is_empty())
    .collect()
}
