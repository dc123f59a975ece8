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
struct Extension<C, W> {
    replay_costs: C,
    warnings: W,
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
                "cache_control": crate::records::CACHE_CONTROL,
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

/// One counter record of a JSON file, resolved: what tests of other crates compare.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonCounterRecord {
    pub dispatch_id: u64,
    /// `replay_pass` of the record: on every record of a kernel-replay run (0 for a dispatch
    /// that ran once), `None` in a run without kernel replay.
    pub replay_pass: Option<u32>,
    /// The demangled kernel name (from `kernel_symbols`).
    pub kernel_name: String,
    /// Counter name (through `counters[].id.handle`) → value, instances summed.
    pub counters: BTreeMap<String, f64>,
}

/// Reads every `callback_records.counter_collection` record of a JSON file written by kreplay
/// (or by rocprofv3), all processes in file order.
pub fn read_json_counter_records(
    path: impl AsRef<Path>,
) -> Result<Vec<JsonCounterRecord>, FormatError> {
    let path = path.as_ref();
    let bad = |detail: String| FormatError::Json {
        path: path.to_path_buf(),
        detail,
    };
    let text = std::fs::read_to_string(path).map_err(|e| FormatError::io(path, e))?;
    let document: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let processes = document
        .get(TOOL_KEY)
        .and_then(Value::as_array)
        .ok_or_else(|| bad(format!("no \"{TOOL_KEY}\" list at the top level")))?;
    let mut out = Vec::new();
    for process in processes {
        let mut counter_names: HashMap<u64, String> = HashMap::new();
        for counter in process["counters"].as_array().into_iter().flatten() {
            if let (Some(handle), Some(name)) =
                (counter["id"]["handle"].as_u64(), counter["name"].as_str())
            {
                counter_names.insert(handle, name.to_string());
            }
        }
        // Entry i is kernel i (rocprofv3's layout); placeholders (kernel_id 0 past entry 0)
        // name nothing. Looked up by `kernel_id`, which also reads lists without placeholders.
        let mut kernel_names: HashMap<u64, String> = HashMap::new();
        let symbols = process["kernel_symbols"].as_array().into_iter().flatten();
        for (index, symbol) in symbols.enumerate() {
            match symbol["kernel_id"].as_u64() {
                Some(0) if index != 0 => {}
                Some(id) => {
                    let name = symbol["demangled_kernel_name"]
                        .as_str()
                        .or_else(|| symbol["kernel_name"].as_str())
                        .unwrap_or_default();
                    kernel_names.entry(id).or_insert_with(|| name.to_string());
                }
                None => {}
            }
        }
        let records = process["callback_records"]["counter_collection"]
            .as_array()
            .into_iter()
            .flatten();
        for record in records {
            let info = &record["dispatch_data"]["dispatch_info"];
            let dispatch_id = info["dispatch_id"].as_u64().ok_or_else(|| {
                bad("a counter record has no dispatch_data.dispatch_info.dispatch_id".into())
            })?;
            let kernel_id = info["kernel_id"].as_u64().unwrap_or(0);
            let mut counters = BTreeMap::new();
            for entry in record["records"].as_array().into_iter().flatten() {
                let handle = entry["counter_id"]["handle"].as_u64().ok_or_else(|| {
                    bad(format!(
                        "a record of dispatch {dispatch_id} has no counter_id.handle"
                    ))
                })?;
                let name = counter_names
                    .get(&handle)
                    .ok_or_else(|| bad(format!("counter handle {handle} is not in counters[]")))?;
                *counters.entry(name.clone()).or_insert(0.0) +=
                    entry["value"].as_f64().unwrap_or(f64::NAN); // JSON writes NaN as null
            }
            out.push(JsonCounterRecord {
                dispatch_id,
                replay_pass: record["replay_pass"].as_u64().map(|p| p as u32),
                kernel_name: kernel_names.get(&kernel_id).cloned().unwrap_or_default(),
                counters,
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::output::{write_outputs, OutputFormat};
    use crate::run::read_databases;
    use crate::testdata::*;
    use crate::{DbWriter, RecordSink};
    use std::path::PathBuf;

    fn json_of(records: Vec<Record>) -> (tempfile::TempDir, PathBuf, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("run.db");
        let writer = DbWriter::create(&db).unwrap();
        for record in records {
            writer.send(record);
        }
        writer.finish().unwrap();
        let run = read_databases(std::slice::from_ref(&db)).unwrap();
        let written = write_outputs(&run, dir.path(), "out", &[OutputFormat::Json]).unwrap();
        assert_eq!(written, vec![dir.path().join("out_results.json")]);
        let json = written[0].clone();
        (dir, db, json)
    }

    /// The document of `run`, parsed.
    fn document_of(run: &RunData) -> Value {
        let mut bytes = Vec::new();
        write_document(run, &mut bytes).unwrap();
        serde_json::from_slice(&bytes).unwrap()
    }

    /// The first process of the recorded run's document (written from the records directly).
    fn recorded_process() -> Value {
        let run = RunData::from_records(recorded_run(8));
        document_of(&run)[TOOL_KEY][0].clone()
    }

    fn list(value: &Value) -> &Vec<Value> {
        value
            .as_array()
            .unwrap_or_else(|| panic!("not a list: {value}"))
    }

    /// The recorded run, plus a process that exercises what it lacks (counters and an agent only
    /// dispatches mention, an unknown kernel, values JSON writes as null, strings to escape), plus
    /// an empty process.
    fn representative_run() -> RunData {
        let mut run = RunData::from_records(recorded_run(8));
        let mut odd = RunData::from_records(recorded_run(9)).processes.remove(0);
        odd.process.hostname = "n\"ode\\\n\u{1}é€😀".to_string();
        odd.process.command.push("--name=\"a b\"\t".to_string());
        odd.kernels[0].demangled_name = "void f<\"x\">(int, char const*)".to_string();
        odd.counters.truncate(1);
        let mut extra = dispatch(9, 4, None, Vec::new());
        extra.agent_id = 5;
        extra.kernel_id = 99;
        extra.start_ns = u64::MAX;
        extra.counters = [f64::NAN, f64::INFINITY, -0.0, -1.5e-300, 1e300, 0.1]
            .into_iter()
            .enumerate()
            .map(|(i, value)| sample(&format!("UNDECLARED_{i}"), value))
            .collect();
        odd.dispatches.push(extra);
        odd.warnings.push(Warning {
            message: "line\nbreak \"quoted\" </script>".to_string(),
        });
        run.processes.push(odd);
        run.processes.push(ProcessRun::new(process(3)));
        run
    }

    /// A writer that fails like a full disk once `left` bytes are written.
    struct FullAfter<W> {
        out: W,
        left: usize,
    }

    impl<W: Write> Write for FullAfter<W> {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            if buf.len() > self.left {
                return Err(io::ErrorKind::StorageFull.into());
            }
            self.left -= buf.len();
            self.out.write_all(buf)?;
            Ok(buf.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            self.out.flush()
        }
    }

    /// `strings.buffer_records` and `strings.callback_records` as rocprofv3 would index them,
    /// written out: what the byte-exact tests expect.
    fn expected_kind_tables() -> String {
        let table = |kinds: &[&str], kernel_dispatch: usize| {
            let entries: Vec<String> = kinds
                .iter()
                .enumerate()
                .map(|(kind, name)| {
                    let operations = if kind == kernel_dispatch {
                        r#""KERNEL_DISPATCH_NONE","KERNEL_DISPATCH_ENQUEUE","KERNEL_DISPATCH_COMPLETE""#
                    } else {
                        ""
                    };
                    format!(r#"{{"kind":"{name}","operations":[{operations}]}}"#)
                })
                .collect();
            entries.join(",")
        };
        format!(
            r#""buffer_records":[{}],"callback_records":[{}]"#,
            table(&BUFFER_TRACING_KINDS, 11),
            table(&CALLBACK_TRACING_KINDS, 12)
        )
    }

    #[test]
    fn a_small_run_is_written_byte_for_byte() {
        let mut run = ProcessRun::new(process(4));
        run.process.end_ns = 2_000;
        run.agents.push(AgentInfo {
            agent_id: 0,
            name: "NVIDIA H200".to_string(),
            chip: "GH100".to_string(),
            sm_count: 132,
            global_memory_bytes: 1 << 30,
            pci_location: "0000:1b:00".to_string(),
            max_threads_per_sm: 2048,
            shared_memory_per_sm_bytes: 233_472,
        });
        run.kernels.push(KernelSymbol {
            kernel_id: 1,
            mangled_name: "_Z1kv".to_string(),
            demangled_name: "k()".to_string(),
            registers: 16,
            static_shared_bytes: 64,
            local_bytes: 8,
            param_bytes: 4,
        });
        run.counters
            .push(counter("SQ_WAVES", "sm__warps_launched.sum"));
        let mut first = dispatch(4, 1, Some(0), vec![sample("SQ_WAVES", 2.5)]);
        first.kernel_id = 1;
        first.grid = [2, 1, 1];
        first.block = [32, 1, 1];
        let mut once = dispatch(4, 2, None, Vec::new());
        once.kernel_id = 1;
        once.grid = [1, 1, 1];
        once.block = [32, 1, 1];
        once.end_ns = once.start_ns + 70;
        run.dispatches = vec![first, once];
        let mut streamed = Vec::new();
        write_document(
            &RunData {
                processes: vec![run],
            },
            &mut streamed,
        )
        .unwrap();
        let dispatch_info = |id: u64| {
            format!(
                r#"{{"agent_id":{{"handle":1}},"dispatch_id":{id},"grid_size":{{"x":{},"y":1,"z":1}},"group_segment_size":576,"kernel_id":1,"private_segment_size":8,"queue_id":{{"handle":7}},"workgroup_size":{{"x":32,"y":1,"z":1}}}}"#,
                if id == 1 { 64 } else { 32 }
            )
        };
        let expected = [
            r#"{"rocprofiler-sdk-tool":[{"agents":[{"cu_count":132,"id":{"handle":1},"lds_size_in_kb":228,"local_mem_size":1073741824,"logical_node_id":0,"max_waves_per_cu":64,"max_waves_per_simd":16,"model_name":"NVIDIA H200","name":"GH100","node_id":0,"num_xcc":1,"pci_location":"0000:1b:00","product_name":"NVIDIA H200","simd_count":528,"simd_per_cu":4,"type":2,"vendor_name":"NVIDIA","wave_front_size":32}],"#.to_string(),
            r#""buffer_records":{"hip_api":[],"hsa_api":[],"kernel_dispatch":["#.to_string(),
            format!(r#"{{"correlation_id":{{"external":0,"internal":101}},"dispatch_info":{},"end_timestamp":6050,"kind":11,"operation":2,"replay_pass":0,"start_timestamp":6000,"stream_id":{{"handle":7}},"thread_id":5}},"#, dispatch_info(1)),
            format!(r#"{{"correlation_id":{{"external":0,"internal":102}},"dispatch_info":{},"end_timestamp":7070,"kind":11,"operation":2,"replay_pass":0,"start_timestamp":7000,"stream_id":{{"handle":7}},"thread_id":5}}],"#, dispatch_info(2)),
            r#""marker_api":[],"memory_allocation":[],"memory_copy":[],"pc_sample_host_trap":[],"pc_sample_stochastic":[],"rccl_api":[],"rocdecode_api":[],"rocjpeg_api":[],"scratch_memory":[]},"#.to_string(),
            format!(r#""callback_records":{{"counter_collection":[{{"accum_vgpr_count":0,"arch_vgpr_count":16,"dispatch_data":{{"correlation_id":{{"external":0,"internal":101}},"dispatch_info":{},"end_timestamp":6050,"start_timestamp":6000}},"lds_block_size_v":576,"records":[{{"counter_id":{{"handle":1}},"value":2.5}}],"replay_pass":0,"sgpr_count":0,"stream_id":{{"handle":7}},"thread_id":5}}]}},"#, dispatch_info(1)),
            r#""code_objects":[],"counters":[{"agent_id":{"handle":1},"block":"sm","description":"SQ_WAVES described","dimension_ids":[],"dimensions":[],"expression":"sm__warps_launched.sum","id":{"handle":1},"instances":[],"is_constant":0,"is_derived":0,"name":"SQ_WAVES","units":"warp"}],"host_functions":[],"#.to_string(),
            r#""kernel_symbols":[{"accum_vgpr_count":0,"arch_vgpr_count":0,"code_object_id":0,"demangled_kernel_name":"","formatted_kernel_name":"","group_segment_size":0,"kernarg_segment_size":0,"kernel_id":0,"kernel_name":"","kernel_object":0,"private_segment_size":0,"sgpr_count":0,"truncated_kernel_name":""},"#.to_string(),
            r#"{"accum_vgpr_count":0,"arch_vgpr_count":16,"code_object_id":0,"demangled_kernel_name":"k()","formatted_kernel_name":"k()","group_segment_size":64,"kernarg_segment_size":4,"kernel_id":1,"kernel_name":"_Z1kv","kernel_object":1,"private_segment_size":8,"sgpr_count":0,"truncated_kernel_name":"k"}],"#.to_string(),
            r#""kreplay":{"replay_costs":[],"warnings":[]},"#.to_string(),
            format!(r#""metadata":{{"cache_control":"none","clock_control":"none","command":["./app","--size","1 MiB"],"fini_time":2000,"hostname":"node-a","init_time":{},"pid":4,"ppid":1}},"#, process(4).start_ns),
            format!(r#""strings":{{"att_filenames":[],{},"code_object_snapshot_filenames":[],"correlation_id":{{"external":[]}},"counters":{{"dimension_ids":[]}},"marker_api":[],"pc_sample_comments":[],"pc_sample_instructions":[]}},"#, expected_kind_tables()),
            r#""summary":[{"domain":"KERNEL_DISPATCH","stats":{"count":2,"max":70,"mean":60.0,"min":50,"operations":[{"key":"k()","value":{"count":2,"max":70,"mean":60.0,"min":50,"sqr":7400,"stddev":14.142135623730951,"sum":120,"variance":200.0}}],"sqr":7400,"stddev":14.142135623730951,"sum":120,"variance":200.0}}]}]}"#.to_string(),
        ]
        .concat();
        assert_eq!(String::from_utf8(streamed).unwrap(), expected);
    }

    #[test]
    fn an_empty_process_has_every_list_of_rocprofv3() {
        let run = RunData {
            processes: vec![ProcessRun::new(process(3))],
        };
        let mut streamed = Vec::new();
        write_document(&run, &mut streamed).unwrap();
        let start_ns = process(3).start_ns;
        let kinds = expected_kind_tables();
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            format!(
                "{{\"rocprofiler-sdk-tool\":[{{\"agents\":[],\"buffer_records\":{{\"hip_api\":[],\
                 \"hsa_api\":[],\"kernel_dispatch\":[],\"marker_api\":[],\"memory_allocation\":[],\
                 \"memory_copy\":[],\"pc_sample_host_trap\":[],\"pc_sample_stochastic\":[],\
                 \"rccl_api\":[],\"rocdecode_api\":[],\"rocjpeg_api\":[],\"scratch_memory\":[]}},\
                 \"callback_records\":{{\"counter_collection\":[]}},\"code_objects\":[],\
                 \"counters\":[],\"host_functions\":[],\"kernel_symbols\":[{{\
                 \"accum_vgpr_count\":0,\"arch_vgpr_count\":0,\"code_object_id\":0,\
                 \"demangled_kernel_name\":\"\",\"formatted_kernel_name\":\"\",\
                 \"group_segment_size\":0,\"kernarg_segment_size\":0,\"kernel_id\":0,\
                 \"kernel_name\":\"\",\"kernel_object\":0,\"private_segment_size\":0,\
                 \"sgpr_count\":0,\"truncated_kernel_name\":\"\"}}],\"kreplay\":{{\
                 \"replay_costs\":[],\"warnings\":[]}},\"metadata\":{{\"cache_control\":\"none\",\"clock_control\":\"none\",\"command\":[\"./app\",\
                 \"--size\",\"1 MiB\"],\"fini_time\":0,\"hostname\":\"node-a\",\
                 \"init_time\":{start_ns},\"pid\":3,\"ppid\":1}},\"strings\":{{\
                 \"att_filenames\":[],{kinds},\"code_object_snapshot_filenames\":[],\
                 \"correlation_id\":{{\"external\":[]}},\"counters\":{{\"dimension_ids\":[]}},\
                 \"marker_api\":[],\"pc_sample_comments\":[],\"pc_sample_instructions\":[]}},\
                 \"summary\":[]}}]}}"
            )
        );
    }

    #[test]
    fn the_streamed_document_is_canonical_json_with_sorted_keys() {
        let run = representative_run();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out_results.json");
        write_json(&run, &path).unwrap();
        let streamed = std::fs::read_to_string(&path).unwrap();
        // serde_json's Value sorts object keys: the same bytes back mean every object of the
        // stream has sorted, unique keys, and nothing but JSON.
        let parsed: Value = serde_json::from_str(&streamed).unwrap();
        assert_eq!(serde_json::to_string(&parsed).unwrap(), streamed);
        assert_eq!(list(&parsed[TOOL_KEY]).len(), 3);
        let read = read_json_counter_records(&path).unwrap();
        assert!(read.last().unwrap().counters["UNDECLARED_0"].is_nan());
        assert_eq!(
            parsed[TOOL_KEY][1]["metadata"]["hostname"],
            "n\"ode\\\n\u{1}é€😀"
        );
    }

    #[test]
    fn kernel_symbols_is_indexed_by_kernel_id() {
        let process = recorded_process();
        let symbols = list(&process["kernel_symbols"]);
        // Kernels 11 and 12: entries 0..=10 are placeholders, as rocprofv3 leaves them.
        assert_eq!(symbols.len(), 13);
        assert_eq!(symbols[11]["kernel_id"], 11);
        assert_eq!(symbols[11]["kernel_name"], "_Z5saxpyPfS_f");
        assert_eq!(symbols[11]["truncated_kernel_name"], "saxpy");
        assert_eq!(symbols[12]["formatted_kernel_name"], "scale(float*)");
        for placeholder in &symbols[..11] {
            assert_eq!(placeholder["kernel_id"], 0);
            assert_eq!(placeholder["kernel_name"], "");
        }
        // rocprofv3's validators: kernel_symbols[dispatch_info.kernel_id].
        for record in list(&process["buffer_records"]["kernel_dispatch"]) {
            let kernel_id = record["dispatch_info"]["kernel_id"].as_u64().unwrap();
            let symbol = &symbols[kernel_id as usize];
            assert_eq!(symbol["kernel_id"], kernel_id);
            let expected = if kernel_id == 11 {
                "saxpy(float*, float*, float)"
            } else {
                "scale(float*)"
            };
            assert_eq!(symbol["formatted_kernel_name"], expected);
        }

        // A dispatch of an undescribed kernel still indexes the list (a placeholder).
        let run = representative_run();
        let odd = &document_of(&run)[TOOL_KEY][1];
        let symbols = list(&odd["kernel_symbols"]);
        assert_eq!(symbols.len(), 100);
        assert_eq!(symbols[99]["kernel_name"], "");
        assert_eq!(
            symbols[11]["formatted_kernel_name"],
            "void f<\"x\">(int, char const*)"
        );
    }

    #[test]
    fn sparse_kernel_ids_are_renumbered_in_every_record() {
        let mut records = recorded_run(8);
        for record in &mut records {
            match record {
                Record::KernelSymbol(k) if k.kernel_id == 11 => k.kernel_id = u64::MAX,
                Record::KernelSymbol(k) => k.kernel_id = 1 << 40,
                Record::Dispatch(d) if d.kernel_id == 11 => d.kernel_id = u64::MAX,
                Record::Dispatch(d) => d.kernel_id = 1 << 40,
                _ => {}
            }
        }
        let run = RunData::from_records(records.clone());
        let process = &document_of(&run)[TOOL_KEY][0];
        let symbols = list(&process["kernel_symbols"]);
        assert_eq!(symbols.len(), 3, "placeholder, then the kernels from 1");
        assert_eq!(symbols[1]["kernel_id"], 1);
        assert_eq!(symbols[1]["kernel_object"], u64::MAX, "our id is kept");
        assert_eq!(symbols[1]["kernel_name"], "_Z5saxpyPfS_f");
        assert_eq!(symbols[2]["kernel_object"], 1u64 << 40);
        for record in list(&process["buffer_records"]["kernel_dispatch"]) {
            let id = record["dispatch_info"]["kernel_id"].as_u64().unwrap();
            let dispatch_id = record["dispatch_info"]["dispatch_id"].as_u64().unwrap();
            assert_eq!(id, if dispatch_id == 1 { 1 } else { 2 });
        }
        let (_dir, _db, json) = json_of(records);
        let read = read_json_counter_records(&json).unwrap();
        assert!(read
            .iter()
            .all(|r| (r.dispatch_id == 1) == (r.kernel_name == "saxpy(float*, float*, float)")));
        assert!(read.iter().any(|r| r.kernel_name == "scale(float*)"));
    }

    #[test]
    fn strings_name_the_integer_codes_of_records() {
        let process = recorded_process();
        let strings = &process["strings"];
        let buffer = list(&strings["buffer_records"]);
        let callback = list(&strings["callback_records"]);
        // rocprofiler-sdk fwd.h: ROCPROFILER_BUFFER_TRACING_LAST = 33, CALLBACK = 22.
        assert_eq!((buffer.len(), callback.len()), (33, 22));
        for (kinds, index, name) in [
            (buffer, 0, "NONE"),
            (buffer, 10, "MEMORY_COPY"),
            (buffer, 11, "KERNEL_DISPATCH"),
            (buffer, 16, "MEMORY_ALLOCATION"),
            (buffer, 18, "ROCDECODE_API"),
            (buffer, 32, "MARKER_CORE_RANGE_API"),
            (callback, 10, "CODE_OBJECT"),
            (callback, 12, "KERNEL_DISPATCH"),
            (callback, 21, "MARKER_CORE_RANGE_API"),
        ] {
            assert_eq!(kinds[index]["kind"], name, "{index}");
        }
        for record in list(&process["buffer_records"]["kernel_dispatch"]) {
            let kind = &buffer[record["kind"].as_u64().unwrap() as usize];
            assert_eq!(kind["kind"], "KERNEL_DISPATCH");
            let operation = record["operation"].as_u64().unwrap() as usize;
            assert_eq!(kind["operations"][operation], "KERNEL_DISPATCH_COMPLETE");
        }
        assert_eq!(
            callback[12]["operations"],
            json!([
                "KERNEL_DISPATCH_NONE",
                "KERNEL_DISPATCH_ENQUEUE",
                "KERNEL_DISPATCH_COMPLETE"
            ])
        );
        assert_eq!(buffer[10]["operations"], json!([]));
        assert_eq!(strings["counters"]["dimension_ids"], json!([]));
        assert_eq!(strings["correlation_id"]["external"], json!([]));
    }

    #[test]
    fn type_kind_and_operation_are_integers() {
        let process = recorded_process();
        assert_eq!(
            process["agents"][0]["type"], 2,
            "ROCPROFILER_AGENT_TYPE_GPU"
        );
        let record = &process["buffer_records"]["kernel_dispatch"][0];
        assert_eq!(
            record["kind"], 11,
            "ROCPROFILER_BUFFER_TRACING_KERNEL_DISPATCH"
        );
        assert_eq!(
            record["operation"], 2,
            "ROCPROFILER_KERNEL_DISPATCH_COMPLETE"
        );
    }

    #[test]
    fn records_carry_their_stream() {
        let mut records = recorded_run(8);
        if let Record::Dispatch(d) = &mut records[7] {
            d.stream_id = 42;
        }
        let process = &document_of(&RunData::from_records(records))[TOOL_KEY][0];
        let traces = list(&process["buffer_records"]["kernel_dispatch"]);
        let counted = list(&process["callback_records"]["counter_collection"]);
        assert_eq!(traces[0]["stream_id"]["handle"], 42);
        assert_eq!(counted[0]["stream_id"]["handle"], 42);
        assert_eq!(traces[1]["stream_id"]["handle"], 7);
        assert_eq!(counted[1]["stream_id"]["handle"], 7);
        for record in traces {
            assert_eq!(
                record["stream_id"]["handle"],
                record["dispatch_info"]["queue_id"]["handle"]
            );
        }
        for record in counted {
            assert_eq!(
                record["stream_id"]["handle"],
                record["dispatch_data"]["dispatch_info"]["queue_id"]["handle"]
            );
        }
    }

    #[test]
    fn agents_have_distinct_non_zero_handles_that_records_use() {
        let mut run = RunData::from_records(recorded_run(8));
        let process = &mut run.processes[0];
        let mut second = process.agents[0].clone();
        second.agent_id = 1;
        second.pci_location = "0000:2b:00".to_string();
        process.agents.push(second);
        process.dispatches[3].agent_id = 1;
        // Device 5 is only mentioned by a dispatch: it gets an entry too.
        process.dispatches[4].agent_id = 5;
        let process = &document_of(&run)[TOOL_KEY][0];
        let agents = list(&process["agents"]);
        let handles: Vec<u64> = agents
            .iter()
            .map(|a| a["id"]["handle"].as_u64().unwrap())
            .collect();
        assert_eq!(handles, vec![1, 2, 3]);
        let node_ids: Vec<&Value> = agents.iter().map(|a| &a["node_id"]).collect();
        assert_eq!(node_ids, vec![&json!(0), &json!(1), &json!(5)]);
        assert_eq!(agents[2]["product_name"], "");
        let agent_of = |handle: &Value| {
            agents
                .iter()
                .find(|a| &a["id"]["handle"] == handle)
                .unwrap_or_else(|| panic!("no agent {handle}"))["node_id"]
                .as_u64()
                .unwrap()
        };
        let traces = list(&process["buffer_records"]["kernel_dispatch"]);
        let expected_devices = [0, 0, 0, 1, 5];
        for (record, device) in traces.iter().zip(expected_devices) {
            assert_eq!(
                agent_of(&record["dispatch_info"]["agent_id"]["handle"]),
                device
            );
        }
        // Counters: one entry per (agent, counter), distinct handles, each on a listed agent.
        let counters = list(&process["counters"]);
        assert_eq!(counters.len(), 3 * 3);
        let counter_handles: HashSet<u64> = counters
            .iter()
            .map(|c| c["id"]["handle"].as_u64().unwrap())
            .collect();
        assert_eq!(counter_handles.len(), 9);
        assert!(!counter_handles.contains(&0));
        for counter in counters {
            agent_of(&counter["agent_id"]["handle"]);
        }
        // A counter record's handles name a counter of its own agent.
        for record in list(&process["callback_records"]["counter_collection"]) {
            let agent = &record["dispatch_data"]["dispatch_info"]["agent_id"]["handle"];
            for value in list(&record["records"]) {
                let counter = counters
                    .iter()
                    .find(|c| c["id"]["handle"] == value["counter_id"]["handle"])
                    .unwrap();
                assert_eq!(&counter["agent_id"]["handle"], agent);
            }
        }
        // The reader resolves agent 1's counter handles (dispatch 2's record).
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.json");
        write_json(&run, &path).unwrap();
        let read = read_json_counter_records(&path).unwrap();
        assert_eq!(read[3].dispatch_id, 2);
        assert_eq!(read[3].counters["SQ_WAVES"], 0.0);
    }

    #[test]
    fn every_record_of_a_kernel_replay_run_has_a_replay_pass() {
        // The trace-only dispatch 3 ran once (pass None): in a kernel-replay run it is pass 0.
        let process = recorded_process();
        let traces = list(&process["buffer_records"]["kernel_dispatch"]);
        let passes: Vec<&Value> = traces.iter().map(|r| &r["replay_pass"]).collect();
        assert_eq!(
            passes,
            vec![&json!(0), &json!(1), &json!(2), &json!(0), &json!(0)]
        );
        // A dispatch of another process of the run that ran once, counters collected: pass 0.
        let mut run = RunData::from_records(recorded_run(8));
        let mut other = RunData::from_records(recorded_run(9)).processes.remove(0);
        for dispatch in &mut other.dispatches {
            dispatch.replay_pass = None;
        }
        run.processes.push(other);
        let document = document_of(&run);
        for process in list(&document[TOOL_KEY]) {
            for record in list(&process["callback_records"]["counter_collection"]) {
                assert!(record["replay_pass"].is_u64(), "{record}");
            }
        }
        let other = &document[TOOL_KEY][1];
        assert_eq!(
            other["callback_records"]["counter_collection"][0]["replay_pass"],
            0
        );
    }

    #[test]
    fn a_run_without_replay_has_no_replay_pass() {
        let records: Vec<Record> = recorded_run(3)
            .into_iter()
            .map(|record| match record {
                Record::Dispatch(mut d) => {
                    d.replay_pass = None;
                    Record::Dispatch(d)
                }
                other => other,
            })
            .collect();
        let (_dir, _db, json) = json_of(records);
        let read = read_json_counter_records(&json).unwrap();
        assert!(!read.is_empty());
        assert!(read.iter().all(|r| r.replay_pass.is_none()));
        let document: Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let traces = list(&document[TOOL_KEY][0]["buffer_records"]["kernel_dispatch"]);
        assert!(traces.iter().all(|r| r.get("replay_pass").is_none()));
    }

    #[test]
    fn the_summary_has_per_kernel_dispatch_statistics() {
        let mut run = RunData::from_records(recorded_run(8));
        let durations = [10, 1_000, 2_000, 20, 30];
        for (dispatch, ns) in run.processes[0].dispatches.iter_mut().zip(durations) {
            dispatch.end_ns = dispatch.start_ns + ns;
        }
        let summary = &document_of(&run)[TOOL_KEY][0]["summary"];
        assert_eq!(list(summary).len(), 1);
        assert_eq!(summary[0]["domain"], "KERNEL_DISPATCH");
        // Passes 1 and 2 of dispatch 1 (1000 and 2000 ns) are replays: not counted.
        let stats = &summary[0]["stats"];
        assert_eq!(stats["count"], 3);
        assert_eq!(stats["sum"], 60);
        assert_eq!(stats["sqr"], 1_400);
        assert_eq!((&stats["min"], &stats["max"]), (&json!(10), &json!(30)));
        assert_eq!(stats["mean"], 20.0);
        assert_eq!(stats["variance"], 100.0);
        assert_eq!(stats["stddev"], 10.0);
        // A std::map as cereal writes it: [{key, value}], keys sorted.
        let operations = list(&stats["operations"]);
        let keys: Vec<&Value> = operations.iter().map(|o| &o["key"]).collect();
        assert_eq!(
            keys,
            vec![
                &json!("saxpy(float*, float*, float)"),
                &json!("scale(float*)")
            ]
        );
        let scale = &operations[1]["value"];
        assert_eq!((&scale["count"], &scale["sum"]), (&json!(2), &json!(50)));
        assert_eq!(scale["variance"], 50.0);
        assert_eq!(operations[0]["value"]["variance"], 0.0);
    }

    #[test]
    fn summary_sums_of_squares_are_exact_past_2_to_the_64() {
        let mut durations = DurationStats::default();
        durations.add(u64::MAX);
        let text = serde_json::to_string(&StatsOfKernel(&durations)).unwrap();
        assert!(
            text.contains(&format!(
                "\"sqr\":{}",
                u128::from(u64::MAX) * u128::from(u64::MAX)
            )),
            "{text}"
        );
        durations.add(u64::MAX);
        assert_eq!(
            durations.sum_of_squares,
            u128::MAX,
            "saturates instead of wrapping"
        );
        assert_eq!(durations.sum, u64::MAX, "saturates");
    }

    #[test]
    fn the_sections_and_lists_are_rocprofv3s() {
        let process = recorded_process();
        let keys =
            |value: &Value| -> Vec<String> { value.as_object().unwrap().keys().cloned().collect() };
        assert_eq!(
            keys(&process),
            [
                "agents",
                "buffer_records",
                "callback_records",
                "code_objects",
                "counters",
                "host_functions",
                "kernel_symbols",
                "kreplay",
                "metadata",
                "strings",
                "summary"
            ]
        );
        // generateJSON.cpp: what buffer_records and callback_records hold.
        assert_eq!(
            keys(&process["buffer_records"]),
            [
                "hip_api",
                "hsa_api",
                "kernel_dispatch",
                "marker_api",
                "memory_allocation",
                "memory_copy",
                "pc_sample_host_trap",
                "pc_sample_stochastic",
                "rccl_api",
                "rocdecode_api",
                "rocjpeg_api",
                "scratch_memory"
            ]
        );
        assert_eq!(keys(&process["callback_records"]), ["counter_collection"]);
        let record = &process["callback_records"]["counter_collection"][0];
        assert_eq!(
            keys(record),
            [
                "accum_vgpr_count",
                "arch_vgpr_count",
                "dispatch_data",
                "lds_block_size_v",
                "records",
                "replay_pass",
                "sgpr_count",
                "stream_id",
                "thread_id"
            ]
        );
    }

    #[test]
    fn a_write_that_fails_midway_names_the_file_and_keeps_the_old_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out_results.json");
        let run = RunData::from_records(recorded_run(7));
        write_json(&run, &path).unwrap();
        let before = std::fs::read(&path).unwrap();
        // Larger than the write buffer, so that part of it reaches the temporary file.
        let mut bigger = run.clone();
        bigger.processes[0].warnings.push(Warning {
            message: "x".repeat(64 * 1024),
        });
        let error = write_file(&path, |out| {
            write_document(
                &bigger,
                FullAfter {
                    out,
                    left: 32 * 1024,
                },
            )
        })
        .unwrap_err()
        .to_string();
        assert!(
            error.starts_with(&format!("cannot write {}: ", path.display())),
            "{error}"
        );
        assert_eq!(std::fs::read(&path).unwrap(), before);
        let files: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(files.len(), 1, "no temporary file is left behind");
    }

    #[test]
    fn a_dispatch_with_three_passes_is_three_records_with_one_dispatch_id() {
        let (_dir, _db, json) = json_of(recorded_run(8));
        let records = read_json_counter_records(&json).unwrap();
        let first: Vec<&JsonCounterRecord> =
            records.iter().filter(|r| r.dispatch_id == 1).collect();
        assert_eq!(first.len(), 3);
        assert_eq!(
            first.iter().map(|r| r.replay_pass).collect::<Vec<_>>(),
            vec![Some(0), Some(1), Some(2)]
        );
        assert!(first
            .iter()
            .all(|r| r.kernel_name == "saxpy(float*, float*, float)"));
        assert_eq!(first[1].counters["GRBM_GUI_ACTIVE"], 0.5);
        assert_eq!(
            records.len(),
            4,
            "the trace-only dispatch has no counter record"
        );
    }

    #[test]
    fn json_values_agree_with_the_database() {
        let (_dir, db, json) = json_of(recorded_run(8));
        let conn = rusqlite::Connection::open(&db).unwrap();
        let mut expected: Vec<(u64, Option<u32>, String, f64)> = conn
            .prepare("SELECT dispatch_id, replay_pass, counter_name, value FROM counters_collection ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?, r.get(3)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let mut actual: Vec<(u64, Option<u32>, String, f64)> = read_json_counter_records(&json)
            .unwrap()
            .into_iter()
            .flat_map(|r| {
                r.counters
                    .into_iter()
                    .map(move |(name, value)| (r.dispatch_id, r.replay_pass, name, value))
            })
            .collect();
        let key = |row: &(u64, Option<u32>, String, f64)| (row.0, row.1, row.2.clone());
        expected.sort_by_key(key);
        actual.sort_by_key(key);
        assert_eq!(actual, expected);
    }

    #[test]
    fn the_layout_follows_rocprofv3_with_our_extension() {
        let (_dir, _db, json) = json_of(recorded_run(8));
        let document: Value =
            serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let process = &document[TOOL_KEY][0];
        assert_eq!(process["metadata"]["pid"], 8);
        assert_eq!(process["agents"][0]["cu_count"], 132);
        assert_eq!(process["counters"].as_array().unwrap().len(), 3);
        let dispatches = process["buffer_records"]["kernel_dispatch"]
            .as_array()
            .unwrap();
        assert_eq!(dispatches.len(), 5, "one per pass, trace-only included");
        let record = &process["callback_records"]["counter_collection"][0];
        assert_eq!(record["replay_pass"], 0);
        assert_eq!(
            record["dispatch_data"]["dispatch_info"]["grid_size"]["x"],
            262_144
        );
        assert_eq!(
            record["dispatch_data"]["dispatch_info"]["workgroup_size"]["x"],
            256
        );
        assert_eq!(record["lds_block_size_v"], 1536);
        let extension = &process["kreplay"];
        assert_eq!(extension["replay_costs"].as_array().unwrap().len(), 2);
        assert_eq!(extension["replay_costs"][0]["outcome"], "replayed");
        assert_eq!(extension["replay_costs"][0]["pass_ns"][2], 12_000);
        assert_eq!(
            extension["warnings"][0]["message"],
            "graph launches are not replayed; they ran once"
        );
    }

    #[test]
    fn reading_a_file_that_is_not_ours_names_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("other.json");
        std::fs::write(&path, r#"{"something": []}"#).unwrap();
        let error = read_json_counter_records(&path).unwrap_err().to_string();
        assert!(
            error.contains("other.json") && error.contains(TOOL_KEY),
            "{error}"
        );
    }

    #[test]
    fn reading_skips_placeholders_and_reads_lists_without_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.json");
        let record = |kernel_id: u64| {
            json!({
                "dispatch_data": {"dispatch_info": {"dispatch_id": kernel_id, "kernel_id": kernel_id}},
                "records": [{"counter_id": {"handle": 1}, "value": 1.0}],
            })
        };
        let placeholder = json!({"kernel_id": 0, "kernel_name": "", "demangled_kernel_name": ""});
        let symbol = |id: u64, name: &str| json!({"kernel_id": id, "demangled_kernel_name": name});
        let document = json!({ TOOL_KEY: [
            // rocprofv3's layout.
            {
                "counters": [{"id": {"handle": 1}, "name": "SQ_WAVES"}],
                "kernel_symbols": [placeholder, placeholder, symbol(2, "two")],
                "callback_records": {"counter_collection": [record(2), record(1)]},
            },
            // A list without placeholders (kreplay before rocprofv3's layout).
            {
                "counters": [{"id": {"handle": 1}, "name": "SQ_WAVES"}],
                "kernel_symbols": [symbol(7, "seven")],
                "callback_records": {"counter_collection": [record(7)]},
            },
        ]});
        std::fs::write(&path, document.to_string()).unwrap();
        let names: Vec<String> = read_json_counter_records(&path)
            .unwrap()
            .into_iter()
            .map(|r| r.kernel_name)
            .collect();
        assert_eq!(names, ["two", "", "seven"]);
    }
}
