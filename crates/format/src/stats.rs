//! Kernel-dispatch duration statistics, as rocprofv3 computes them (rocprofiler-sdk
//! `source/lib/output/statistics.hpp`): per kernel name, the number of dispatches and the total,
//! smallest and largest duration, with the sum of squares for the deviation. A replayed dispatch
//! counts once, with the duration of its first execution (the lowest `replay_pass`, the
//! application's own launch): see `docs/output.md`. The `--stats` files, the `--summary` tables
//! and the JSON's `summary` are written from them.

use crate::error::FormatError;
use crate::facts::kernel_name;
use crate::name_stats::{spill_error, NameTally, Names};
use crate::records::{DispatchRecord, ProcessInfo};
use crate::run::{ProcessRun, RunData};
use std::borrow::Cow;
use std::collections::HashMap;
use std::path::Path;

/// rocprofv3's name for the kernel dispatch domain (summary tables, `domain_stats.csv`).
pub const KERNEL_DISPATCH_DOMAIN: &str = "KERNEL_DISPATCH";

/// Durations in nanoseconds, accumulated as rocprofv3's `statistics<uint64_t, double>` does
/// (sum of squares kept in 128 bits, so that it cannot wrap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DurationStats {
    pub count: u64,
    pub sum: u64,
    pub sum_of_squares: u128,
    pub min: u64,
    pub max: u64,
}

impl DurationStats {
    pub fn add(&mut self, ns: u64) {
        if self.count == 0 {
            self.min = ns;
            self.max = ns;
        } else {
            self.min = self.min.min(ns);
            self.max = self.max.max(ns);
        }
        self.count += 1;
        self.sum = self.sum.saturating_add(ns);
        self.sum_of_squares = self
            .sum_of_squares
            .saturating_add(u128::from(ns) * u128::from(ns));
    }

    pub fn merge(&mut self, other: &DurationStats) {
        if other.count == 0 {
            return;
        }
        if self.count == 0 {
            *self = *other;
            return;
        }
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.sum_of_squares = self.sum_of_squares.saturating_add(other.sum_of_squares);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn mean(&self) -> f64 {
        self.sum as f64 / self.count as f64
    }

    /// The sample variance, `(Σx² − (Σx)²/n) / (n − 1)`; 0 below two samples.
    pub fn variance(&self) -> f64 {
        if self.count < 2 {
            return 0.0;
        }
        let n = self.count as f64;
        let sum = self.sum as f64;
        (self.sum_of_squares as f64 - sum * sum / n) / (n - 1.0)
    }

    pub fn stddev(&self) -> f64 {
        self.variance().abs().sqrt()
    }

    /// This sum as a percentage of `total_ns`.
    pub fn percent_of(&self, total_ns: u64) -> f64 {
        self.sum as f64 / total_ns as f64 * 100.0
    }
}

/// Calls `count` with the kernel and duration of each dispatch of `process` that statistics
/// count, once, in record order: of the records of one replayed dispatch only pass 0 (the
/// application's own launch, the lowest pass: every dispatch of a kernel-replay run has it, a
/// dispatch that could not be replayed has only it); records without a pass (no kernel replay)
/// all count. One pass over the records, holding none of them. Records that cannot be read are
/// left out (the writers that read them before the statistics have said why).
pub fn each_dispatch_counted_once(process: &ProcessRun, mut count: impl FnMut(u64, u64)) {
    for dispatch in process.each_dispatch().map_while(Result::ok) {
        if dispatch.replay_pass.unwrap_or(0) == 0 {
            count(
                dispatch.kernel_id,
                dispatch.end_ns.saturating_sub(dispatch.start_ns),
            );
        }
    }
}

/// Durations of a process's dispatches by kernel id, counted as the records are read (by
/// [`each_dispatch_counted_once`]'s rule), for a writer that reads them anyway. Under
/// `--kernel-rename` a dispatch with a range stack counts under its innermost range, as
/// rocprofv3's statistics name it (`get_kernel_name`).
#[derive(Default)]
pub struct KernelDurations {
    by_kernel: HashMap<u64, DurationStats>,
    /// A range name can differ at every step: memory bounded ([`NameTally`]).
    by_range: NameTally,
}

impl KernelDurations {
    /// Nothing counted yet; range names spill into `dir` if they are many (`None`: the
    /// system's temporary folder).
    pub fn new(dir: Option<&Path>) -> KernelDurations {
        KernelDurations {
            by_kernel: HashMap::new(),
            by_range: NameTally::new(dir),
        }
    }

