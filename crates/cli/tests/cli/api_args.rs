//! API call arguments (`-r`, `-s`) on the reference app, as rocprofv3 records a HIP call's:
//! rocpd's `rocpd_arg` rows and `region_args` view (position, C type, name, value as text) for
//! launches, copies, allocations, frees, virtual-memory maps and graph launches, each value what the call had (an
//! allocation's address the one the memory trace records, a launch's grid and block its
//! dispatch's); the JSON's runtime records carry them as `args` indexed by position, its driver
//! records none (rocprofv3 writes none for HSA's); `cuda_api_trace.csv` keeps rocprofv3's seven
//! columns; `kreplay convert` keeps them; without `-r`/`-s` there are none.

use crate::common::*;
use crate::markers::query;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn run(dir: &Path, args: &[&str]) -> PathBuf {
    let mut all = args.to_vec();
    all.extend_from_slice(&["-f", "rocpd", "json", "csv", "-d", "D", "-o", "o"]);
    let out = run_sim(dir, &all);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join("D")
}

/// Every call with arguments: correlation id → (function, domain, {name: (position, type, value)}).
type Calls = BTreeMap<(u64, String), BTreeMap<String, (u64, String, String)>>;

fn calls_with_args(db: &Path) -> Calls {
    let rows = query(
        db,
        r#"SELECT R.corr_id, R.name, A.position, A.type, A.name, A.value
           FROM regions R JOIN rocpd_event E ON E.id = R.event_id AND E.guid = R.guid
           JOIN rocpd_arg A ON A.event_id = E.id AND A.guid = E.guid ORDER BY R.id, A.position"#,
    );
    let mut calls: Calls = BTreeMap::new();
    for r in rows {
        let key = (r[0].as_u64().unwrap(), r[1].as_str().unwrap().to_string());
        let arg = (
            r[2].as_u64().unwrap(),
            r[3].as_str().unwrap().to_string(),
            r[5].as_str().unwrap().to_string(),
        );
        calls
            .entry(key)
            .or_default()
            .insert(r[4].as_str().unwrap().to_string(), arg);
    }
    calls
}

fn value<'a>(args: &'a BTreeMap<String, (u64, String, String)>, name: &str) -> &'a str {
    &args
        .get(name)
        .unwrap_or_else(|| panic!("no {name} in {args:?}"))
        .2
}

