//! rocprofv3's CSV files: `counter_collection.csv`, `kernel_trace.csv`, `agent_info.csv`, plus our
//! `replay_cost.csv`. Written the way rocprofv3's encoder writes them (`csv.hpp`): every header
//! quoted, string values quoted, numbers bare, counter values `%f`-style from 1 up and
//! `%.8e`-style below.

use crate::csv_file::{csv_file, Csv};
use crate::error::FormatError;
use crate::facts::{grid_threads, kernel_facts};
use crate::files::{output_path, suffix};
use crate::numbers::{quoted, scientific};
use crate::run::RunData;
use std::io;
use std::path::{Path, PathBuf};

mod agent_info;
mod api_trace;
mod columns;
mod marker_trace;
mod memory_trace;

use agent_info::agent_info_row;
use columns::{
    AGENT_INFO_COLUMNS, COUNTER_COLLECTION_COLUMNS, KERNEL_TRACE_COLUMNS, REPLAY_COST_COLUMNS,
};

/// A counter value as rocprofv3 prints it: `262144.000000` from 1 up (`std::fixed`, precision 6),
/// `5.00000000e-01` below 1, zero and negatives included (`std::scientific`, precision 8).
pub(crate) fn format_counter_value(value: f64) -> String {
    if value.is_finite() && value >= 1.0 {
        format!("{value:.6}")
    } else {
        scientific(value, 8)
    }
}

/// "Agent N", as rocprofv3 writes agent ids in CSV.
pub(crate) fn agent_label(agent_id: u64) -> String {
    format!("Agent {agent_id}")
}

pub(crate) fn product(values: [u64; 3]) -> u64 {
    values[0] * values[1] * values[2]
}

/// Writes the CSV files of `run`; returns the paths written.
pub(crate) fn write_csv(
    run: &RunData,
    dir: &Path,
    name: &str,
) -> Result<Vec<PathBuf>, FormatError> {
    let mut written = Vec::new();
    // A run that collected counters has the file, rows or not (rocprofv3's); a trace-only run
    // (`--kernel-trace` alone) does not.
    let collected_counters = run
        .processes
        .iter()
        .any(|p| !p.counters.is_empty() || p.dispatches.iter().any(|d| !d.counters.is_empty()));
    if collected_counters {
        written.push(csv_file(
            output_path(dir, name, suffix::COUNTER_COLLECTION)?,
            &COUNTER_COLLECTION_COLUMNS,
            |out| counter_collection_rows(run, out),
        )?);
    }
    if run.processes.iter().any(|p| !p.dispatches.is_empty()) {
        written.push(csv_file(
            output_path(dir, name, suffix::KERNEL_TRACE)?,
            &KERNEL_TRACE_COLUMNS,
            |out| kernel_trace_rows(run, out),
        )?);
    }
    if run.processes.iter().any(|p| !p.agents.is_empty()) {
        written.push(csv_file(
            output_path(dir, name, suffix::AGENT_INFO)?,
            &AGENT_INFO_COLUMNS,
            |out| {
                for process in &run.processes {
                    for agent in &process.agents {
                        out.row(&agent_info_row(agent))?;
                    }
                }
                Ok(())
            },
        )?);
    }
    written.extend(marker_trace::write_marker_trace(run, dir, name)?);
    written.extend(api_trace::write_api_trace(run, dir, name)?);
    written.extend(memory_trace::write_memory_traces(run, dir, name)?);
    if run.processes.iter().any(|p| !p.costs.is_empty()) {
        written.push(csv_file(
            output_path(dir, name, suffix::REPLAY_COST)?,
            &REPLAY_COST_COLUMNS,
            |out| replay_cost_rows(run, out),
        )?);
    }
    Ok(written)
}

fn counter_collection_rows(run: &RunData, out: &mut Csv) -> io::Result<()> {
    for process in &run.processes {
        for dispatch in &process.dispatches {
            let facts = kernel_facts(process, dispatch);
            for sample in &dispatch.counters {
                out.row(&[
                    dispatch.correlation_id.to_string(),
                    dispatch.dispatch_id.to_string(),
                    quoted(&agent_label(dispatch.agent_id)),
                    dispatch.stream_id.to_string(),
                    dispatch.pid.to_string(),
                    dispatch.tid.to_string(),
                    product(grid_threads(dispatch)).to_string(),
                    dispatch.kernel_id.to_string(),
                    quoted(&facts.name),
                    product(dispatch.block.map(u64::from)).to_string(),
                    facts.lds_block_size.to_string(),
                    facts.scratch_size.to_string(),
                    facts.vgpr_count.to_string(),
                    "0".to_string(),
                    "0".to_string(),
                    quoted(&sample.name),
                    format_counter_value(sample.value),
                    dispatch.start_ns.to_string(),
                    dispatch.end_ns.to_string(),
                ])?;
            }
        }
    }
    Ok(())
}

fn kernel_trace_rows(run: &RunData, out: &mut Csv) -> io::Result<()> {
    for process in &run.processes {
        for dispatch in &process.dispatches {
            let facts = kernel_facts(process, dispatch);
            let grid = grid_threads(dispatch);
            out.row(&[
                quoted("KERNEL_DISPATCH"),
                quoted(&agent_label(dispatch.agent_id)),
                dispatch.stream_id.to_string(),
                dispatch.stream_id.to_string(),
                dispatch.tid.to_string(),
                dispatch.dispatch_id.to_string(),
                dispatch.kernel_id.to_string(),
                quoted(&facts.name),
                dispatch.correlation_id.to_string(),
                dispatch.start_ns.to_string(),
                dispatch.end_ns.to_string(),
                facts.lds_block_size.to_string(),
                facts.scratch_size.to_string(),
                facts.vgpr_count.to_string(),
                "0".to_string(),
                "0".to_string(),
                dispatch.block[0].to_string(),
                dispatch.block[1].to_string(),
                dispatch.block[2].to_string(),
                grid[0].to_string(),
                grid[1].to_string(),
                grid[2].to_string(),
            ])?;
        }
    }
    Ok(())
}

fn replay_cost_rows(run: &RunData, out: &mut Csv) -> io::Result<()> {
    for process in &run.processes {
        for cost in &process.costs {
            let pass_ns: Vec<String> = cost.pass_ns.iter().map(u64::to_string).collect();
            let total = cost.drain_ns
                + cost.snapshot_ns
                + cost.pass_ns.iter().sum::<u64>()
                + cost.restore_ns
                + cost.timing_execution_ns;
            out.row(&[
                process.process.pid.to_string(),
                cost.dispatch_id.to_string(),
                quoted(&agent_label(cost.agent_id)),
                quoted(cost.outcome.as_str()),
                cost.passes.to_string(),
                cost.bytes_tracked.to_string(),
                cost.bytes_snapshotted.to_string(),
                cost.bytes_restored.to_string(),
                quoted(cost.staging.as_str()),
                cost.drain_ns.to_string(),
                cost.snapshot_ns.to_string(),
                quoted(&pass_ns.join(";")),
                cost.restore_ns.to_string(),
                total.to_string(),
                quoted(cost.cache.as_str()),
                cost.sm_clock_mhz[0].to_string(),
                cost.sm_clock_mhz[1].to_string(),
                cost.memory_clock_mhz[0].to_string(),
                cost.memory_clock_mhz[1].to_string(),
                cost.timing_execution_ns.to_string(),
            ])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
