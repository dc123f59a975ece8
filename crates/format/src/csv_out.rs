//! rocprofv3's CSV files: `counter_collection.csv`, `kernel_trace.csv`, `agent_info.csv`, plus our
//! `replay_cost.csv`. Written the way rocprofv3's encoder writes them (`csv.hpp`): every header
//! quoted, string values quoted, numbers bare, counter values `%f`-style from 1 up and
//! `%.8e`-style below.

use crate::error::FormatError;
use crate::numbers::{quoted, scientific};
use crate::output::{output_path, suffix, write_file};
use crate::records::*;
use crate::run::{ProcessRun, RunData};
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub(crate) const COUNTER_COLLECTION_COLUMNS: [&str; 19] = [
    "Correlation_Id",
    "Dispatch_Id",
    "Agent_Id",
    "Queue_Id",
    "Process_Id",
    "Thread_Id",
    "Grid_Size",
    "Kernel_Id",
    "Kernel_Name",
    "Workgroup_Size",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Counter_Name",
    "Counter_Value",
    "Start_Timestamp",
    "End_Timestamp",
];

pub(crate) const KERNEL_TRACE_COLUMNS: [&str; 22] = [
    "Kind",
    "Agent_Id",
    "Queue_Id",
    "Stream_Id",
    "Thread_Id",
    "Dispatch_Id",
    "Kernel_Id",
    "Kernel_Name",
    "Correlation_Id",
    "Start_Timestamp",
    "End_Timestamp",
    "LDS_Block_Size",
    "Scratch_Size",
    "VGPR_Count",
    "Accum_VGPR_Count",
    "SGPR_Count",
    "Workgroup_Size_X",
    "Workgroup_Size_Y",
    "Workgroup_Size_Z",
    "Grid_Size_X",
    "Grid_Size_Y",
    "Grid_Size_Z",
];

pub(crate) const AGENT_INFO_COLUMNS: [&str; 53] = [
    "Node_Id",
    "Logical_Node_Id",
    "Agent_Type",
    "Cpu_Cores_Count",
    "Simd_Count",
    "Cpu_Core_Id_Base",
    "Simd_Id_Base",
    "Max_Waves_Per_Simd",
    "Lds_Size_In_Kb",
    "Gds_Size_In_Kb",
    "Num_Gws",
    "Wave_Front_Size",
    "Num_Xcc",
    "Cu_Count",
    "Array_Count",
    "Num_Shader_Banks",
    "Simd_Arrays_Per_Engine",
    "Cu_Per_Simd_Array",
    "Simd_Per_Cu",
    "Max_Slots_Scratch_Cu",
    "Gfx_Target_Version",
    "Vendor_Id",
    "Device_Id",
    "Location_Id",
    "Domain",
    "Drm_Render_Minor",
    "Num_Sdma_Engines",
    "Num_Sdma_Xgmi_Engines",
    "Num_Sdma_Queues_Per_Engine",
    "Num_Cp_Queues",
    "Max_Engine_Clk_Ccompute",
    "Max_Engine_Clk_Fcompute",
    "Sdma_Fw_Version",
    "Fw_Version",
    "Capability",
    "Cu_Per_Engine",
    "Max_Waves_Per_Cu",
    "Family_Id",
    "Workgroup_Max_Size",
    "Grid_Max_Size",
    "Local_Mem_Size",
    "Hive_Id",
    "Gpu_Id",
    "Workgroup_Max_Dim_X",
    "Workgroup_Max_Dim_Y",
    "Workgroup_Max_Dim_Z",
    "Grid_Max_Dim_X",
    "Grid_Max_Dim_Y",
    "Grid_Max_Dim_Z",
    "Name",
    "Vendor_Name",
    "Product_Name",
    "Model_Name",
];

pub(crate) const REPLAY_COST_COLUMNS: [&str; 20] = [
    "Process_Id",
    "Dispatch_Id",
    "Agent_Id",
    "Outcome",
    "Passes",
    "Bytes_Tracked",
    "Bytes_Snapshotted",
    "Bytes_Restored",
    "Staging",
    "Drain_Ns",
    "Snapshot_Ns",
    "Pass_Ns",
    "Restore_Ns",
    "Total_Ns",
    "Cache",
    "Sm_Clock_Min_Mhz",
    "Sm_Clock_Max_Mhz",
    "Memory_Clock_Min_Mhz",
    "Memory_Clock_Max_Mhz",
    "Timing_Execution_Ns",
];

/// NVIDIA's PCI vendor id (agent_info's Vendor_Id).
const NVIDIA_PCI_VENDOR_ID: u32 = 0x10de;

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

