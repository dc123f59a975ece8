//! rocprofv3's CSV files: `counter_collection.csv`, `kernel_trace.csv`, `agent_info.csv`, plus our
//! `replay_cost.csv`. Written the way rocprofv3's encoder writes them (`csv.hpp`): every header
//! quoted, string values quoted, numbers bare, counter values `%f`-style from 1 up and
//! `%.8e`-style below.

use crate::csv_file::{csv_file, Csv};
use crate::error::FormatError;
use crate::facts::{grid_threads, kernel_facts, KernelFacts};
use crate::files::{output_path, suffix};
use crate::numbers::scientific;
#[cfg(test)]
use crate::progress::Silent;
use crate::progress::{Ticker, WriteProgress};
use crate::records::DispatchRecord;
use crate::run::RunData;
use std::io::{self, Write};
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
#[cfg(test)]
pub(crate) fn format_counter_value(value: f64) -> String {
    let mut text = Vec::new();
    counter_value_into(&mut text, value);
    String::from_utf8(text).expect("formatted numbers are ASCII")
}

/// [`format_counter_value`] appended to `out`.
fn counter_value_into(out: &mut Vec<u8>, value: f64) {
    if value.is_finite() && value >= 1.0 {
        if value.fract() == 0.0 && value < 2f64.powi(63) {
            // An integer (most counters), exactly as `{:.6}` prints it, without the exact
            // float formatting that took an eighth of the CSV writer.
            out.extend_from_slice(itoa::Buffer::new().format(value as u64).as_bytes());
            out.extend_from_slice(b".000000");
        } else {
            // Writing into a Vec cannot fail.
            let _ = write!(out, "{value:.6}");
        }
    } else {
        out.extend_from_slice(scientific(value, 8).as_bytes());
    }
}

/// `"Agent N"`, quoted, appended to `out`.
fn agent_label_into(out: &mut Vec<u8>, agent_id: u64) {
    out.extend_from_slice(b"\"Agent ");
    out.extend_from_slice(itoa::Buffer::new().format(agent_id).as_bytes());
    out.push(b'"');
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
        out.int(dispatch.correlation_id)
            .int(dispatch.dispatch_id)
            .with(|line| agent_label_into(line, dispatch.agent_id))
            .int(dispatch.stream_id)
            .int(dispatch.pid)
            .int(dispatch.tid)
            .int(product(grid_threads(dispatch)))
            .int(dispatch.kernel_id)
            .text(facts.name)
            .int(product(dispatch.block.map(u64::from)))
            .int(facts.lds_block_size)
            .int(facts.scratch_size)
            .int(facts.vgpr_count)
            .raw("0")
            .raw("0")
            .text(&sample.name)
            .with(|line| counter_value_into(line, sample.value))
            .int(dispatch.start_ns)
            .int(dispatch.end_ns)
            .end()?;
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
    out.raw("\"KERNEL_DISPATCH\"")
        .with(|line| agent_label_into(line, dispatch.agent_id))
        .int(dispatch.stream_id)
        .int(dispatch.stream_id)
        .int(dispatch.tid)
        .int(dispatch.dispatch_id)
        .int(dispatch.kernel_id)
        .text(facts.name)
        .int(dispatch.correlation_id)
        .int(dispatch.start_ns)
        .int(dispatch.end_ns)
        .int(facts.lds_block_size)
        .int(facts.scratch_size)
        .int(facts.vgpr_count)
        .raw("0")
        .raw("0")
        .int(dispatch.block[0])
        .int(dispatch.block[1])
        .int(dispatch.block[2])
        .int(grid[0])
        .int(grid[1])
        .int(grid[2])
        .end()
}

fn replay_cost_rows(run: &RunData, out: &mut Csv, ticker: &Ticker) -> io::Result<()> {
    for process in &run.processes {
        for cost in process.each_cost() {
            let cost = cost.map_err(io::Error::other)?;
            ticker.tick();
            let total = cost.drain_ns
                + cost.snapshot_ns
                + cost.pass_ns.iter().sum::<u64>()
                + cost.restore_ns
                + cost.timing_execution_ns;
            out.int(process.process.pid)
                .int(cost.dispatch_id)
                .with(|line| agent_label_into(line, cost.agent_id))
                .text(cost.outcome.as_str())
                .int(cost.passes)
                .int(cost.bytes_tracked)
                .int(cost.bytes_snapshotted)
                .int(cost.bytes_restored)
                .text(cost.staging.as_str())
                .int(cost.drain_ns)
                .int(cost.snapshot_ns)
                .with(|line| {
                    // The passes' times, `;`-separated, quoted.
                    line.push(b'"');
                    let mut digits = itoa::Buffer::new();
                    for (index, ns) in cost.pass_ns.iter().enumerate() {
                        if index > 0 {
                            line.push(b';');
                        }
                        line.extend_from_slice(digits.format(*ns).as_bytes());
                    }
                    line.push(b'"');
                })
                .int(cost.restore_ns)
                .int(total)
                .text(cost.cache.as_str())
                .int(cost.sm_clock_mhz[0])
                .int(cost.sm_clock_mhz[1])
                .int(cost.memory_clock_mhz[0])
                .int(cost.memory_clock_mhz[1])
                .int(cost.timing_execution_ns)
                .end()?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
