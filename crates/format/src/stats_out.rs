//! rocprofv3's `--stats` files and `--summary` tables for the one domain kreplay traces, kernel
//! dispatches: per kernel name, the number of dispatches and the total, average, smallest and
//! largest duration, the share of all kernel time and the standard deviation.
//!
//! Written as rocprofv3 writes them (rocprofiler-sdk `source/lib/output`: `generateCSV.cpp`
//! `write_stats` and the `domain_stats` writer for the CSV, `statistics.cpp` `stats_formatter` for
//! its number formats, `generateStats.cpp` for the summary table), from the statistics of
//! `stats.rs` (where a replayed dispatch counts once).

use crate::csv_file::csv_file;
use crate::error::FormatError;
use crate::files::{output_path, suffix, write_file};
use crate::numbers::{quoted, scientific, shortest};
use crate::run::RunData;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use crate::stats::{
    each_dispatch_counted_once, kernel_stats, process_kernel_stats, DurationStats, KernelStats,
    KERNEL_DISPATCH_DOMAIN,
};

/// The header of `<o>_kernel_stats.csv` and `<o>_domain_stats.csv`, rocprofv3's.
pub const STATS_COLUMNS: [&str; 8] = [
    "Name",
    "Calls",
    "TotalDurationNs",
    "AverageNs",
    "Percentage",
    "MinNs",
    "MaxNs",
    "StdDev",
];

// ---- number formats ----

/// A duration (average, standard deviation) in the stats CSV: `std::fixed` with 6 decimals
/// above 0.01, else `std::scientific` with 8.
fn csv_float(value: f64) -> String {
    if value > 1.0e-2 {
        format!("{value:.6}")
    } else {
        scientific(value, 8)
    }
}

/// A percentage in the stats CSV: 2 decimals from 1 up, 4 above 0.01, else scientific with 3.
fn csv_percentage(value: f64) -> String {
    if value >= 1.0 {
        format!("{value:.2}")
    } else if value > 1.0e-2 {
        format!("{value:.4}")
    } else {
        scientific(value, 3)
    }
}

/// One stats CSV row.
fn stats_row(name: &str, stats: &DurationStats, total_ns: u64) -> Vec<String> {
    vec![
        quoted(name),
        stats.count.to_string(),
        stats.sum.to_string(),
        csv_float(stats.mean()),
        csv_percentage(stats.percent_of(total_ns)),
        stats.min.to_string(),
        stats.max.to_string(),
        csv_float(stats.stddev()),
    ]
}

fn stats_csv(path: PathBuf, rows: &[Vec<String>]) -> Result<PathBuf, FormatError> {
    csv_file(path, &STATS_COLUMNS, |out| {
        rows.iter().try_for_each(|row| out.row(row))
    })
}

/// Writes `<dir>/<name>_kernel_stats.csv` (one row per kernel name, largest total first) and
/// `<dir>/<name>_domain_stats.csv` (one row, `KERNEL_DISPATCH`, all dispatches together), as
/// rocprofv3's `--stats` does with `-f csv`; nothing when the run has no dispatch. Each file is
/// replaced atomically. Returns the paths written.
pub fn write_stats_csv(run: &RunData, dir: &Path, name: &str) -> Result<Vec<PathBuf>, FormatError> {
    let stats = kernel_stats(run);
    if stats.is_empty() {
        return Ok(Vec::new());
    }
    let total = stats.total.sum;
    let kernel_rows: Vec<Vec<String>> = stats
        .kernels
        .iter()
        .map(|(kernel, s)| stats_row(kernel, s, total))
        .collect();
    let domain_rows = [stats_row(KERNEL_DISPATCH_DOMAIN, &stats.total, total)];
    Ok(vec![
        stats_csv(output_path(dir, name, suffix::KERNEL_STATS)?, &kernel_rows)?,
        stats_csv(output_path(dir, name, suffix::DOMAIN_STATS)?, &domain_rows)?,
    ])
}

// ---- the summary table ----

/// `-u/--summary-units`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SummaryUnit {
    Sec,
    Msec,
    Usec,
    #[default]
    Nsec,
}

impl SummaryUnit {
    pub fn as_str(self) -> &'static str {
        match self {
            SummaryUnit::Sec => "sec",
            SummaryUnit::Msec => "msec",
            SummaryUnit::Usec => "usec",
            SummaryUnit::Nsec => "nsec",
        }
    }

    /// Nanoseconds per unit.
    pub fn nanoseconds(self) -> u64 {
        match self {
            SummaryUnit::Sec => 1_000_000_000,
            SummaryUnit::Msec => 1_000_000,
            SummaryUnit::Usec => 1_000,
            SummaryUnit::Nsec => 1,
        }
    }

    /// Every unit, as `-u/--summary-units` lists them.
    pub const ALL: [SummaryUnit; 4] = [
        SummaryUnit::Sec,
        SummaryUnit::Msec,
        SummaryUnit::Usec,
        SummaryUnit::Nsec,
    ];

    pub fn parse(text: &str) -> Option<SummaryUnit> {
        Self::ALL
            .into_iter()
            .find(|u| u.as_str() == text.trim().to_ascii_lowercase())
    }
}

