//! rocprofv3's JSON output (`<name>_results.json`, reference §2.6) and a reader for tests.
//!
//! The layout is that of rocprofv3's writer (rocprofiler-sdk `source/lib/output/generateJSON.cpp`
//! and the cereal `save` functions it calls, `rocprofiler-sdk/cxx/serialization/save.hpp`):
//! `{"rocprofiler-sdk-tool": [ one object per process ]}`, each process object holding
//!
//! - `metadata`: `pid`, `ppid`, `hostname`, `command` (argv), `init_time`, `fini_time`;
//! - `agents`: one per device the process used, `id.handle` a non-zero handle (position in the
//!   list + 1) that `agent_id.handle` everywhere else refers to, `node_id` and `logical_node_id`
//!   the device ordinal (CSV's "Agent N"), `type` 2 (`ROCPROFILER_AGENT_TYPE_GPU`); a device only
//!   dispatches mention gets an entry with empty names;
//! - `counters`: one entry per (agent, counter); `id.handle` is what counter records refer to;
//! - `strings`: `buffer_records[kind]` and `callback_records[kind]` = `{kind, operations}`, indexed
//!   by rocprofiler-sdk's `rocprofiler_buffer_tracing_kind_t` / `rocprofiler_callback_tracing_kind_t`
//!   values (`fwd.h`), `operations[op]` indexed by operation value; `marker_api`,
//!   `correlation_id.external`, `counters.dimension_ids`, `pc_sample_*`, `att_filenames`,
//!   `code_object_snapshot_filenames`;
//! - `code_objects`, `kernel_symbols` (index = kernel id, see below), `host_functions`;
//! - `summary`: `[{domain: "KERNEL_DISPATCH", stats}]`, per-kernel durations (`statistics.hpp`);
//! - `callback_records.counter_collection`: one record per pass of a dispatch that collected
//!   counters;
//! - `buffer_records.kernel_dispatch` (one per pass, `kind` 11 = `KERNEL_DISPATCH`, `operation`
//!   2 = `KERNEL_DISPATCH_COMPLETE`, `stream_id`), and the other `buffer_records` lists
//!   (`rocdecode_api`, `pc_sample_host_trap`, ...) empty;
//! - our extension `kreplay` (`replay_costs`, `warnings`).
//!
//! `replay_pass` (0-based; our extension) is on every counter and kernel-dispatch record of a
//! kernel-replay run, and on none otherwise. The records carry no run mode, so a document is a
//! kernel-replay run when any dispatch of any of its processes has a pass; a dispatch that ran
//! once there (declined, single pass, trace only: `replay_pass` `None`) is written as pass 0.
//!
//! What differs from rocprofv3, and why:
//! - Keys are sorted in every object (rocprofv3 writes them in declaration order): deterministic
//!   bytes, and JSON readers do not depend on key order.
//! - `kernel_symbols[i]` is the kernel whose id is `i`, slot 0 and gaps being empty placeholders
//!   (rocprofv3's default-constructed symbol: zeros, empty names, `kernel_id` 0), and the list is
//!   long enough for every kernel id a dispatch refers to, described or not. Our kernel ids are
//!   small and dense (numbered from 1 per process); ids so sparse that the list would be more
//!   than 16 × their number + 4096 long are renumbered 1, 2, ... in first-seen order (symbols
//!   first), consistently in every record; `kernel_object` keeps our id either way.
//! - `queue_id.handle` is the stream id (CUDA has no queue apart from the stream), so it equals
//!   `stream_id.handle`.
//! - The `size` fields (sizes of rocprofiler-sdk's C structs) are left out, as are agent fields
//!   that only AMD devices have (`capability`, `simd_count`, firmware versions, ...), and the
//!   placeholder entries rocprofv3 writes in `code_objects` and `host_functions`: kreplay has no
//!   code objects or host functions, so they are empty lists. `metadata` has no `node` or
//!   `config`.
//! - Counter records keep `arch_vgpr_count`, `accum_vgpr_count`, `sgpr_count` and
//!   `lds_block_size_v` (the published schema, `source/docs/rocprofv3-schema.json`, requires
//!   them; the current writer dropped them) besides the writer's `stream_id`.
//! - `strings.buffer_records` and `strings.callback_records` list every kind's name, but
//!   operation names only for the kernel-dispatch kind, the one whose codes our records use
//!   (rocprofv3 lists every HSA/HIP/marker API name).
//! - `summary` is always written (rocprofv3 only with `--stats`/`--summary`, which kreplay's
//!   records do not carry), counts each dispatch once (its lowest pass: replayed passes are not
//!   what the application ran; the rule of the `--stats` files, per process here),
//!   names kernels by their formatted (demangled) name, and keeps `sum` and `sqr` exact
//!   (rocprofv3's `uint64_t` wrap past 2^64; ours saturate at 2^128).
//!
//! The document is streamed, one array element at a time.

