//! `memory_copy_trace.csv` (`--memory-copy-trace`) and `memory_allocation_trace.csv`
//! (`--memory-allocation-trace`): one row per copy, allocation or free, with rocprofv3's columns
//! (`generateCSV.cpp`). Agents are labelled as the other files label them (`Agent N`, N the
//! device ordinal); host memory is `CPU 0` (rocprofv3's type-indexed label of the CPU agent).
//! rocprofv3's copy file has no size column: the bytes, addresses and the call's name are in
//! the database's `memory_copies` view.

use super::agent_label;
use crate::csv_file::{csv_file, Csv};
use crate::error::FormatError;
use crate::files::{output_path, suffix};
use crate::memory::{MEMORY_ALLOCATION_CATEGORY, MEMORY_COPY_CATEGORY};
use crate::numbers::quoted;
use crate::run::{RunData, TraceKind};
use std::io;
use std::path::{Path, PathBuf};

/// rocprofv3's columns of `memory_copy_trace.csv`.
pub(crate) const MEMORY_COPY_TRACE_COLUMNS: [&str; 8] = [
    "Kind",
    "Direction",
    "Stream_Id",
    "Source_Agent_Id",
    "Destination_Agent_Id",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// rocprofv3's columns of `memory_allocation_trace.csv`.
pub(crate) const MEMORY_ALLOCATION_TRACE_COLUMNS: [&str; 8] = [
    "Kind",
    "Operation",
    "Agent_Id",
    "Allocation_Size",
    "Address",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
];

/// The label of one side of a copy or allocation: its device's, or the host's.
fn side_label(agent: Option<u64>) -> String {
    agent.map_or_else(|| "CPU 0".to_string(), agent_label)
}

/// Writes each file when the run recorded any of its records; returns their paths.
pub(super) fn write_memory_traces(
    run: &RunData,
    dir: &Path,
    name: &str,
) -> Result<Vec<PathBuf>, FormatError> {
    let mut written = Vec::new();
    if run
        .processes
        .iter()
        .any(|p| p.has_traced(TraceKind::Copies))
    {
        let path = output_path(dir, name, suffix::MEMORY_COPY_TRACE)?;
        written.push(csv_file(path, &MEMORY_COPY_TRACE_COLUMNS, |out| {
            copy_rows(run, out)
        })?);
    }
    if run
        .processes
        .iter()
        .any(|p| p.has_traced(TraceKind::Allocations))
    {
        let path = output_path(dir, name, suffix::MEMORY_ALLOCATION_TRACE)?;
        written.push(csv_file(path, &MEMORY_ALLOCATION_TRACE_COLUMNS, |out| {
            allocation_rows(run, out)
        })?);
    }
    Ok(written)
}

fn copy_rows(run: &RunData, out: &mut Csv) -> io::Result<()> {
    for process in &run.processes {
        for copy in process.each_copy() {
            let copy = copy.map_err(io::Error::other)?;
            out.row(&[
                quoted(MEMORY_COPY_CATEGORY),
                quoted(copy.direction.as_str()),
                copy.stream_id.to_string(),
                quoted(&side_label(copy.src_agent)),
                quoted(&side_label(copy.dst_agent)),
                copy.id.to_string(),
                copy.start_ns.to_string(),
                copy.end_ns.to_string(),
            ])?;
        }
    }
    Ok(())
}

fn allocation_rows(run: &RunData, out: &mut Csv) -> io::Result<()> {
    for process in &run.processes {
        for allocation in process.each_allocation() {
            let allocation = allocation.map_err(io::Error::other)?;
            // rocprofv3 names the agent of allocations only.
            let agent = if allocation.operation.allocates() {
                side_label(allocation.agent_id)
            } else {
                String::new()
            };
            out.row(&[
                quoted(MEMORY_ALLOCATION_CATEGORY),
                quoted(allocation.operation.as_str()),
                quoted(&agent),
                allocation.size.to_string(),
                quoted(&format!("{:#018x}", allocation.address)),
                allocation.id.to_string(),
                allocation.start_ns.to_string(),
                allocation.end_ns.to_string(),
            ])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::files::suffix;
    use crate::run::RunData;

    fn lines(dir: &std::path::Path, tail: &str) -> Vec<String> {
        std::fs::read_to_string(dir.join(format!("out{tail}")))
            .unwrap()
            .lines()
            .map(str::to_string)
            .collect()
    }

    #[test]
    fn copy_and_allocation_files_have_rocprofv3s_columns_and_a_row_per_record() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunData::from_records(crate::testdata::recorded_with_memory());
        super::write_memory_traces(&run, dir.path(), "out").unwrap();
        let copies = lines(dir.path(), suffix::MEMORY_COPY_TRACE);
        assert_eq!(
            copies,
            [
                r#""Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp""#,
                r#""MEMORY_COPY","MEMORY_COPY_HOST_TO_DEVICE",0,"CPU 0","Agent 0",1,5100,5150"#,
                r#""MEMORY_COPY","MEMORY_COPY_DEVICE_TO_HOST",7,"Agent 0","CPU 0",2,5200,5250"#,
                r#""MEMORY_COPY","MEMORY_COPY_DEVICE_TO_DEVICE",7,"Agent 1","Agent 0",3,5300,5350"#,
            ]
        );
        let allocations = lines(dir.path(), suffix::MEMORY_ALLOCATION_TRACE);
        assert_eq!(
            allocations[0],
            r#""Kind","Operation","Agent_Id","Allocation_Size","Address","Correlation_Id","Start_Timestamp","End_Timestamp""#
        );
        assert_eq!(
            allocations[1],
            r#""MEMORY_ALLOCATION","MEMORY_ALLOCATION_ALLOCATE","Agent 0",4096,"0x00007f0000000000",1,4010,4015"#
        );
        assert_eq!(
            allocations[2],
            r#""MEMORY_ALLOCATION","MEMORY_ALLOCATION_ALLOCATE","CPU 0",512,"0x0000000000005000",2,4020,4025"#
        );
        assert!(allocations[4].contains(r#""MEMORY_ALLOCATION_VMEM_ALLOCATE","Agent 0",2097152"#));
        // A free names no agent and no size (rocprofv3's).
        assert_eq!(
            allocations[7],
            r#""MEMORY_ALLOCATION","MEMORY_ALLOCATION_FREE","",0,"0x0000000000005000",7,4070,4075"#
        );
        assert_eq!(allocations.len(), 8);
    }

    #[test]
    fn a_run_without_copies_or_allocations_has_neither_file() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunData::from_records(crate::testdata::recorded_run(3));
        assert!(super::write_memory_traces(&run, dir.path(), "out")
            .unwrap()
            .is_empty());
    }
}
