//! The tracing domains (`--marker-trace`, `-s/--sys-trace` with the memory traces it turns on)
//! in the JSON and the Perfetto trace of a kernel-replay run of the reference app: as many
//! records and slices as the CSV files have rows, rocprofv3's record fields, and a flow from
//! every launch call to a dispatch. The trace is read with Perfetto's own Python bindings.

use crate::common::*;
use crate::pftrace::read_trace;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn run(dir: &Path) -> PathBuf {
    let out = run_sim(
        dir,
        &two_groups_replay(&[
            "--marker-trace",
            "-s",
            "-f",
            "json",
            "csv",
            "pftrace",
            "-d",
            "DIR",
            "-o",
            "out",
        ]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join("DIR")
}

/// The `Correlation_Id`s of a CSV file's rows (whose `column` is `value`, when given).
fn csv_ids(path: &Path, only: Option<(&str, &str)>) -> Vec<u64> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    let at = |name: &str| header.iter().position(|h| h == name).unwrap();
    let id = at("Correlation_Id");
    let filter = only.map(|(column, value)| (at(column), value));
    reader
        .records()
        .map(Result::unwrap)
        .filter(|r| filter.is_none_or(|(column, value)| &r[column] == value))
        .map(|r| r[id].parse().unwrap())
        .collect()
}

fn json_ids(records: &Value) -> Vec<u64> {
    records
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["correlation_id"]["internal"].as_u64().unwrap())
        .collect()
}

fn keys(record: &Value) -> Vec<&str> {
    record
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect()
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
fn the_json_has_a_buffer_record_per_csv_row_with_rocprofv3s_fields() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path());
    let json: Value =
        serde_json::from_slice(&std::fs::read(d.join("out_results.json")).unwrap()).unwrap();
    let process = &json["rocprofiler-sdk-tool"][0];
    let buffers = &process["buffer_records"];
    let api = d.join("out_cuda_api_trace.csv");
    for (array, csv) in [
        (
            "marker_api",
            csv_ids(&d.join("out_marker_api_trace.csv"), None),
        ),
        (
            "hip_api",
            csv_ids(&api, Some(("Domain", "CUDA_RUNTIME_API"))),
        ),
        (
            "hsa_api",
            csv_ids(&api, Some(("Domain", "CUDA_DRIVER_API"))),
        ),
        (
            "memory_copy",
            csv_ids(&d.join("out_memory_copy_trace.csv"), None),
        ),
        (
            "memory_allocation",
            csv_ids(&d.join("out_memory_allocation_trace.csv"), None),
        ),
    ] {
        assert!(!csv.is_empty(), "{array}: the run recorded some");
        assert_eq!(json_ids(&buffers[array]), csv, "{array}");
    }
    for array in ["marker_api", "hip_api", "hsa_api"] {
        for record in buffers[array].as_array().unwrap() {
            // A runtime call's arguments, where kreplay records them (tests/cli/api_args.rs).
            let fields: Vec<&str> = keys(record).into_iter().filter(|k| *k != "args").collect();
            assert_eq!(fields, API_FIELDS, "{array}");
            assert!(
                array == "hip_api" || record.get("args").is_none(),
                "{array}"
            );
        }
    }
    for (array, more) in [
        (
            "memory_copy",
            &[
                "bytes",
                "dst_address",
                "dst_agent_id",
                "src_address",
                "src_agent_id",
            ][..],
        ),
        (
            "memory_allocation",
            &["address", "agent_id", "allocation_size"][..],
        ),
    ] {
        let fields: BTreeSet<&str> = keys(&buffers[array][0]).into_iter().collect();
        assert!(
            API_FIELDS.iter().chain(more).all(|f| fields.contains(f)),
            "{array}: {fields:?}"
        );
    }
    // Every record's kind and operation are named in strings.buffer_records.
    let kinds = process["strings"]["buffer_records"].as_array().unwrap();
    for (array, kind) in [
        ("marker_api", "MARKER_CORE_RANGE_API"),
        ("hip_api", "CUDA_RUNTIME_API"),
        ("hsa_api", "CUDA_DRIVER_API"),
        ("memory_copy", "MEMORY_COPY"),
        ("memory_allocation", "MEMORY_ALLOCATION"),
    ] {
        for record in buffers[array].as_array().unwrap() {
            let named = &kinds[record["kind"].as_u64().unwrap() as usize];
            assert_eq!(named["kind"], kind);
            let operation = record["operation"].as_u64().unwrap() as usize;
            assert!(named["operations"][operation].is_string(), "{record}");
        }
    }
    let messages = process["strings"]["marker_api"].as_array().unwrap();
    assert_eq!(
        messages.len(),
        buffers["marker_api"].as_array().unwrap().len()
    );
}

#[test]
fn the_perfetto_trace_has_the_marker_api_and_copy_slices_and_launch_flows() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path());
    let trace = read_trace(&d.join("out_results.pftrace"));
    assert_eq!(
        trace["unknown_fields"], 0,
        "fields Perfetto's schema does not know"
    );
    assert_eq!(
        (trace["unmatched_ends"].as_u64(), trace["unclosed"].as_u64()),
        (Some(0), Some(0))
    );
    let slices = trace["slices"].as_array().unwrap();
    let count = |category: &str| {
        slices
            .iter()
            .filter(|s| s["categories"][0] == category)
            .count()
    };
    let api = d.join("out_cuda_api_trace.csv");
    assert_eq!(
        count("marker_api"),
        csv_ids(&d.join("out_marker_api_trace.csv"), None).len()
    );
    assert_eq!(count("cuda_api"), csv_ids(&api, None).len());
    assert_eq!(
        count("memory_copy"),
        csv_ids(&d.join("out_memory_copy_trace.csv"), None).len()
    );
    let counters: Vec<&Value> = trace["counter_tracks"]
        .as_object()
        .unwrap()
        .values()
        .collect();
    assert!(counters
        .iter()
        .any(|t| t["name"] == "Memory allocated (bytes)"));
    // Each launch call's flow ends at a dispatch slice.
    let flows = |key: &str, category: &str| -> BTreeSet<u64> {
        slices
            .iter()
            .filter(|s| s["categories"][0] == category)
            .flat_map(|s| {
                s[key]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|f| f.as_u64().unwrap())
            })
            .collect()
    };
    let started = flows("flow_ids", "cuda_api");
    assert!(!started.is_empty());
    assert_eq!(flows("terminating_flow_ids", "kernel_dispatch"), started);
}