use crate::csv_out::{grid_threads, kernel_facts, KernelFacts};
use crate::error::FormatError;
use crate::output::write_file;
use crate::records::*;
use crate::run::{ProcessRun, RunData};
use crate::stats_out::{self, DurationStats, KERNEL_DISPATCH_DOMAIN};
use serde::ser::{Error as _, SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{self, Write};
use std::path::Path;

/// Top-level key of rocprofv3's JSON.
pub(crate) const TOOL_KEY: &str = "rocprofiler-sdk-tool";

mod read;

pub use read::{read_json_counter_records, JsonCounterRecord};

/// `rocprofiler_buffer_tracing_kind_t` (rocprofiler-sdk `fwd.h`): index = value, names as
/// `rocprofiler_query_buffer_tracing_kind_name` gives them.
const BUFFER_TRACING_KINDS: [&str; 33] = [
    "NONE",
    "HSA_CORE_API",
    "HSA_AMD_EXT_API",
    "HSA_IMAGE_EXT_API",
    "HSA_FINALIZE_EXT_API",
    "HIP_RUNTIME_API",
    "HIP_COMPILER_API",
    "MARKER_CORE_API",
    "MARKER_CONTROL_API",
    "MARKER_NAME_API",
    "MEMORY_COPY",
    "KERNEL_DISPATCH",
    "SCRATCH_MEMORY",
    "CORRELATION_ID_RETIREMENT",
    "RCCL_API",
    "OMPT",
    "MEMORY_ALLOCATION",
    "RUNTIME_INITIALIZATION",
    "ROCDECODE_API",
    "ROCJPEG_API",
    "HIP_STREAM",
    "HIP_RUNTIME_API_EXT",
    "HIP_COMPILER_API_EXT",
    "ROCDECODE_API_EXT",
    "KFD_EVENT_PAGE_MIGRATE",
    "KFD_EVENT_PAGE_FAULT",
    "KFD_EVENT_QUEUE",
    "KFD_EVENT_UNMAP_FROM_GPU",
    "KFD_EVENT_DROPPED_EVENTS",
    "KFD_PAGE_MIGRATE",
    "KFD_PAGE_FAULT",
    "KFD_QUEUE",
    "MARKER_CORE_RANGE_API",
];

/// `rocprofiler_callback_tracing_kind_t` (rocprofiler-sdk `fwd.h`): index = value.
const CALLBACK_TRACING_KINDS: [&str; 22] = [
    "NONE",
    "HSA_CORE_API",
    "HSA_AMD_EXT_API",
    "HSA_IMAGE_EXT_API",
    "HSA_FINALIZE_EXT_API",
    "HIP_RUNTIME_API",
    "HIP_COMPILER_API",
    "MARKER_CORE_API",
    "MARKER_CONTROL_API",
    "MARKER_NAME_API",
    "CODE_OBJECT",
    "SCRATCH_MEMORY",
    "KERNEL_DISPATCH",
    "MEMORY_COPY",
    "RCCL_API",
    "OMPT",
    "MEMORY_ALLOCATION",
    "RUNTIME_INITIALIZATION",
    "ROCDECODE_API",
    "ROCJPEG_API",
    "HIP_STREAM",
    "MARKER_CORE_RANGE_API",
];

/// `ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH`: `kind` of kernel-dispatch records.
const BUFFER_TRACING_KERNEL_DISPATCH: usize = 11;
/// `ROCPROFILER_CALLBACK_TRACING_KERNEL_DISPATCH`.
const CALLBACK_TRACING_KERNEL_DISPATCH: usize = 12;
/// `rocprofiler_kernel_dispatch_operation_t`: index = value.
const KERNEL_DISPATCH_OPERATIONS: [&str; 3] = [
    "KERNEL_DISPATCH_NONE",
    "KERNEL_DISPATCH_ENQUEUE",
    "KERNEL_DISPATCH_COMPLETE",
];
/// `ROCPROFILER_KERNEL_DISPATCH_COMPLETE`: the only operation of kernel-dispatch buffer records.
const KERNEL_DISPATCH_COMPLETE: usize = 2;
/// `ROCPROFILER_AGENT_TYPE_GPU`.
const AGENT_TYPE_GPU: u32 = 2;

/// Kernel ids are renumbered when `kernel_symbols` would be longer than this many entries per
/// kernel id, plus [`KERNEL_SLOTS_SLACK`].
const KERNEL_SLOTS_PER_ID: u64 = 16;
const KERNEL_SLOTS_SLACK: u64 = 4096;

fn xyz(values: [u64; 3]) -> Value {
    json!({ "x": values[0], "y": values[1], "z": values[2] })
}

fn handle(value: u64) -> Value {
    json!({ "handle": value })
}

/// The agents of a process: the described ones, then any that only dispatches mention, each with
/// its handle (position + 1: never 0, which rocprofv3's readers take for "no agent").
struct Agents<'a> {
    ids: Vec<u64>,
    described: HashMap<u64, &'a AgentInfo>,
    handles: HashMap<u64, u64>,
}

