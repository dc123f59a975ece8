//! The tracing domains' `buffer_records` arrays (`marker_api`, `hip_api`, `hsa_api`,
//! `memory_copy`, `memory_allocation`) and their names in `strings`, as rocprofv3 writes its
//! buffer-tracing records: one typed struct per record, streamed as the process's records are
//! read (a page at a time when stored).
//!
//! CUDA's runtime calls are HIP's runtime calls (`hip_api`, kind `HIP_RUNTIME_API`'s slot,
//! named `CUDA_RUNTIME_API`), its driver calls the HSA calls beneath (`hsa_api`, kind
//! `HSA_CORE_API`'s slot, named `CUDA_DRIVER_API`). A record's `operation` indexes its kind's
//! `operations` in `strings.buffer_records`; the API and marker kinds' operations are the
//! functions the process called, in the order first seen.

use super::dispatch_json::{Correlation, Handle};
use super::host_functions::Launches;
use super::tables::Agents;
use crate::api::{ApiDomain, ApiRecord};
use crate::domain_stats::TraceStats;
use crate::error::FormatError;
use crate::markers::MarkerRecord;
use crate::memory::{AllocationOperation, CopyDirection, MemoryAllocationRecord, MemoryCopyRecord};
use crate::run::ProcessRun;
use serde::Serialize;
use std::borrow::Cow;
use std::cell::RefCell;

/// `ROCPROFILER_BUFFER_TRACING_HSA_CORE_API`: CUDA driver calls.
pub(super) const KIND_DRIVER_API: usize = 1;
/// `ROCPROFILER_BUFFER_TRACING_HIP_RUNTIME_API`: CUDA runtime calls.
pub(super) const KIND_RUNTIME_API: usize = 5;
/// `ROCPROFILER_BUFFER_TRACING_MEMORY_COPY`.
pub(super) const KIND_MEMORY_COPY: usize = 10;
/// `ROCPROFILER_BUFFER_TRACING_MEMORY_ALLOCATION`.
pub(super) const KIND_MEMORY_ALLOCATION: usize = 16;
/// `ROCPROFILER_BUFFER_TRACING_MARKER_CORE_RANGE_API`: NVTX ranges and marks.
pub(super) const KIND_MARKER: usize = 32;

/// `rocprofiler_memory_copy_operation_t`: index = value.
pub(super) const MEMORY_COPY_OPERATIONS: [&str; 5] = [
    "MEMORY_COPY_NONE",
    "MEMORY_COPY_HOST_TO_HOST",
    "MEMORY_COPY_HOST_TO_DEVICE",
    "MEMORY_COPY_DEVICE_TO_HOST",
    "MEMORY_COPY_DEVICE_TO_DEVICE",
];
/// `rocprofiler_memory_allocation_operation_t`: index = value.
pub(super) const MEMORY_ALLOCATION_OPERATIONS: [&str; 5] = [
    "MEMORY_ALLOCATION_NONE",
    "MEMORY_ALLOCATION_ALLOCATE",
    "MEMORY_ALLOCATION_FREE",
    "MEMORY_ALLOCATION_VMEM_ALLOCATE",
    "MEMORY_ALLOCATION_VMEM_FREE",
];

/// `sizeof` of the C records (x86-64): size, kind and operation, correlation id, two
/// timestamps, thread id.
const SIZE_API_RECORD: u64 = 8 + 8 + 24 + 16 + 8;
/// ... then two agent ids, bytes, two addresses.
const SIZE_MEMORY_COPY_RECORD: u64 = SIZE_API_RECORD + 40;
/// ... then an agent id, an address, the size.
const SIZE_MEMORY_ALLOCATION_RECORD: u64 = SIZE_API_RECORD + 24;

/// A `marker_api`, `hip_api` or `hsa_api` record.
#[derive(Serialize)]
pub(super) struct ApiJson {
    /// A `hip_api` record's arguments, indexed by position as rocprofiler-sdk's
    /// `get_buffer_tracing_args` lays them out (a position kreplay does not record: empty strings).
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Vec<ArgJson>>,
    correlation_id: Correlation,
    end_timestamp: u64,
    kind: usize,
    operation: usize,
    size: u64,
    start_timestamp: u64,
    thread_id: u64,
}

/// One entry of a `hip_api` record's `args`.
#[derive(Serialize, Default)]
pub(super) struct ArgJson {
    name: String,
    #[serde(rename = "type")]
    ty: String,
    value: String,
}

