//! A small recorded run shared by the unit tests: one kernel-replay dispatch with 3 passes, one
//! single-pass dispatch, one trace-only dispatch, costs and warnings.

use crate::markers::{MarkerKind, MarkerRecord};
use crate::records::*;

pub(crate) fn process(pid: u32) -> ProcessInfo {
    ProcessInfo {
        rank: None,
        size: None,
        pid,
        ppid: 1,
        hostname: "node-a".to_string(),
        command: vec![
            "./app".to_string(),
            "--size".to_string(),
            "1 MiB".to_string(),
        ],
        start_ns: 1_700_000_000_000_000_000 + u64::from(pid),
        end_ns: 0,
        cache_control: CacheControl::All,
        sections: Vec::new(),
        kernel_rename: false,
        mangled_kernels: false,
        truncate_kernels: false,
    }
}

pub(crate) fn counter(name: &str, metric: &str) -> CounterInfo {
    CounterInfo {
        name: name.to_string(),
        metric: metric.to_string(),
        description: format!("{name} described"),
        unit: "warp".to_string(),
    }
}

pub(crate) fn sample(name: &str, value: f64) -> CounterSample {
    CounterSample {
        name: name.into(),
        value,
    }
}

pub(crate) fn dispatch(
    pid: u32,
    dispatch_id: u64,
    replay_pass: Option<u32>,
    counters: Vec<CounterSample>,
) -> DispatchRecord {
    let pass = u64::from(replay_pass.unwrap_or(0));
    DispatchRecord {
        dispatch_id,
        replay_pass,
        correlation_id: dispatch_id + 100,
        agent_id: 0,
        stream_id: 7,
        pid,
        tid: u64::from(pid) + 1,
        kernel_id: if dispatch_id == 1 { 11 } else { 12 },
        grid: [1024, 2, 1],
        block: [256, 1, 1],
        dynamic_shared_bytes: 512,
        start_ns: 5_000 + dispatch_id * 1_000 + pass * 100,
        end_ns: 5_050 + dispatch_id * 1_000 + pass * 100,
        counters,
        ranges: Vec::new(),
    }
}

/// The records a producer of process `pid` sends, in order.
pub(crate) fn recorded_run(pid: u32) -> Vec<Record> {
    vec![
        Record::Process(process(pid)),
        Record::Agent(AgentInfo {
            agent_id: 0,
            name: "NVIDIA H200".to_string(),
            chip: "GH100".to_string(),
            sm_count: 132,
            global_memory_bytes: 150_000_000_000,
            pci_location: "0000:1b:00".to_string(),
            max_threads_per_sm: 2048,
            shared_memory_per_sm_bytes: 233_472,
        }),
        Record::KernelSymbol(KernelSymbol {
            kernel_id: 11,
            code_object_id: 1,
            mangled_name: "_Z5saxpyPfS_f".to_string(),
            demangled_name: "saxpy(float*, float*, float)".to_string(),
            registers: 16,
            static_shared_bytes: 1024,
            local_bytes: 8,
            param_bytes: 20,
        }),
        Record::KernelSymbol(KernelSymbol {
            kernel_id: 12,
            code_object_id: 2,
            mangled_name: "_Z5scalePf".to_string(),
            demangled_name: "scale(float*)".to_string(),
            registers: 8,
            static_shared_bytes: 0,
            local_bytes: 0,
            param_bytes: 8,
        }),
        Record::Counter(counter("SQ_WAVES", "sm__warps_launched.sum")),
        Record::Counter(counter("SQ_INSTS_VALU", "smsp__inst_executed.sum")),
        Record::Counter(counter("GRBM_GUI_ACTIVE", "gpc__cycles_elapsed.max")),
        // Dispatch 1, kernel replay: 3 passes share the dispatch id; SQ_WAVES is in every group.
        Record::Dispatch(dispatch(
            pid,
            1,
            Some(0),
            vec![
                sample("SQ_WAVES", 512.0),
                sample("SQ_INSTS_VALU", 262_144.0),
            ],
        )),
        Record::Dispatch(dispatch(
            pid,
            1,
            Some(1),
            vec![sample("SQ_WAVES", 513.0), sample("GRBM_GUI_ACTIVE", 0.5)],
        )),
        Record::Dispatch(dispatch(pid, 1, Some(2), vec![sample("SQ_WAVES", 514.0)])),
        Record::ReplayCost(ReplayCost {
            dispatch_id: 1,
            agent_id: 0,
            outcome: ReplayOutcome::Replayed,
            passes: 3,
            bytes_tracked: 1 << 20,
            bytes_snapshotted: 1 << 20,
            bytes_restored: 2 << 20,
            staging: Staging::Device,
            drain_ns: 1_000,
            snapshot_ns: 2_000,
            pass_ns: vec![10_000, 11_000, 12_000],
            restore_ns: 3_000,
            timing_execution_ns: 4_000,
            cache: CacheState::Flushed,
            sm_clock_mhz: [1755, 1980],
            memory_clock_mhz: [3201, 3201],
        }),
        // Dispatch 2: declined (graph launch), ran once; a zero counter.
        Record::Dispatch(dispatch(pid, 2, Some(0), vec![sample("SQ_WAVES", 0.0)])),
        Record::ReplayCost(ReplayCost {
            dispatch_id: 2,
            agent_id: 0,
            outcome: ReplayOutcome::DeclinedGraphLaunch,
            passes: 1,
            bytes_tracked: 1 << 20,
            bytes_snapshotted: 0,
            bytes_restored: 0,
            staging: Staging::None,
            drain_ns: 0,
            snapshot_ns: 0,
            pass_ns: vec![9_000],
            restore_ns: 0,
            timing_execution_ns: 0,
            cache: CacheState::AsLeft,
            sm_clock_mhz: [0, 0],
            memory_clock_mhz: [0, 0],
        }),
        // Dispatch 3: traced only, no counters.
        Record::Dispatch(dispatch(pid, 3, None, Vec::new())),
        // The two modules the kernels come from (one kernel each), described after the kernels
        // that name them.
        Record::CodeObject(CodeObject::from_memory(1, 0, pid, 0x7f00_0000_1000, 9216)),
        Record::CodeObject(CodeObject::from_memory(2, 0, pid, 0x7f00_0002_0000, 512)),
        Record::Warning(Warning {
            message: "graph launches are not replayed; they ran once".to_string(),
        }),
        Record::ProcessEnd {
            end_ns: 1_700_000_000_000_900_000,
        },
    ]
}