impl<'a> Agents<'a> {
    fn new(run: &'a ProcessRun) -> Agents<'a> {
        let mut described = HashMap::new();
        for agent in &run.agents {
            described.entry(agent.agent_id).or_insert(agent);
        }
        let mut ids = Vec::new();
        let mut seen = HashSet::new();
        let mentioned = run.dispatches.iter().map(|d| d.agent_id);
        for id in run.agents.iter().map(|a| a.agent_id).chain(mentioned) {
            if seen.insert(id) {
                ids.push(id);
            }
        }
        let handles = ids
            .iter()
            .enumerate()
            .map(|(index, id)| (*id, index as u64 + 1))
            .collect();
        Agents {
            ids,
            described,
            handles,
        }
    }

    fn handle(&self, agent_id: u64) -> u64 {
        self.handles[&agent_id]
    }

    fn entries(&self) -> impl Iterator<Item = Value> + '_ {
        self.ids.iter().map(|id| {
            let agent = self.described.get(id).copied();
            let text = |field: fn(&AgentInfo) -> &str| agent.map_or("", |a| field(a));
            json!({
                "id": handle(self.handle(*id)),
                "node_id": id,
                "logical_node_id": id,
                "type": AGENT_TYPE_GPU,
                "name": text(|a| &a.chip),
                "product_name": text(|a| &a.name),
                "model_name": text(|a| &a.name),
                "vendor_name": agent.map_or("", |a| crate::db::vendor_for_chip(&a.chip)),
                "cu_count": agent.map_or(0, |a| a.sm_count),
                "simd_count": agent.map_or(0, |a| a.simd_count()),
                "simd_per_cu": agent.map_or(0, |a| if a.sm_count > 0 { AgentInfo::SIMDS_PER_SM } else { 0 }),
                "max_waves_per_cu": agent.map_or(0, |a| a.max_warps_per_sm()),
                "max_waves_per_simd": agent.map_or(0, |a| a.max_warps_per_simd()),
                "lds_size_in_kb": agent.map_or(0, |a| a.shared_memory_per_sm_bytes / 1024),
                "num_xcc": agent.map_or(0, |_| 1),
                "wave_front_size": 32,
                "local_mem_size": agent.map_or(0, |a| a.global_memory_bytes),
                "pci_location": text(|a| &a.pci_location),
            })
        })
    }
}

