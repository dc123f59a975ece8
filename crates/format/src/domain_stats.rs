//! The statistics of every traced domain, as rocprofv3 keeps them per domain (rocprofiler-sdk
//! `source/lib/output`): kernel dispatches by kernel name ([`crate::stats`]), CUDA API calls by
//! function (rocprofv3's `HIP_API`), NVTX markers by message (`MARKER_API`), memory copies by
//! direction (`MEMORY_COPY`) and allocations by operation (`MEMORY_ALLOCATION`). Every record of
//! a traced domain counts once, with its end minus its start; a domain without records has no
//! statistics.

use crate::api::ApiRecord;
use crate::error::FormatError;
use crate::files::suffix;
use crate::markers::MarkerRecord;
use crate::memory::{MemoryAllocationRecord, MemoryCopyRecord};
use crate::name_stats::{spill_error, NameTally, Names};
use crate::run::{ProcessRun, RunData};
use crate::stats::{kernel_stats, KERNEL_DISPATCH_DOMAIN};
use std::path::Path;

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

/// One domain's statistics: per name, largest total first (equal totals by name), and all
/// together ([`Names::total`]).
#[derive(Debug)]
pub struct DomainStats {
    pub domain: &'static str,
    pub stats: Names,
}

/// Adds the duration of each record of one tracing domain of `process` to its name's
/// statistics in `names`: its API calls (`CUDA_API`), markers (`MARKER_API`), copies
/// (`MEMORY_COPY`) or allocations (`MEMORY_ALLOCATION`); none for another domain. The records
/// are read as they are stored (a page at a time); one that cannot be read ends the domain's
/// (the writers say why), as it ends the kernel dispatches' ([`crate::stats`]).
fn add_durations(process: &ProcessRun, domain: &str, names: &mut NameTally) {
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

/// Adds a record's duration, its end minus its start, to `name`'s.
fn add(names: &mut NameTally, name: &str, start: u64, end: u64) {
    names.add(name, end.saturating_sub(start));
}

/// The statistics of each domain `run` has records of, in [`DOMAINS`]' order; names spill into
/// `dir` if they are many (`None`: the system's temporary folder).
pub fn run_stats(run: &RunData, dir: Option<&Path>) -> Result<Vec<DomainStats>, FormatError> {
    run_stats_with(run, kernel_stats(run, dir)?, dir)
}

/// [`run_stats`] with the kernel dispatches' statistics already gathered (`kernels`: the
/// run's, [`crate::stats::kernel_stats_from`]); the other domains' records are read here.
pub fn run_stats_with(
    run: &RunData,
    kernels: Names,
    dir: Option<&Path>,
) -> Result<Vec<DomainStats>, FormatError> {
    let mut kernels = Some(kernels);
    let mut domains = Vec::new();
    for (domain, _) in DOMAINS {
        let stats = if domain == KERNEL_DISPATCH_DOMAIN {
            kernels.take().unwrap_or_default()
        } else {
            let mut names = NameTally::new(dir);
            for process in &run.processes {
                add_durations(process, domain, &mut names);
            }
            (names.finish().and_then(|n| n.ranked(dir))).map_err(spill_error(dir))?
        };
        if !stats.is_empty() {
            domains.push(DomainStats { domain, stats });
        }
    }
    Ok(domains)
}

/// The tracing domains' statistics of one process (the JSON's `summary` beside its kernel
/// dispatches), gathered record by record by a writer that reads them anyway: per name, in name
/// order (memory bounded: [`NameTally`]).
#[derive(Default)]
pub(crate) struct TraceStats {
    api: NameTally,
    copies: NameTally,
    allocations: NameTally,
    markers: NameTally,
}

impl TraceStats {
    /// Names spill into `dir` if they are many.
    pub(crate) fn new(dir: &Path) -> TraceStats {
        TraceStats {
            api: NameTally::new(Some(dir)),
            copies: NameTally::new(Some(dir)),
            allocations: NameTally::new(Some(dir)),
            markers: NameTally::new(Some(dir)),
        }
    }

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
        let name = a.operation.as_str();
        add(&mut self.allocations, name, a.start_ns, a.end_ns);
    }

    pub(crate) fn has_copies(&self) -> bool {
        !self.copies.is_empty()
    }

    pub(crate) fn has_allocations(&self) -> bool {
        !self.allocations.is_empty()
    }

    /// Each domain with records in the order rocprofv3's JSON lists them (its outputs' order:
    /// API calls, copies, allocations, markers), names in name order.
    pub(crate) fn domains(self) -> std::io::Result<Vec<(&'static str, Names)>> {
        let mut domains = Vec::new();
        for (domain, names) in [
            (CUDA_API_DOMAIN, self.api),
            (MEMORY_COPY_DOMAIN, self.copies),
            (MEMORY_ALLOCATION_DOMAIN, self.allocations),
            (MARKER_API_DOMAIN, self.markers),
        ] {
            if !names.is_empty() {
                domains.push((domain, names.finish()?));
            }
        }
        Ok(domains)
    }
}
