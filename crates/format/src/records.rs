//! The record model: what one profiled process reports.
//!
//! Producers (the injected library, the reference software device's app) send these to a
//! [`crate::RecordSink`]; the writers turn them into rocpd SQLite, CSV and JSON. Every field is
//! plain data so that a record can be built on an application thread and written elsewhere.

use serde::{Deserialize, Serialize};

pub use crate::code_object::{memory_uri, CodeObject};

/// The profiled process. Sent once, first.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub pid: u32,
    pub ppid: u32,
    pub hostname: String,
    /// The application's command line, `argv[0]` first.
    pub command: Vec<String>,
    /// Nanoseconds since the Unix epoch.
    pub start_ns: u64,
    /// Nanoseconds since the Unix epoch; 0 until the process ends.
    pub end_ns: u64,
    /// The rank and the number of ranks the process's launcher gave it (MPI, Slurm, torchrun:
    /// [`launcher_rank`]), for the `%rank%`/`%size%` of per-process output names.
    #[serde(default)]
    pub rank: Option<String>,
    #[serde(default)]
    pub size: Option<String>,
    /// `--cache-control` of the run, recorded in every output.
    #[serde(default)]
    pub cache_control: CacheControl,
    /// Nsight Compute's sections the run was asked for (`--section`, `--set`), resolved for the
    /// device; the command line adds them when it merges the process's records, so that every
    /// output (and `kreplay convert`) can show their rows.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<crate::section_spec::SectionSpec>,
    /// rocprofv3's `--kernel-rename`: every output names a dispatch by the innermost range of
    /// its [`DispatchRecord::ranges`] (the command line sets it when it merges the records).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub kernel_rename: bool,
    /// rocprofv3's `-M/--mangled-kernels`: the CSV and JSON files name a kernel by its mangled
    /// name (the command line sets it when it merges the records).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mangled_kernels: bool,
    /// rocprofv3's `-T/--truncate-kernels`: by its demangled name without its arguments.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub truncate_kernels: bool,
}

impl ProcessInfo {
    /// The program's file name (`argv[0]` without its folder), empty when unknown.
    pub fn program_name(&self) -> &str {
        self.command
            .first()
            .map(|c| c.rsplit('/').next().unwrap_or(c))
            .unwrap_or("")
    }
}

/// Nsight Compute's `--cache-control`: whether every measured execution of a kernel starts with
/// the GPU's L2 cache flushed (`all`, the default) or finds it as the work before left it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheControl {
    #[default]
    All,
    None,
}

impl CacheControl {
    /// The name the command line, the outputs and the database use (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            CacheControl::All => "all",
            CacheControl::None => "none",
        }
    }

    pub fn parse(text: &str) -> Option<CacheControl> {
        match text.trim() {
            "all" => Some(CacheControl::All),
            "none" => Some(CacheControl::None),
            _ => None,
        }
    }
}

/// Nsight Compute's `--clock-control` of every run: kreplay never changes the GPU's clocks (it
/// runs on shared machines); the clocks seen around each replay unit are recorded instead
/// ([`ReplayCost::sm_clock_mhz`]). Nsight Compute's default is `base`.
pub const CLOCK_CONTROL: &str = "none";

/// The cache state a dispatch's measured executions started from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CacheState {
    /// L2 was flushed before every measured execution of the kernel.
    Flushed,
    /// L2 held what the work before left (`--cache-control none`, no counters, or a flush that
    /// could not be set up: the run's warnings say why).
    #[default]
    AsLeft,
}

impl CacheState {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheState::Flushed => "flushed",
            CacheState::AsLeft => "as_left",
        }
    }
}

/// Environment variables that hold a process's rank, as torchrun, MPI, PMI and Slurm set them,
/// in the order they are looked at: the launcher nearest the process first (`srun … torchrun`
/// gives every worker the same `SLURM_PROCID` and each its own `RANK`).
pub const RANK_VARIABLES: &[&str] = &[
    "RANK",
    "OMPI_COMM_WORLD_RANK",
    "PMI_RANK",
    "PMIX_RANK",
    "MV2_COMM_WORLD_RANK",
    "SLURM_PROCID",
];

/// The same for the number of ranks.
pub const SIZE_VARIABLES: &[&str] = &[
    "WORLD_SIZE",
    "OMPI_COMM_WORLD_SIZE",
    "PMI_SIZE",
    "MV2_COMM_WORLD_SIZE",
    "SLURM_NTASKS",
];

/// The first of `variables` that `get` finds set and non-empty.
pub fn launcher_rank(variables: &[&str], get: impl Fn(&str) -> Option<String>) -> Option<String> {
    variables
        .iter()
        .find_map(|name| get(name).filter(|v| !v.trim().is_empty()))
}