/// Counter names of a process in a stable order: the declared counters first, then any name that
/// only dispatches mention.
fn counter_names(run: &ProcessRun) -> Vec<(String, Option<&CounterInfo>)> {
    let mut names: Vec<(String, Option<&CounterInfo>)> = Vec::new();
    let mut seen = HashSet::new();
    for counter in &run.counters {
        if seen.insert(counter.name.as_str()) {
            names.push((counter.name.clone(), Some(counter)));
        }
    }
    for sample in run.dispatches.iter().flat_map(|d| &d.counters) {
        if seen.insert(sample.name.as_str()) {
            names.push((sample.name.clone(), None));
        }
    }
    names
}

/// The `counters` of a process: one entry per (agent, counter) pair, as rocprofiler-sdk lists
/// them, and the handles counter records refer to them by.
struct Counters<'a> {
    names: Vec<(String, Option<&'a CounterInfo>)>,
    counter_index: HashMap<String, usize>,
}

impl<'a> Counters<'a> {
    fn new(run: &'a ProcessRun) -> Counters<'a> {
        let names = counter_names(run);
        let counter_index = names
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        Counters {
            names,
            counter_index,
        }
    }

    /// Agent `agent_handle`'s counter `counter_index`: (agent position) × counters + counter + 1.
    fn handle(&self, agent_handle: u64, counter_index: usize) -> u64 {
        (agent_handle - 1) * self.names.len() as u64 + counter_index as u64 + 1
    }

    fn handle_of(&self, agent_handle: u64, name: &str) -> u64 {
        self.handle(agent_handle, self.counter_index[name])
    }

    fn entries<'s>(&'s self, agents: &'s Agents) -> impl Iterator<Item = Value> + 's {
        agents.ids.iter().flat_map(move |agent_id| {
            let agent_handle = agents.handle(*agent_id);
            self.names
                .iter()
                .enumerate()
                .map(move |(counter_index, (name, info))| {
                    let metric = info.map_or(name.as_str(), |c| c.metric.as_str());
                    json!({
                        "agent_id": handle(agent_handle),
                        "id": handle(self.handle(agent_handle, counter_index)),
                        "is_constant": 0,
                        "is_derived": 0,
                        "name": name,
                        "description": info.map_or("", |c| c.description.as_str()),
                        "block": crate::db::metric_block(metric),
                        "expression": metric,
                        "units": info.map_or("", |c| c.unit.as_str()),
                        "dimension_ids": [],
                        "dimensions": [],
                        "instances": [],
                    })
                })
        })
    }
}

/// `kernel_symbols` laid out as rocprofv3 lays it out: entry `i` is kernel `i`.
struct Kernels<'a> {
    /// JSON kernel id → symbol.
    symbols: HashMap<u64, &'a KernelSymbol>,
    /// Our kernel id → JSON kernel id, when ours are too sparse to index a list; else empty.
    renumbered: HashMap<u64, u64>,
    /// Entries of `kernel_symbols`: the largest JSON kernel id + 1 (at least 1, as rocprofv3).
    len: u64,
}

