//! The document: `{"rocprofiler-sdk-tool": [ one object per process ]}`, each process object
//! written piece by piece (its keys sorted), streamed one array element at a time.

use super::batch::Batch;
use super::code_objects::CodeObjects;
use super::counter_array::write_counter_array;
use super::dispatch_json::{CounterRecord, SortedCost};
use super::host_functions::{HostFunctions, Launches};
use super::kinds::{
    BUFFER_TRACING_KERNEL_DISPATCH, BUFFER_TRACING_KINDS, CALLBACK_TRACING_KERNEL_DISPATCH,
    CALLBACK_TRACING_KINDS, KERNEL_DISPATCH_OPERATIONS, TOOL_KEY,
};
use super::parts::{Array, AsValue, NONE};
use super::process::Process;
use super::raw::JsonBytes;
use super::spool::CounterSpool;
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
use serde::ser::Error as _;
use serde::Serialize;
use serde_json::json;
use std::io::{self, Write};
use std::path::Path;

// The objects below list their keys sorted, the order in which serde_json's `Map` (a BTreeMap,
// without the `preserve_order` feature) writes the `json!` objects.

/// A `strings.*_records` entry: a tracing kind's name and its operations' names.
#[derive(Serialize)]
struct KindNames {
    kind: &'static str,
    operations: Vec<String>,
}