/// Work-items along each axis (rocprofv3's grid counts work-items, CUDA's counts blocks).
pub(crate) fn grid_threads(dispatch: &DispatchRecord) -> [u64; 3] {
    [0, 1, 2].map(|axis| u64::from(dispatch.grid[axis]) * u64::from(dispatch.block[axis]))
}

pub(crate) fn product(values: [u64; 3]) -> u64 {
    values[0] * values[1] * values[2]
}

/// The per-dispatch kernel facts every file shows, NVIDIA fields mapped onto rocprofv3's names.
pub(crate) struct KernelFacts {
    pub name: String,
    /// Static + dynamic shared memory per block, bytes.
    pub lds_block_size: u64,
    /// Local memory per thread, bytes.
    pub scratch_size: u64,
    /// Registers per thread.
    pub vgpr_count: u64,
}

pub(crate) fn kernel_facts(run: &ProcessRun, dispatch: &DispatchRecord) -> KernelFacts {
    let symbol = run.kernel(dispatch.kernel_id);
    KernelFacts {
        name: symbol.map(|s| s.demangled_name.clone()).unwrap_or_default(),
        lds_block_size: u64::from(symbol.map_or(0, |s| s.static_shared_bytes))
            + u64::from(dispatch.dynamic_shared_bytes),
        scratch_size: u64::from(symbol.map_or(0, |s| s.local_bytes)),
        vgpr_count: u64::from(symbol.map_or(0, |s| s.registers)),
    }
}

/// A CSV file being written.
pub(crate) struct Csv<'a>(&'a mut BufWriter<File>);

impl Csv<'_> {
    /// Writes one line: the fields, comma-separated.
    pub(crate) fn row(&mut self, fields: &[String]) -> io::Result<()> {
        writeln!(self.0, "{}", fields.join(","))
    }
}

/// Writes the CSV file `path` atomically: the quoted header of `columns`, then what `rows` writes.
pub(crate) fn csv_file(
    path: PathBuf,
    columns: &[&str],
    rows: impl FnOnce(&mut Csv) -> io::Result<()>,
) -> Result<PathBuf, FormatError> {
    write_file(&path, |out| {
        let mut csv = Csv(out);
        let header: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        csv.row(&header)?;
        rows(&mut csv)
    })?;
    Ok(path)
}

