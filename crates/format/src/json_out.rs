//! rocprofv3's JSON output (`<name>_results.json`, reference §2.6) and a reader for tests.
//!
//! Layout: `{"rocprofiler-sdk-tool": [ one object per process ]}`. Each process object has
//! `metadata`, `agents`, `counters` (one entry per agent and counter; `id.handle` is what counter
//! records refer to), `strings`, `code_objects`, `kernel_symbols`, `host_functions`,
//! `callback_records.counter_collection` (one record per pass of a dispatch that collected
//! counters, `replay_pass` 0-based on every record of a kernel-replay run),
//! `buffer_records.kernel_dispatch` (one per pass), and our extension `kreplay`
//! (`replay_costs`, `warnings`). The document is streamed, one array element at a time.

use crate::csv_out::{grid_threads, kernel_facts, KernelFacts};
use crate::error::FormatError;
use crate::output::write_file;
use crate::records::*;
use crate::run::{ProcessRun, RunData};
use serde::ser::{Error as _, SerializeMap, Serializer};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashMap};
use std::io::{self, Write};
use std::path::Path;

/// Top-level key of rocprofv3's JSON.
pub(crate) const TOOL_KEY: &str = "rocprofiler-sdk-tool";

fn xyz(values: [u64; 3]) -> Value {
    json!({ "x": values[0], "y": values[1], "z": values[2] })
}

/// Counter names of a process in a stable order: the declared counters first, then any name that
/// only dispatches mention.
fn counter_names(run: &ProcessRun) -> Vec<(String, Option<&CounterInfo>)> {
    let mut names: Vec<(String, Option<&CounterInfo>)> = run
        .counters
        .iter()
        .map(|c| (c.name.clone(), Some(c)))
        .collect();
    for dispatch in &run.dispatches {
        for sample in &dispatch.counters {
            if !names.iter().any(|(name, _)| *name == sample.name) {
                names.push((sample.name.clone(), None));
            }
        }
    }
    names
}

fn agent_ids(run: &ProcessRun) -> Vec<u64> {
    let mut ids: Vec<u64> = run.agents.iter().map(|a| a.agent_id).collect();
    for dispatch in &run.dispatches {
        if !ids.contains(&dispatch.agent_id) {
            ids.push(dispatch.agent_id);
        }
    }
    ids
}

/// The `counters` of a process: one entry per (agent, counter) pair, as rocprofiler-sdk lists
/// them, and the handles counter records refer to them by.
struct Counters<'a> {
    names: Vec<(String, Option<&'a CounterInfo>)>,
    agents: Vec<u64>,
    agent_index: HashMap<u64, usize>,
    counter_index: HashMap<String, usize>,
}

impl<'a> Counters<'a> {
    fn new(run: &'a ProcessRun) -> Counters<'a> {
        let names = counter_names(run);
        let agents = agent_ids(run);
        let agent_index = agents.iter().enumerate().map(|(i, a)| (*a, i)).collect();
        let counter_index = names
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.clone(), i))
            .collect();
        Counters {
            names,
            agents,
            agent_index,
            counter_index,
        }
    }

    fn handle(&self, agent_index: usize, counter_index: usize) -> u64 {
        (agent_index * self.names.len() + counter_index + 1) as u64
    }

    /// The handle of counter `name` on agent `agent_id`, both of the process.
    fn handle_of(&self, agent_id: u64, name: &str) -> u64 {
        self.handle(self.agent_index[&agent_id], self.counter_index[name])
    }

    fn entries(&self) -> impl Iterator<Item = Value> + '_ {
        self.agents
            .iter()
            .enumerate()
            .flat_map(move |(agent_index, agent_id)| {
                self.names
                    .iter()
                    .enumerate()
                    .map(move |(counter_index, (name, info))| {
                        let metric = info.map_or(name.as_str(), |c| c.metric.as_str());
                        json!({
                            "agent_id": { "handle": agent_id },
                            "id": { "handle": self.handle(agent_index, counter_index) },
                            "is_constant": 0,
                            "is_derived": 0,
                            "name": name,
                            "description": info.map_or("", |c| c.description.as_str()),
                            "block": crate::db::metric_block(metric),
                            "expression": metric,
                            "units": info.map_or("", |c| c.unit.as_str()),
                            "dimension_ids": [],
                        })
                    })
            })
    }
}

