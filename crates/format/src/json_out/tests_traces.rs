//! The tracing domains' `buffer_records` arrays: one record per marker, API call, copy and
//! allocation, rocprofv3's fields, `operation` indexing its kind's names in `strings`.

use super::document::write_document;
use super::kinds::TOOL_KEY;
use crate::api::{ApiDomain, ApiRecord};
use crate::run::RunData;
use crate::testdata::recorded_with_traces;
use serde_json::Value;

fn traced_process() -> Value {
    let mut run = RunData::from_records(recorded_with_traces());
    let call = |correlation_id, parent_id, domain, function: &'static str| ApiRecord {
        correlation_id,
        parent_id,
        domain,
        function: function.into(),
        pid: 3,
        tid: 4,
        start_ns: 10 * correlation_id,
        end_ns: 10 * correlation_id + 5,
        args: Default::default(),
    };
    run.processes[0].api_calls = vec![
        call(1, 0, ApiDomain::Runtime, "cudaMalloc"),
        call(2, 1, ApiDomain::Driver, "cuMemAlloc_v2"),
        call(3, 0, ApiDomain::Runtime, "cudaLaunchKernel"),
        call(4, 0, ApiDomain::Runtime, "cudaMalloc"),
    ];
    let mut bytes = Vec::new();
    write_document(&run, &mut bytes).unwrap();
    let document: Value = serde_json::from_slice(&bytes).unwrap();
    document[TOOL_KEY][0].clone()
}

fn keys(record: &Value) -> Vec<&str> {
    record
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
}

/// The name of a record's operation, from `strings.buffer_records`.
fn operation_name<'a>(process: &'a Value, record: &Value) -> &'a str {
    let kind = &process["strings"]["buffer_records"][record["kind"].as_u64().unwrap() as usize];
    kind["operations"][record["operation"].as_u64().unwrap() as usize]
        .as_str()
        .unwrap()
}

fn kind_name<'a>(process: &'a Value, record: &Value) -> &'a str {
    process["strings"]["buffer_records"][record["kind"].as_u64().unwrap() as usize]["kind"]
        .as_str()
        .unwrap()
}

const API_FIELDS: [&str; 7] = [
    "correlation_id",
    "end_timestamp",
    "kind",
    "operation",
    "size",
    "start_timestamp",
    "thread_id",
];

#[test]
fn markers_are_marker_api_records_with_their_messages() {
    let process = traced_process();
    let markers = process["buffer_records"]["marker_api"].as_array().unwrap();
    assert_eq!(markers.len(), 4);
    assert_eq!(keys(&markers[0]), API_FIELDS);
    assert_eq!(kind_name(&process, &markers[0]), "MARKER_CORE_RANGE_API");
    assert_eq!(markers[0]["correlation_id"]["internal"], 1);
    assert_eq!(markers[0]["start_timestamp"], 5_900);
    assert_eq!(markers[0]["end_timestamp"], 6_500);
    let messages = process["strings"]["marker_api"].as_array().unwrap();
    assert_eq!(messages.len(), 4);
    assert_eq!(messages[1]["key"], 2);
    assert_eq!(messages[1]["value"], "checkpoint");
}

#[test]
fn runtime_calls_are_hip_api_records_and_driver_calls_hsa_api_records() {
    let process = traced_process();
    let runtime = process["buffer_records"]["hip_api"].as_array().unwrap();
    let driver = process["buffer_records"]["hsa_api"].as_array().unwrap();
    assert_eq!((runtime.len(), driver.len()), (3, 1));
    assert_eq!(keys(&runtime[0]), API_FIELDS);
    assert_eq!(kind_name(&process, &runtime[0]), "CUDA_RUNTIME_API");
    assert_eq!(kind_name(&process, &driver[0]), "CUDA_DRIVER_API");
    let names: Vec<&str> = runtime
        .iter()
        .map(|r| operation_name(&process, r))
        .collect();
    assert_eq!(names, ["cudaMalloc", "cudaLaunchKernel", "cudaMalloc"]);
    assert_eq!(operation_name(&process, &driver[0]), "cuMemAlloc_v2");
    assert_eq!(driver[0]["correlation_id"]["internal"], 2);
    assert_eq!(driver[0]["correlation_id"]["ancestor"], 1);
}

#[test]
fn copies_and_allocations_carry_their_agents_addresses_and_sizes() {
    let process = traced_process();
    let copies = process["buffer_records"]["memory_copy"].as_array().unwrap();
    assert_eq!(copies.len(), 3);
    assert_eq!(kind_name(&process, &copies[0]), "MEMORY_COPY");
    assert_eq!(
        operation_name(&process, &copies[0]),
        "MEMORY_COPY_HOST_TO_DEVICE"
    );
    assert_eq!(copies[0]["src_agent_id"]["handle"], 0);
    assert_ne!(copies[0]["dst_agent_id"]["handle"], 0);
    assert_eq!(copies[1]["bytes"], 512);
    assert_eq!(copies[1]["stream_id"]["handle"], 7);
    let allocations = process["buffer_records"]["memory_allocation"]
        .as_array()
        .unwrap();
    assert_eq!(allocations.len(), 7);
    assert_eq!(kind_name(&process, &allocations[0]), "MEMORY_ALLOCATION");
    assert_eq!(allocations[0]["allocation_size"], 4096);
    assert_eq!(allocations[0]["address"]["handle"], 0x7f00_0000_0000u64);
    let names: Vec<&str> = allocations
        .iter()
        .map(|a| operation_name(&process, a))
        .collect();
    assert_eq!(names[3], "MEMORY_ALLOCATION_VMEM_ALLOCATE");
    assert_eq!(names[6], "MEMORY_ALLOCATION_FREE");
}

#[test]
fn a_dispatch_carries_its_range_stack_and_under_kernel_rename_its_name() {
    let mut run = RunData::from_records(crate::testdata::recorded_with_markers());
    let dispatches = |run: &RunData| {
        let mut bytes = Vec::new();
        write_document(run, &mut bytes).unwrap();
        let document: Value = serde_json::from_slice(&bytes).unwrap();
        document[TOOL_KEY][0]["buffer_records"]["kernel_dispatch"].clone()
    };
    let plain = dispatches(&run);
    let first = &plain[0];
    assert_eq!(first["dispatch_info"]["dispatch_id"], 1);
    assert_eq!(first["ranges"], serde_json::json!(["step 0", "forward"]));
    assert!(first.get("kernel_rename").is_none());
    let outside = plain
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["dispatch_info"]["dispatch_id"] != 1);
    assert!(outside.unwrap().get("ranges").is_none());
    run.processes[0].process.kernel_rename = true;
    let renamed = dispatches(&run);
    assert_eq!(renamed[0]["kernel_rename"], "forward");
    let unnamed = renamed
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d.get("kernel_rename").is_none());
    let outside_ranges = plain.as_array().unwrap().iter();
    let outside_ranges = outside_ranges.filter(|d| d["dispatch_info"]["dispatch_id"] != 1);
    assert_eq!(unnamed.count(), outside_ranges.count());
}
