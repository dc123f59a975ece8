//! rocprofv3's tracing validator (ROCm/rocm-systems
//! `projects/rocprofiler-sdk/tests/rocprofv3/tracing/validate.py`), re-expressed against
//! kreplay's outputs of the software device's app, run as that test runs rocprofv3 (`-M
//! --hsa-trace --kernel-trace --memory-copy-trace --marker-trace`, formats pftrace, csv, json,
//! rocpd) with CUDA's names: `-s` in `--hsa-trace`'s place (the CUDA driver API is HSA's, the
//! runtime API HIP's), so the "HSA" rows are `cuda_api_trace.csv`'s `CUDA_DRIVER_API` rows and
//! the JSON's `hsa_api` records.
//!
//! Mirrored check by check: `test_agent_info`, `test_hsa_api_trace(_json)` (domain, process and
//! thread, times, unique correlation ids, a copy call among the functions),
//! `test_kernel_trace(_json)`, `test_host_functions_json` (`len(host_function_data) > 0`, ids
//! within `kernel_symbols` and `code_objects`, the host function's truncated name its kernel's),
//! `test_memory_copy_trace(_json)`, `test_marker_api_trace(_json)`, and the record counts
//! `test_perfetto_data` and `test_rocpd_data` compare with the JSON's.
//!
//! Differences: the app's specifics (its one 1024×1024 dispatch; a graph launched whole is one
//! dispatch named `cuGraphLaunch`, let through as the validator lets rocclr's kernels; its two copies, its `main`
//! range, correlation ids numbered after its marker calls) are the sim app's; the host side of
//! a copy is `CPU 0` in the CSV and handle 0 in the JSON, no row of `agent_info.csv` nor entry
//! of `agents` (kreplay lists the run's GPUs only; docs/output.md), so the validator's lookup of
//! the host agent's type is checked as that label instead; the Perfetto trace's API slices are
//! of one category, `cuda_api`, where rocprofv3 has `hip_api` and `hsa_api`; host functions come
//! from the runtime launch calls' `func` arguments, so they need `-r`/`-s`.

