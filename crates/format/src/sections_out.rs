//! Nsight Compute's sections over kreplay's records: per dispatch and section, the section's rows
//! (label, unit, value) as `ncu --csv --page details` lays them out (`<o>_sections.csv`), and a
//! per-kernel summary like `ncu --print-summary per-kernel`.
//!
//! A [`SectionSpec`] is a section already resolved for the run's chip (the command line reads the
//! section files): each row says how its value is obtained ([`Expr`]): a collected counter, a
//! launch attribute of the dispatch, an expression over those (Nsight Compute's derived
//! metrics), or nothing (a metric this run cannot give, with the reason).

use crate::csv_out::csv_file;
use crate::error::FormatError;
use crate::numbers::{quoted, shortest};
use crate::output::{output_path, suffix};
use crate::records::{AgentInfo, DispatchRecord, KernelSymbol};
use crate::run::{ProcessRun, RunData};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// One section, resolved for the run's chip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionSpec {
    /// Nsight Compute's section identifier (`SpeedOfLight`).
    pub identifier: String,
    /// Its display name (`GPU Speed Of Light Throughput`), the CSV's "Section Name".
    pub display_name: String,
    pub rows: Vec<SectionRow>,
}

/// One row of a section.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SectionRow {
    /// The section's label for it (its metric name when the section gives none).
    pub label: String,
    /// The metric the section names for this chip.
    pub metric: String,
    /// How the value is obtained.
    pub value: Expr,
    /// `None`: the collected counter's own unit; else this one (empty for derived metrics,
    /// the attribute's for attributes).
    pub unit: Option<String>,
}

/// A launch or device attribute that Nsight Compute reports as a `launch__*` or
/// `device__attribute_*` metric, taken from kreplay's dispatch, kernel and device records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Attribute {
    GridSize,
    BlockSize,
    ThreadCount,
    RegistersPerThread,
    SharedMemPerBlockStatic,
    SharedMemPerBlockDynamic,
    SmCount,
    MaxThreadsPerSm,
    /// Blocks per SM by registers, by warps and by the SM's block limit
    /// ([`crate::occupancy`]).
    OccupancyLimitRegisters,
    OccupancyLimitWarps,
    OccupancyLimitBlocks,
    /// Theoretical occupancy, percent of the SM's warps.
    TheoreticalOccupancy,
    TheoreticalWarpsPerSm,
    /// Grid blocks over the blocks all SMs hold at once.
    WavesPerSm,
    /// Shared memory the driver reserves per block.
    SharedMemPerBlockDriver,
}

impl Attribute {
    /// The attribute Nsight Compute's metric `name` stands for.
    pub fn for_metric(name: &str) -> Option<Attribute> {
        Some(match name {
            "launch__grid_size" => Attribute::GridSize,
            "launch__block_size" => Attribute::BlockSize,
            "launch__thread_count" => Attribute::ThreadCount,
            "launch__registers_per_thread" => Attribute::RegistersPerThread,
            "launch__shared_mem_per_block_static" => Attribute::SharedMemPerBlockStatic,
            "launch__shared_mem_per_block_dynamic" => Attribute::SharedMemPerBlockDynamic,
            "launch__sm_count" | "device__attribute_multiprocessor_count" => Attribute::SmCount,
            "device__attribute_max_threads_per_multi_processor" => Attribute::MaxThreadsPerSm,
            "launch__occupancy_limit_registers" => Attribute::OccupancyLimitRegisters,
            "launch__occupancy_limit_warps" => Attribute::OccupancyLimitWarps,
            "launch__occupancy_limit_blocks" => Attribute::OccupancyLimitBlocks,
            "sm__maximum_warps_per_active_cycle_pct" => Attribute::TheoreticalOccupancy,
            "sm__maximum_warps_avg_per_active_cycle" => Attribute::TheoreticalWarpsPerSm,
            "launch__waves_per_multiprocessor" => Attribute::WavesPerSm,
            "launch__shared_mem_per_block_driver" => Attribute::SharedMemPerBlockDriver,
            _ => return None,
        })
    }

    /// Whether kreplay can give the attribute on `chip`: the occupancy ones need the chip's SM
    /// limits ([`crate::occupancy::limits_of`]).
    pub fn computable_on(self, chip: &str) -> bool {
        !self.is_occupancy() || crate::occupancy::limits_of(chip).is_some()
    }

