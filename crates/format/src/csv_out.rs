//! rocprofv3's CSV files: `counter_collection.csv`, `kernel_trace.csv`, `agent_info.csv`, plus our
//! `replay_cost.csv`. Written the way rocprofv3's encoder writes them (`csv.hpp`): every header
//! quoted, string values quoted, numbers bare, counter values `%f`-style from 1 up and
//! `%.8e`-style below.

use crate::error::FormatError;
use crate::output::output_path;
use crate::records::*;
use crate::run::{ProcessRun, RunData};
use std::fs::File;
use std::io::{BufWriter, Write};
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

pub(crate) const REPLAY_COST_COLUMNS: [&str; 14] = [
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
];

/// NVIDIA's PCI vendor id (agent_info's Vendor_Id).
const NVIDIA_PCI_VENDOR_ID: u32 = 0x10de;

/// A CSV string field: always quoted, inner quotes doubled.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('"', "\"\""))
}

/// A counter value as rocprofv3 prints it: `262144.000000` from 1 up (`std::fixed`, precision 6),
/// `5.00000000e-01` below 1, zero and negatives included (`std::scientific`, precision 8).
pub(crate) fn format_counter_value(value: f64) -> String {
    if value >= 1.0 {
        return format!("{value:.6}");
    }
    let text = format!("{value:.8e}");
    match text.split_once('e') {
        Some((mantissa, exponent)) => match exponent.parse::<i32>() {
            Ok(exponent) => {
                let sign = if exponent < 0 { '-' } else { '+' };
                format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
            }
            Err(_) => text,
        },
        None => text, // NaN and infinities have no exponent.
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

struct CsvFile {
    path: PathBuf,
    out: BufWriter<File>,
}

impl CsvFile {
    fn create(path: PathBuf, columns: &[&str]) -> Result<CsvFile, FormatError> {
        let file = File::create(&path).map_err(|e| FormatError::io(&path, e))?;
        let mut csv = CsvFile {
            path,
            out: BufWriter::new(file),
        };
        let header: Vec<String> = columns.iter().map(|c| quoted(c)).collect();
        csv.row(&header)?;
        Ok(csv)
    }

    fn row(&mut self, fields: &[String]) -> Result<(), FormatError> {
        writeln!(self.out, "{}", fields.join(",")).map_err(|e| FormatError::io(&self.path, e))
    }

    fn finish(mut self) -> Result<PathBuf, FormatError> {
        self.out
            .flush()
            .map_err(|e| FormatError::io(&self.path, e))?;
        Ok(self.path)
    }
}

/// Writes the CSV files of `run`; returns the paths written.
pub(crate) fn write_csv(
    run: &RunData,
    dir: &Path,
    name: &str,
) -> Result<Vec<PathBuf>, FormatError> {
    let mut written = Vec::new();

    let mut counters = CsvFile::create(
        output_path(dir, name, "_counter_collection.csv")?,
        &COUNTER_COLLECTION_COLUMNS,
    )?;
    for process in &run.processes {
        for dispatch in &process.dispatches {
            let facts = kernel_facts(process, dispatch);
            for sample in &dispatch.counters {
                counters.row(&[
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
    written.push(counters.finish()?);

    if run.processes.iter().any(|p| !p.dispatches.is_empty()) {
        let mut trace = CsvFile::create(
            output_path(dir, name, "_kernel_trace.csv")?,
            &KERNEL_TRACE_COLUMNS,
        )?;
        for process in &run.processes {
            for dispatch in &process.dispatches {
                let facts = kernel_facts(process, dispatch);
                let grid = grid_threads(dispatch);
                trace.row(&[
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
        written.push(trace.finish()?);
    }

    if run.processes.iter().any(|p| !p.agents.is_empty()) {
        let mut agents = CsvFile::create(
            output_path(dir, name, "_agent_info.csv")?,
            &AGENT_INFO_COLUMNS,
        )?;
        for process in &run.processes {
            for agent in &process.agents {
                agents.row(&agent_info_row(agent))?;
            }
        }
        written.push(agents.finish()?);
    }

    if run.processes.iter().any(|p| !p.costs.is_empty()) {
        let mut costs = CsvFile::create(
            output_path(dir, name, "_replay_cost.csv")?,
            &REPLAY_COST_COLUMNS,
        )?;
        for process in &run.processes {
            for cost in &process.costs {
                let pass_ns: Vec<String> = cost.pass_ns.iter().map(u64::to_string).collect();
                let total = cost.drain_ns
                    + cost.snapshot_ns
                    + cost.pass_ns.iter().sum::<u64>()
                    + cost.restore_ns;
                costs.row(&[
                    process.process.pid.to_string(),
                    cost.dispatch_id.to_string(),
                    quoted(&agent_label(cost.agent_id)),
                    quoted(cost.outcome.as_str()),
                    cost.passes.to_string(),
                    cost.bytes_tracked.to_string(),
                    cost.bytes_snapshotted.to_string(),
                    cost.bytes_restored.to_string(),
                    quoted(staging_name(cost.staging)),
                    cost.drain_ns.to_string(),
                    cost.snapshot_ns.to_string(),
                    quoted(&pass_ns.join(";")),
                    cost.restore_ns.to_string(),
                    total.to_string(),
                ])?;
            }
        }
        written.push(costs.finish()?);
    }
    Ok(written)
}

pub(crate) fn staging_name(staging: Staging) -> &'static str {
    match staging {
        Staging::None => "none",
        Staging::Device => "device",
        Staging::Host => "host",
    }
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