#[test]
fn region_args_hold_each_calls_arguments_as_rocprofv3() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path(), &["-s"]);
    let db = d.join("o_results.db");
    let calls = calls_with_args(&db);
    let functions: BTreeSet<&str> = calls.keys().map(|(_, f)| f.as_str()).collect();
    for f in [
        "cudaLaunchKernel",
        "cuLaunchKernel",
        "cudaMemcpy",
        "cuMemcpyHtoD_v2",
        "cuMemcpyDtoH_v2",
        "cudaMalloc",
        "cuMemAlloc_v2",
        "cudaFreeAsync",
        "cudaFreeHost",
        "cuMemFreeAsync",
        "cudaGraphLaunch",
        "cuMemMap",
    ] {
        assert!(functions.contains(f), "{f}: {functions:?}");
    }
    // rocpd's region_args view reads every row.
    let in_view = query(&db, "SELECT COUNT(*) FROM region_args")[0][0]
        .as_u64()
        .unwrap();
    let rows: usize = calls.values().map(BTreeMap::len).sum();
    assert_eq!(in_view as usize, rows);

    // Positions, types and names as CUDA's headers declare them.
    let launch = calls
        .iter()
        .find(|((_, f), _)| f == "cudaLaunchKernel")
        .unwrap()
        .1;
    let declared: Vec<(u64, &str, &str)> = launch
        .iter()
        .map(|(name, (position, ty, _))| (*position, ty.as_str(), name.as_str()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(
        declared,
        [
            (0, "const void*", "func"),
            (1, "dim3", "gridDim"),
            (2, "dim3", "blockDim"),
            (4, "size_t", "sharedMem"),
            (5, "cudaStream_t", "stream"),
        ]
    );

    // A launch's grid and block are its dispatch's (same correlation id), in rocprofiler-sdk's
    // dim3 text; the driver call beneath has them axis by axis.
    let dispatches = query(
        &db,
        "SELECT corr_id, grid_size_x / workgroup_x, grid_size_y / workgroup_y, workgroup_x FROM kernels",
    );
    let mut checked = 0;
    for d in &dispatches {
        let id = d[0].as_u64().unwrap();
        let Some(args) = calls.get(&(id, "cudaLaunchKernel".to_string())) else {
            continue;
        };
        let (gx, gy, bx) = (
            d[1].as_u64().unwrap(),
            d[2].as_u64().unwrap(),
            d[3].as_u64().unwrap(),
        );
        assert!(
            value(args, "gridDim").ends_with(&format!("y={gy}, x={gx}}}")),
            "{args:?}"
        );
        assert!(
            value(args, "blockDim").ends_with(&format!("x={bx}}}")),
            "{args:?}"
        );
        checked += 1;
    }
    assert!(checked > 0);
    for ((_, f), args) in &calls {
        if f == "cuLaunchKernel" {
            assert!(value(args, "gridDimX").parse::<u64>().unwrap() > 0);
            assert_eq!(args.len(), 9, "{args:?}");
        }
    }

    // An allocation's address is the one the memory trace records for it, and its free names it.
    let allocated: BTreeSet<String> = query(
        &db,
        "SELECT printf('%#x', address) FROM memory_allocations WHERE type = 'ALLOC'",
    )
    .into_iter()
    .map(|r| r[0].as_str().unwrap().to_string())
    .collect();
    let mut addresses = BTreeSet::new();
    for ((_, f), args) in &calls {
        match f.as_str() {
            "cudaMalloc" | "cudaMallocManaged" | "cudaMallocPitch" | "cudaMallocAsync" => {
                addresses.insert(value(args, "devPtr").to_string());
            }
            "cudaHostAlloc" => {
                addresses.insert(value(args, "pHost").to_string());
            }
            "cuMemAlloc_v2" => assert_eq!(args["bytesize"].1, "size_t"),
            "cudaMemcpy" => assert!(value(args, "kind").starts_with("cudaMemcpy"), "{args:?}"),
            "cudaFreeAsync" => assert!(allocated.contains(value(args, "devPtr")), "{args:?}"),
            "cudaFreeHost" => assert!(allocated.contains(value(args, "ptr")), "{args:?}"),
            _ => {}
        }
    }
    assert!(!addresses.is_empty());
    assert!(
        addresses.is_subset(&allocated),
        "{addresses:?} {allocated:?}"
    );

    // rocprofv3's CSV has no arguments.
    let header = std::fs::read_to_string(d.join("o_cuda_api_trace.csv")).unwrap();
    assert_eq!(
        header.lines().next().unwrap(),
        r#""Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp""#
    );
}

#[test]
fn the_jsons_runtime_records_carry_args_by_position() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path(), &["-s"]);
    let calls = calls_with_args(&d.join("o_results.db"));
    let json: Value =
        serde_json::from_slice(&std::fs::read(d.join("o_results.json")).unwrap()).unwrap();
    let process = &json["rocprofiler-sdk-tool"][0];
    let records = &process["buffer_records"];
    let names = process["strings"]["buffer_records"][5]["operations"]
        .as_array()
        .unwrap();
    let mut with_args = 0;
    for record in records["hip_api"].as_array().unwrap() {
        let id = record["correlation_id"]["internal"].as_u64().unwrap();
        let function = names[record["operation"].as_u64().unwrap() as usize]
            .as_str()
            .unwrap()
            .to_string();
        let Some(args) = record["args"].as_array() else {
            assert!(!calls.contains_key(&(id, function)));
            continue;
        };
        with_args += 1;
        let in_db = &calls[&(id, function)];
        for (position, arg) in args.iter().enumerate() {
            let name = arg["name"].as_str().unwrap();
            if name.is_empty() {
                // A position kreplay does not record (cudaLaunchKernel's `args`).
                assert!(in_db.values().all(|(p, _, _)| *p != position as u64));
                continue;
            }
            let (p, ty, value) = &in_db[name];
            assert_eq!(
                (*p, ty.as_str(), value.as_str()),
                (
                    position as u64,
                    arg["type"].as_str().unwrap(),
                    arg["value"].as_str().unwrap()
                )
            );
        }
    }
    assert!(with_args > 0);
    assert!(records["hsa_api"]
        .as_array()
        .unwrap()
        .iter()
        .all(|r| r.get("args").is_none()));
}

#[test]
fn convert_keeps_the_arguments_and_none_are_recorded_without_api_tracing() {
    let dir = tempfile::tempdir().unwrap();
    let d = run(dir.path(), &["-r"]);
    let recorded = calls_with_args(&d.join("o_results.db"));
    assert!(!recorded.is_empty());
    // -r records the runtime calls' arguments only (and the driver calls made outside them).
    assert!(recorded
        .keys()
        .all(|(_, f)| f.starts_with("cuda") || f.starts_with("cuMem")));
    let out = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            "D/o_results.db",
            "-f",
            "rocpd",
            "-d",
            "C",
            "-o",
            "o",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        calls_with_args(&dir.path().join("C/o_results.db")),
        recorded
    );

    let d = run(dir.path(), &["--kernel-trace", "--marker-trace"]);
    assert_eq!(
        query(&d.join("o_results.db"), "SELECT COUNT(*) FROM rocpd_arg")[0][0],
        0
    );
}

#[test]
fn kernel_replay_records_the_same_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let plain = calls_with_args(&run(dir.path(), &["-s"]).join("o_results.db"));
    let replayed =
        calls_with_args(&run(dir.path(), &two_groups_replay(&["-s"])).join("o_results.db"));
    // Host buffers move from run to run; the rest is the same.
    let shape = |calls: &Calls| -> Vec<(String, Vec<(String, u64)>)> {
        calls
            .iter()
            .map(|((_, f), args)| {
                (
                    f.clone(),
                    args.iter()
                        .map(|(name, (p, _, _))| (name.clone(), *p))
                        .collect(),
                )
            })
            .collect()
    };
    assert_eq!(shape(&plain), shape(&replayed));
}