pub(crate) fn marker(
    id: u64,
    kind: MarkerKind,
    message: &str,
    tid: u64,
    span: (u64, u64),
) -> MarkerRecord {
    MarkerRecord {
        id,
        kind,
        operation: match kind {
            MarkerKind::PushPop => "nvtxRangePushA",
            MarkerKind::StartEnd => "nvtxDomainRangeStartEx",
            MarkerKind::Mark => "nvtxMarkA",
        }
        .to_string(),
        domain: if kind == MarkerKind::StartEnd {
            "io".to_string()
        } else {
            String::new()
        },
        message: message.to_string(),
        category: if kind == MarkerKind::StartEnd { 3 } else { 0 },
        pid: 3,
        tid,
        start_ns: span.0,
        end_ns: span.1,
    }
}

/// [`recorded_run`] with marker ranges and a mark, dispatch 1 launched inside two ranges.
pub(crate) fn recorded_with_markers() -> Vec<Record> {
    let mut records = recorded_run(3);
    for record in &mut records {
        if let Record::Dispatch(d) = record {
            if d.dispatch_id == 1 {
                d.ranges = vec!["step 0".to_string(), "forward".to_string()];
            }
        }
    }
    records.extend([
        Record::Marker(marker(1, MarkerKind::PushPop, "forward", 4, (5_900, 6_500))),
        Record::Marker(marker(2, MarkerKind::Mark, "checkpoint", 4, (6_600, 6_600))),
        Record::Marker(marker(3, MarkerKind::PushPop, "step 0", 4, (5_800, 7_000))),
        Record::Marker(marker(4, MarkerKind::StartEnd, "load", 9, (5_000, 8_000))),
    ]);
    records
}

/// [`recorded_run`] with the application's copies (host to device, device to host, a peer
/// copy between devices 1 and 0) and allocations (device, host, a virtual mapping, frees).
pub(crate) fn recorded_with_memory() -> Vec<Record> {
    use crate::memory::*;
    let mut records = recorded_run(3);
    let copy = |id: u64, src: Option<u64>, dst: Option<u64>, stream_id: u64| {
        Record::MemoryCopy(MemoryCopyRecord {
            id,
            operation: "cuMemcpyAsync".to_string(),
            direction: CopyDirection::between(src, dst),
            src_agent: src,
            dst_agent: dst,
            src_address: 0x1000 * id,
            dst_address: 0x7f00_0000_0000 + id,
            bytes: 256 * id,
            stream_id,
            pid: 3,
            tid: 4,
            start_ns: 5_000 + 100 * id,
            end_ns: 5_050 + 100 * id,
        })
    };
    let allocation = |id: u64, operation, memory: &str, agent_id, address, size| {
        Record::MemoryAllocation(MemoryAllocationRecord {
            id,
            operation,
            memory: memory.to_string(),
            api: "cuMemAlloc_v2".to_string(),
            agent_id,
            address,
            size,
            stream_id: (memory == "pool").then_some(7),
            pid: 3,
            tid: 4,
            start_ns: 4_000 + 10 * id,
            end_ns: 4_005 + 10 * id,
        })
    };
    use AllocationOperation::*;
    records.extend([
        allocation(1, Allocate, "device", Some(0), 0x7f00_0000_0000, 4096),
        allocation(2, Allocate, "host", None, 0x5000, 512),
        allocation(3, Allocate, "pool", Some(0), 0x7f00_0001_0000, 64),
        allocation(
            4,
            VmemAllocate,
            "virtual",
            Some(0),
            0x7f10_0000_0000,
            1 << 21,
        ),
        copy(1, None, Some(0), 0),
        copy(2, Some(0), None, 7),
        copy(3, Some(1), Some(0), 7),
        allocation(5, Free, "pool", None, 0x7f00_0001_0000, 0),
        allocation(6, VmemFree, "virtual", None, 0x7f10_0000_0000, 0),
        allocation(7, Free, "host", None, 0x5000, 0),
    ]);
    records
}

/// [`recorded_with_markers`] and [`recorded_with_memory`]'s traces together.
pub(crate) fn recorded_with_traces() -> Vec<Record> {
    let mut records = recorded_with_markers();
    records.extend(
        recorded_with_memory()
            .into_iter()
            .filter(|r| matches!(r, Record::MemoryCopy(_) | Record::MemoryAllocation(_))),
    );
    records
}