    fn is_occupancy(self) -> bool {
        matches!(
            self,
            Attribute::OccupancyLimitRegisters
                | Attribute::OccupancyLimitWarps
                | Attribute::OccupancyLimitBlocks
                | Attribute::TheoreticalOccupancy
                | Attribute::TheoreticalWarpsPerSm
                | Attribute::WavesPerSm
                | Attribute::SharedMemPerBlockDriver
        )
    }

    /// Its unit, as Nsight Compute states it.
    pub fn unit(self) -> &'static str {
        match self {
            Attribute::GridSize | Attribute::BlockSize => "",
            Attribute::ThreadCount => "thread",
            Attribute::RegistersPerThread => "register/thread",
            Attribute::SharedMemPerBlockStatic
            | Attribute::SharedMemPerBlockDynamic
            | Attribute::SharedMemPerBlockDriver => "byte/block",
            Attribute::SmCount => "SM",
            Attribute::MaxThreadsPerSm => "thread",
            Attribute::OccupancyLimitRegisters
            | Attribute::OccupancyLimitWarps
            | Attribute::OccupancyLimitBlocks => "block",
            Attribute::TheoreticalOccupancy => "%",
            Attribute::TheoreticalWarpsPerSm => "warp",
            Attribute::WavesPerSm => "",
        }
    }

    fn value(
        self,
        dispatch: &DispatchRecord,
        kernel: Option<&KernelSymbol>,
        agent: Option<&AgentInfo>,
    ) -> Option<f64> {
        let product = |v: [u32; 3]| v.iter().map(|&x| f64::from(x)).product::<f64>();
        Some(match self {
            Attribute::GridSize => product(dispatch.grid),
            Attribute::BlockSize => product(dispatch.block),
            Attribute::ThreadCount => product(dispatch.grid) * product(dispatch.block),
            // As Nsight Compute shows it, where the chip's minimum is known.
            Attribute::RegistersPerThread => {
                let registers = kernel?.registers;
                f64::from(
                    match agent.and_then(|a| crate::occupancy::limits_of(&a.chip)) {
                        Some(limits) => crate::occupancy::shown_registers(&limits, registers),
                        None => registers,
                    },
                )
            }
            Attribute::SharedMemPerBlockStatic => f64::from(kernel?.static_shared_bytes),
            Attribute::SharedMemPerBlockDynamic => f64::from(dispatch.dynamic_shared_bytes),
            Attribute::SmCount => f64::from(agent?.sm_count),
            Attribute::MaxThreadsPerSm => match agent?.max_threads_per_sm {
                0 => return None,
                n => f64::from(n),
            },
            _ => return self.occupancy_value(dispatch, kernel?, agent?),
        })
    }

    /// An occupancy attribute's value ([`crate::occupancy`]); `None` on a chip without limits.
    fn occupancy_value(
        self,
        dispatch: &DispatchRecord,
        kernel: &KernelSymbol,
        agent: &AgentInfo,
    ) -> Option<f64> {
        let limits = crate::occupancy::limits_of(&agent.chip)?;
        if self == Attribute::SharedMemPerBlockDriver {
            return Some(f64::from(limits.shared_reserved_per_block));
        }
        let threads = dispatch.block.iter().product::<u32>();
        let shared = kernel.static_shared_bytes + dispatch.dynamic_shared_bytes;
        let o = crate::occupancy::occupancy(&limits, threads, kernel.registers, shared)?;
        Some(match self {
            Attribute::OccupancyLimitRegisters => f64::from(o.by_registers),
            Attribute::OccupancyLimitWarps => f64::from(o.by_warps),
            Attribute::OccupancyLimitBlocks => f64::from(o.by_blocks),
            Attribute::TheoreticalOccupancy => o.percent(),
            Attribute::TheoreticalWarpsPerSm => f64::from(o.warps()),
            Attribute::WavesPerSm => match o.blocks * agent.sm_count {
                0 => return None,
                resident => {
                    dispatch.grid.iter().map(|&x| f64::from(x)).product::<f64>()
                        / f64::from(resident)
                }
            },
            _ => return None,
        })
    }
}