/// Writes the CSV files of `run`; returns the paths written.
pub(crate) fn write_csv(
    run: &RunData,
    dir: &Path,
    name: &str,
) -> Result<Vec<PathBuf>, FormatError> {
    let mut written = vec![csv_file(
        output_path(dir, name, suffix::COUNTER_COLLECTION)?,
        &COUNTER_COLLECTION_COLUMNS,
        |out| counter_collection_rows(run, out),
    )?];
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

/// PCI "domain:bus:device" (hex) → (domain, rocprofv3's Location_Id = bus << 8 | device << 3).
fn pci_ids(location: &str) -> (u64, u64) {
    let parts: Vec<u64> = location
        .split([':', '.'])
        .map(|part| u64::from_str_radix(part.trim(), 16).unwrap_or(0))
        .collect();
    match parts.as_slice() {
        [domain, bus, device, ..] => (*domain, (bus << 8) | (device << 3)),
        _ => (0, 0),
    }
}

/// One agent_info row: the columns with an NVIDIA equivalent are filled, the others are 0 or
/// empty. CUDA's launch limits (1024 threads per block, grid 2^31-1 × 65535 × 65535) hold for
/// every GPU CUDA 13 supports.
fn agent_info_row(agent: &AgentInfo) -> Vec<String> {
    let (domain, location_id) = pci_ids(&agent.pci_location);
    let mut row: Vec<String> = Vec::with_capacity(AGENT_INFO_COLUMNS.len());
    for column in AGENT_INFO_COLUMNS {
        let value = match column {
            "Node_Id" | "Logical_Node_Id" | "Gpu_Id" => agent.agent_id.to_string(),
            "Agent_Type" => quoted("GPU"),
            "Wave_Front_Size" => "32".to_string(),
            "Cu_Count" => agent.sm_count.to_string(),
            "Simd_Count" => agent.simd_count().to_string(),
            "Simd_Per_Cu" if agent.sm_count > 0 => AgentInfo::SIMDS_PER_SM.to_string(),
            "Max_Waves_Per_Cu" => agent.max_warps_per_sm().to_string(),
            "Max_Waves_Per_Simd" => agent.max_warps_per_simd().to_string(),
            "Lds_Size_In_Kb" => (agent.shared_memory_per_sm_bytes / 1024).to_string(),
            "Num_Xcc" => "1".to_string(),
            "Vendor_Id" => NVIDIA_PCI_VENDOR_ID.to_string(),
            "Location_Id" => location_id.to_string(),
            "Domain" => domain.to_string(),
            "Workgroup_Max_Size" => "1024".to_string(),
            "Workgroup_Max_Dim_X" | "Workgroup_Max_Dim_Y" => "1024".to_string(),
            "Workgroup_Max_Dim_Z" => "64".to_string(),
            "Grid_Max_Dim_X" => "2147483647".to_string(),
            "Grid_Max_Dim_Y" | "Grid_Max_Dim_Z" => "65535".to_string(),
            "Local_Mem_Size" => agent.global_memory_bytes.to_string(),
            "Name" => quoted(&agent.chip),
            "Vendor_Name" => quoted(crate::db::vendor_for_chip(&agent.chip)),
            "Product_Name" | "Model_Name" => quoted(&agent.name),
            _ => "0".to_string(),
        };
        row.push(value);
    }
    row
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::read_databases;
    use crate::output::{write_outputs, OutputFormat};
    use crate::testdata::recorded_run;
    use crate::{DbWriter, RecordSink};

    /// The recorded run, through the database, into CSV; returns (dir, db path, csv paths).
    fn csv_of_recorded_run() -> (tempfile::TempDir, PathBuf, Vec<PathBuf>) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("1.db");
        let writer = DbWriter::create(&db, || {}).unwrap();
        for record in recorded_run(31) {
            writer.send(record);
        }
        writer.finish().unwrap();
        let run = read_databases(std::slice::from_ref(&db)).unwrap();
        let written = write_outputs(
            &run,
            &dir.path().join("out"),
            "host/31",
            &[OutputFormat::Csv],
        )
        .unwrap();
        (dir, db, written)
    }

    fn read_rows(path: &Path) -> (Vec<String>, Vec<csv::StringRecord>) {
        let mut reader = csv::Reader::from_path(path).unwrap();
        let header = reader
            .headers()
            .unwrap()
            .iter()
            .map(str::to_string)
            .collect();
        let rows = reader.records().collect::<Result<Vec<_>, _>>().unwrap();
        (header, rows)
    }

    #[test]
    fn counter_collection_header_is_rocprofv3s_byte_for_byte() {
        let (_dir, _db, written) = csv_of_recorded_run();
        let text = std::fs::read_to_string(&written[0]).unwrap();
        assert!(
            written[0].ends_with("out/host/31_counter_collection.csv"),
            "{written:?}"
        );
        let header = text.lines().next().unwrap();
        assert_eq!(
            header,
            "\"Correlation_Id\",\"Dispatch_Id\",\"Agent_Id\",\"Queue_Id\",\"Process_Id\",\"Thread_Id\",\"Grid_Size\",\
             \"Kernel_Id\",\"Kernel_Name\",\"Workgroup_Size\",\"LDS_Block_Size\",\"Scratch_Size\",\"VGPR_Count\",\
             \"Accum_VGPR_Count\",\"SGPR_Count\",\"Counter_Name\",\"Counter_Value\",\"Start_Timestamp\",\"End_Timestamp\""
        );
        // Strings quoted, numbers bare, as rocprofv3's encoder writes them.
        let first_row = text.lines().nth(1).unwrap();
        assert_eq!(
            first_row,
            "101,1,\"Agent 0\",7,31,32,524288,11,\"saxpy(float*, float*, float)\",256,1536,8,16,0,0,\
             \"SQ_WAVES\",512.000000,6000,6050"
        );
    }

    #[test]
    fn counter_collection_values_agree_with_the_database() {
        let (_dir, db, written) = csv_of_recorded_run();
        let (header, rows) = read_rows(&written[0]);
        assert_eq!(header.len(), 19);
        let conn = rusqlite::Connection::open(&db).unwrap();
        let expected: Vec<(String, String, String, String, String, String)> = conn
            .prepare(
                r#"SELECT dispatch_id, kernel_name, counter_name, value, grid_size, "start" FROM counters_collection ORDER BY id"#,
            )
            .unwrap()
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?.to_string(),
                    r.get(1)?,
                    r.get(2)?,
                    format_counter_value(r.get(3)?),
                    r.get::<_, i64>(4)?.to_string(),
                    r.get::<_, i64>(5)?.to_string(),
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let column = |name: &str| header.iter().position(|h| h == name).unwrap();
        let actual: Vec<(String, String, String, String, String, String)> = rows
            .iter()
            .map(|row| {
                (
                    row[column("Dispatch_Id")].to_string(),
                    row[column("Kernel_Name")].to_string(),
                    row[column("Counter_Name")].to_string(),
                    row[column("Counter_Value")].to_string(),
                    row[column("Grid_Size")].to_string(),
                    row[column("Start_Timestamp")].to_string(),
                )
            })
            .collect();
        assert_eq!(
            actual.len(),
            6,
            "one row per (pass, counter); the trace-only dispatch has none"
        );
        assert_eq!(actual, expected);
        let values: Vec<&str> = actual.iter().map(|r| r.3.as_str()).collect();
        assert_eq!(
            values,
            [
                "512.000000",
                "262144.000000",
                "513.000000",
                "5.00000000e-01",
                "514.000000",
                "0.00000000e+00"
            ]
        );
    }

    #[test]
    fn counter_values_print_like_rocprofv3() {
        assert_eq!(format_counter_value(262_144.0), "262144.000000");
        assert_eq!(format_counter_value(1.0), "1.000000");
        assert_eq!(format_counter_value(0.25), "2.50000000e-01");
        assert_eq!(format_counter_value(0.0), "0.00000000e+00");
        assert_eq!(format_counter_value(-3.0), "-3.00000000e+00");
        assert_eq!(format_counter_value(1.5e-12), "1.50000000e-12");
        assert_eq!(format_counter_value(f64::NAN), "nan");
        assert_eq!(format_counter_value(f64::NEG_INFINITY), "-inf");
    }

    #[test]
    fn trace_agent_and_cost_files_have_their_columns_and_rows() {
        let (_dir, _db, written) = csv_of_recorded_run();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(
            names,
            [
                "31_counter_collection.csv",
                "31_kernel_trace.csv",
                "31_agent_info.csv",
                "31_replay_cost.csv"
            ]
        );

        let (header, rows) = read_rows(&written[1]);
        assert_eq!(header, KERNEL_TRACE_COLUMNS);
        assert_eq!(
            rows.len(),
            5,
            "one row per pass, trace-only dispatch included"
        );
        assert_eq!(&rows[0][0], "KERNEL_DISPATCH");
        assert_eq!(&rows[0][19], "262144", "Grid_Size_X in work-items");
        assert_eq!(&rows[4][5], "3");

        let (header, rows) = read_rows(&written[2]);
        assert_eq!(header.len(), 53);
        assert_eq!(header, AGENT_INFO_COLUMNS);
        let column = |name: &str| header.iter().position(|h| h == name).unwrap();
        assert_eq!(&rows[0][column("Cu_Count")], "132");
        assert_eq!(&rows[0][column("Name")], "GH100");
        assert_eq!(&rows[0][column("Product_Name")], "NVIDIA H200");
        assert_eq!(&rows[0][column("Vendor_Id")], "4318");
        assert_eq!(
            &rows[0][column("Location_Id")],
            ((0x1b << 8) as u64).to_string()
        );

        let (header, rows) = read_rows(&written[3]);
        assert_eq!(header, REPLAY_COST_COLUMNS);
        assert_eq!(rows.len(), 2, "one row per dispatch");
        assert_eq!(&rows[0][3], "replayed");
        assert_eq!(&rows[0][11], "10000;11000;12000");
        let column = |name: &str| header.iter().position(|h| h == name).unwrap();
        assert_eq!(&rows[0][column("Timing_Execution_Ns")], "4000");
        assert_eq!(
            &rows[0][column("Total_Ns")],
            (1_000 + 2_000 + 33_000 + 3_000 + 4_000).to_string()
        );
        assert_eq!(&rows[1][3], "declined_graph_launch");
    }

    #[test]
    fn a_failed_write_keeps_the_file_it_would_have_replaced() {
        let (dir, db, written) = csv_of_recorded_run();
        let trace = &written[1];
        std::fs::write(trace, "old trace\n").unwrap();
        // A folder where the trace's temporary file would go makes its write fail.
        let temp = trace.with_file_name(format!(".31_kernel_trace.csv.tmp-{}", std::process::id()));
        std::fs::create_dir(&temp).unwrap();
        let run = read_databases(&[db]).unwrap();
        let error = write_csv(&run, &dir.path().join("out"), "host/31")
            .unwrap_err()
            .to_string();
        assert!(
            error.starts_with(&format!("cannot write {}: ", trace.display())),
            "{error}"
        );
        assert_eq!(std::fs::read_to_string(trace).unwrap(), "old trace\n");
        std::fs::remove_dir(&temp).unwrap();
        let mut files: Vec<PathBuf> = std::fs::read_dir(trace.parent().unwrap())
            .unwrap()
            .map(|entry| entry.unwrap().path())
            .collect();
        files.sort();
        let mut expected = written.clone();
        expected.sort();
        assert_eq!(files, expected, "no temporary file is left behind");
    }

    #[test]
    fn quotes_inside_names_are_doubled() {
        assert_eq!(quoted(r#"f<"x">"#), r#""f<""x"">""#);
    }
}
