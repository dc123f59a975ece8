//! rocprofv3's `--stats` files and `--summary` tables for the one domain kreplay traces, kernel
//! dispatches: per kernel name, the number of dispatches and the total, average, smallest and
//! largest duration, the share of all kernel time and the standard deviation.
//!
//! Written as rocprofv3 writes them (rocprofiler-sdk `source/lib/output`: `statistics.hpp` for
//! the arithmetic, `generateCSV.cpp` `write_stats` and the `domain_stats` writer for the CSV,
//! `statistics.cpp` `stats_formatter` for its number formats, `generateStats.cpp` for the summary
//! table). A replayed dispatch counts once, with the duration of its first execution (the
//! lowest `replay_pass`, the application's own launch): see `docs/output.md`.

use crate::csv_out::csv_file;
use crate::error::FormatError;
use crate::numbers::{quoted, scientific, shortest};
use crate::output::{output_path, suffix, write_file};
use crate::records::DispatchRecord;
use crate::run::{ProcessRun, RunData};
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

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

/// The kernel-dispatch statistics of a run: one entry per kernel name, largest total first
/// (equal totals by name), and all of them together.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KernelStats {
    pub kernels: Vec<(String, DurationStats)>,
    pub total: DurationStats,
}

impl KernelStats {
    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }
}

/// The dispatches of `process` that statistics count: each dispatch once. Of the records of one
/// replayed dispatch (same device and dispatch id) only the lowest pass (the application's own
/// launch) is taken; records without a pass (no kernel replay) all count. In record order.
pub fn dispatches_counted_once(process: &ProcessRun) -> Vec<&DispatchRecord> {
    // (agent, dispatch id) -> index of the chosen record among the process's dispatches.
    let mut first_pass: HashMap<(u64, u64), usize> = HashMap::new();
    let mut chosen: Vec<usize> = Vec::new();
    for (index, dispatch) in process.dispatches.iter().enumerate() {
        let Some(pass) = dispatch.replay_pass else {
            chosen.push(index);
            continue;
        };
        let key = (dispatch.agent_id, dispatch.dispatch_id);
        match first_pass.get(&key) {
            Some(&known) if process.dispatches[known].replay_pass <= Some(pass) => {}
            _ => {
                first_pass.insert(key, index);
            }
        }
    }
    chosen.extend(first_pass.into_values());
    chosen.sort_unstable();
    chosen
        .into_iter()
        .map(|index| &process.dispatches[index])
        .collect()
}

/// Durations of the dispatches of `processes` ([`dispatches_counted_once`]), by the kernel's
/// (demangled) name.
fn stats_by_name<'a>(
    processes: impl IntoIterator<Item = &'a ProcessRun>,
) -> BTreeMap<String, DurationStats> {
    let mut by_name: BTreeMap<String, DurationStats> = BTreeMap::new();
    for process in processes {
        for dispatch in dispatches_counted_once(process) {
            let name = process
                .kernel(dispatch.kernel_id)
                .map(|k| k.demangled_name.clone())
                .unwrap_or_default();
            by_name
                .entry(name)
                .or_default()
                .add(dispatch.end_ns.saturating_sub(dispatch.start_ns));
        }
    }
    by_name
}

/// The kernel-dispatch statistics of one process, kernels by name (the JSON's `summary`).
pub fn process_kernel_stats(process: &ProcessRun) -> BTreeMap<String, DurationStats> {
    stats_by_name([process])
}

/// Durations of every dispatch of `run` ([`dispatches_counted_once`]), by the kernel's
/// (demangled) name.
pub fn kernel_stats(run: &RunData) -> KernelStats {
    let mut kernels: Vec<(String, DurationStats)> =
        stats_by_name(&run.processes).into_iter().collect();
    // Stable: equal totals stay in name order.
    kernels.sort_by_key(|(_, stats)| std::cmp::Reverse(stats.sum));
    let total = merged(kernels.iter().map(|(_, stats)| stats));
    KernelStats { kernels, total }
}

