//! The document: `{"rocprofiler-sdk-tool": [ one object per process ]}`, each process object
//! written piece by piece (its keys sorted), streamed one array element at a time.

use super::code_objects::CodeObjects;
use super::dispatch_json::CostJson;
use super::host_functions::HostFunctions;
use super::kinds::{
    BUFFER_TRACING_KERNEL_DISPATCH, BUFFER_TRACING_KINDS, CALLBACK_TRACING_KERNEL_DISPATCH,
    CALLBACK_TRACING_KINDS, KERNEL_DISPATCH_OPERATIONS, TOOL_KEY,
};
use super::parts::{Array, AsValue, Fallible, NONE};
use super::process::Process;
use super::trace_json::Traces;
use crate::api::ApiDomain;
use crate::error::FormatError;
use crate::files::write_file;
#[cfg(test)]
use crate::progress::Silent;
use crate::progress::{Ticker, WriteProgress};
use crate::records::CLOCK_CONTROL;
use crate::run::{ProcessRun, RunData};
use crate::section_values::section_values;
use serde::ser::{Error as _, SerializeMap, Serializer};
use serde::Serialize;
use serde_json::json;
use std::io::{self, Write};
use std::path::Path;

// The objects below list their keys sorted, the order in which serde_json's `Map` (a BTreeMap,
// without the `preserve_order` feature) writes the `json!` objects.

/// A `strings.*_records` entry: a tracing kind's name and its operations' names.
#[derive(Serialize)]
struct KindNames<'a> {
    kind: &'static str,
    operations: &'a [&'a str],
}

/// `strings.buffer_records` or `strings.callback_records`: every kind, index = kind value, with
/// the operation names of the kernel-dispatch kind (`kernel_dispatch`) and of the tracing kinds
/// `traced` names.
fn kind_names<'a>(
    kinds: &'static [&'static str],
    kernel_dispatch: usize,
    traced: impl Fn(usize) -> Option<&'a [&'a str]> + 'a,
) -> impl Iterator<Item = KindNames<'a>> {
    kinds.iter().enumerate().map(move |(kind, name)| KindNames {
        kind: name,
        operations: if kind == kernel_dispatch {
            &KERNEL_DISPATCH_OPERATIONS
        } else {
            traced(kind).unwrap_or(&[])
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
struct Strings<B, C, M> {
    att_filenames: [(); 0],
    buffer_records: B,
    callback_records: C,
    code_object_snapshot_filenames: [(); 0],
    correlation_id: ExternalCorrelationNames,
    counters: CounterDimensions,
    marker_api: M,
    pc_sample_comments: [(); 0],
    pc_sample_instructions: [(); 0],
}

#[derive(Serialize)]
struct BufferRecords<D, H, S, M, A, C> {
    hip_api: H,
    hsa_api: S,
    kernel_dispatch: D,
    marker_api: M,
    memory_allocation: A,
    memory_copy: C,
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

/// One process object, written piece by piece (a step of `.2` per record written).
struct ProcessJson<'a>(&'a ProcessRun, bool, &'a Ticker<'a>);

impl Serialize for ProcessJson<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let run = self.0;
        let p = Process::new(run, self.1).map_err(S::Error::custom)?;
        let traces = Traces::new(run);
        let mut process = serializer.serialize_map(Some(11))?;
        process.serialize_entry("agents", &Array(|| p.agents.entries()))?;
        process.serialize_entry(
            "buffer_records",
            &BufferRecords {
                hip_api: Array(|| traces.api_records(ApiDomain::Runtime)),
                hsa_api: Array(|| traces.api_records(ApiDomain::Driver)),
                kernel_dispatch: Array(|| {
                    run.each_dispatch()
                        .inspect(|_| self.2.tick())
                        .map(|dispatch| Fallible(dispatch.map(|d| p.kernel_dispatch_json(&d))))
                }),
                marker_api: Array(|| traces.marker_records()),
                memory_allocation: Array(|| traces.allocation_records(&p.agents)),
                memory_copy: Array(|| traces.copy_records(&p.agents)),
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
                    run.each_dispatch()
                        .inspect(|_| self.2.tick())
                        .filter(|dispatch| !matches!(dispatch, Ok(d) if d.counters.is_empty()))
                        .map(|dispatch| Fallible(dispatch.map(|d| p.counter_record_json(&d))))
                }),
            },
        )?;
        let code_objects = CodeObjects::new(run);
        process.serialize_entry(
            "code_objects",
            &Array(|| code_objects.entries(|id| p.agents.handle(id))),
        )?;
        process.serialize_entry("counters", &Array(|| p.counters.entries(&p.agents)))?;
        let host_functions = HostFunctions::scan(run).map_err(S::Error::custom)?;
        process.serialize_entry(
            "host_functions",
            &Array(|| host_functions.entries(run, &p.kernels)),
        )?;
        process.serialize_entry("kernel_symbols", &Array(|| p.kernels.entries()))?;
        process.serialize_entry(
            "kreplay",
            &Extension {
                replay_costs: Array(|| {
                    run.each_cost()
                        .inspect(|_| self.2.tick())
                        .map(|cost| Fallible(cost.map(CostJson)))
                }),
                warnings: Array(|| run.warnings.iter().map(AsValue)),
                sections: (!run.process.sections.is_empty())
                    .then_some(Array(|| section_values(run))),
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
                "clock_control": CLOCK_CONTROL,
                "config": config(run, self.1),
                "node": node(run),
            }),
        )?;
        process.serialize_entry(
            "strings",
            &Strings {
                att_filenames: NONE,
                buffer_records: Array(|| {
                    kind_names(
                        &BUFFER_TRACING_KINDS,
                        BUFFER_TRACING_KERNEL_DISPATCH,
                        |kind| traces.operations(kind),
                    )
                }),
                callback_records: Array(|| {
                    kind_names(
                        &CALLBACK_TRACING_KINDS,
                        CALLBACK_TRACING_KERNEL_DISPATCH,
                        |_| None,
                    )
                }),
                code_object_snapshot_filenames: NONE,
                correlation_id: ExternalCorrelationNames { external: NONE },
                counters: CounterDimensions {
                    dimension_ids: NONE,
                },
                marker_api: Array(|| traces.marker_messages()),
                pc_sample_comments: NONE,
                pc_sample_instructions: NONE,
            },
        )?;
        process.serialize_entry("summary", &p.summary())?;
        process.end()
    }
}