/// `args` of a runtime call (rocprofv3 writes none for HSA's, the driver's place).
fn args_json(call: &ApiRecord) -> Option<Vec<ArgJson>> {
    if call.domain != ApiDomain::Runtime || call.args.is_empty() {
        return None;
    }
    let args = call.args.to_vec();
    let len = args
        .iter()
        .map(|a| a.position as usize + 1)
        .max()
        .unwrap_or(0);
    let mut out: Vec<ArgJson> = (0..len).map(|_| ArgJson::default()).collect();
    for arg in args {
        out[arg.position as usize] = ArgJson {
            name: arg.name,
            ty: arg.ty,
            value: arg.value,
        };
    }
    Some(out)
}

/// A `memory_copy` record.
#[derive(Serialize)]
pub(super) struct MemoryCopyJson {
    bytes: u64,
    correlation_id: Correlation,
    dst_address: Handle,
    dst_agent_id: Handle,
    end_timestamp: u64,
    kind: usize,
    operation: usize,
    size: u64,
    src_address: Handle,
    src_agent_id: Handle,
    start_timestamp: u64,
    /// kreplay's: the CUDA stream (0: the default stream, or a synchronous copy).
    stream_id: Handle,
    thread_id: u64,
}

/// A `memory_allocation` record.
#[derive(Serialize)]
pub(super) struct MemoryAllocationJson {
    address: Handle,
    agent_id: Handle,
    allocation_size: u64,
    correlation_id: Correlation,
    end_timestamp: u64,
    kind: usize,
    operation: usize,
    size: u64,
    start_timestamp: u64,
    thread_id: u64,
}

/// The operation names of a process's markers or of one API domain, in the order first seen
/// (the order the records are written in).
#[derive(Default)]
struct Operations(RefCell<Vec<String>>);

impl Operations {
    /// The index of `name`, a new one if it was not seen yet.
    fn index(&self, name: &str) -> usize {
        let mut names = self.0.borrow_mut();
        match names.iter().position(|n| n == name) {
            Some(index) => index,
            None => {
                names.push(name.to_string());
                names.len() - 1
            }
        }
    }

    fn names(&self) -> Vec<String> {
        self.0.borrow().clone()
    }
}

/// A record read from where it is stored, written as JSON; one that could not be read ends the
/// document with the reason.
pub(super) struct Read<T>(Result<T, FormatError>);

impl<T: Serialize> Serialize for Read<T> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Ok(value) => value.serialize(serializer),
            Err(e) => Err(serde::ser::Error::custom(e)),
        }
    }
}

/// Each record of `records` made into `T` by `make`, or the error that read it.
fn each<'a, R: Clone + 'a, T>(
    records: impl Iterator<Item = Result<Cow<'a, R>, FormatError>> + 'a,
    mut make: impl FnMut(&R) -> T + 'a,
) -> impl Iterator<Item = Read<T>> + 'a {
    records.map(move |r| Read(r.map(|r| make(&r))))
}

/// A process's tracing records, read as they are written (a page at a time when stored), and
/// what the document says of them after its records, gathered as they are written: the
/// operation tables they index (`strings`), their statistics (`summary`) and the launches'
/// host functions (`host_functions`).
pub(super) struct Traces<'a> {
    run: &'a ProcessRun,
    markers: Operations,
    runtime: Operations,
    driver: Operations,
    stats: RefCell<TraceStats>,
    pub(super) launches: Launches,
}

fn correlation(internal: u64, ancestor: u64) -> Correlation {
    Correlation {
        ancestor,
        external: 0,
        internal,
    }
}

impl<'a> Traces<'a> {
    /// `spill_dir`: where the launches wait for their dispatches ([`Launches`]).
    pub(super) fn new(run: &'a ProcessRun, spill_dir: &std::path::Path) -> Traces<'a> {
        Traces {
            run,
            markers: Operations::default(),
            runtime: Operations::default(),
            driver: Operations::default(),
            stats: RefCell::new(TraceStats::new(spill_dir)),
            launches: Launches::new(spill_dir),
        }
    }

    /// The operation names of buffer-tracing kind `kind`, if it is one of these (the memory
    /// kinds' only when the process has records of them), once its records are written.
    pub(super) fn operations(&self, kind: usize) -> Option<Vec<String>> {
        let fixed = |names: &[&str]| names.iter().map(|n| n.to_string()).collect();
        let stats = self.stats.borrow();
        match kind {
            KIND_DRIVER_API => Some(self.driver.names()),
            KIND_RUNTIME_API => Some(self.runtime.names()),
            KIND_MARKER => Some(self.markers.names()),
            KIND_MEMORY_COPY => stats.has_copies().then(|| fixed(&MEMORY_COPY_OPERATIONS)),
            KIND_MEMORY_ALLOCATION => stats
                .has_allocations()
                .then(|| fixed(&MEMORY_ALLOCATION_OPERATIONS)),
            _ => None,
        }
    }

    /// The tracing domains' statistics, once the records are written.
    pub(super) fn stats(&self) -> TraceStats {
        self.stats.take()
    }

    pub(super) fn marker_records(&self) -> impl Iterator<Item = Read<ApiJson>> + '_ {
        each(self.run.each_marker(), |m: &MarkerRecord| {
            self.stats.borrow_mut().marker(m);
            ApiJson {
                args: None,
                correlation_id: correlation(m.id, 0),
                end_timestamp: m.end_ns,
                kind: KIND_MARKER,
                operation: self.markers.index(&m.operation),
                size: SIZE_API_RECORD,
                start_timestamp: m.start_ns,
                thread_id: m.tid,
            }
        })
    }