/// The statistics of all of `parts` together.
pub(crate) fn merged<'a>(parts: impl IntoIterator<Item = &'a DurationStats>) -> DurationStats {
    let mut total = DurationStats::default();
    for part in parts {
        total.merge(part);
    }
    total
}

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
mod tests {
    use super::*;
    use crate::records::*;
    use crate::run::RunData;

    fn symbol(kernel_id: u64, name: &str) -> Record {
        Record::KernelSymbol(KernelSymbol {
            kernel_id,
            mangled_name: name.to_string(),
            demangled_name: name.to_string(),
            registers: 0,
            static_shared_bytes: 0,
            local_bytes: 0,
            param_bytes: 0,
        })
    }

    fn dispatch(id: u64, pass: Option<u32>, kernel_id: u64, start: u64, end: u64) -> Record {
        let mut d = crate::testdata::dispatch(7, id, pass, Vec::new());
        d.kernel_id = kernel_id;
        d.start_ns = start;
        d.end_ns = end;
        Record::Dispatch(d)
    }

    /// Kernel 1 ("a"): dispatches of 100, 300 and 200 ns, replayed in 2 passes (pass 1 slower);
    /// kernel 2 ("b"): one dispatch of 400 ns without replay.
    fn run() -> RunData {
        let mut records = vec![
            Record::Process(crate::testdata::process(7)),
            symbol(1, "a"),
            symbol(2, "b"),
        ];
        for (id, ns) in [(1u64, 100u64), (2, 300), (3, 200)] {
            // Pass 1 recorded first: the rule takes the lowest pass, not the first record.
            records.push(dispatch(id, Some(1), 1, 1_000 * id, 1_000 * id + ns + 7));
            records.push(dispatch(id, Some(0), 1, 1_000 * id, 1_000 * id + ns));
        }
        records.push(dispatch(9, None, 2, 50_000, 50_400));
        RunData::from_records(records)
    }