fn agent_json(agent: &AgentInfo) -> Value {
    json!({
        "id": { "handle": agent.agent_id },
        "node_id": agent.agent_id,
        "logical_node_id": agent.agent_id,
        "type": "GPU",
        "name": agent.chip,
        "product_name": agent.name,
        "model_name": agent.name,
        "vendor_name": crate::db::vendor_for_chip(&agent.chip),
        "cu_count": agent.sm_count,
        "wave_front_size": 32,
        "local_mem_size": agent.global_memory_bytes,
        "pci_location": agent.pci_location,
    })
}

fn kernel_symbol_json(kernel: &KernelSymbol) -> Value {
    json!({
        "kernel_id": kernel.kernel_id,
        "code_object_id": 0,
        "kernel_name": kernel.mangled_name,
        "formatted_kernel_name": kernel.demangled_name,
        "demangled_kernel_name": kernel.demangled_name,
        "truncated_kernel_name": truncated_name(&kernel.demangled_name),
        "kernel_object": kernel.kernel_id,
        "kernarg_segment_size": kernel.param_bytes,
        "group_segment_size": kernel.static_shared_bytes,
        "private_segment_size": kernel.local_bytes,
        "arch_vgpr_count": kernel.registers,
        "accum_vgpr_count": 0,
        "sgpr_count": 0,
    })
}

fn dispatch_info(dispatch: &DispatchRecord, facts: &KernelFacts) -> Value {
    json!({
        "agent_id": { "handle": dispatch.agent_id },
        "queue_id": { "handle": dispatch.stream_id },
        "kernel_id": dispatch.kernel_id,
        "dispatch_id": dispatch.dispatch_id,
        "private_segment_size": facts.scratch_size,
        "group_segment_size": facts.lds_block_size,
        "workgroup_size": xyz(dispatch.block.map(u64::from)),
        "grid_size": xyz(grid_threads(dispatch)),
    })
}

fn correlation(dispatch: &DispatchRecord) -> Value {
    json!({ "internal": dispatch.correlation_id, "external": 0 })
}

/// A `buffer_records.kernel_dispatch` record: one per pass.
fn kernel_dispatch_json(run: &ProcessRun, dispatch: &DispatchRecord) -> Value {
    let facts = kernel_facts(run, dispatch);
    let mut trace = json!({
        "kind": "KERNEL_DISPATCH",
        "operation": "KERNEL_DISPATCH_COMPLETE",
        "thread_id": dispatch.tid,
        "correlation_id": correlation(dispatch),
        "start_timestamp": dispatch.start_ns,
        "end_timestamp": dispatch.end_ns,
        "dispatch_info": dispatch_info(dispatch, &facts),
    });
    if let Some(pass) = dispatch.replay_pass {
        trace["replay_pass"] = json!(pass);
    }
    trace
}

/// A `callback_records.counter_collection` record: one per pass that collected counters.
fn counter_record_json(run: &ProcessRun, counters: &Counters, dispatch: &DispatchRecord) -> Value {
    let facts = kernel_facts(run, dispatch);
    let records: Vec<Value> = dispatch
        .counters
        .iter()
        .map(|sample| {
            json!({
                "counter_id": { "handle": counters.handle_of(dispatch.agent_id, &sample.name) },
                "value": sample.value,
            })
        })
        .collect();
    let mut record = json!({
        "dispatch_data": {
            "correlation_id": correlation(dispatch),
            "start_timestamp": dispatch.start_ns,
            "end_timestamp": dispatch.end_ns,
            "dispatch_info": dispatch_info(dispatch, &facts),
        },
        "records": records,
        "thread_id": dispatch.tid,
        "arch_vgpr_count": facts.vgpr_count,
        "accum_vgpr_count": 0,
        "sgpr_count": 0,
        "lds_block_size_v": facts.lds_block_size,
    });
    if let Some(pass) = dispatch.replay_pass {
        record["replay_pass"] = json!(pass);
    }
    record
}