impl<'a> Kernels<'a> {
    fn new(run: &'a ProcessRun) -> Kernels<'a> {
        let mut ids = Vec::new();
        let mut seen = HashSet::new();
        let referenced = run.dispatches.iter().map(|d| d.kernel_id);
        for id in run.kernels.iter().map(|k| k.kernel_id).chain(referenced) {
            if seen.insert(id) {
                ids.push(id);
            }
        }
        let largest = ids.iter().copied().max().unwrap_or(0);
        let room = KERNEL_SLOTS_PER_ID * ids.len() as u64 + KERNEL_SLOTS_SLACK;
        let renumbered: HashMap<u64, u64> = if largest < room {
            HashMap::new()
        } else {
            // 0 stays 0 (no kernel: the placeholder); the others from 1, in first-seen order.
            ids.iter()
                .filter(|id| **id != 0)
                .enumerate()
                .map(|(index, id)| (*id, index as u64 + 1))
                .collect()
        };
        let mut kernels = Kernels {
            symbols: HashMap::new(),
            renumbered,
            len: 0,
        };
        for symbol in &run.kernels {
            let slot = kernels.slot(symbol.kernel_id);
            kernels.symbols.entry(slot).or_insert(symbol);
        }
        kernels.len = ids.iter().map(|id| kernels.slot(*id)).max().unwrap_or(0) + 1;
        kernels
    }

    /// The JSON kernel id (index in `kernel_symbols`) of our kernel id.
    fn slot(&self, kernel_id: u64) -> u64 {
        self.renumbered
            .get(&kernel_id)
            .copied()
            .unwrap_or(kernel_id)
    }

    fn entries(&self) -> impl Iterator<Item = Value> + '_ {
        (0..self.len).map(|slot| kernel_symbol_json(slot, self.symbols.get(&slot).copied()))
    }
}

/// Entry `slot` of `kernel_symbols`; without a symbol, rocprofv3's placeholder (a
/// default-constructed symbol: zeros and empty names).
fn kernel_symbol_json(slot: u64, kernel: Option<&KernelSymbol>) -> Value {
    let number = |field: fn(&KernelSymbol) -> u32| kernel.map_or(0, field);
    let demangled = kernel.map_or("", |k| k.demangled_name.as_str());
    json!({
        "kernel_id": if kernel.is_some() { slot } else { 0 },
        "code_object_id": 0,
        "kernel_name": kernel.map_or("", |k| k.mangled_name.as_str()),
        "formatted_kernel_name": demangled,
        "demangled_kernel_name": demangled,
        "truncated_kernel_name": truncated_name(demangled),
        "kernel_object": kernel.map_or(0, |k| k.kernel_id),
        "kernarg_segment_size": number(|k| k.param_bytes),
        "group_segment_size": number(|k| k.static_shared_bytes),
        "private_segment_size": number(|k| k.local_bytes),
        "arch_vgpr_count": number(|k| k.registers),
        "accum_vgpr_count": 0,
        "sgpr_count": 0,
    })
}

/// rocprofv3's truncated name: the demangled name without its argument list.
fn truncated_name(demangled: &str) -> &str {
    demangled.split('(').next().unwrap_or(demangled)
}

/// One process and the ids its records are written with.
struct Process<'a> {
    run: &'a ProcessRun,
    agents: Agents<'a>,
    counters: Counters<'a>,
    kernels: Kernels<'a>,
    /// The document is of a kernel-replay run: every record carries `replay_pass`.
    replay: bool,
}