    #[test]
    fn a_replayed_dispatch_counts_once_with_its_first_pass() {
        let stats = kernel_stats(&run());
        let names: Vec<&str> = stats.kernels.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["a", "b"], "largest total first");
        let a = stats.kernels[0].1;
        assert_eq!((a.count, a.sum, a.min, a.max), (3, 600, 100, 300));
        assert_eq!(a.mean(), 200.0);
        assert_eq!(a.stddev(), 100.0);
        assert_eq!(stats.total.count, 4);
        assert_eq!(stats.total.sum, 1_000);
        assert_eq!(stats.kernels[1].1.stddev(), 0.0);
    }

    #[test]
    fn stats_files_have_rocprofv3s_header_and_number_formats() {
        let dir = tempfile::tempdir().unwrap();
        let written = write_stats_csv(&run(), dir.path(), "host/7").unwrap();
        assert!(written[0].ends_with("host/7_kernel_stats.csv"));
        assert!(written[1].ends_with("host/7_domain_stats.csv"));
        let text = std::fs::read_to_string(&written[0]).unwrap();
        assert_eq!(
            text,
            "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\",\"StdDev\"\n\
             \"a\",3,600,200.000000,60.00,100,300,100.000000\n\
             \"b\",1,400,400.000000,40.00,400,400,0.00000000e+00\n"
        );
        let domain = std::fs::read_to_string(&written[1]).unwrap();
        assert_eq!(
            domain.lines().nth(1).unwrap(),
            "\"KERNEL_DISPATCH\",4,1000,250.000000,100.00,100,400,129.099445"
        );
        assert!(write_stats_csv(&RunData::default(), dir.path(), "x")
            .unwrap()
            .is_empty());
    }

    #[test]
    fn numbers_print_as_cxx_streams_and_fmt_print_them() {
        assert_eq!(csv_float(0.01), "1.00000000e-02");
        assert_eq!(csv_float(0.5), "0.500000");
        assert_eq!(csv_percentage(99.999), "100.00");
        assert_eq!(csv_percentage(0.5), "0.5000");
        assert_eq!(csv_percentage(0.001), "1.000e-03");
        assert_eq!(SummaryUnit::parse("USEC"), Some(SummaryUnit::Usec));
        assert_eq!(SummaryUnit::parse("min"), None);
    }

    #[test]
    fn the_summary_table_is_rocprofv3s() {
        let stats = kernel_stats(&run());
        let text = render_summary(&stats, &[SummaryTable::Total], SummaryUnit::Nsec, "    ");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "");
        assert_eq!(lines[1], "    ROCPROFV3 SUMMARY:");
        assert_eq!(lines[2], "");
        assert_eq!(
            lines[3],
            format!(
                "    | {:^40} |     DOMAIN      |      CALLS      | DURATION (nsec) | AVERAGE (nsec)  | PERCENT (INC) |   MIN (nsec)    |   MAX (nsec)    |     STDDEV      |",
                "NAME"
            )
        );
        // Each column's dashes: its width plus the spaces either side.
        let divider: Vec<String> = [42, 17, 17, 17, 17, 15, 17, 17, 17]
            .iter()
            .map(|&n| "-".repeat(n))
            .collect();
        assert_eq!(lines[4], format!("    |{}|", divider.join("|")));
        assert_eq!(
            lines[5],
            format!(
                "    | {:<40} | KERNEL_DISPATCH | {:>15} | {:>15} | {:>15} | {:>13} | {:>15} | {:>15} | {:>15} |",
                "a", 3, 600, "2.000e+02", "60.000000", 100, 300, "1.000e+02"
            )
        );
        assert!(lines[6].starts_with("    | b "));
        assert_eq!(
            lines.len(),
            8,
            "blank, title, blank, header, divider, 2 rows, blank"
        );
        assert!(text.ends_with("|\n\n"));

        let usec = render_summary(
            &stats,
            &[SummaryTable::Domain, SummaryTable::Total],
            SummaryUnit::Usec,
            "",
        );
        assert!(usec.starts_with("\nROCPROFV3 KERNEL_DISPATCH SUMMARY:\n\n| "));
        assert!(usec.contains("\nROCPROFV3 SUMMARY:\n"));
        assert!(usec.contains(" DURATION (usec) "));
        let row = usec.lines().find(|l| l.starts_with("| a ")).unwrap();
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(
            cells[1..10],
            [
                "a",
                "KERNEL_DISPATCH",
                "3",
                "0.6",
                "2.000e-01",
                "60.000000",
                "0.1",
                "0.3",
                "1.000e-01"
            ]
        );
        assert_eq!(
            render_summary(
                &KernelStats::default(),
                &[SummaryTable::Total],
                SummaryUnit::Nsec,
                ""
            ),
            ""
        );
    }

    #[test]
    fn a_long_kernel_name_widens_the_name_column() {
        let name = "k".repeat(50);
        let stats = KernelStats {
            kernels: vec![(name.clone(), {
                let mut s = DurationStats::default();
                s.add(5);
                s
            })],
            total: DurationStats::default(),
        };
        let text = render_summary(&stats, &[SummaryTable::Total], SummaryUnit::Nsec, "");
        assert!(
            text.contains(&format!("| {name} | KERNEL_DISPATCH |")),
            "{text}"
        );
        assert!(text.contains(&format!("|-{}-|", "-".repeat(50))), "{text}");
    }

    #[test]
    fn the_summary_file_is_named_after_the_output_file() {
        let dir = tempfile::tempdir().unwrap();
        let stats = kernel_stats(&run());
        let path = write_summary_file(
            &stats,
            &[SummaryTable::Total],
            SummaryUnit::Nsec,
            dir.path(),
            "out",
            "summary",
        )
        .unwrap();
        assert_eq!(path, dir.path().join("out_summary.txt"));
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("\nROCPROFV3 SUMMARY:\n\n| "), "{text}");
    }
}