/// How a row's value is obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expr {
    /// A collected counter, by the name it was requested as.
    Counter(String),
    Attribute(Attribute),
    /// A constant; `integer` as Nsight Compute's derived-metric grammar types it (an integer 0
    /// divisor leaves the left-hand side unchanged; so does a measured counter of 0).
    Constant {
        value: f64,
        integer: bool,
    },
    Binary {
        op: BinaryOp,
        lhs: Box<Expr>,
        rhs: Box<Expr>,
    },
    /// Nsight Compute's `nan_as_zero(x)`: 0 where `x` is not a number.
    NanAsZero(Box<Expr>),
    /// Not obtainable in this run, and why (shown as `n/a`).
    Unavailable(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BinaryOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl Expr {
    /// Every counter the expression reads.
    pub fn counters<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Counter(name) => out.push(name),
            Expr::Binary { lhs, rhs, .. } => {
                lhs.counters(out);
                rhs.counters(out);
            }
            Expr::NanAsZero(inner) => inner.counters(out),
            _ => {}
        }
    }

    /// How the value is obtained, in words: `counter`, `attribute`, `derived from a, b`,
    /// `n/a: why`.
    pub fn describe(&self) -> String {
        if let Some(why) = self.unavailable() {
            return format!("n/a: {why}");
        }
        match self {
            Expr::Counter(_) => "counter".to_string(),
            Expr::Attribute(_) => "launch or device attribute".to_string(),
            Expr::Constant { value, .. } => format!("constant {value}"),
            Expr::Binary { .. } | Expr::NanAsZero(_) => {
                let mut counters = Vec::new();
                self.counters(&mut counters);
                counters.dedup();
                format!("derived from {}", counters.join(", "))
            }
            Expr::Unavailable(why) => format!("n/a: {why}"),
        }
    }

    /// The first reason the expression cannot be evaluated in this run, if any.
    pub fn unavailable(&self) -> Option<&str> {
        match self {
            Expr::Unavailable(why) => Some(why),
            Expr::Binary { lhs, rhs, .. } => lhs.unavailable().or_else(|| rhs.unavailable()),
            Expr::NanAsZero(inner) => inner.unavailable(),
            _ => None,
        }
    }

    /// The value for one dispatch; `None` when a counter or attribute is missing.
    pub fn eval(&self, at: &DispatchValues) -> Option<f64> {
        match self {
            Expr::Counter(name) => at.counters.get(name.as_str()).copied(),
            Expr::Attribute(attribute) => attribute.value(at.first, at.kernel, at.agent),
            Expr::Constant { value, .. } => Some(*value),
            Expr::Binary { op, lhs, rhs } => {
                let (a, b) = (lhs.eval(at)?, rhs.eval(at)?);
                Some(match op {
                    BinaryOp::Add => a + b,
                    BinaryOp::Sub => a - b,
                    BinaryOp::Mul => a * b,
                    // Nsight Compute: an integer divisor of 0 leaves the left-hand side. Integer
                    // constants are typed so; a measured counter is taken as an integer (raw
                    // counters are), its value being whole.
                    BinaryOp::Div => match **rhs {
                        Expr::Constant { integer: true, .. } | Expr::Counter(_) if b == 0.0 => a,
                        _ => a / b,
                    },
                })
            }
            Expr::NanAsZero(inner) => inner.eval(at).map(|v| if v.is_nan() { 0.0 } else { v }),
            Expr::Unavailable(_) => None,
        }
    }
}

/// What a dispatch measured over all its passes: every counter once (the pass that collected
/// it), with its first record for the launch attributes.
pub struct DispatchValues<'a> {
    pub first: &'a DispatchRecord,
    pub kernel: Option<&'a KernelSymbol>,
    pub agent: Option<&'a AgentInfo>,
    pub counters: HashMap<&'a str, f64>,
}

/// The dispatches of a process in dispatch order, their passes merged.
fn dispatch_values(process: &ProcessRun) -> Vec<DispatchValues<'_>> {
    let mut by_id: BTreeMap<(u64, u64), DispatchValues<'_>> = BTreeMap::new();
    for record in &process.dispatches {
        let entry = by_id
            .entry((record.dispatch_id, record.agent_id))
            .or_insert_with(|| DispatchValues {
                first: record,
                kernel: process.kernel(record.kernel_id),
                agent: process
                    .agents
                    .iter()
                    .find(|a| a.agent_id == record.agent_id),
                counters: HashMap::new(),
            });
        for sample in &record.counters {
            entry
                .counters
                .entry(sample.name.as_str())
                .or_insert(sample.value);
        }
    }
    by_id.into_values().collect()
}

/// The unit of a row: its own, else the collected counter's as Nsight Compute writes it.
fn row_unit<'a>(row: &'a SectionRow, process: &'a ProcessRun) -> Cow<'a, str> {
    if let Some(unit) = &row.unit {
        return Cow::Borrowed(unit);
    }
    match &row.value {
        Expr::Counter(name) => process
            .counters
            .iter()
            .find(|c| &c.name == name)
            .map_or(Cow::Borrowed(""), |c| ncu_unit(&c.unit, &c.metric)),
        _ => Cow::Borrowed(""),
    }
}