impl<'a> Process<'a> {
    fn new(run: &'a ProcessRun, replay: bool) -> Process<'a> {
        Process {
            run,
            agents: Agents::new(run),
            counters: Counters::new(run),
            kernels: Kernels::new(run),
            replay,
        }
    }

    /// `replay_pass` of a record: the pass (0 for a dispatch that ran once) in a kernel-replay
    /// run, nothing otherwise.
    fn replay_pass(&self, dispatch: &DispatchRecord) -> Option<u32> {
        self.replay.then(|| dispatch.replay_pass.unwrap_or(0))
    }

    fn dispatch_info(&self, dispatch: &DispatchRecord, facts: &KernelFacts) -> Value {
        json!({
            "agent_id": handle(self.agents.handle(dispatch.agent_id)),
            "queue_id": handle(dispatch.stream_id),
            "kernel_id": self.kernels.slot(dispatch.kernel_id),
            "dispatch_id": dispatch.dispatch_id,
            "private_segment_size": facts.scratch_size,
            "group_segment_size": facts.lds_block_size,
            "workgroup_size": xyz(dispatch.block.map(u64::from)),
            "grid_size": xyz(grid_threads(dispatch)),
        })
    }

    /// A `buffer_records.kernel_dispatch` record: one per pass.
    fn kernel_dispatch_json(&self, dispatch: &DispatchRecord) -> Value {
        let facts = kernel_facts(self.run, dispatch);
        let mut trace = json!({
            "kind": BUFFER_TRACING_KERNEL_DISPATCH,
            "operation": KERNEL_DISPATCH_COMPLETE,
            "thread_id": dispatch.tid,
            "correlation_id": correlation(dispatch),
            "start_timestamp": dispatch.start_ns,
            "end_timestamp": dispatch.end_ns,
            "dispatch_info": self.dispatch_info(dispatch, &facts),
            "stream_id": handle(dispatch.stream_id),
        });
        if let Some(pass) = self.replay_pass(dispatch) {
            trace["replay_pass"] = json!(pass);
        }
        trace
    }

    /// A `callback_records.counter_collection` record: one per pass that collected counters.
    fn counter_record_json(&self, dispatch: &DispatchRecord) -> Value {
        let facts = kernel_facts(self.run, dispatch);
        let agent_handle = self.agents.handle(dispatch.agent_id);
        let records: Vec<Value> = dispatch
            .counters
            .iter()
            .map(|sample| {
                json!({
                    "counter_id": handle(self.counters.handle_of(agent_handle, &sample.name)),
                    "value": sample.value,
                })
            })
            .collect();
        let mut record = json!({
            "dispatch_data": {
                "correlation_id": correlation(dispatch),
                "start_timestamp": dispatch.start_ns,
                "end_timestamp": dispatch.end_ns,
                "dispatch_info": self.dispatch_info(dispatch, &facts),
            },
            "records": records,
            "thread_id": dispatch.tid,
            "stream_id": handle(dispatch.stream_id),
            "arch_vgpr_count": facts.vgpr_count,
            "accum_vgpr_count": 0,
            "sgpr_count": 0,
            "lds_block_size_v": facts.lds_block_size,
        });
        if let Some(pass) = self.replay_pass(dispatch) {
            record["replay_pass"] = json!(pass);
        }
        record
    }

    /// `summary`: the kernel-dispatch statistics, each dispatch counted once
    /// ([`stats_out::dispatches_counted_once`]).
    fn summary(&self) -> Vec<DomainStats> {
        let operations = stats_out::process_kernel_stats(self.run);
        let total = stats_out::merged(operations.values());
        if total.count == 0 {
            Vec::new()
        } else {
            vec![DomainStats { total, operations }]
        }
    }
}

fn correlation(dispatch: &DispatchRecord) -> Value {
    json!({ "internal": dispatch.correlation_id, "external": 0 })
}

/// rocprofv3's `statistics<uint64_t, double>` of durations (ns), written as its `serialize`
/// does: the keys sorted; `operations` (for a domain) goes between `min` and `sqr`.
fn serialize_stats<M: SerializeMap>(
    stats: &DurationStats,
    map: &mut M,
    operations: Option<&BTreeMap<String, DurationStats>>,
) -> Result<(), M::Error> {
    map.serialize_entry("count", &stats.count)?;
    map.serialize_entry("max", &stats.max)?;
    map.serialize_entry("mean", &stats.mean())?;
    map.serialize_entry("min", &stats.min)?;
    if let Some(operations) = operations {
        // A std::map, as cereal writes one: a list of {key, value}.
        let entries = operations.iter().map(|(key, value)| MapItem {
            key,
            value: StatsOfKernel(value),
        });
        map.serialize_entry("operations", &Array(|| entries.clone()))?;
    }
    map.serialize_entry("sqr", &stats.sum_of_squares)?;
    map.serialize_entry("stddev", &stats.stddev())?;
    map.serialize_entry("sum", &stats.sum)?;
    map.serialize_entry("variance", &stats.variance())
}

/// One kernel's statistics in `operations`.
#[derive(Clone, Copy)]
struct StatsOfKernel<'a>(&'a DurationStats);