/// rocprofv3's truncated name: the demangled name without its argument list.
fn truncated_name(demangled: &str) -> &str {
    demangled.split('(').next().unwrap_or(demangled)
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
// without the `preserve_order` feature) has always written them.

#[derive(Serialize)]
struct BufferRecords<D> {
    hip_api: [(); 0],
    hsa_api: [(); 0],
    kernel_dispatch: D,
    marker_api: [(); 0],
    memory_allocation: [(); 0],
    memory_copy: [(); 0],
    rocdecoder_api: [(); 0],
}

#[derive(Serialize)]
struct CallbackRecords<C> {
    counter_collection: C,
    pc_sample_host_trap: [(); 0],
}

#[derive(Serialize)]
struct Extension<C, W> {
    replay_costs: C,
    warnings: W,
}

/// One process object, written piece by piece.
struct ProcessJson<'a>(&'a ProcessRun);

impl Serialize for ProcessJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let run = self.0;
        let counters = Counters::new(run);
        let mut process = serializer.serialize_map(Some(10))?;
        process.serialize_entry("agents", &Array(|| run.agents.iter().map(agent_json)))?;
        process.serialize_entry(
            "buffer_records",
            &BufferRecords {
                hip_api: NONE,
                hsa_api: NONE,
                kernel_dispatch: Array(|| {
                    run.dispatches
                        .iter()
                        .map(|dispatch| kernel_dispatch_json(run, dispatch))
                }),
                marker_api: NONE,
                memory_allocation: NONE,
                memory_copy: NONE,
                rocdecoder_api: NONE,
            },
        )?;
        process.serialize_entry(
            "callback_records",
            &CallbackRecords {
                counter_collection: Array(|| {
                    run.dispatches
                        .iter()
                        .filter(|dispatch| !dispatch.counters.is_empty())
                        .map(|dispatch| counter_record_json(run, &counters, dispatch))
                }),
                pc_sample_host_trap: NONE,
            },
        )?;
        process.serialize_entry("code_objects", &NONE)?;
        process.serialize_entry("counters", &Array(|| counters.entries()))?;
        process.serialize_entry("host_functions", &NONE)?;
        process.serialize_entry(
            "kernel_symbols",
            &Array(|| run.kernels.iter().map(kernel_symbol_json)),
        )?;
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
            }),
        )?;
        process.serialize_entry("strings", &serde_json::Map::new())?;
        process.end()
    }
}

/// Streams the JSON document of `run` to `out`, one array element at a time.
fn write_document(run: &RunData, out: impl Write) -> io::Result<()> {
    let mut serializer = serde_json::Serializer::new(out);
    let mut document = serializer.serialize_map(Some(1))?;
    document.serialize_entry(TOOL_KEY, &Array(|| run.processes.iter().map(ProcessJson)))?;
    Ok(document.end()?)
}

pub(crate) fn write_json(run: &RunData, path: &Path) -> Result<(), FormatError> {
    write_file(path, |out| write_document(run, out))
}