    /// Counts `dispatch` of `process` if statistics count it (its pass 0, or a record without a
    /// pass). Allocates only for a range name not met before.
    pub fn add(&mut self, process: &ProcessInfo, dispatch: &DispatchRecord) {
        if dispatch.replay_pass.unwrap_or(0) != 0 {
            return;
        }
        let ns = dispatch.end_ns.saturating_sub(dispatch.start_ns);
        match dispatch.innermost_range().filter(|_| process.kernel_rename) {
            Some(range) => self.by_range.add(range, ns),
            None => self
                .by_kernel
                .entry(dispatch.kernel_id)
                .or_default()
                .add(ns),
        }
    }

    /// The durations by the names the run gives its kernels (rocprofv3's: the `-M`/`-T` name,
    /// or the `--kernel-rename` range), added to `by_name`.
    pub fn add_by_name(self, process: &ProcessRun, by_name: &mut NameTally) -> std::io::Result<()> {
        for (kernel_id, stats) in self.by_kernel {
            let name = process
                .kernel(kernel_id)
                .map(|k| kernel_name(&process.process, k))
                .unwrap_or_default();
            by_name.add_stats(Cow::Borrowed(name), &stats);
        }
        if !self.by_range.is_empty() {
            by_name.add_names(&self.by_range.finish()?)?;
        }
        Ok(())
    }
}

/// Durations of a process's dispatches ([`each_dispatch_counted_once`]), read from its records;
/// range names spill into `dir` if they are many.
pub fn process_durations(process: &ProcessRun, dir: Option<&Path>) -> KernelDurations {
    let mut durations = KernelDurations::new(dir);
    for dispatch in process.each_dispatch().map_while(Result::ok) {
        durations.add(&process.process, &dispatch);
    }
    durations
}

/// Durations of every dispatch of `run` ([`each_dispatch_counted_once`]), by the kernel's
/// name as the run gives it (demangled, `-M`, `-T`, `--kernel-rename`), largest total first
/// (equal totals by name); spilling into `dir` if they are many (`None`: the system's
/// temporary folder).
pub fn kernel_stats(run: &RunData, dir: Option<&Path>) -> Result<Names, FormatError> {
    let durations = (run.processes.iter())
        .map(|process| process_durations(process, dir))
        .collect();
    kernel_stats_from(run, durations, dir)
}

/// [`kernel_stats`] from the durations of each of `run`'s processes (`durations[i]` of
/// `run.processes[i]`), gathered while the records were read for something else: per kernel
/// id first (a few kernels, millions of dispatches), then by name.
pub fn kernel_stats_from(
    run: &RunData,
    durations: Vec<KernelDurations>,
    dir: Option<&Path>,
) -> Result<Names, FormatError> {
    let spill_error = spill_error(dir);
    let mut by_name = NameTally::new(dir);
    for (process, durations) in run.processes.iter().zip(durations) {
        durations
            .add_by_name(process, &mut by_name)
            .map_err(&spill_error)?;
    }
    (by_name.finish().and_then(|names| names.ranked(dir))).map_err(spill_error)
}

/// The statistics of all of `parts` together.
pub(crate) fn merged<'a>(parts: impl IntoIterator<Item = &'a DurationStats>) -> DurationStats {
    let mut total = DurationStats::default();
    for part in parts {
        total.merge(part);
    }
    total
}
