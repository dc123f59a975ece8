//! `cuda_api_trace.csv` (`--runtime-trace`, `--sys-trace`): one row per CUDA runtime or driver
//! API call, with the columns of rocprofv3's `hip_api_trace.csv`. `Domain` is the call's
//! category (`CUDA_RUNTIME_API`, `CUDA_DRIVER_API`: rocprofv3's `HIP_RUNTIME_API` and the HSA
//! API beneath it), `Function` the call's name, `Correlation_Id` the id a launch's dispatch
//! shares in `kernel_trace.csv`.

use crate::csv_file::{csv_file, Csv};
use crate::error::FormatError;
use crate::files::{output_path, suffix};
use crate::numbers::quoted;
use crate::run::{RunData, TraceKind};
use std::io;
use std::path::{Path, PathBuf};

/// rocprofv3's columns of `hip_api_trace.csv` (`generateCSV.cpp`, without arguments).
pub(crate) const API_TRACE_COLUMNS: [&str; 7] = [
    "Domain",
    "Function",
    "Process_Id",
    "Thread_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// Writes the file when the run recorded any API call; returns its path.
pub(super) fn write_api_trace(
    run: &RunData,
    dir: &Path,
    name: &str,
) -> Result<Option<PathBuf>, FormatError> {
    if !run
        .processes
        .iter()
        .any(|p| p.has_traced(TraceKind::ApiCalls))
    {
        return Ok(None);
    }
    let path = output_path(dir, name, suffix::CUDA_API_TRACE)?;
    csv_file(path, &API_TRACE_COLUMNS, |out| rows(run, out)).map(Some)
}

fn rows(run: &RunData, out: &mut Csv) -> io::Result<()> {
    for process in &run.processes {
        for call in process.each_api_call_without_args() {
            let call = call.map_err(io::Error::other)?;
            out.row(&[
                quoted(call.domain.category()),
                quoted(&call.function),
                call.pid.to_string(),
                call.tid.to_string(),
                call.correlation_id.to_string(),
                call.start_ns.to_string(),
                call.end_ns.to_string(),
            ])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::{ApiDomain, ApiRecord};

    #[test]
    fn one_row_per_call_with_rocprofv3s_columns() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = RunData::from_records(crate::testdata::recorded_run(3));
        assert_eq!(write_api_trace(&run, dir.path(), "out").unwrap(), None);
        run.processes[0].api_calls.push(ApiRecord {
            correlation_id: 7,
            parent_id: 0,
            domain: ApiDomain::Driver,
            function: "cuLaunchKernel".into(),
            pid: 3,
            tid: 4,
            start_ns: 10,
            end_ns: 20,
            args: Default::default(),
        });
        let path = write_api_trace(&run, dir.path(), "out").unwrap().unwrap();
        assert!(path.ends_with("out_cuda_api_trace.csv"));
        let text = std::fs::read_to_string(path).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            r#""Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp""#
        );
        assert_eq!(
            lines[1],
            r#""CUDA_DRIVER_API","cuLaunchKernel",3,4,7,10,20"#
        );
    }
}
