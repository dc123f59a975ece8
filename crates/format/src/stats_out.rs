//! rocprofv3's `--stats` files and `--summary` tables, per traced domain (`domain_stats.rs`):
//! per name, the number of calls and the total, average, smallest and largest duration, the
//! share of the domain's time and the standard deviation.
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
use crate::stats::merged;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

pub use crate::domain_stats::{
    run_stats, run_stats_with, DomainStats, CUDA_API_DOMAIN, DOMAINS, MARKER_API_DOMAIN,
    MEMORY_ALLOCATION_DOMAIN, MEMORY_COPY_DOMAIN,
};
pub use crate::name_stats::Names;
pub use crate::stats::{
    each_dispatch_counted_once, kernel_stats, kernel_stats_from, process_durations, DurationStats,
    KernelDurations, KERNEL_DISPATCH_DOMAIN,
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

/// A stats CSV of `names`, each name's percentage of `total_ns`.
fn stats_csv(path: PathBuf, names: &Names, total_ns: u64) -> Result<PathBuf, FormatError> {
    csv_file(path, &STATS_COLUMNS, |out| {
        for entry in names.iter() {
            let (name, stats) = entry?;
            out.row(&stats_row(&name, &stats, total_ns))?;
        }
        Ok(())
    })
}

/// Writes, for each domain the run has records of, its stats file (`<dir>/<name>_kernel_stats.csv`,
/// `_cuda_api_stats.csv`, `_marker_api_stats.csv`, `_memory_copy_stats.csv`,
/// `_memory_allocation_stats.csv`: one row per name, largest total first) and
/// `<dir>/<name>_domain_stats.csv` (one row per domain, each domain's records together), as
/// rocprofv3's `--stats` does with `-f csv`; nothing when the run has no record. Each file is
/// replaced atomically. Returns the paths written.
pub fn write_stats_csv(run: &RunData, dir: &Path, name: &str) -> Result<Vec<PathBuf>, FormatError> {
    write_domain_stats_csv(&run_stats(run, Some(dir))?, dir, name)
}

/// [`write_stats_csv`] from the run's statistics ([`run_stats`], [`run_stats_with`]).
pub fn write_domain_stats_csv(
    domains: &[DomainStats],
    dir: &Path,
    name: &str,
) -> Result<Vec<PathBuf>, FormatError> {
    if domains.is_empty() {
        return Ok(Vec::new());
    }
    let mut written = Vec::new();
    for DomainStats { domain, stats } in domains {
        let file = DOMAINS.iter().find(|(d, _)| d == domain).map(|(_, f)| *f);
        if let Some(file) = file {
            let path = output_path(dir, name, file)?;
            written.push(stats_csv(path, stats, stats.total().sum)?);
        }
    }
    let all = merged(domains.iter().map(|d| d.stats.total())).sum;
    let domain_rows = (domains.iter())
        .map(|d| (d.domain.to_string(), *d.stats.total()))
        .collect();
    written.push(stats_csv(
        output_path(dir, name, suffix::DOMAIN_STATS)?,
        &Names::in_memory(domain_rows),
        all,
    )?);
    Ok(written)
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

/// One kind of table of the summary, in the order rocprofv3 prints them: per domain (`-D`, and
/// each `--summary-groups` expression), then all domains (`-S`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SummaryTable {
    /// `-D`: a table per domain with records, "ROCPROFV3 <DOMAIN> SUMMARY".
    Domain,
    /// A `--summary-groups` expression: one table of the domains it matches (their names, `|`
    /// between them, label it).
    Group(Vec<&'static str>),
    /// "ROCPROFV3 SUMMARY": every domain's rows.
    Total,
}

impl SummaryTable {
    pub fn label(&self) -> String {
        match self {
            SummaryTable::Domain => "<DOMAIN> SUMMARY".to_string(),
            SummaryTable::Group(domains) => format!("{} SUMMARY", domains.join("|")),
            SummaryTable::Total => "SUMMARY".to_string(),
        }
    }
}

const DOMAIN_WIDTH: usize = 12;
const NAME_WIDTH: usize = 40;

/// One table: every name of each of its domains, domain by domain, each domain's names largest
/// total first; the percentages are of the table's total.
fn write_table(
    out: &mut dyn Write,
    label: &str,
    domains: &[&DomainStats],
    unit: SummaryUnit,
    indent: &str,
) -> io::Result<()> {
    if domains.iter().all(|d| d.stats.is_empty()) {
        return Ok(());
    }
    let nw = domains
        .iter()
        .map(|d| d.stats.widest())
        .fold(NAME_WIDTH, usize::max);
    let dw = domains
        .iter()
        .map(|d| d.domain.len())
        .fold(DOMAIN_WIDTH, usize::max);
    let u = unit.as_str();
    write!(out, "\n{indent}ROCPROFV3 {label}:\n\n")?;
    writeln!(
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
    )?;
    let dash = |n: usize| "-".repeat(n);
    writeln!(
        out,
        "{indent}|-{}-|-{}-|-{d15}-|-{d15}-|-{d15}-|-{}-|-{d15}-|-{d15}-|-{d15}-|",
        dash(nw),
        dash(dw),
        dash(13),
        d15 = dash(15),
    )?;
    let total = merged(domains.iter().map(|d| d.stats.total())).sum;
    let per_unit = unit.nanoseconds() as f64;
    for d in domains {
        let domain = d.domain;
        for entry in d.stats.iter() {
            let (name, s) = entry?;
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
            writeln!(
                out,
                "{indent}| {name:<nw$} | {domain:<dw$} | {:>15} | {sum:>15} | {:>15} | {:>13} | {min:>15} | {max:>15} | {:>15} |",
                s.count,
                scientific(s.mean() / per_unit, 3),
                format!("{:.6}", s.percent_of(total)),
                scientific(s.stddev() / per_unit, 3),
            )?;
        }
    }
    out.write_all(b"\n")
}

/// Writes the summary tables of `domains` into `out`, as rocprofv3 prints them at the end of a
/// run: each table starts with a blank line and `ROCPROFV3 <label>:`, every line after `indent`
/// (rocprofv3 indents by 4 on a terminal stream, not in a file); a table's percentages are of
/// its own rows' total. Nothing when there is no record. The names are read as they are written
/// (from their files when they are many).
pub fn write_summary(
    out: &mut dyn Write,
    domains: &[DomainStats],
    tables: &[SummaryTable],
    unit: SummaryUnit,
    indent: &str,
) -> io::Result<()> {
    for table in tables {
        match table {
            SummaryTable::Domain => {
                for d in domains {
                    let label = format!("{} SUMMARY", d.domain);
                    write_table(out, &label, &[d], unit, indent)?;
                }
            }
            SummaryTable::Group(names) => {
                let matched: Vec<&DomainStats> = domains
                    .iter()
                    .filter(|d| names.contains(&d.domain))
                    .collect();
                let label = format!(
                    "{} SUMMARY",
                    matched
                        .iter()
                        .map(|d| d.domain)
                        .collect::<Vec<_>>()
                        .join("|")
                );
                write_table(out, &label, &matched, unit, indent)?;
            }
            SummaryTable::Total => {
                let all: Vec<&DomainStats> = domains.iter().collect();
                write_table(out, "SUMMARY", &all, unit, indent)?;
            }
        }
    }
    Ok(())
}

/// [`write_summary`] as a text (tests).
#[cfg(test)]
pub fn render_summary(
    domains: &[DomainStats],
    tables: &[SummaryTable],
    unit: SummaryUnit,
    indent: &str,
) -> String {
    let mut out = Vec::new();
    write_summary(&mut out, domains, tables, unit, indent).unwrap();
    String::from_utf8(out).unwrap()
}

/// Writes the summary tables into `<dir>/<name>_<file>.txt` (rocprofv3's
/// `--summary-output-file <file>`), unindented, replacing the file atomically.
pub fn write_summary_file(
    stats: &[DomainStats],
    tables: &[SummaryTable],
    unit: SummaryUnit,
    dir: &Path,
    name: &str,
    file: &str,
) -> Result<PathBuf, FormatError> {
    let path = output_path(dir, name, &format!("_{file}.txt"))?;
    write_file(&path, |out| write_summary(out, stats, tables, unit, ""))?;
    Ok(path)
}

#[cfg(test)]
mod tests;