/// `metadata.config`: what rocprofv3 records of its configuration that kreplay knows from the
/// run's records (the counters, kernel replay, the cache and clock controls); the full command
/// line is in `metadata.command`.
fn config(run: &ProcessRun, replay: bool) -> serde_json::Value {
    let counters: Vec<&str> = run.counters.iter().map(|c| c.name.as_str()).collect();
    json!({
        "counter_collection": !counters.is_empty(),
        "counters": counters,
        "kernel_trace": true,
        "kernel_replay": replay,
        "cache_control": run.process.cache_control.as_str(),
        "clock_control": CLOCK_CONTROL,
    })
}

/// `metadata.node`: the host. Only its name is recorded; the operating system's fields are
/// empty and `id`/`hash` 0 (placeholders).
fn node(run: &ProcessRun) -> serde_json::Value {
    json!({
        "id": 0,
        "hash": 0,
        "hostname": run.process.hostname,
        "machine_id": run.process.hostname,
        "system_name": "",
        "release": "",
        "version": "",
        "hardware_name": "",
        "domain_name": "",
    })
}

/// Streams the JSON document of `run` to `out`, one array element at a time.
#[cfg(test)]
pub(super) fn write_document(run: &RunData, out: impl Write) -> io::Result<()> {
    let ticker = Ticker::begin(&Silent, Path::new(""), 0);
    write_document_ticking(run, out, &ticker)
}

/// The document of `run`, a step of `ticker` per record read: twice per dispatch pass (its
/// dispatch record, its counter record), once per replay cost.
fn write_document_ticking(run: &RunData, out: impl Write, ticker: &Ticker) -> io::Result<()> {
    let replay = run.is_kernel_replay();
    let mut serializer = serde_json::Serializer::new(out);
    let mut document = serializer.serialize_map(Some(1))?;
    document.serialize_entry(
        TOOL_KEY,
        &Array(|| run.processes.iter().map(|p| ProcessJson(p, replay, ticker))),
    )?;
    Ok(document.end()?)
}

#[cfg(test)]
pub(crate) fn write_json(run: &RunData, path: &Path) -> Result<(), FormatError> {
    write_json_with(run, path, &Silent)
}

/// Writes `run`'s document to `path`, telling `progress`.
pub(crate) fn write_json_with(
    run: &RunData,
    path: &Path,
    progress: &dyn WriteProgress,
) -> Result<(), FormatError> {
    let steps = run
        .processes
        .iter()
        .map(|p| 2 * p.dispatch_count() as u64 + p.cost_count() as u64)
        .sum();
    let ticker = Ticker::begin(progress, path, steps);
    write_file(path, |out| write_document_ticking(run, out, &ticker))
}
