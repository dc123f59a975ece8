//! The statistics of every traced domain, as rocprofv3 keeps them per domain (rocprofiler-sdk
//! `source/lib/output`): kernel dispatches by kernel name ([`crate::stats`]), CUDA API calls by
//! function (rocprofv3's `HIP_API`), NVTX markers by message (`MARKER_API`), memory copies by
//! direction (`MEMORY_COPY`) and allocations by operation (`MEMORY_ALLOCATION`). Every record of
//! a traced domain counts once, with its end minus its start; a domain without records has no
//! statistics.

use crate::files::suffix;
use crate::run::RunData;
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

/// The statistics of each domain `run` has records of, in [`DOMAINS`]' order.
pub fn run_stats(run: &RunData) -> Vec<DomainStats> {
    let p = &run.processes;
    let span = |start: u64, end: u64| end.saturating_sub(start);
    let all = [
        by_name(
            p.iter()
                .flat_map(|p| &p.api_calls)
                .map(|c| (&*c.function, span(c.start_ns, c.end_ns))),
        ),
        by_name(
            p.iter()
                .flat_map(|p| &p.markers)
                .map(|m| (m.function(), span(m.start_ns, m.end_ns))),
        ),
        kernel_stats(run),
        by_name(
            p.iter()
                .flat_map(|p| &p.copies)
                .map(|c| (c.direction.as_str(), span(c.start_ns, c.end_ns))),
        ),
        by_name(
            p.iter()
                .flat_map(|p| &p.allocations)
                .map(|a| (a.operation.as_str(), span(a.start_ns, a.end_ns))),
        ),
    ];
    DOMAINS
        .iter()
        .zip(all)
        .filter(|(_, stats)| !stats.is_empty())
        .map(|((domain, _), stats)| DomainStats { domain, stats })
        .collect()
}
