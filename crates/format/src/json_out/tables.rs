//! The lists of a process object that records refer to by handle: `agents`, `counters` and
//! `kernel_symbols`, each with the handles of its entries.

use super::code_objects::CodeObjects;
use super::kinds::{AGENT_TYPE_GPU, SIZE_AGENT, SIZE_KERNEL_SYMBOL};
use super::parts::{handle, xyz};
use crate::error::FormatError;
use crate::naming::{metric_block, truncated_name, vendor_for_chip};
use crate::records::{AgentInfo, CounterInfo, CounterName, KernelSymbol};
use crate::run::ProcessRun;
use rustc_hash::FxHashMap;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

/// Kernel ids are renumbered when `kernel_symbols` would be longer than this many entries per
/// kernel id, plus [`KERNEL_SLOTS_SLACK`].
const KERNEL_SLOTS_PER_ID: u64 = 16;
const KERNEL_SLOTS_SLACK: u64 = 4096;

/// What a process's dispatches mention that the lists describe, each in first-seen order: read
/// in one pass over them, before the records are written.
#[derive(Default)]
pub(super) struct Mentioned {
    agents: Vec<u64>,
    counters: Vec<String>,
    kernels: Vec<u64>,
}

impl Mentioned {
    pub(super) fn scan(run: &ProcessRun) -> Result<Mentioned, FormatError> {
        let mut mentioned = Mentioned::default();
        if run.mentions_only_described() {
            // The lists are the described ones: nothing to read.
            return Ok(mentioned);
        }
        let (mut agents, mut counters, mut kernels) =
            (HashSet::new(), HashSet::new(), HashSet::new());
        for dispatch in run.each_dispatch() {
            let dispatch = dispatch?;
            if agents.insert(dispatch.agent_id) {
                mentioned.agents.push(dispatch.agent_id);
            }
            if kernels.insert(dispatch.kernel_id) {
                mentioned.kernels.push(dispatch.kernel_id);
            }
            for sample in &dispatch.counters {
                if counters.insert(sample.name) {
                    mentioned.counters.push(sample.name.to_string());
                }
            }
        }
        Ok(mentioned)
    }
}

/// The agents of a process: the described ones, then any that only dispatches mention, each with
/// its handle (position + 1: never 0, which rocprofv3's readers take for "no agent").
pub(super) struct Agents<'a> {
    /// Agent ids, described first.
    ids: Vec<u64>,
    described: HashMap<u64, &'a AgentInfo>,
    handles: HashMap<u64, u64>,
}

