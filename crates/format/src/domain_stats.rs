//! The statistics of every traced domain, as rocprofv3 keeps them per domain (rocprofiler-sdk
//! `source/lib/output`): kernel dispatches by kernel name ([`crate::stats`]), CUDA API calls by
//! function (rocprofv3's `HIP_API`), NVTX markers by message (`MARKER_API`), memory copies by
//! direction (`MEMORY_COPY`) and allocations by operation (`MEMORY_ALLOCATION`). Every record of
//! a traced domain counts once, with its end minus its start; a domain without records has no
//! statistics.

use crate::api::ApiRecord;
use crate::files::suffix;
use crate::markers::MarkerRecord;
use crate::memory::{MemoryAllocationRecord, MemoryCopyRecord};
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

/// Durations by name (each name's statistics: constant memory per name), largest total first
/// (equal totals by name).
fn by_name(names: BTreeMap<String, DurationStats>) -> KernelStats {
    let mut kernels: Vec<(String, DurationStats)> = names.into_iter().collect();
    kernels.sort_by_key(|(_, stats)| std::cmp::Reverse(stats.sum));
    let total = merged(kernels.iter().map(|(_, stats)| stats));
    KernelStats { kernels, total }
}

/// Adds the duration of each record of one tracing domain of `process` to its name's
/// statistics in `names`: its API calls (`CUDA_API`), markers (`MARKER_API`), copies
/// (`MEMORY_COPY`) or allocations (`MEMORY_ALLOCATION`); none for another domain. The records
/// are read as they are stored (a page at a time); one that cannot be read ends the domain's
/// (the writers say why), as it ends the kernel dispatches' ([`crate::stats`]).
fn add_durations(process: &ProcessRun, domain: &str, names: &mut BTreeMap<String, DurationStats>) {
    let mut add = |name: &str, start: u64, end: u64| add(names, name, start, end);
    match domain {
        CUDA_API_DOMAIN => (process.each_api_call_without_args().map_while(Result::ok))
            .for_each(|c| add(&c.function, c.start_ns, c.end_ns)),
        MARKER_API_DOMAIN => (process.each_marker().map_while(Result::ok))
            .for_each(|m| add(m.function(), m.start_ns, m.end_ns)),
        MEMORY_COPY_DOMAIN => (process.each_copy().map_while(Result::ok))
            .for_each(|c| add(c.direction.as_str(), c.start_ns, c.end_ns)),
        MEMORY_ALLOCATION_DOMAIN => (process.each_allocation().map_while(Result::ok))
            .for_each(|a| add(a.operation.as_str(), a.start_ns, a.end_ns)),
        _ => {}
    }
}

/// The statistics of each domain `run` has records of, in [`DOMAINS`]' order.
pub fn run_stats(run: &RunData) -> Vec<DomainStats> {
    run_stats_with(run, kernel_stats(run))
}

/// [`run_stats`] with the kernel dispatches' statistics already gathered (`kernels`: the
/// run's, [`crate::stats::kernel_stats_from`]); the other domains' records are read here.
pub fn run_stats_with(run: &RunData, kernels: KernelStats) -> Vec<DomainStats> {
    let mut kernels = Some(kernels);
    DOMAINS
        .iter()
        .map(|(domain, _)| {
            let stats = if *domain == KERNEL_DISPATCH_DOMAIN {
                kernels.take().unwrap_or_default()
            } else {
                let mut names = BTreeMap::new();
                for process in &run.processes {
                    add_durations(process, domain, &mut names);
                }
                by_name(names)
            };
            DomainStats { domain, stats }
        })
        .filter(|d| !d.stats.is_empty())
        .collect()
}

/// The tracing domains' statistics of one process (the JSON's `summary` beside its kernel
/// dispatches), gathered record by record by a writer that reads them anyway: per name, in name
/// order (constant memory per name).
#[derive(Default)]
pub(crate) struct TraceStats {
    api: BTreeMap<String, DurationStats>,
    copies: BTreeMap<String, DurationStats>,
    allocations: BTreeMap<String, DurationStats>,
    markers: BTreeMap<String, DurationStats>,
}

fn add(names: &mut BTreeMap<String, DurationStats>, name: &str, start: u64, end: u64) {
    let ns = end.saturating_sub(start);
    match names.get_mut(name) {
        Some(stats) => stats.add(ns),
        None => names.entry(name.to_string()).or_default().add(ns),
    }
}

impl TraceStats {
    pub(crate) fn api_call(&mut self, c: &ApiRecord) {
        add(&mut self.api, &c.function, c.start_ns, c.end_ns);
    }

    pub(crate) fn marker(&mut self, m: &MarkerRecord) {
        add(&mut self.markers, m.function(), m.start_ns, m.end_ns);
    }

    pub(crate) fn copy(&mut self, c: &MemoryCopyRecord) {
        add(&mut self.copies, c.direction.as_str(), c.start_ns, c.end_ns);
    }

    pub(crate) fn allocation(&mut self, a: &MemoryAllocationRecord) {
        add(
            &mut self.allocations,
            a.operation.as_str(),
            a.start_ns,
            a.end_ns,
        );
    }

    pub(crate) fn has_copies(&self) -> bool {
        !self.copies.is_empty()
    }

    pub(crate) fn has_allocations(&self) -> bool {
        !self.allocations.is_empty()
    }

    /// Each domain with records in the order rocprofv3's JSON lists them (its outputs' order:
    /// API calls, copies, allocations, markers).
    pub(crate) fn domains(self) -> Vec<(&'static str, BTreeMap<String, DurationStats>)> {
        [
            (CUDA_API_DOMAIN, self.api),
            (MEMORY_COPY_DOMAIN, self.copies),
            (MEMORY_ALLOCATION_DOMAIN, self.allocations),
            (MARKER_API_DOMAIN, self.markers),
        ]
        .into_iter()
        .filter(|(_, names)| !names.is_empty())
        .collect()
    }
}
