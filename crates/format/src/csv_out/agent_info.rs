//! `agent_info.csv`: rocprofv3's agent columns filled from an NVIDIA device's description.

use super::columns::AGENT_INFO_COLUMNS;
use crate::naming::vendor_for_chip;
use crate::numbers::quoted;
use crate::records::AgentInfo;

/// One agent_info row: the columns with an NVIDIA equivalent are filled, the others are 0 or
/// empty. CUDA's launch limits (1024 threads per block, grid 2^31-1 × 65535 × 65535) hold for
/// every GPU CUDA 13 supports.
pub(super) fn agent_info_row(agent: &AgentInfo) -> Vec<String> {
    let (domain, location_id) = agent.pci_domain_and_location();
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
            "Vendor_Id" => AgentInfo::PCI_VENDOR_ID.to_string(),
            "Location_Id" => location_id.to_string(),
            "Domain" => domain.to_string(),
            "Workgroup_Max_Size" => "1024".to_string(),
            "Workgroup_Max_Dim_X" | "Workgroup_Max_Dim_Y" => "1024".to_string(),
            "Workgroup_Max_Dim_Z" => "64".to_string(),
            "Grid_Max_Dim_X" => "2147483647".to_string(),
            "Grid_Max_Dim_Y" | "Grid_Max_Dim_Z" => "65535".to_string(),
            "Local_Mem_Size" => agent.global_memory_bytes.to_string(),
            "Name" => quoted(&agent.chip),
            "Vendor_Name" => quoted(vendor_for_chip(&agent.chip)),
            "Product_Name" | "Model_Name" => quoted(&agent.name),
            _ => "0".to_string(),
        };
        row.push(value);
    }
    row
}
