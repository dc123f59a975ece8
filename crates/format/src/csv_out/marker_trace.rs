//! `marker_api_trace.csv` (`--marker-trace`): one row per marker range or mark, with rocprofv3's
//! columns. `Domain` is the records' category (`MARKER_CORE_RANGE_API`, as rocprofv3 writes its
//! ROCTx ranges); `Function` the message (the NVTX domain and category are in the database's
//! `regions` view).

use crate::csv_file::{csv_file, Csv};
use crate::error::FormatError;
use crate::files::{output_path, suffix};
use crate::markers::MARKER_CATEGORY;
use crate::numbers::quoted;
use crate::run::{RunData, TraceKind};
use std::io;
use std::path::{Path, PathBuf};

/// rocprofv3's columns of `marker_api_trace.csv` (`generateCSV.cpp`).
pub(crate) const MARKER_API_TRACE_COLUMNS: [&str; 7] = [
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// Writes the file when the run recorded any marker; returns its path.
pub(super) fn write_marker_trace(
    run: &RunData,
    dir: &Path,
    name: &str,
) -> Result<Option<PathBuf>, FormatError> {
    if !run
        .processes
        .iter()
        .any(|p| p.has_traced(TraceKind::Markers))
    {
        return Ok(None);
    }
    let path = output_path(dir, name, suffix::MARKER_API_TRACE)?;
    csv_file(path, &MARKER_API_TRACE_COLUMNS, |out| rows(run, out)).map(Some)
}

fn rows(run: &RunData, out: &mut Csv) -> io::Result<()> {
    for process in &run.processes {
        for marker in process.each_marker() {
            let marker = marker.map_err(io::Error::other)?;
            out.row(&[
                quoted(MARKER_CATEGORY),
                quoted(marker.function()),
                marker.pid.to_string(),
                marker.tid.to_string(),
                marker.id.to_string(),
                marker.start_ns.to_string(),
                marker.end_ns.to_string(),
            ])?;
        }
    }
    Ok(())
}