impl<'a> Agents<'a> {
    pub(super) fn new(run: &'a ProcessRun, mentioned: &Mentioned) -> Agents<'a> {
        let mut described = HashMap::new();
        for agent in &run.agents {
            described.entry(agent.agent_id).or_insert(agent);
        }
        let mut ids = Vec::new();
        let mut seen = HashSet::new();
        let mentioned = mentioned.agents.iter().copied();
        let loaded_onto = run.code_objects.iter().map(|c| c.agent_id);
        for id in run
            .agents
            .iter()
            .map(|a| a.agent_id)
            .chain(mentioned)
            .chain(loaded_onto)
        {
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

    pub(super) fn handle(&self, agent_id: u64) -> u64 {
        self.handles[&agent_id]
    }

    /// The handle of a device the document may not list (a copy's or allocation's).
    pub(super) fn try_handle(&self, agent_id: u64) -> Option<u64> {
        self.handles.get(&agent_id).copied()
    }

    pub(super) fn entries(&self) -> impl Iterator<Item = Value> + '_ {
        self.ids.iter().map(|id| {
            let agent = self.described.get(id).copied();
            let mut entry = agent_json(agent);
            entry["id"] = handle(self.handle(*id));
            for key in [
                "node_id",
                "logical_node_id",
                "logical_node_type_id",
                "gpu_id",
            ] {
                entry[key] = json!(id);
            }
            entry
        })
    }
}

/// An agent's fields, rocprofiler's `rocprofiler_agent_t` as rocprofv3 writes it (and the
/// agent_info.csv columns): those with an NVIDIA equivalent filled, AMD-only ones 0, CUDA's
/// launch limits (1024 threads per block, grid 2^31-1 × 65535 × 65535 blocks) for every GPU
/// CUDA 13 supports. Without a description (an agent only dispatches name), names are empty and
/// numbers 0.
fn agent_json(agent: Option<&AgentInfo>) -> Value {
    let text = |field: fn(&AgentInfo) -> &str| agent.map_or("", |a| field(a));
    let number = |field: fn(&AgentInfo) -> u64| agent.map_or(0, field);
    let (domain, location_id) = agent.map_or((0, 0), |a| a.pci_domain_and_location());
    let mut entry = json!({
        "size": SIZE_AGENT,
        "type": AGENT_TYPE_GPU,
        "name": text(|a| &a.chip),
        "product_name": text(|a| &a.name),
        "model_name": text(|a| &a.name),
        "vendor_name": agent.map_or("", |a| vendor_for_chip(&a.chip)),
        "cu_count": number(|a| a.sm_count.into()),
        "simd_count": number(|a| a.simd_count().into()),
        "simd_per_cu": number(|a| if a.sm_count > 0 { AgentInfo::SIMDS_PER_SM.into() } else { 0 }),
        "max_waves_per_cu": number(|a| a.max_warps_per_sm().into()),
        "max_waves_per_simd": number(|a| a.max_warps_per_simd().into()),
        "lds_size_in_kb": number(|a| (a.shared_memory_per_sm_bytes / 1024).into()),
        "num_xcc": number(|_| 1),
        "wave_front_size": 32,
        "local_mem_size": number(|a| a.global_memory_bytes),
        "pci_location": text(|a| &a.pci_location),
        "vendor_id": number(|_| AgentInfo::PCI_VENDOR_ID.into()),
        "location_id": location_id,
        "domain": domain,
        "workgroup_max_size": number(|_| 1024),
        "workgroup_max_dim": xyz([number(|_| 1024), number(|_| 1024), number(|_| 64)]),
        "grid_max_dim": xyz([number(|_| 2_147_483_647), number(|_| 65_535), number(|_| 65_535)]),
        "grid_max_size": number(|_| u64::from(u32::MAX)),
        "runtime_visibility": { "hsa": 0, "hip": 0, "rccl": 0, "rocdecode": 0 },
        "uuid": "",
    });
    // rocprofiler's AMD-only fields: no NVIDIA equivalent the driver reports.
    for key in [
        "cpu_cores_count",
        "cpu_core_id_base",
        "simd_id_base",
        "gds_size_in_kb",
        "num_gws",
        "array_count",
        "num_shader_banks",
        "simd_arrays_per_engine",
        "cu_per_simd_array",
        "max_slots_scratch_cu",
        "gfx_target_version",
        "device_id",
        "drm_render_minor",
        "num_sdma_engines",
        "num_sdma_xgmi_engines",
        "num_sdma_queues_per_engine",
        "num_cp_queues",
        "max_engine_clk_ccompute",
        "max_engine_clk_fcompute",
        "sdma_fw_version",
        "fw_version",
        "capability",
        "cu_per_engine",
        "family_id",
        "hive_id",
        "mem_banks_count",
        "caches_count",
        "io_links_count",
    ] {
        entry[key] = json!(0);
    }
    entry
}

/// Counter names of a process in a stable order: the declared counters first, then any name that
/// only dispatches mention.
fn counter_names<'a>(
    run: &'a ProcessRun,
    mentioned: &Mentioned,
) -> Vec<(String, Option<&'a CounterInfo>)> {
    let mut names: Vec<(String, Option<&CounterInfo>)> = Vec::new();
    let mut seen = HashSet::new();
    for counter in &run.counters {
        if seen.insert(counter.name.as_str()) {
            names.push((counter.name.clone(), Some(counter)));
        }
    }
    for name in &mentioned.counters {
        if seen.insert(name.as_str()) {
            names.push((name.clone(), None));
        }
    }
    names
}

/// The `counters` of a process: one entry per (agent, counter) pair, as rocprofiler-sdk lists
/// them, and the handles counter records refer to them by.
pub(super) struct Counters<'a> {
    names: Vec<(String, Option<&'a CounterInfo>)>,
    /// Counter names → their place in `names` (an interned name hashes as its address).
    counter_index: FxHashMap<CounterName, usize>,
}

impl<'a> Counters<'a> {
    pub(super) fn new(run: &'a ProcessRun, mentioned: &Mentioned) -> Counters<'a> {
        let names = counter_names(run, mentioned);
        let counter_index = names
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (CounterName::from(n.as_str()), i))
            .collect();
        Counters {
            names,
            counter_index,
        }
    }