/// One counter record of a JSON file, resolved: what tests of other crates compare.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonCounterRecord {
    pub dispatch_id: u64,
    /// `replay_pass` of the record; `None` in a run without kernel replay.
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
        let mut kernel_names: HashMap<u64, String> = HashMap::new();
        for symbol in process["kernel_symbols"].as_array().into_iter().flatten() {
            if let Some(id) = symbol["kernel_id"].as_u64() {
                let name = symbol["demangled_kernel_name"]
                    .as_str()
                    .or_else(|| symbol["kernel_name"].as_str())
                    .unwrap_or_default();
                kernel_names.insert(id, name.to_string());
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

    /// The document as it was built before it was streamed, one `Value` tree: the oracle.
    fn tree_document(run: &RunData) -> Value {
        let processes: Vec<Value> = run.processes.iter().map(tree_process).collect();
        json!({ TOOL_KEY: processes })
    }

    fn tree_process(run: &ProcessRun) -> Value {
        let names = counter_names(run);
        let agents = agent_ids(run);
        // Counter handle of (agent, counter): one entry per pair, as rocprofiler-sdk lists them.
        let handle = |agent_index: usize, counter_index: usize| {
            (agent_index * names.len() + counter_index + 1) as u64
        };
        let mut counters = Vec::new();
        for (agent_index, agent_id) in agents.iter().enumerate() {
            for (counter_index, (name, info)) in names.iter().enumerate() {
                let metric = info.map_or(name.as_str(), |c| c.metric.as_str());
                counters.push(json!({
                    "agent_id": { "handle": agent_id },
                    "id": { "handle": handle(agent_index, counter_index) },
                    "is_constant": 0,
                    "is_derived": 0,
                    "name": name,
                    "description": info.map_or("", |c| c.description.as_str()),
                    "block": crate::db::metric_block(metric),
                    "expression": metric,
                    "units": info.map_or("", |c| c.unit.as_str()),
                    "dimension_ids": [],
                }));
            }
        }
        let agent_index: HashMap<u64, usize> =
            agents.iter().enumerate().map(|(i, a)| (*a, i)).collect();
        let counter_index: HashMap<&str, usize> = names
            .iter()
            .enumerate()
            .map(|(i, (n, _))| (n.as_str(), i))
            .collect();

        let agents_json: Vec<Value> = run
            .agents
            .iter()
            .map(|agent| {
                json!({
                    "id": { "handle": agent.agent_id },
                    "node_id": agent.agent_id,
                    "logical_node_id": agent.agent_id,
                    "type": "GPU",
                    "name": agent.chip,
                    "product_name": agent.name,
                    "model_name": agent.name,
                    "vendor_name": crate::db::vendor_for_chip(&agent.chip),
                    "cu_count": agent.sm_count,
                    "wave_front_size": 32,
                    "local_mem_size": agent.global_memory_bytes,
                    "pci_location": agent.pci_location,
                })
            })
            .collect();

        let kernel_symbols: Vec<Value> = run
            .kernels
            .iter()
            .map(|kernel| {
                json!({
                    "kernel_id": kernel.kernel_id,
                    "code_object_id": 0,
                    "kernel_name": kernel.mangled_name,
                    "formatted_kernel_name": kernel.demangled_name,
                    "demangled_kernel_name": kernel.demangled_name,
                    "truncated_kernel_name": truncated_name(&kernel.demangled_name),
                    "kernel_object": kernel.kernel_id,
                    "kernarg_segment_size": kernel.param_bytes,
                    "group_segment_size": kernel.static_shared_bytes,
                    "private_segment_size": kernel.local_bytes,
                    "arch_vgpr_count": kernel.registers,
                    "accum_vgpr_count": 0,
                    "sgpr_count": 0,
                })
            })
            .collect();

        let mut counter_collection = Vec::new();
        let mut kernel_dispatch = Vec::new();
        for dispatch in &run.dispatches {
            let facts = kernel_facts(run, dispatch);
            let dispatch_info = json!({
                "agent_id": { "handle": dispatch.agent_id },
                "queue_id": { "handle": dispatch.stream_id },
                "kernel_id": dispatch.kernel_id,
                "dispatch_id": dispatch.dispatch_id,
                "private_segment_size": facts.scratch_size,
                "group_segment_size": facts.lds_block_size,
                "workgroup_size": xyz(dispatch.block.map(u64::from)),
                "grid_size": xyz(grid_threads(dispatch)),
            });
            let correlation = json!({ "internal": dispatch.correlation_id, "external": 0 });
            let mut trace = json!({
                "kind": "KERNEL_DISPATCH",
                "operation": "KERNEL_DISPATCH_COMPLETE",
                "thread_id": dispatch.tid,
                "correlation_id": correlation,
                "start_timestamp": dispatch.start_ns,
                "end_timestamp": dispatch.end_ns,
                "dispatch_info": dispatch_info,
            });
            if let Some(pass) = dispatch.replay_pass {
                trace["replay_pass"] = json!(pass);
            }
            kernel_dispatch.push(trace);
            if dispatch.counters.is_empty() {
                continue;
            }
            let agent = agent_index[&dispatch.agent_id];
            let records: Vec<Value> = dispatch
                .counters
                .iter()
                .map(|sample| {
                    json!({
                        "counter_id": { "handle": handle(agent, counter_index[sample.name.as_str()]) },
                        "value": sample.value,
                    })
                })
                .collect();
            let mut record = json!({
                "dispatch_data": {
                    "correlation_id": correlation,
                    "start_timestamp": dispatch.start_ns,
                    "end_timestamp": dispatch.end_ns,
                    "dispatch_info": dispatch_info,
                },
                "records": records,
                "thread_id": dispatch.tid,
                "arch_vgpr_count": facts.vgpr_count,
                "accum_vgpr_count": 0,
                "sgpr_count": 0,
                "lds_block_size_v": facts.lds_block_size,
            });
            if let Some(pass) = dispatch.replay_pass {
                record["replay_pass"] = json!(pass);
            }
            counter_collection.push(record);
        }

        json!({
            "metadata": {
                "pid": run.process.pid,
                "ppid": run.process.ppid,
                "hostname": run.process.hostname,
                "command": run.process.command,
                "init_time": run.process.start_ns,
                "fini_time": run.process.end_ns,
            },
            "agents": agents_json,
            "counters": counters,
            "strings": {},
            "code_objects": [],
            "kernel_symbols": kernel_symbols,
            "host_functions": [],
            "callback_records": {
                "counter_collection": counter_collection,
                "pc_sample_host_trap": [],
            },
            "buffer_records": {
                "kernel_dispatch": kernel_dispatch,
                "hip_api": [],
                "hsa_api": [],
                "marker_api": [],
                "memory_copy": [],
                "memory_allocation": [],
                "rocdecoder_api": [],
            },
            "kreplay": {
                "replay_costs": run.costs,
                "warnings": run.warnings,
            },
        })
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

    #[test]
    fn the_streamed_document_is_byte_for_byte_the_tree_document() {
        let run = representative_run();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out_results.json");
        write_json(&run, &path).unwrap();
        let streamed = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            streamed,
            serde_json::to_string(&tree_document(&run)).unwrap()
        );
        let read = read_json_counter_records(&path).unwrap();
        assert!(read.last().unwrap().counters["UNDECLARED_0"].is_nan());
    }

    #[test]
    fn an_empty_process_has_every_list_of_rocprofv3() {
        let run = RunData {
            processes: vec![ProcessRun::new(process(3))],
        };
        let mut streamed = Vec::new();
        write_document(&run, &mut streamed).unwrap();
        let start_ns = process(3).start_ns;
        assert_eq!(
            String::from_utf8(streamed).unwrap(),
            format!(
                "{{\"rocprofiler-sdk-tool\":[{{\"agents\":[],\"buffer_records\":{{\"hip_api\":[],\
                 \"hsa_api\":[],\"kernel_dispatch\":[],\"marker_api\":[],\"memory_allocation\":[],\
                 \"memory_copy\":[],\"rocdecoder_api\":[]}},\"callback_records\":{{\
                 \"counter_collection\":[],\"pc_sample_host_trap\":[]}},\"code_objects\":[],\
                 \"counters\":[],\"host_functions\":[],\"kernel_symbols\":[],\"kreplay\":{{\
                 \"replay_costs\":[],\"warnings\":[]}},\"metadata\":{{\"command\":[\"./app\",\
                 \"--size\",\"1 MiB\"],\"fini_time\":0,\"hostname\":\"node-a\",\
                 \"init_time\":{start_ns},\"pid\":3,\"ppid\":1}},\"strings\":{{}}}}]}}"
            )
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
        assert_eq!(process["kernel_symbols"][0]["kernel_name"], "_Z5saxpyPfS_f");
        assert_eq!(
            process["kernel_symbols"][0]["truncated_kernel_name"],
            "saxpy"
        );
        let dispatches = process["buffer_records"]["kernel_dispatch"]
            .as_array()
            .unwrap();
        assert_eq!(dispatches.len(), 5, "one per pass, trace-only included");
        assert!(
            dispatches[4].get("replay_pass").is_none(),
            "no replay_pass without replay"
        );
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
}