impl Serialize for StatsOfKernel<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(8))?;
        serialize_stats(self.0, &mut map, None)?;
        map.end()
    }
}

#[derive(Serialize)]
struct MapItem<'a, V> {
    key: &'a str,
    value: V,
}

/// One `summary` entry's statistics: the domain's total and one entry per kernel name.
#[derive(Debug, Default)]
struct DomainStats {
    total: DurationStats,
    operations: BTreeMap<String, DurationStats>,
}

impl Serialize for DomainStats {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut entry = serializer.serialize_map(Some(2))?;
        entry.serialize_entry("domain", KERNEL_DISPATCH_DOMAIN)?;
        entry.serialize_entry("stats", &StatsOf(self))?;
        entry.end()
    }
}

struct StatsOf<'a>(&'a DomainStats);

impl Serialize for StatsOf<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(9))?;
        serialize_stats(&self.0.total, &mut map, Some(&self.0.operations))?;
        map.end()
    }
}

/// A JSON array of what the closure's iterator yields, each element built as it is written.
struct Array<F>(F);

impl<F, I> Serialize for Array<F>
where
    F: Fn() -> I,
    I: IntoIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq((self.0)())
    }
}

/// A value written as its `serde_json::Value`: object keys sorted, like every object here.
struct AsValue<'a, T>(&'a T);

impl<T: Serialize> Serialize for AsValue<'_, T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serde_json::to_value(self.0)
            .map_err(S::Error::custom)?
            .serialize(serializer)
    }
}

/// An empty JSON array: rocprofv3's lists that kreplay has nothing for.
const NONE: [(); 0] = [];

// The objects below list their keys sorted, the order in which serde_json's `Map` (a BTreeMap,
// without the `preserve_order` feature) writes the `json!` objects.

/// A `strings.*_records` entry: a tracing kind's name and its operations' names.
#[derive(Serialize)]
struct KindNames {
    kind: &'static str,
    operations: &'static [&'static str],
}

/// `strings.buffer_records` or `strings.callback_records`: every kind, index = kind value, with
/// the operation names of the kernel-dispatch kind (`kernel_dispatch`).
fn kind_names(
    kinds: &'static [&'static str],
    kernel_dispatch: usize,
) -> impl Iterator<Item = KindNames> {
    kinds.iter().enumerate().map(move |(kind, name)| KindNames {
        kind: name,
        operations: if kind == kernel_dispatch {
            &KERNEL_DISPATCH_OPERATIONS
        } else {
            &[]
        },
    })
}

#[derive(Serialize)]
struct ExternalCorrelationNames {
    /// A std::map (external correlation id → kernel rename), as a list of {key, value}.
    external: [(); 0],
}

#[derive(Serialize)]
struct CounterDimensions {
    dimension_ids: [(); 0],
}

#[derive(Serialize)]
struct Strings<B, C> {
    att_filenames: [(); 0],
    buffer_records: B,
    callback_records: C,
    code_object_snapshot_filenames: [(); 0],
    correlation_id: ExternalCorrelationNames,
    counters: CounterDimensions,
    marker_api: [(); 0],
    pc_sample_comments: [(); 0],
    pc_sample_instructions: [(); 0],
}

#[derive(Serialize)]
struct BufferRecords<D> {
    hip_api: [(); 0],
    hsa_api: [(); 0],
    kernel_dispatch: D,
    marker_api: [(); 0],
    memory_allocation: [(); 0],
    memory_copy: [(); 0],
    pc_sample_host_trap: [(); 0],
    pc_sample_stochastic: [(); 0],
    rccl_api: [(); 0],
    rocdecode_api: [(); 0],
    rocjpeg_api: [(); 0],
    scratch_memory: [(); 0],
}

#[derive(Serialize)]
struct CallbackRecords<C> {
    counter_collection: C,
}

#[derive(Serialize)]
struct Extension<C, W, S> {
    replay_costs: C,
    warnings: W,
    /// The rows of Nsight Compute's sections per dispatch (`--section`, `--set`); left out
    /// without them.
    #[serde(skip_serializing_if = "Option::is_none")]
    sections: Option<S>,
}