    /// `strings.marker_api`: each marker's message by its correlation id.
    pub(super) fn marker_messages(&self) -> impl Iterator<Item = Read<KeyValue>> + 'a {
        each(self.run.each_marker(), |m: &MarkerRecord| KeyValue {
            key: m.id,
            value: m.function().to_string(),
        })
    }

    /// The `hip_api` (runtime) or `hsa_api` (driver) records.
    pub(super) fn api_records(
        &self,
        domain: ApiDomain,
    ) -> impl Iterator<Item = Read<ApiJson>> + '_ {
        let (kind, names) = match domain {
            ApiDomain::Runtime => (KIND_RUNTIME_API, &self.runtime),
            ApiDomain::Driver => (KIND_DRIVER_API, &self.driver),
        };
        // rocprofv3 writes no arguments for the driver's place (`args_json`).
        let calls = match domain {
            ApiDomain::Runtime => self.run.each_api_call_of(domain),
            ApiDomain::Driver => self.run.each_api_call_without_args(),
        }
        .filter(move |c| c.as_ref().map_or(true, |c| c.domain == domain));
        each(calls, move |c: &ApiRecord| {
            self.stats.borrow_mut().api_call(c);
            self.launches.see(c);
            ApiJson {
                args: args_json(c),
                correlation_id: correlation(c.correlation_id, c.parent_id),
                end_timestamp: c.end_ns,
                kind,
                operation: names.index(&c.function),
                size: SIZE_API_RECORD,
                start_timestamp: c.start_ns,
                thread_id: c.tid,
            }
        })
    }

    pub(super) fn copy_records<'b>(
        &'b self,
        agents: &'b Agents,
    ) -> impl Iterator<Item = Read<MemoryCopyJson>> + 'b {
        each(self.run.each_copy(), |c: &MemoryCopyRecord| {
            self.stats.borrow_mut().copy(c);
            MemoryCopyJson {
                bytes: c.bytes,
                correlation_id: correlation(c.id, 0),
                dst_address: Handle {
                    handle: c.dst_address,
                },
                dst_agent_id: agent(agents, c.dst_agent),
                end_timestamp: c.end_ns,
                kind: KIND_MEMORY_COPY,
                operation: copy_operation(c.direction),
                size: SIZE_MEMORY_COPY_RECORD,
                src_address: Handle {
                    handle: c.src_address,
                },
                src_agent_id: agent(agents, c.src_agent),
                start_timestamp: c.start_ns,
                stream_id: Handle {
                    handle: c.stream_id,
                },
                thread_id: c.tid,
            }
        })
    }

    pub(super) fn allocation_records<'b>(
        &'b self,
        agents: &'b Agents,
    ) -> impl Iterator<Item = Read<MemoryAllocationJson>> + 'b {
        each(self.run.each_allocation(), |a: &MemoryAllocationRecord| {
            self.stats.borrow_mut().allocation(a);
            MemoryAllocationJson {
                address: Handle { handle: a.address },
                agent_id: agent(agents, a.agent_id),
                allocation_size: a.size,
                correlation_id: correlation(a.id, 0),
                end_timestamp: a.end_ns,
                kind: KIND_MEMORY_ALLOCATION,
                operation: allocation_operation(a.operation),
                size: SIZE_MEMORY_ALLOCATION_RECORD,
                start_timestamp: a.start_ns,
                thread_id: a.tid,
            }
        })
    }
}

/// `{key, value}`, as cereal writes a std::map entry.
#[derive(Serialize)]
pub(super) struct KeyValue {
    key: u64,
    value: String,
}

/// A device's agent handle; host memory (and a device the document lists no agent for) 0.
fn agent(agents: &Agents, device: Option<u64>) -> Handle {
    Handle {
        handle: device.and_then(|d| agents.try_handle(d)).unwrap_or(0),
    }
}

fn copy_operation(direction: CopyDirection) -> usize {
    MEMORY_COPY_OPERATIONS
        .iter()
        .position(|name| *name == direction.as_str())
        .unwrap_or(0)
}

fn allocation_operation(operation: AllocationOperation) -> usize {
    MEMORY_ALLOCATION_OPERATIONS
        .iter()
        .position(|name| *name == operation.as_str())
        .unwrap_or(0)
}