/// CUPTI's unit of `metric` as Nsight Compute's details page writes it, part by part around
/// `/` (seen on the H200 with Nsight Compute 2025.3.1: `percent` is `%`, `nanosecond` `ns`,
/// `gpc_cycle` `cycle`, `gpc_cycle/second` `hz`, `instruction/gpc_cycle` `inst/cycle`,
/// `byte/second` `byte/s`, `branch_target` `branches`, `lrc_sector` `sector`, a `.pct` metric
/// without a unit `%`); other parts as CUPTI states them.
fn ncu_unit<'a>(unit: &'a str, metric: &str) -> Cow<'a, str> {
    if unit.is_empty() {
        let percent = metric.ends_with(".pct") || metric.contains(".pct_of_peak");
        return Cow::Borrowed(if percent { "%" } else { "" });
    }
    let part = |p: &'a str| -> &'a str {
        match p {
            "percent" => "%",
            "nanosecond" => "ns",
            "instruction" => "inst",
            "second" => "s",
            "branch_target" => "branches",
            p if p.ends_with("_cycle") => "cycle",
            p if p.ends_with("_sector") => "sector",
            p => p,
        }
    };
    let written = unit.split('/').map(part).collect::<Vec<_>>().join("/");
    if written == "cycle/s" {
        Cow::Borrowed("hz")
    } else if written == unit {
        Cow::Borrowed(unit)
    } else {
        Cow::Owned(written)
    }
}

/// `v` as the sections page prints it: base units, no thousands separators, the shortest digits
/// that read back the same; `n/a` when it could not be obtained.
fn value_text(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => shortest(v),
        _ => "n/a".to_string(),
    }
}

/// Nsight Compute's compute capability of a chip (`GH100` → 9.0), when known.
pub fn chip_compute_capability(chip: &str) -> Option<(u32, u32)> {
    let chip = chip.to_ascii_uppercase();
    Some(match chip.as_str() {
        "GV100" => (7, 0),
        "GV11B" => (7, 2),
        "GA100" => (8, 0),
        "GA10B" => (8, 7),
        "GH100" => (9, 0),
        "GB100" | "GB102" => (10, 0),
        "GB110" => (10, 3),
        "GB10B" => (11, 0),
        "GB20B" => (12, 1),
        c if c.starts_with("TU") => (7, 5),
        c if c.starts_with("GA10") => (8, 6),
        c if c.starts_with("AD10") => (8, 9),
        c if c.starts_with("GB20") => (12, 0),
        _ => return None,
    })
}

/// The architecture number section filters compare (`CC_90`: 90) of a chip, when known.
pub fn chip_arch(chip: &str) -> Option<u32> {
    chip_compute_capability(chip).map(|(major, minor)| major * 10 + minor)
}

fn dims(v: [u32; 3]) -> String {
    format!("({}, {}, {})", v[0], v[1], v[2])
}

/// Nsight Compute's `--csv --page details` columns.
const COLUMNS: [&str; 15] = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Section Name",
    "Metric Name",
    "Metric Unit",
    "Metric Value",
];

/// One row's value for one dispatch, as the JSON output lists it (`kreplay.sections`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SectionValue<'a> {
    pub dispatch_id: u64,
    pub section: &'a str,
    pub label: &'a str,
    pub metric: &'a str,
    pub unit: Cow<'a, str>,
    /// `None` where it could not be obtained (`n/a` in the CSV).
    pub value: Option<f64>,
}

/// Every row of the process's sections for every dispatch, in dispatch order.
pub fn section_values(process: &ProcessRun) -> Vec<SectionValue<'_>> {
    let mut out = Vec::new();
    if process.process.sections.is_empty() {
        return out;
    }
    for at in dispatch_values(process) {
        for section in &process.process.sections {
            for row in &section.rows {
                out.push(SectionValue {
                    dispatch_id: at.first.dispatch_id,
                    section: &section.display_name,
                    label: &row.label,
                    metric: &row.metric,
                    unit: row_unit(row, process),
                    value: row.value.eval(&at).filter(|v| v.is_finite()),
                });
            }
        }
    }
    out
}

/// Whether any process of `run` was asked for sections.
pub fn has_sections(run: &RunData) -> bool {
    run.processes.iter().any(|p| !p.process.sections.is_empty())
}