/// A device that dispatches ran on (rocprofv3's "agent").
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct AgentInfo {
    /// The device's ordinal in the process (CUDA device index), used as `agent_id` everywhere.
    pub agent_id: u64,
    /// Product name, e.g. "NVIDIA H200".
    pub name: String,
    /// Chip name as CUPTI spells it, e.g. "GH100"; "SIM" for the reference software device.
    pub chip: String,
    /// Streaming multiprocessors (compute units).
    pub sm_count: u32,
    pub global_memory_bytes: u64,
    /// PCI location "domain:bus:device", empty when unknown.
    pub pci_location: String,
    /// Most threads resident on one SM (CUDA's `MAX_THREADS_PER_MULTIPROCESSOR`); 0 if unknown.
    #[serde(default)]
    pub max_threads_per_sm: u32,
    /// Shared memory of one SM, bytes (`MAX_SHARED_MEMORY_PER_MULTIPROCESSOR`); 0 if unknown.
    #[serde(default)]
    pub shared_memory_per_sm_bytes: u32,
}

impl AgentInfo {
    /// Warp schedulers (SM sub-partitions) per SM: rocprofv3's SIMDs per compute unit. Four on
    /// every GPU CUDA 13 supports (Turing and later).
    pub const SIMDS_PER_SM: u32 = 4;

    /// rocprofv3's `simd_count`: sub-partitions on the device.
    pub fn simd_count(&self) -> u32 {
        self.sm_count * Self::SIMDS_PER_SM
    }

    /// rocprofv3's `max_waves_per_cu`: most resident warps per SM.
    pub fn max_warps_per_sm(&self) -> u32 {
        self.max_threads_per_sm / 32
    }

    /// rocprofv3's `max_waves_per_simd`: most resident warps per sub-partition.
    pub fn max_warps_per_simd(&self) -> u32 {
        self.max_warps_per_sm() / Self::SIMDS_PER_SM
    }

    /// NVIDIA's PCI vendor id (rocprofv3's `vendor_id`).
    pub const PCI_VENDOR_ID: u32 = 0x10de;

    /// The PCI location "domain:bus:device" (hex) as rocprofv3's `domain` and `location_id`
    /// (`bus << 8 | device << 3`); zeros when unknown.
    pub fn pci_domain_and_location(&self) -> (u64, u64) {
        let parts: Vec<u64> = self
            .pci_location
            .split([':', '.'])
            .map(|part| u64::from_str_radix(part.trim(), 16).unwrap_or(0))
            .collect();
        match parts.as_slice() {
            [domain, bus, device, ..] => (*domain, (bus << 8) | (device << 3)),
            _ => (0, 0),
        }
    }
}

/// A kernel function, recorded once per process the first time it is dispatched.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KernelSymbol {
    pub kernel_id: u64,
    /// The module it comes from ([`CodeObject::code_object_id`]); 0 when unknown.
    #[serde(default)]
    pub code_object_id: u64,
    /// The symbol as the module names it (mangled for C++ kernels).
    pub mangled_name: String,
    /// Demangled when demangling succeeds, else equal to `mangled_name`.
    pub demangled_name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Static shared memory per block, bytes.
    pub static_shared_bytes: u32,
    /// Local (scratch) memory per thread, bytes.
    pub local_bytes: u32,
    /// Size of the kernel's parameter block, bytes.
    pub param_bytes: u32,
}

/// A counter the run collects, as the user named it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CounterInfo {
    /// The name the user asked for (an alias such as `SQ_WAVES`, or the metric itself).
    pub name: String,
    /// The device metric it was collected as (e.g. `sm__warps_launched.sum`).
    pub metric: String,
    pub description: String,
    /// Unit as the catalog states it ("warp", "inst", "byte", "cycle", ...).
    pub unit: String,
}

pub use crate::counter_name::CounterName;

/// One counter value of one pass of one dispatch; instances already summed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct CounterSample {
    /// The requested name (see [`CounterInfo::name`]).
    pub name: CounterName,
    pub value: f64,
}

/// One execution (pass) of one kernel dispatch.
///
/// A replayed dispatch yields one record per pass, all with the same `dispatch_id` and
/// `correlation_id`, and `replay_pass` 0, 1, ... . A run without kernel replay has
/// `replay_pass == None`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DispatchRecord {
    pub dispatch_id: u64,
    pub replay_pass: Option<u32>,
    pub correlation_id: u64,
    pub agent_id: u64,
    /// The stream (rocprofv3's queue) the dispatch was launched on.
    pub stream_id: u64,
    pub pid: u32,
    pub tid: u64,
    pub kernel_id: u64,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Dynamic shared memory per block, bytes.
    pub dynamic_shared_bytes: u32,
    /// Nanoseconds, device clock as CUPTI reports it (or the software device's clock).
    pub start_ns: u64,
    pub end_ns: u64,
    /// The counters of the group this pass collected; empty for a dispatch that was traced only.
    pub counters: Vec<CounterSample>,
    /// The push/pop marker ranges (NVTX) open on the launching thread at launch, outermost
    /// first, each `message` (`domain@message` outside the default domain); empty without
    /// `--marker-trace`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ranges: Vec<String>,
}