    /// Agent `agent_handle`'s counter `counter_index`: (agent position) × counters + counter + 1.
    pub(super) fn handle(&self, agent_handle: u64, counter_index: usize) -> u64 {
        (agent_handle - 1) * self.names.len() as u64 + counter_index as u64 + 1
    }

    pub(super) fn handle_of(&self, agent_handle: u64, name: CounterName) -> u64 {
        self.handle(agent_handle, self.counter_index[&name])
    }

    pub(super) fn entries<'s>(&'s self, agents: &'s Agents) -> impl Iterator<Item = Value> + 's {
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
                        "block": metric_block(metric),
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
pub(super) struct Kernels<'a> {
    /// JSON kernel id → symbol.
    symbols: HashMap<u64, &'a KernelSymbol>,
    /// Our kernel id → JSON kernel id, when ours are too sparse to index a list; else empty.
    renumbered: HashMap<u64, u64>,
    /// Entries of `kernel_symbols`: the largest JSON kernel id + 1 (at least 1, as rocprofv3).
    len: u64,
    /// The JSON ids of the symbols' code objects.
    code_objects: CodeObjects<'a>,
    /// The process whose naming options (`-M`, `-T`) give `formatted_kernel_name`.
    process: &'a crate::records::ProcessInfo,
}

impl<'a> Kernels<'a> {
    pub(super) fn new(run: &'a ProcessRun, mentioned: &Mentioned) -> Kernels<'a> {
        let mut ids = Vec::new();
        let mut seen = HashSet::new();
        let referenced = mentioned.kernels.iter().copied();
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
            code_objects: CodeObjects::new(run),
            process: &run.process,
        };
        for symbol in &run.kernels {
            let slot = kernels.slot(symbol.kernel_id);
            kernels.symbols.entry(slot).or_insert(symbol);
        }
        kernels.len = ids.iter().map(|id| kernels.slot(*id)).max().unwrap_or(0) + 1;
        kernels
    }

    /// The JSON kernel id of our kernel id, its code object's JSON id and its symbol (for
    /// `host_functions`).
    pub(super) fn symbol(&self, kernel_id: u64) -> (u64, u64, Option<&'a KernelSymbol>) {
        let slot = self.slot(kernel_id);
        let symbol = self.symbols.get(&slot).copied();
        let code_object = symbol.map_or(0, |k| self.code_objects.slot(k.code_object_id));
        (slot, code_object, symbol)
    }

    /// The JSON kernel id (index in `kernel_symbols`) of our kernel id.
    pub(super) fn slot(&self, kernel_id: u64) -> u64 {
        self.renumbered
            .get(&kernel_id)
            .copied()
            .unwrap_or(kernel_id)
    }

    pub(super) fn entries(&self) -> impl Iterator<Item = Value> + '_ {
        (0..self.len).map(|slot| {
            let symbol = self.symbols.get(&slot).copied();
            let code_object = symbol.map_or(0, |k| self.code_objects.slot(k.code_object_id));
            let formatted = symbol.map_or("", |k| crate::facts::kernel_name(self.process, k));
            kernel_symbol_json(slot, symbol, code_object, formatted)
        })
    }
}

/// Entry `slot` of `kernel_symbols` (its code object's JSON id `code_object`, its name under the
/// run's naming options `formatted`); without a symbol, rocprofv3's placeholder (a
/// default-constructed symbol: zeros and empty names).
fn kernel_symbol_json(
    slot: u64,
    kernel: Option<&KernelSymbol>,
    code_object: u64,
    formatted: &str,
) -> Value {
    let number = |field: fn(&KernelSymbol) -> u32| kernel.map_or(0, field);
    let demangled = kernel.map_or("", |k| k.demangled_name.as_str());
    json!({
        "size": SIZE_KERNEL_SYMBOL,
        "kernel_id": if kernel.is_some() { slot } else { 0 },
        "code_object_id": code_object,
        // CUDA does not report these: placeholders (0).
        "kernarg_segment_alignment": 0,
        "kernel_code_entry_byte_offset": 0,
        "kernel_address": handle(0),
        "kernel_name": kernel.map_or("", |k| k.mangled_name.as_str()),
        "formatted_kernel_name": formatted,
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