/// Writes `<name>_sections.csv` in `dir`: one line per dispatch, section of its process and row.
/// `ID` counts the dispatches of the run from 0 in dispatch order, process by process, as
/// Nsight Compute numbers profiled kernels.
pub fn write_sections_csv(run: &RunData, dir: &Path, name: &str) -> Result<PathBuf, FormatError> {
    let path = output_path(dir, name, suffix::SECTIONS)?;
    csv_file(path, &COLUMNS, |csv| {
        let mut id = 0u64;
        for process in &run.processes {
            let program = process.process.program_name();
            for at in dispatch_values(process) {
                let kernel = at.kernel.map(|k| k.demangled_name.as_str()).unwrap_or("");
                let cc = at
                    .agent
                    .and_then(|a| chip_compute_capability(&a.chip))
                    .map(|(major, minor)| format!("{major}.{minor}"))
                    .unwrap_or_default();
                let fixed = [
                    id.to_string(),
                    process.process.pid.to_string(),
                    program.to_string(),
                    process.process.hostname.clone(),
                    kernel.to_string(),
                    String::new(),
                    at.first.stream_id.to_string(),
                    dims(at.first.block),
                    dims(at.first.grid),
                    at.first.agent_id.to_string(),
                    cc,
                ];
                for section in &process.process.sections {
                    for row in &section.rows {
                        let line: Vec<String> = fixed
                            .iter()
                            .map(String::as_str)
                            .chain([
                                section.display_name.as_str(),
                                row.label.as_str(),
                                &row_unit(row, process),
                                &value_text(row.value.eval(&at)),
                            ])
                            .map(quoted)
                            .collect();
                        csv.row(&line)?;
                    }
                }
                id += 1;
            }
        }
        Ok(())
    })
}

/// Per kernel (by name, first dispatched first) and section: each row's minimum, maximum and
/// average over the kernel's dispatches, as `ncu --print-summary per-kernel` shows them.
pub fn render_sections_summary(run: &RunData) -> String {
    let mut text = String::new();
    for process in &run.processes {
        let sections = &process.process.sections;
        if sections.is_empty() {
            continue;
        }
        let values = dispatch_values(process);
        let mut kernels: Vec<(&str, Vec<&DispatchValues<'_>>)> = Vec::new();
        for at in &values {
            let name = at.kernel.map(|k| k.demangled_name.as_str()).unwrap_or("?");
            match kernels.iter_mut().find(|(n, _)| *n == name) {
                Some((_, list)) => list.push(at),
                None => kernels.push((name, vec![at])),
            }
        }
        for (name, list) in kernels {
            let first = list[0].first;
            text.push_str(&format!(
                "  {name} {} x {}, Device {}, Invocations {} (process {})\n",
                dims(first.grid),
                dims(first.block),
                first.agent_id,
                list.len(),
                process.process.pid
            ));
            for section in sections {
                text.push_str(&format!("    Section: {}\n", section.display_name));
                let mut lines = vec![[
                    "Metric Name".to_string(),
                    "Metric Unit".to_string(),
                    "Minimum".to_string(),
                    "Maximum".to_string(),
                    "Average".to_string(),
                ]];
                for row in &section.rows {
                    let seen: Vec<f64> = list
                        .iter()
                        .filter_map(|at| row.value.eval(at))
                        .filter(|v| v.is_finite())
                        .collect();
                    let (min, max, avg) = if seen.is_empty() {
                        (None, None, None)
                    } else {
                        let min = seen.iter().copied().fold(f64::INFINITY, f64::min);
                        let max = seen.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        (
                            Some(min),
                            Some(max),
                            Some(seen.iter().sum::<f64>() / seen.len() as f64),
                        )
                    };
                    lines.push([
                        row.label.clone(),
                        row_unit(row, process).to_string(),
                        value_text(min),
                        value_text(max),
                        value_text(avg),
                    ]);
                }
                let widths: Vec<usize> = (0..5)
                    .map(|c| {
                        lines
                            .iter()
                            .map(|l| l[c].chars().count())
                            .max()
                            .unwrap_or(0)
                    })
                    .collect();
                for line in &lines {
                    let cells: Vec<String> = line
                        .iter()
                        .zip(&widths)
                        .enumerate()
                        .map(|(c, (cell, &w))| {
                            if c < 2 {
                                format!("{cell:<w$}")
                            } else {
                                format!("{cell:>w$}")
                            }
                        })
                        .collect();
                    text.push_str(&format!("    {}\n", cells.join("  ").trim_end()));
                }
            }
        }
    }
    text
}

#[cfg(test)]
mod tests;