impl DispatchRecord {
    /// rocprofv3's `--kernel-rename` name: the innermost range's message, if any range was open.
    pub fn innermost_range(&self) -> Option<&str> {
        self.ranges.last().map(String::as_str)
    }
}

/// What a dispatch did, or why it was not replayed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayOutcome {
    /// Every pass ran.
    Replayed,
    /// One group: the ordinary path, no snapshot.
    SinglePass,
    /// A tool stopped the loop early through its continue decision.
    StoppedEarly,
    /// Ran once, not replayed: a graph launch.
    DeclinedGraphLaunch,
    /// Recorded into a stream capture; nothing executed.
    DeclinedStreamCapture,
    /// A multi-device cooperative launch.
    DeclinedMultiDevice,
    /// A kernel that calls `printf`: run again, it would print again.
    DeclinedDevicePrintf,
    /// A kernel that allocates or frees on the device heap (`malloc`, `free`, device `new`):
    /// the heap's state is not restored between passes.
    DeclinedDeviceHeap,
    /// A kernel of a collective-communication library (NCCL, NVSHMEM): a replay would wait for
    /// peers that do not run it again.
    DeclinedCollective,
    /// A kernel whose parameters hold an address of ordinary (pageable) host memory, which a
    /// device with pageable memory access (HMM, ATS) reaches: no snapshot covers that memory.
    DeclinedPageableHost,
    /// A kernel whose parameters hold an address of another device's memory (peer access):
    /// the snapshot covers the launch's device only.
    DeclinedPeerMemory,
    /// The snapshot did not fit in device or host staging.
    DeclinedSnapshotTooLarge,
    /// The snapshot or restore failed for another reason; see the log.
    DeclinedError,
    /// The kernel filters or iteration range excluded it.
    Filtered,
}

impl ReplayOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayOutcome::Replayed => "replayed",
            ReplayOutcome::SinglePass => "single_pass",
            ReplayOutcome::StoppedEarly => "stopped_early",
            ReplayOutcome::DeclinedGraphLaunch => "declined_graph_launch",
            ReplayOutcome::DeclinedStreamCapture => "declined_stream_capture",
            ReplayOutcome::DeclinedMultiDevice => "declined_multi_device",
            ReplayOutcome::DeclinedDevicePrintf => "declined_device_printf",
            ReplayOutcome::DeclinedDeviceHeap => "declined_device_heap",
            ReplayOutcome::DeclinedCollective => "declined_collective",
            ReplayOutcome::DeclinedPageableHost => "declined_pageable_host",
            ReplayOutcome::DeclinedPeerMemory => "declined_peer_memory",
            ReplayOutcome::DeclinedSnapshotTooLarge => "declined_snapshot_too_large",
            ReplayOutcome::DeclinedError => "declined_error",
            ReplayOutcome::Filtered => "filtered",
        }
    }
}

/// Where a snapshot was staged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Staging {
    None,
    Device,
    Host,
}

impl Staging {
    /// The name the database, CSV and JSON use (the serde name).
    pub fn as_str(self) -> &'static str {
        match self {
            Staging::None => "none",
            Staging::Device => "device",
            Staging::Host => "host",
        }
    }
}

/// The per-dispatch cost report of a replay (one per dispatch, whatever the outcome).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayCost {
    pub dispatch_id: u64,
    pub agent_id: u64,
    pub outcome: ReplayOutcome,
    /// Passes executed, the original launch included.
    pub passes: u32,
    /// Bytes of tracked memory on the device when the dispatch was replayed.
    pub bytes_tracked: u64,
    pub bytes_snapshotted: u64,
    /// Bytes written back, all restores together.
    pub bytes_restored: u64,
    pub staging: Staging,
    pub drain_ns: u64,
    pub snapshot_ns: u64,
    /// Wall time of each pass, counter start/stop included.
    pub pass_ns: Vec<u64>,
    /// All restores together.
    pub restore_ns: u64,
    /// Wall time of the timing execution (the unit's launches once more without counters, for
    /// the records' durations), its restore excluded (that is in `restore_ns`); a unit's shared
    /// cost like the others (on its first member); 0 when none ran.
    #[serde(default)]
    pub timing_execution_ns: u64,
    /// The cache state every measured execution started from.
    #[serde(default)]
    pub cache: CacheState,
    /// The lowest and highest SM clock (MHz) read before and after the dispatch's replay unit;
    /// `[0, 0]`: not read (no NVML, or the reference device).
    #[serde(default)]
    pub sm_clock_mhz: [u32; 2],
    /// The same for the memory clock.
    #[serde(default)]
    pub memory_clock_mhz: [u32; 2],
}