/// One process object, written piece by piece.
struct ProcessJson<'a>(&'a ProcessRun, bool);

impl Serialize for ProcessJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let run = self.0;
        let p = Process::new(run, self.1);
        let mut process = serializer.serialize_map(Some(11))?;
        process.serialize_entry("agents", &Array(|| p.agents.entries()))?;
        process.serialize_entry(
            "buffer_records",
            &BufferRecords {
                hip_api: NONE,
                hsa_api: NONE,
                kernel_dispatch: Array(|| {
                    run.dispatches
                        .iter()
                        .map(|dispatch| p.kernel_dispatch_json(dispatch))
                }),
                marker_api: NONE,
                memory_allocation: NONE,
                memory_copy: NONE,
                pc_sample_host_trap: NONE,
                pc_sample_stochastic: NONE,
                rccl_api: NONE,
                rocdecode_api: NONE,
                rocjpeg_api: NONE,
                scratch_memory: NONE,
            },
        )?;
        process.serialize_entry(
            "callback_records",
            &CallbackRecords {
                counter_collection: Array(|| {
                    run.dispatches
                        .iter()
                        .filter(|dispatch| !dispatch.counters.is_empty())
                        .map(|dispatch| p.counter_record_json(dispatch))
                }),
            },
        )?;
        process.serialize_entry("code_objects", &NONE)?;
        process.serialize_entry("counters", &Array(|| p.counters.entries(&p.agents)))?;
        process.serialize_entry("host_functions", &NONE)?;
        process.serialize_entry("kernel_symbols", &Array(|| p.kernels.entries()))?;
        process.serialize_entry(
            "kreplay",
            &Extension {
                replay_costs: Array(|| run.costs.iter().map(AsValue)),
                warnings: Array(|| run.warnings.iter().map(AsValue)),
                sections: (!run.process.sections.is_empty())
                    .then_some(Array(|| crate::sections_out::section_values(run))),
            },
        )?;
        process.serialize_entry(
            "metadata",
            &json!({
                "pid": run.process.pid,
                "ppid": run.process.ppid,
                "hostname": run.process.hostname,
                "command": run.process.command,
                "init_time": run.process.start_ns,
                "fini_time": run.process.end_ns,
                "cache_control": run.process.cache_control.as_str(),
                "clock_control": crate::records::CLOCK_CONTROL,
            }),
        )?;
        process.serialize_entry(
            "strings",
            &Strings {
                att_filenames: NONE,
                buffer_records: Array(|| {
                    kind_names(&BUFFER_TRACING_KINDS, BUFFER_TRACING_KERNEL_DISPATCH)
                }),
                callback_records: Array(|| {
                    kind_names(&CALLBACK_TRACING_KINDS, CALLBACK_TRACING_KERNEL_DISPATCH)
                }),
                code_object_snapshot_filenames: NONE,
                correlation_id: ExternalCorrelationNames { external: NONE },
                counters: CounterDimensions {
                    dimension_ids: NONE,
                },
                marker_api: NONE,
                pc_sample_comments: NONE,
                pc_sample_instructions: NONE,
            },
        )?;
        process.serialize_entry("summary", &p.summary())?;
        process.end()
    }
}

/// Streams the JSON document of `run` to `out`, one array element at a time.
fn write_document(run: &RunData, out: impl Write) -> io::Result<()> {
    let replay = run.is_kernel_replay();
    let mut serializer = serde_json::Serializer::new(out);
    let mut document = serializer.serialize_map(Some(1))?;
    document.serialize_entry(
        TOOL_KEY,
        &Array(|| run.processes.iter().map(|p| ProcessJson(p, replay))),
    )?;
    Ok(document.end()?)
}

pub(crate) fn write_json(run: &RunData, path: &Path) -> Result<(), FormatError> {
    write_file(path, |out| write_document(run, out))
}

#[cfg(test)]
mod tests;
