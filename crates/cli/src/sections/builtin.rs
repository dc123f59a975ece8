//! kreplay's own sections, for machines without Nsight Compute: the common questions (speed of
//! light, memory and compute workload, occupancy, launch statistics) with metrics of CUPTI's
//! catalog. Written in the section-file format and read by the same reader as Nsight Compute's
//! files; their metrics are listed in docs/sections.md. Sets: `basic` (speed of light, launch
//! statistics, occupancy), `detailed` (also memory and compute workload) and `full` (all).

/// (file name, text) of each built-in section.
pub const SECTIONS: [(&str, &str); 5] = [
    ("SpeedOfLight.section", SPEED_OF_LIGHT),
    ("LaunchStats.section", LAUNCH_STATS),
    ("Occupancy.section", OCCUPANCY),
    ("MemoryWorkloadAnalysis.section", MEMORY_WORKLOAD),
    ("ComputeWorkloadAnalysis.section", COMPUTE_WORKLOAD),
];

const SPEED_OF_LIGHT: &str = r#"
Identifier: "SpeedOfLight"
DisplayName: "GPU Speed Of Light Throughput"
Description: "How close the kernel came to the peak of the SMs and of the memory system, and how long it ran."
Order: 10
Sets { Identifier: "basic" }
Sets { Identifier: "detailed" }
Sets { Identifier: "full" }
Header {
  Metrics { Label: "Compute (SM) Throughput" Name: "sm__throughput.avg.pct_of_peak_sustained_elapsed" }
  Metrics { Label: "Memory Throughput" Name: "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed" }
  Metrics { Label: "DRAM Throughput" Name: "dram__throughput.avg.pct_of_peak_sustained_elapsed" }
  Metrics { Label: "L2 Cache Throughput" Name: "lts__throughput.avg.pct_of_peak_sustained_elapsed" }
  Metrics { Label: "L1/TEX Cache Throughput" Name: "l1tex__throughput.avg.pct_of_peak_sustained_active" }
  Metrics { Label: "Duration" Name: "gpu__time_duration.sum" }
  Metrics { Label: "Elapsed Cycles" Name: "sm__cycles_elapsed.max" }
  Metrics { Label: "SM Active Cycles" Name: "sm__cycles_active.avg" }
  Metrics { Label: "SM Frequency" Name: "gpc__cycles_elapsed.avg.per_second" }
  Metrics { Label: "DRAM Frequency" Name: "dram__cycles_elapsed.avg.per_second" }
}
"#;

const LAUNCH_STATS: &str = r##"
Identifier: "LaunchStats"
DisplayName: "Launch Statistics"
Description: "The launch configuration: grid and block, registers and shared memory."
Order: 20
Sets { Identifier: "basic" }
Sets { Identifier: "detailed" }
Sets { Identifier: "full" }
Header {
  Metrics { Label: "Grid Size" Name: "launch__grid_size" }
  Metrics { Label: "Block Size" Name: "launch__block_size" }
  Metrics { Label: "Threads" Name: "launch__thread_count" }
  Metrics { Label: "Registers Per Thread" Name: "launch__registers_per_thread" }
  Metrics { Label: "Static Shared Memory Per Block" Name: "launch__shared_mem_per_block_static" }
  Metrics { Label: "Dynamic Shared Memory Per Block" Name: "launch__shared_mem_per_block_dynamic" }
  Metrics { Label: "# SMs" Name: "launch__sm_count" }
  Metrics { Label: "Waves Per SM" Name: "launch__waves_per_multiprocessor" }
}
"##;

const OCCUPANCY: &str = r#"
Identifier: "Occupancy"
DisplayName: "Occupancy"
Description: "Resident warps per SM while the kernel ran, against the SM's maximum."
Order: 30
Sets { Identifier: "basic" }
Sets { Identifier: "detailed" }
Sets { Identifier: "full" }
Header {
  Metrics { Label: "Theoretical Occupancy" Name: "sm__maximum_warps_per_active_cycle_pct" }
  Metrics { Label: "Theoretical Active Warps per SM" Name: "sm__maximum_warps_avg_per_active_cycle" }
  Metrics { Label: "Achieved Occupancy" Name: "sm__warps_active.avg.pct_of_peak_sustained_active" }
  Metrics { Label: "Achieved Active Warps Per SM" Name: "sm__warps_active.avg.per_cycle_active" }
  Metrics { Label: "Block Limit Registers" Name: "launch__occupancy_limit_registers" }
  Metrics { Label: "Block Limit Warps" Name: "launch__occupancy_limit_warps" }
  Metrics { Label: "Block Limit SM" Name: "launch__occupancy_limit_blocks" }
  Metrics { Label: "Max Threads Per SM" Name: "device__attribute_max_threads_per_multi_processor" }
}
"#;

const MEMORY_WORKLOAD: &str = r#"
Identifier: "MemoryWorkloadAnalysis"
DisplayName: "Memory Workload Analysis"
Description: "Traffic and hit rates of DRAM, L2 and L1."
Order: 40
Sets { Identifier: "detailed" }
Sets { Identifier: "full" }
Header {
  Metrics { Label: "Memory Throughput" Name: "dram__bytes.sum.per_second" }
  Metrics { Label: "DRAM Bytes Read" Name: "dram__bytes_read.sum" }
  Metrics { Label: "DRAM Bytes Written" Name: "dram__bytes_write.sum" }
  Metrics { Label: "L2 Sectors Read" Name: "lts__t_sectors_op_read.sum" }
  Metrics { Label: "L2 Sectors Written" Name: "lts__t_sectors_op_write.sum" }
  Metrics { Label: "L2 Hit Rate" Name: "lts__t_sector_hit_rate.pct" }
  Metrics { Label: "L1/TEX Hit Rate" Name: "l1tex__t_sector_hit_rate.pct" }
  Metrics { Label: "DRAM Bytes Per Instruction" Name: "derived__kreplay_dram_bytes_per_inst" }
}
MetricDefinitions {
  MetricDefinitions {
    Name: "derived__kreplay_dram_bytes_read_write"
    Expression: "dram__bytes_read.sum + dram__bytes_write.sum"
  }
  MetricDefinitions {
    Name: "derived__kreplay_dram_bytes_per_inst"
    Expression: "derived__kreplay_dram_bytes_read_write / smsp__inst_executed.sum"
  }
}
"#;

const COMPUTE_WORKLOAD: &str = r#"
Identifier: "ComputeWorkloadAnalysis"
DisplayName: "Compute Workload Analysis"
Description: "Instructions executed and issued, per cycle and against the peak."
Order: 50
Sets { Identifier: "detailed" }
Sets { Identifier: "full" }
Header {
  Metrics { Label: "Executed Ipc Active" Name: "sm__inst_executed.avg.per_cycle_active" }
  Metrics { Label: "Executed Ipc Elapsed" Name: "sm__inst_executed.avg.per_cycle_elapsed" }
  Metrics { Label: "Issue Slots Busy" Name: "smsp__issue_active.avg.pct_of_peak_sustained_active" }
  Metrics { Label: "SM Busy" Name: "sm__instruction_throughput.avg.pct_of_peak_sustained_active" }
  Metrics { Label: "Instructions Executed" Name: "smsp__inst_executed.sum" }
}
"#;