/// One table of the summary, in the order rocprofv3 prints them: per domain (`-D`, and each
/// `--summary-groups` expression that matches `KERNEL_DISPATCH`), then all domains (`-S`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryTable {
    /// "ROCPROFV3 KERNEL_DISPATCH SUMMARY".
    Domain,
    /// "ROCPROFV3 SUMMARY".
    Total,
}

impl SummaryTable {
    pub fn label(self) -> String {
        match self {
            SummaryTable::Domain => format!("{KERNEL_DISPATCH_DOMAIN} SUMMARY"),
            SummaryTable::Total => "SUMMARY".to_string(),
        }
    }
}

const DOMAIN_WIDTH: usize = 12;
const NAME_WIDTH: usize = 40;

fn render_table(
    out: &mut String,
    label: &str,
    stats: &KernelStats,
    unit: SummaryUnit,
    indent: &str,
) {
    use std::fmt::Write as _;
    if stats.is_empty() {
        return;
    }
    let nw = stats
        .kernels
        .iter()
        .map(|(name, _)| name.chars().count())
        .fold(NAME_WIDTH, usize::max);
    let dw = DOMAIN_WIDTH.max(KERNEL_DISPATCH_DOMAIN.len());
    let u = unit.as_str();
    let _ = write!(out, "\n{indent}ROCPROFV3 {label}:\n\n");
    let _ = writeln!(
        out,
        "{indent}| {:^nw$} | {:^dw$} | {:^15} | {:^15} | {:^15} | {:^13} | {:^15} | {:^15} | {:^15} |",
        "NAME",
        "DOMAIN",
        "CALLS",
        format!("DURATION ({u})"),
        format!("AVERAGE ({u})"),
        "PERCENT (INC)",
        format!("MIN ({u})"),
        format!("MAX ({u})"),
        "STDDEV",
    );
    let dash = |n: usize| "-".repeat(n);
    let _ = writeln!(
        out,
        "{indent}|-{}-|-{}-|-{d15}-|-{d15}-|-{d15}-|-{}-|-{d15}-|-{d15}-|-{d15}-|",
        dash(nw),
        dash(dw),
        dash(13),
        d15 = dash(15),
    );
    let total = stats.total.sum;
    let per_unit = unit.nanoseconds() as f64;
    for (name, s) in &stats.kernels {
        // nsec prints the integer sums, minima and maxima; other units their quotients.
        let (sum, min, max) = if unit == SummaryUnit::Nsec {
            (s.sum.to_string(), s.min.to_string(), s.max.to_string())
        } else {
            (
                shortest(s.sum as f64 / per_unit),
                shortest(s.min as f64 / per_unit),
                shortest(s.max as f64 / per_unit),
            )
        };
        let _ = writeln!(
            out,
            "{indent}| {name:<nw$} | {KERNEL_DISPATCH_DOMAIN:<dw$} | {:>15} | {sum:>15} | {:>15} | {:>13} | {min:>15} | {max:>15} | {:>15} |",
            s.count,
            scientific(s.mean() / per_unit, 3),
            format!("{:.6}", s.percent_of(total)),
            scientific(s.stddev() / per_unit, 3),
        );
    }
    out.push('\n');
}

/// The summary tables of `stats`, as rocprofv3 prints them at the end of a run: each table
/// starts with a blank line and `ROCPROFV3 <label>:`, every line after `indent` (rocprofv3
/// indents by 4 on a terminal stream, not in a file). Empty when there is no dispatch.
pub fn render_summary(
    stats: &KernelStats,
    tables: &[SummaryTable],
    unit: SummaryUnit,
    indent: &str,
) -> String {
    let mut out = String::new();
    for table in tables {
        render_table(&mut out, &table.label(), stats, unit, indent);
    }
    out
}

/// Writes the summary tables into `<dir>/<name>_<file>.txt` (rocprofv3's
/// `--summary-output-file <file>`), unindented, replacing the file atomically.
pub fn write_summary_file(
    stats: &KernelStats,
    tables: &[SummaryTable],
    unit: SummaryUnit,
    dir: &Path,
    name: &str,
    file: &str,
) -> Result<PathBuf, FormatError> {
    let path = output_path(dir, name, &format!("_{file}.txt"))?;
    let text = render_summary(stats, tables, unit, "");
    write_file(&path, |out| out.write_all(text.as_bytes()))?;
    Ok(path)
}

#[cfg(test)]
mod tests;
