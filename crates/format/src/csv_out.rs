//! rocprofv3's CSV files: `counter_collection.csv`, `kernel_trace.csv`, `agent_info.csv`, plus our
//! `replay_cost.csv`. Written the way rocprofv3's encoder writes them (`csv.hpp`): every header
//! quoted, string values quoted, numbers bare, counter values `%f`-style from 1 up and
//! `%.8e`-style below.

use crate::csv_file::{csv_file, Csv};
use crate::error::FormatError;
use crate::facts::{grid_threads, kernel_facts, KernelFacts};
use crate::files::{output_path, suffix};
use crate::numbers::{quoted, scientific};
#[cfg(test)]
use crate::progress::Silent;
use crate::progress::{Ticker, WriteProgress};
use crate::records::DispatchRecord;
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
#[cfg(test)]
pub(crate) fn write_csv(
    run: &RunData,
    dir: &Path,
    name: &str,
) -> Result<Vec<PathBuf>, FormatError> {
    write_csv_with(run, dir, name, &Silent)
}

/// Writes the CSV files of `run`, telling `progress`; returns the paths written. The counter
/// collection and the kernel trace are written together in one pass over the dispatches, the
/// replay costs in one over the costs, read a page at a time.
pub(crate) fn write_csv_with(
    run: &RunData,
    dir: &Path,
    name: &str,
    progress: &dyn WriteProgress,
) -> Result<Vec<PathBuf>, FormatError> {
    let dispatches: u64 = run
        .processes
        .iter()
        .map(|p| p.dispatch_count() as u64)
        .sum();
    let costs: u64 = run.processes.iter().map(|p| p.cost_count() as u64).sum();
    let mut written = Vec::new();
    // A run that collected counters has the file, rows or not (rocprofv3's); a trace-only run
    // (`--kernel-trace` alone) does not.
    let collected_counters = run.processes.iter().any(|p| {
        !p.counters.is_empty()
            || p.each_dispatch()
                .any(|d| d.is_ok_and(|d| !d.counters.is_empty()))
    });
    let has_dispatches = run.processes.iter().any(|p| p.dispatch_count() > 0);
    let counters_path = collected_counters
        .then(|| output_path(dir, name, suffix::COUNTER_COLLECTION))
        .transpose()?;
    let trace_path = has_dispatches
        .then(|| output_path(dir, name, suffix::KERNEL_TRACE))
        .transpose()?;
    if let Some(first) = counters_path.as_ref().or(trace_path.as_ref()) {
        // Both files in one pass over the dispatches.
        let ticker = Ticker::begin(progress, first, dispatches);
        match (counters_path, trace_path) {
            (Some(counters), Some(trace)) => {
                // The trace's own error, if it is what failed (naming the trace, not the
                // counter collection it was written inside).
                let mut trace_error = None;
                let written_both = csv_file(counters.clone(), &COUNTER_COLLECTION_COLUMNS, |c| {
                    csv_file(trace.clone(), &KERNEL_TRACE_COLUMNS, |t| {
                        dispatch_rows(run, Some(c), Some(t), &ticker)
                    })
                    .map(drop)
                    .map_err(|e| {
                        let failed = io::Error::other(e.to_string());
                        trace_error = Some(e);
                        failed
                    })
                });
                if let Some(e) = trace_error {
                    return Err(e);
                }
                written_both?;
                written.extend([counters, trace]);
            }
            (Some(counters), None) => {
                written.push(csv_file(counters, &COUNTER_COLLECTION_COLUMNS, |c| {
                    dispatch_rows(run, Some(c), None, &ticker)
                })?);
            }
            (None, Some(trace)) => {
                written.push(csv_file(trace, &KERNEL_TRACE_COLUMNS, |t| {
                    dispatch_rows(run, None, Some(t), &ticker)
                })?);
            }
            (None, None) => {}
        }
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
    if run.processes.iter().any(|p| p.cost_count() > 0) {
        let path = output_path(dir, name, suffix::REPLAY_COST)?;
        let ticker = Ticker::begin(progress, &path, costs);
        written.push(csv_file(path, &REPLAY_COST_COLUMNS, |out| {
            replay_cost_rows(run, out, &ticker)
        })?);
    }
    Ok(written)
}

/// The rows of the counter collection and the kernel trace, in the files given, in one pass
/// over the dispatches.
fn dispatch_rows(
    run: &RunData,
    mut counters: Option<&mut Csv>,
    mut trace: Option<&mut Csv>,
    ticker: &Ticker,
) -> io::Result<()> {
    for process in &run.processes {
        for dispatch in process.each_dispatch() {
            let dispatch = dispatch.map_err(io::Error::other)?;
            let dispatch = &*dispatch;
            ticker.tick();
            let facts = kernel_facts(process, dispatch);
            if let Some(out) = counters.as_deref_mut() {
                counter_collection_rows(dispatch, &facts, out)?;
            }
            if let Some(out) = trace.as_deref_mut() {
                kernel_trace_row(dispatch, &facts, out)?;
            }
        }
    }
    Ok(())
}

/// A dispatch pass's rows of the counter collection: one per counter.
fn counter_collection_rows(
    dispatch: &DispatchRecord,
    facts: &KernelFacts,
    out: &mut Csv,
) -> io::Result<()> {
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
    Ok(())
}

/// A dispatch pass's row of the kernel trace.
fn kernel_trace_row(
    dispatch: &DispatchRecord,
    facts: &KernelFacts,
    out: &mut Csv,
) -> io::Result<()> {
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
    ])
}

fn replay_cost_rows(run: &RunData, out: &mut Csv, ticker: &Ticker) -> io::Result<()> {
    for process in &run.processes {
        for cost in process.each_cost() {
            let cost = cost.map_err(io::Error::other)?;
            ticker.tick();
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
