//! Nsight Compute's sections as a run records them: a [`SectionSpec`] is a section already
//! resolved for the run's chip (the command line reads the section files), each row saying how its
//! value is obtained ([`Expr`]): a collected counter, a launch attribute of the dispatch, an
//! expression over those (Nsight Compute's derived metrics), or nothing (a metric this run cannot
//! give, with the reason). Plain data, carried by [`crate::ProcessInfo`]; the values are computed
//! in `section_values.rs`.

use serde::{Deserialize, Serialize};

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