/// Something the user must know about the run (a declined replay, untracked memory, ...).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Warning {
    pub message: String,
}

/// Everything a producer can report. (Serialized as `{"kind": ..., "record": {...}}`, the form
/// the database writer's backlog on disk holds: a marker has a `kind` of its own.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", content = "record", rename_all = "snake_case")]
pub enum Record {
    Process(ProcessInfo),
    Agent(AgentInfo),
    CodeObject(CodeObject),
    KernelSymbol(KernelSymbol),
    Counter(CounterInfo),
    Dispatch(DispatchRecord),
    ReplayCost(ReplayCost),
    Warning(Warning),
    /// A marker range or mark (`--marker-trace`).
    Marker(crate::markers::MarkerRecord),
    /// A CUDA runtime or driver API call (`--runtime-trace`, `--sys-trace`).
    Api(crate::api::ApiRecord),
    /// A copy the application made (`--memory-copy-trace`).
    MemoryCopy(crate::memory::MemoryCopyRecord),
    /// An allocation or free the application made (`--memory-allocation-trace`).
    MemoryAllocation(crate::memory::MemoryAllocationRecord),
    /// The process is ending; `end_ns` as in [`ProcessInfo::end_ns`].
    ProcessEnd {
        end_ns: u64,
    },
}

/// Where producers send records. Implementations must not block the caller on I/O.
pub trait RecordSink: Send + Sync {
    fn send(&self, record: Record);
    /// Ask for everything sent so far to reach storage, and wait for it (not for application threads).
    fn flush(&self);
    /// Ask for everything sent so far to reach storage, and wait for it at most `wait`: an
    /// application thread's way to make what it finished survive a kill without ever being held
    /// up by a slow disk (past `wait`, the records are stored later, as sent records always are).
    /// The default waits for [`Self::flush`].
    fn commit_within(&self, wait: std::time::Duration) {
        let _ = wait;
        self.flush();
    }
    /// The process is ending: store everything sent so far and release the storage (for the
    /// database writer: commit, leave a single self-contained file, end the writer thread).
    /// Records sent afterwards may be dropped. For a sink held behind `Arc<dyn RecordSink>` in a
    /// static, where `DbWriter::finish` cannot be called; the default only flushes.
    fn close(&self) {
        self.flush();
    }
}

/// The process that records sent before any `Process` record are kept under (by the database
/// writer and by `RunData::from_records` alike): pid of the first dispatch, everything else unknown.
pub(crate) fn unnamed_process(records: &[Record]) -> ProcessInfo {
    let pid = records
        .iter()
        .find_map(|r| match r {
            Record::Dispatch(d) => Some(d.pid),
            _ => None,
        })
        .unwrap_or(0);
    ProcessInfo {
        rank: None,
        size: None,
        pid,
        ppid: 0,
        hostname: String::new(),
        command: Vec::new(),
        start_ns: 0,
        end_ns: 0,
        cache_control: CacheControl::default(),
        sections: Vec::new(),
        kernel_rename: false,
        mangled_kernels: false,
        truncate_kernels: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The database and CSV write `as_str`, the JSON writes the serde name, and the database
    /// reader parses through serde: all three must be one spelling.
    #[test]
    fn as_str_is_the_serde_name() {
        use ReplayOutcome::*;
        let serde_name = |value: serde_json::Value| value.as_str().unwrap().to_string();
        for outcome in [
            Replayed,
            SinglePass,
            StoppedEarly,
            DeclinedGraphLaunch,
            DeclinedStreamCapture,
            DeclinedMultiDevice,
            DeclinedDevicePrintf,
            DeclinedDeviceHeap,
            DeclinedCollective,
            DeclinedPageableHost,
            DeclinedPeerMemory,
            DeclinedSnapshotTooLarge,
            DeclinedError,
            Filtered,
        ] {
            assert_eq!(
                outcome.as_str(),
                serde_name(serde_json::to_value(outcome).unwrap())
            );
        }
        for cache in [CacheState::Flushed, CacheState::AsLeft] {
            assert_eq!(
                cache.as_str(),
                serde_name(serde_json::to_value(cache).unwrap())
            );
        }
        for control in [CacheControl::All, CacheControl::None] {
            assert_eq!(CacheControl::parse(control.as_str()), Some(control));
            assert_eq!(
                control.as_str(),
                serde_name(serde_json::to_value(control).unwrap())
            );
        }
        for staging in [Staging::None, Staging::Device, Staging::Host] {
            assert_eq!(
                staging.as_str(),
                serde_name(serde_json::to_value(staging).unwrap())
            );
        }
    }
}
