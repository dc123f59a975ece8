//! rocprofv3's familiar counter names (`SQ_WAVES`, `FETCH_SIZE`, …) as NVIDIA metrics.
//!
//! Users coming from `rocprofv3 --pmc SQ_WAVES GRBM_COUNT` can keep their command lines: each
//! alias maps to the NVIDIA metric that counts the same thing, and every output carries the name
//! the user asked for ([`CounterSpec::requested`]). Names that are not aliases pass through as
//! metric names. AMD counters with no NVIDIA counterpart (the scalar unit) are refused with the
//! nearest NVIDIA metric, rather than silently mapped to something else.
//!
//! The table is documented in `docs/counters.md`; a test keeps the two in step.

use crate::config::CounterSpec;

/// What an alias stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AliasTarget {
    /// Collected as this NVIDIA metric.
    Metric(&'static str),
    /// No NVIDIA equivalent; `nearest` is what to ask for instead, if anything.
    Unsupported { nearest: Option<&'static str> },
}

/// One rocprofv3 name and its NVIDIA meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Alias {
    pub name: &'static str,
    pub target: AliasTarget,
    /// How the NVIDIA value differs from AMD's (units, granularity), or why it is unsupported.
    pub note: &'static str,
}

const fn metric(name: &'static str, target: &'static str, note: &'static str) -> Alias {
    Alias {
        name,
        target: AliasTarget::Metric(target),
        note,
    }
}

const fn unsupported(
    name: &'static str,
    nearest: Option<&'static str>,
    note: &'static str,
) -> Alias {
    Alias {
        name,
        target: AliasTarget::Unsupported { nearest },
        note,
    }
}

/// The alias table (rocprofv3.md §4.1–4.2; every metric verified present and single-pass on
/// GH100 by a test in `kreplay-cuda`).
pub const ALIASES: &[Alias] = &[
    metric("SQ_WAVES", "sm__warps_launched.sum", "warps of 32 threads, not wavefronts of 64"),
    metric("Wavefronts", "sm__warps_launched.sum", "as SQ_WAVES"),
    metric("GRBM_COUNT", "gpc__cycles_elapsed.max", "GPC clock cycles elapsed during the kernel"),
    metric("GRBM_GUI_ACTIVE", "gpc__cycles_active.max", "GPC cycles with work in flight"),
    metric(
        "GPUBusy",
        "gpc__cycles_active.max.pct_of_peak_sustained_elapsed",
        "percent, = 100 x GRBM_GUI_ACTIVE / GRBM_COUNT",
    ),
    metric(
        "SQ_INSTS_VALU",
        "smsp__inst_executed.sum",
        "all warp instructions: NVIDIA has no separate scalar unit, so there is no vector-only count",
    ),
    unsupported(
        "SQ_INSTS_SALU",
        Some("smsp__inst_executed_pipe_uniform.sum"),
        "NVIDIA GPUs have no scalar ALU; the nearest is the uniform datapath",
    ),
    unsupported(
        "SQ_INSTS_SMEM",
        None,
        "NVIDIA GPUs have no scalar memory instructions",
    ),
    metric(
        "SQ_INSTS_LDS",
        "smsp__sass_inst_executed_op_shared.sum",
        "shared-memory warp instructions, generic LD/ST included (as AMD includes FLAT)",
    ),
    metric(
        "SQ_INSTS_VMEM_RD",
        "smsp__sass_inst_executed_op_global_ld.sum",
        "global-memory load warp instructions, generic LD included",
    ),
    metric(
        "SQ_INSTS_VMEM_WR",
        "smsp__sass_inst_executed_op_global_st.sum",
        "global-memory store warp instructions, generic ST included",
    ),
    metric(
        "SQ_LDS_BANK_CONFLICT",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        "number of shared-memory bank conflicts, not stall cycles",
    ),
    metric("TCC_HIT", "lts__t_sectors_lookup_hit.sum", "L2 hits counted in 32-byte sectors, not lines"),
    metric("TCC_HIT_sum", "lts__t_sectors_lookup_hit.sum", "as TCC_HIT"),
    metric("TCC_MISS", "lts__t_sectors_lookup_miss.sum", "L2 misses counted in 32-byte sectors"),
    metric("TCC_MISS_sum", "lts__t_sectors_lookup_miss.sum", "as TCC_MISS"),
    unsupported(
        "L2CacheHit",
        None,
        "the NVIDIA hit rate needs 2 hardware passes on GH100, so it cannot be one kernel-replay group; \
         collect TCC_HIT and TCC_MISS and compute hit / (hit + miss)",
    ),
    metric("FETCH_SIZE", "dram__bytes_read.sum", "bytes read from DRAM (HBM), not kilobytes"),
    metric("WRITE_SIZE", "dram__bytes_write.sum", "bytes written to DRAM (HBM), not kilobytes"),
    metric("SQ_WAVE_CYCLES", "sm__warps_active.sum", "warp-cycles: warps in flight summed over cycles"),
    metric(
        "OccupancyPercent",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "achieved occupancy, percent",
    ),
    metric("SQ_BUSY_CU_CYCLES", "sm__cycles_active.sum", "SM cycles with a warp in flight, summed over SMs"),
    metric("SQ_BUSY_CYCLES", "sm__cycles_active.max", "cycles of the busiest SM"),
    metric("SQ_CYCLES", "sm__cycles_elapsed.sum", "SM cycles elapsed, summed over SMs (AMD counts per SIMD)"),
    metric(
        "SQ_VALU_MFMA_BUSY_CYCLES",
        "sm__pipe_tensor_op_hmma_cycles_active.sum",
        "tensor-pipe busy cycles, summed over SMs",
    ),
    unsupported(
        "VALUInsts",
        Some("smsp__inst_executed.sum"),
        "a derived ratio (instructions per wave); collect smsp__inst_executed.sum and sm__warps_launched.sum and divide",
    ),
    unsupported(
        "SALUInsts",
        None,
        "NVIDIA GPUs have no scalar ALU",
    ),
];

/// The alias `name` (case-insensitive: NVIDIA metric names are lower case with `__`, so this
/// never shadows a metric).
pub fn find(name: &str) -> Option<&'static Alias> {
    ALIASES
        .iter()
        .find(|alias| alias.name.eq_ignore_ascii_case(name))
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AliasError {
    #[error("counter '{name}' has no NVIDIA equivalent ({note}){}", nearest_text(.nearest))]
    Unsupported {
        name: String,
        note: &'static str,
        nearest: Option<&'static str>,
    },
}

fn nearest_text(nearest: &Option<&'static str>) -> String {
    match nearest {
        Some(metric) => format!("; the nearest NVIDIA metric is {metric}, ask for it by name"),
        None => "; remove it from the counter list".to_string(),
    }
}

/// The counter the user asked for and the metric to collect: an alias maps to its NVIDIA
/// metric, any other name is taken as a metric name (checked later against the catalog).
pub fn resolve(name: &str) -> Result<CounterSpec, AliasError> {
    let name = name.trim();
    let metric = match find(name) {
        Some(Alias {
            target: AliasTarget::Metric(metric),
            ..
        }) => metric.to_string(),
        Some(Alias {
            target: AliasTarget::Unsupported { nearest },
            note,
            ..
        }) => {
            return Err(AliasError::Unsupported {
                name: name.to_string(),
                note,
                nearest: *nearest,
            })
        }
        None => name.to_string(),
    };
    Ok(CounterSpec {
        requested: name.to_string(),
        metric,
    })
}

#[cfg(test)]
mod tests;