use crate::common::*;
use crate::markers::query;
use crate::pftrace::read_trace;
use crate::rocprofv3_validators::{check_agent_info, csv_rows};
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// The run the validator checks; its output folder.
fn run(dir: &Path) -> PathBuf {
    let args = [
        "-M",
        "-s",
        "--kernel-trace",
        "--memory-copy-trace",
        "--marker-trace",
        "-d",
        "D",
        "-o",
        "out",
        "--output-format",
        "pftrace",
        "csv",
        "json",
        "rocpd",
    ];
    let out = run_sim(dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join("D")
}

fn tool(d: &Path) -> Value {
    let json: Value =
        serde_json::from_slice(&std::fs::read(d.join("out_results.json")).unwrap()).unwrap();
    json["rocprofiler-sdk-tool"][0].clone()
}

fn kind_name(data: &Value, kind: &Value) -> String {
    data["strings"]["buffer_records"][kind.as_u64().unwrap() as usize]["kind"]
        .as_str()
        .unwrap()
        .to_string()
}

fn operation_name(data: &Value, record: &Value) -> String {
    let kind = record["kind"].as_u64().unwrap() as usize;
    let operation = record["operation"].as_u64().unwrap() as usize;
    data["strings"]["buffer_records"][kind]["operations"][operation]
        .as_str()
        .unwrap()
        .to_string()
}

fn number(row: &std::collections::BTreeMap<String, String>, column: &str) -> u64 {
    row[column].parse().unwrap()
}

#[test]
fn the_sim_apps_trace_passes_rocprofv3s_tracing_validator() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path());
    let data = tool(&d);

    // test_agent_info
    check_agent_info(&d.join("out_agent_info.csv"));

    // test_hsa_api_trace: the driver calls (HSA's place).
    let api = csv_rows(&d.join("out_cuda_api_trace.csv"));
    let driver: Vec<_> = api
        .iter()
        .filter(|r| r["Domain"] == "CUDA_DRIVER_API")
        .collect();
    assert!(!driver.is_empty());
    let mut ids = BTreeSet::new();
    let mut functions = BTreeSet::new();
    for row in &driver {
        assert!(number(row, "Process_Id") > 0);
        assert!(
            number(row, "Thread_Id") >= number(row, "Process_Id"),
            "{row:?}"
        );
        assert!(number(row, "End_Timestamp") >= number(row, "Start_Timestamp"));
        ids.insert(number(row, "Correlation_Id"));
        functions.insert(row["Function"].clone());
    }
    assert_eq!(ids.len(), driver.len(), "every correlation id unique");
    assert!(functions.contains("cuMemcpyHtoD_v2"), "{functions:?}");

    // test_hsa_api_trace_json
    let hsa = data["buffer_records"]["hsa_api"].as_array().unwrap();
    let mut json_ids = BTreeSet::new();
    let mut json_functions = BTreeSet::new();
    for record in hsa {
        assert_eq!(kind_name(&data, &record["kind"]), "CUDA_DRIVER_API");
        assert!(record["end_timestamp"].as_u64() >= record["start_timestamp"].as_u64());
        json_ids.insert(record["correlation_id"]["internal"].as_u64().unwrap());
        json_functions.insert(operation_name(&data, record));
    }
    assert_eq!(json_ids.len(), hsa.len());
    assert_eq!(json_ids, ids);
    assert_eq!(json_functions, functions);

    // test_kernel_trace: -M names kernels by their mangled names.
    let valid: BTreeSet<String> = data["kernel_symbols"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|k| k["kernel_id"] != 0)
        .map(|k| k["kernel_name"].as_str().unwrap().to_string())
        .collect();
    let kernels = csv_rows(&d.join("out_kernel_trace.csv"));
    assert!(!kernels.is_empty());
    for row in &kernels {
        assert_eq!(row["Kind"], "KERNEL_DISPATCH");
        let agent: i64 = row["Agent_Id"].rsplit(' ').next().unwrap().parse().unwrap();
        assert!(agent >= 0);
        assert!(number(row, "Queue_Id") > 0, "{row:?}");
        assert!(number(row, "Kernel_Id") > 0);
        assert!(valid.contains(&row["Kernel_Name"]), "{row:?}");
        assert!(number(row, "Correlation_Id") > 0);
        assert!(number(row, "End_Timestamp") >= number(row, "Start_Timestamp"));
        // A graph launched whole (no counters) is one dispatch named for its call, let through
        // as the validator lets rocclr's own kernels.
        if row["Kernel_Name"] != "cuGraphLaunch" {
            assert!(row["Kernel_Name"].starts_with("_Z"), "{row:?}");
            // The app's launch sizes: rocprofv3's grid counts work-items.
            assert_eq!(
                number(row, "Grid_Size_X") % number(row, "Workgroup_Size_X"),
                0
            );
        }
    }

    // test_host_functions_json
    let host_functions = data["host_functions"].as_array().unwrap();
    let symbols = data["kernel_symbols"].as_array().unwrap();
    let code_objects = data["code_objects"].as_array().unwrap();
    assert!(!host_functions.is_empty(), "len(host_function_data) > 0");
    for (index, host_function) in host_functions.iter().enumerate() {
        let id = host_function["host_function_id"].as_u64().unwrap();
        if id == 0 {
            continue;
        }
        assert_eq!(id as usize, index, "indexed by id");
        let kernel = host_function["kernel_id"].as_u64().unwrap() as usize;
        assert!(kernel > 0 && kernel <= symbols.len());
        let code_object = host_function["code_object_id"].as_u64().unwrap() as usize;
        assert!(code_object > 0 && code_object <= code_objects.len());
        assert_eq!(
            host_function["truncated_host_function_name"],
            symbols[kernel]["truncated_kernel_name"]
        );
    }

    // test_kernel_trace_json
    let dispatches = data["buffer_records"]["kernel_dispatch"]
        .as_array()
        .unwrap();
    assert_eq!(dispatches.len(), kernels.len());
    for dispatch in dispatches {
        let info = &dispatch["dispatch_info"];
        assert_eq!(kind_name(&data, &dispatch["kind"]), "KERNEL_DISPATCH");
        assert!(dispatch["correlation_id"]["internal"].as_u64().unwrap() > 0);
        assert!(info["agent_id"]["handle"].as_u64().unwrap() > 0);
        assert!(info["queue_id"]["handle"].as_u64().unwrap() > 0);
        let kernel = info["kernel_id"].as_u64().unwrap() as usize;
        assert!(kernel > 0);
        let name = symbols[kernel]["formatted_kernel_name"].as_str().unwrap();
        assert!(valid.contains(name), "{name}");
        assert!(dispatch["end_timestamp"].as_u64() >= dispatch["start_timestamp"].as_u64());
    }

    // test_memory_copy_trace: the device side is a GPU of agent_info.csv; the host side is
    // `CPU 0` (see the module documentation).
    let agents = csv_rows(&d.join("out_agent_info.csv"));
    let gpu = |label: &str| {
        let index = label.strip_prefix("Agent ").unwrap();
        agents
            .iter()
            .find(|a| a["Logical_Node_Id"] == index)
            .map(|a| a["Agent_Type"].clone())
    };
    let copies = csv_rows(&d.join("out_memory_copy_trace.csv"));
    let directions: BTreeSet<&str> = copies.iter().map(|r| r["Direction"].as_str()).collect();
    for direction in ["MEMORY_COPY_HOST_TO_DEVICE", "MEMORY_COPY_DEVICE_TO_HOST"] {
        assert!(directions.contains(direction), "{directions:?}");
    }
    for row in &copies {
        assert_eq!(row["Kind"], "MEMORY_COPY");
        let (src, dst) = (&row["Source_Agent_Id"], &row["Destination_Agent_Id"]);
        match row["Direction"].as_str() {
            "MEMORY_COPY_HOST_TO_DEVICE" => {
                assert_eq!(src, "CPU 0");
                assert_eq!(gpu(dst).as_deref(), Some("GPU"));
            }
            "MEMORY_COPY_DEVICE_TO_HOST" => {
                assert_eq!(gpu(src).as_deref(), Some("GPU"));
                assert_eq!(dst, "CPU 0");
            }
            _ => {}
        }
        assert!(number(row, "Correlation_Id") > 0);
        assert!(number(row, "End_Timestamp") >= number(row, "Start_Timestamp"));
    }

    // test_memory_copy_json_trace
    let json_agents = data["agents"].as_array().unwrap();
    let agent_type = |id: &Value| {
        json_agents
            .iter()
            .find(|a| a["id"]["handle"] == id["handle"])
            .map(|a| a["type"].as_u64().unwrap())
    };
    let json_copies = data["buffer_records"]["memory_copy"].as_array().unwrap();
    assert!(json_copies.len() >= 2);
    assert_eq!(json_copies.len(), copies.len());
    for row in json_copies {
        assert_eq!(kind_name(&data, &row["kind"]), "MEMORY_COPY");
        let (src, dst) = (
            agent_type(&row["src_agent_id"]),
            agent_type(&row["dst_agent_id"]),
        );
        match operation_name(&data, row).as_str() {
            "MEMORY_COPY_HOST_TO_DEVICE" => {
                assert_eq!(
                    (row["src_agent_id"]["handle"].as_u64(), dst),
                    (Some(0), Some(2))
                );
            }
            "MEMORY_COPY_DEVICE_TO_HOST" => {
                assert_eq!(
                    (src, row["dst_agent_id"]["handle"].as_u64()),
                    (Some(2), Some(0))
                );
            }
            _ => {}
        }
        assert!(row["correlation_id"]["internal"].as_u64().unwrap() > 0);
        assert!(row["end_timestamp"].as_u64() >= row["start_timestamp"].as_u64());
    }

    // test_marker_api_trace: the sim app's outermost ranges in rocprofv3's `main`'s place.
    let markers = csv_rows(&d.join("out_marker_api_trace.csv"));
    let valid_domains = [
        "MARKER_CORE_API",
        "MARKER_CONTROL_API",
        "MARKER_NAME_API",
        "MARKER_CORE_RANGE_API",
    ];
    let mut messages = BTreeSet::new();
    for row in &markers {
        assert!(valid_domains.contains(&row["Domain"].as_str()), "{row:?}");
        assert!(number(row, "Process_Id") > 0);
        let tid = number(row, "Thread_Id");
        assert!(tid == 0 || tid >= number(row, "Process_Id"));
        assert!(number(row, "End_Timestamp") >= number(row, "Start_Timestamp"));
        messages.insert(row["Function"].clone());
    }
    assert!(messages.contains("iteration 0"), "{messages:?}");

    // test_marker_api_trace_json
    let pid = data["metadata"]["pid"].as_u64().unwrap();
    let json_markers = data["buffer_records"]["marker_api"].as_array().unwrap();
    assert_eq!(json_markers.len(), markers.len());
    for marker in json_markers {
        assert!(valid_domains.contains(&kind_name(&data, &marker["kind"]).as_str()));
        assert!(marker["thread_id"].as_u64().unwrap() >= pid);
        assert!(marker["end_timestamp"].as_u64() >= marker["start_timestamp"].as_u64());
    }

    // test_perfetto_data: as many slices of each category as the JSON has records.
    let records = |kind: &str| data["buffer_records"][kind].as_array().unwrap().len();
    let trace = read_trace(&d.join("out_results.pftrace"));
    let slices = |category: &str| {
        trace["slices"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["categories"][0] == category)
            .count()
    };
    assert_eq!(slices("cuda_api"), records("hip_api") + records("hsa_api"));
    for kind in ["marker_api", "kernel_dispatch", "memory_copy"] {
        assert_eq!(slices(kind), records(kind), "{kind}");
    }

    // test_rocpd_data: as many rows of each category in rocpd's views.
    let db = d.join("out_results.db");
    let count = |sql: &str| query(&db, sql)[0][0].as_u64().unwrap() as usize;
    for (kind, sql) in [
        (
            "hip_api",
            "SELECT COUNT(*) FROM regions WHERE category = 'CUDA_RUNTIME_API'",
        ),
        (
            "hsa_api",
            "SELECT COUNT(*) FROM regions WHERE category = 'CUDA_DRIVER_API'",
        ),
        (
            "marker_api",
            "SELECT COUNT(*) FROM regions_and_samples WHERE category = 'MARKER_CORE_RANGE_API'",
        ),
        ("kernel_dispatch", "SELECT COUNT(*) FROM kernels"),
        ("memory_copy", "SELECT COUNT(*) FROM memory_copies"),
    ] {
        assert_eq!(count(sql), records(kind), "{kind}: {sql}");
    }
}
