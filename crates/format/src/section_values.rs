//! The values of a run's sections ([`crate::section_spec`]): each row evaluated for each dispatch,
//! its passes merged, with the unit Nsight Compute writes. What the sections CSV, the sections
//! summary and the JSON's `kreplay.sections` show.

use crate::records::{AgentInfo, DispatchRecord, KernelSymbol};
use crate::run::{ProcessRun, RunData};
use crate::section_spec::{Attribute, BinaryOp, Expr, SectionRow};
use serde::Serialize;
use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

impl Attribute {
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

impl Expr {
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
pub(crate) fn dispatch_values(process: &ProcessRun) -> Vec<DispatchValues<'_>> {
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
pub(crate) fn row_unit<'a>(row: &'a SectionRow, process: &'a ProcessRun) -> Cow<'a, str> {
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
pub(crate) fn ncu_unit<'a>(unit: &'a str, metric: &str) -> Cow<'a, str> {
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