/// `strings.buffer_records` or `strings.callback_records`: every kind, index = kind value, with
/// the operation names of the kernel-dispatch kind (`kernel_dispatch`) and of the tracing kinds
/// `traced` names.
fn kind_names(
    kinds: &'static [&'static str],
    kernel_dispatch: usize,
    traced: impl Fn(usize) -> Option<Vec<String>>,
) -> impl Iterator<Item = KindNames> {
    kinds.iter().enumerate().map(move |(kind, name)| KindNames {
        kind: name,
        operations: if kind == kernel_dispatch {
            KERNEL_DISPATCH_OPERATIONS.map(str::to_string).to_vec()
        } else {
            traced(kind).unwrap_or_default()
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

/// Writes `"key":` and `value` as serde_json writes them (`key` needs no escaping).
fn entry(out: &mut impl Write, key: &str, value: &impl Serialize) -> io::Result<()> {
    out.write_all(b"\"")?;
    out.write_all(key.as_bytes())?;
    out.write_all(b"\":")?;
    serde_json::to_writer(&mut *out, value)?;
    Ok(())
}

/// The error that ends the document, as serde_json reports an error of a value it writes.
fn failed(e: impl std::fmt::Display) -> io::Error {
    serde_json::Error::custom(e).into()
}

/// A JSON array of records read from where they are stored, each written by `write` (by hand:
/// [`JsonBytes`], in batches: [`Batch`]); an error reading one ends the document with it.
fn records<T>(
    out: &mut impl Write,
    items: impl Iterator<Item = Result<T, FormatError>>,
    mut write: impl FnMut(&mut JsonBytes, T) -> io::Result<()>,
) -> io::Result<()> {
    let mut batch = Batch::begin(out);
    for item in items {
        let item = item.map_err(failed)?;
        batch.element(|json| write(json, item))?;
    }
    batch.end()
}

/// One process object, its keys sorted, written piece by piece (a step of `ticker` per record
/// written): the skeleton and the records of every dispatch and cost by hand, the rest as
/// serde_json writes it.
fn write_process(
    out: &mut (impl Write + Send),
    run: &ProcessRun,
    replay: bool,
    (spill_dir, ticker): (&Path, &Ticker),
) -> io::Result<()> {
    let p = Process::new(run, replay, spill_dir).map_err(failed)?;
    let mut traces = Traces::new(run, spill_dir);
    out.write_all(b"{")?;
    entry(out, "agents", &Array(|| p.agents.entries()))?;
    out.write_all(b",\"buffer_records\":{")?;
    entry(
        out,
        "hip_api",
        &Array(|| traces.api_records(ApiDomain::Runtime)),
    )?;
    out.write_all(b",")?;
    entry(
        out,
        "hsa_api",
        &Array(|| traces.api_records(ApiDomain::Driver)),
    )?;
    out.write_all(b",\"kernel_dispatch\":")?;
    // One read of the dispatches gives both arrays: the counter records wait, compactly, in a
    // file of their own (not in memory) until their place in the document comes.
    let mut waiting = CounterSpool::new(spill_dir);
    let mut counters = CounterRecord::default();
    records(
        out,
        run.each_dispatch().inspect(|_| ticker.tick()),
        |json, d| {
            let (record, counted) = p.pass_records(&d, &mut counters);
            json.kernel_dispatch(&record)?;
            ticker.tick();
            if counted {
                waiting.push(&counters)?;
            }
            Ok(())
        },
    )?;
    out.write_all(b",")?;
    entry(out, "marker_api", &Array(|| traces.marker_records()))?;
    out.write_all(b",")?;
    entry(
        out,
        "memory_allocation",
        &Array(|| traces.allocation_records(&p.agents)),
    )?;
    out.write_all(b",")?;
    entry(
        out,
        "memory_copy",
        &Array(|| traces.copy_records(&p.agents)),
    )?;
    for empty in [
        "pc_sample_host_trap",
        "pc_sample_stochastic",
        "rccl_api",
        "rocdecode_api",
        "rocjpeg_api",
        "scratch_memory",
    ] {
        out.write_all(b",")?;
        entry(out, empty, &NONE)?;
    }
    out.write_all(b"},\"callback_records\":{\"counter_collection\":")?;
    write_counter_array(out, waiting, ticker)?;
    out.write_all(b"},")?;
    let code_objects = CodeObjects::new(run);
    entry(
        out,
        "code_objects",
        &Array(|| code_objects.entries(|id| p.agents.handle(id))),
    )?;
    out.write_all(b",")?;
    entry(out, "counters", &Array(|| p.counters.entries(&p.agents)))?;
    out.write_all(b",")?;
    // The launches the runtime calls' records saw (`hip_api`, written above).
    let launches = std::mem::replace(&mut traces.launches, Launches::new(spill_dir));
    let host_functions = HostFunctions::scan(run, launches)?;
    entry(
        out,
        "host_functions",
        &Array(|| host_functions.entries(run, &p.kernels)),
    )?;
    out.write_all(b",")?;
    entry(out, "kernel_symbols", &Array(|| p.kernels.entries()))?;
    out.write_all(b",\"kreplay\":{\"replay_costs\":")?;
    records(
        out,
        run.each_cost().inspect(|_| ticker.tick()),
        |line, c| line.cost(&SortedCost::from(&*c)),
    )?;
    out.write_all(b",")?;
    entry(out, "warnings", &Array(|| run.warnings.iter().map(AsValue)))?;
    if !run.process.sections.is_empty() {
        // The rows of Nsight Compute's sections per dispatch (`--section`, `--set`).
        out.write_all(b",")?;
        entry(out, "sections", &Array(|| section_values(run)))?;
    }
    out.write_all(b"},")?;
    entry(
        out,
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
            "config": config(run, replay),
            "node": node(run),
        }),
    )?;
    out.write_all(b",")?;
    entry(
        out,
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
    out.write_all(b",")?;
    entry(out, "summary", &p.summary(traces.stats(), spill_dir)?)?;
    out.write_all(b"}")
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
pub(super) fn write_document(run: &RunData, out: impl Write + Send) -> io::Result<()> {
    let ticker = Ticker::begin(&Silent, Path::new(""), 0);
    write_document_ticking(run, out, (&std::env::temp_dir(), &ticker))
}

/// The document of `run`, a step of `ticker` per record: twice per dispatch pass (its dispatch
/// record, its counter record), once per replay cost; the counter records wait in a temporary
/// file in `spill_dir` ([`CounterSpool`]).
fn write_document_ticking(
    run: &RunData,
    mut out: impl Write + Send,
    (spill_dir, ticker): (&Path, &Ticker),
) -> io::Result<()> {
    let replay = run.is_kernel_replay();
    out.write_all(b"{")?;
    serde_json::to_writer(&mut out, TOOL_KEY)?;
    out.write_all(b":[")?;
    for (index, process) in run.processes.iter().enumerate() {
        if index > 0 {
            out.write_all(b",")?;
        }
        write_process(&mut out, process, replay, (spill_dir, ticker))?;
    }
    out.write_all(b"]}")
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
    let spill_dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    write_file(path, |out| {
        write_document_ticking(run, out, (spill_dir, &ticker))
    })
}
