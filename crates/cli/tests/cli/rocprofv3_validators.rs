//! rocprofv3's own output validators, re-expressed in our words against kreplay's outputs of the
//! software device's app, so that a script written for rocprofv3's files keeps working on ours.
//!
//! Mirrored (assertion by assertion; AMD counter and kernel names replaced by the sim's), from
//! ROCm/rocm-systems, `projects/rocprofiler-sdk/tests/rocprofv3/`:
//! - `counter-collection/input1/validate.py`: one counter, CSV and JSON;
//! - `counter-collection/input2/validate.py` and `input3/validate.py`: counters from a JSON and
//!   a YAML input file, CSV, and their `agent_info.csv` check;
//! - `kernel-replay/validate.py`: several groups sharing a counter, kernel replay, JSON;
//! - `counter-collection/kernel_filtering/validate.py`: include and exclude regexes, the
//!   iteration range per kernel (CSV counts, JSON ordinals against the kernel trace), an empty
//!   selection;
//! - `counter-collection/multiplex/validate.py`: `pmc_groups` rotated every
//!   `pmc_group_interval` dispatches per device (CSV), and its `agent_info.csv` check.
//!
//! Left out, being AMD- or app-specific: the `__amd_rocclr_*` kernel filter and the gfx skip
//! lists; input1's "every kernel dispatched equally often" (a property of its test app: the sim
//! app launches its kernels 3 or 4 times each) and its exact kernel list (the sim app's kernels
//! are checked instead); the kernel-replay app's launch sizes (checked against the run's own
//! database instead). As rocprofv3's validator expects, every dispatch is in every pass: the sim
//! app's graph launch is run node by node, as on a GPU, each kernel node a dispatch replayed in
//! every pass.

use crate::common::*;
use kreplay_format::*;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const R: &str = "sim__bytes_read.sum";

fn run(dir: &Path, args: &[&str]) {
    let app = sim_app();
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["-d", "D", "-o", "out", "--", app.to_str().unwrap()]);
    let out = kreplay(dir, &all);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

fn tool(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("D/out_results.json")).unwrap();
    let mut json: Value = serde_json::from_str(&text).unwrap();
    json["rocprofiler-sdk-tool"][0].take()
}

fn handle(v: &Value) -> u64 {
    v["handle"].as_u64().expect("an id with a handle")
}

/// counter id handle -> name, from the JSON's `counters`.
fn counter_names(tool: &Value) -> BTreeMap<u64, String> {
    tool["counters"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (handle(&c["id"]), c["name"].as_str().unwrap().to_string()))
        .collect()
}

/// `kernel_symbols[kernel_id]`'s name, as rocprofv3's validators look it up.
fn kernel_name(tool: &Value, kernel_id: u64) -> String {
    tool["kernel_symbols"][kernel_id as usize]["formatted_kernel_name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn sim_kernels(dir: &Path) -> BTreeSet<String> {
    let db = read_databases(&[dir.join("D/out_results.db")]).unwrap();
    db.processes[0]
        .kernels
        .iter()
        .map(|k| k.demangled_name.clone())
        .collect()
}

/// A CSV file's rows, by column name.
pub(crate) fn csv_rows(path: &Path) -> Vec<BTreeMap<String, String>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    reader
        .records()
        .map(|r| {
            header
                .iter()
                .cloned()
                .zip(r.unwrap().iter().map(str::to_string))
                .collect()
        })
        .collect()
}

/// The checks every counter_collection.csv validator makes of a row: an agent, a queue, a
/// process and a kernel, one of `counters`, a value above 0.
fn check_counter_row(row: &BTreeMap<String, String>, counters: &[&str]) {
    let agent: i64 = row["Agent_Id"].rsplit(' ').next().unwrap().parse().unwrap();
    assert!(agent >= 0, "{row:?}");
    assert!(row["Queue_Id"].parse::<u64>().unwrap() > 0, "{row:?}");
    assert!(row["Process_Id"].parse::<u64>().unwrap() > 0, "{row:?}");
    assert!(!row["Kernel_Name"].is_empty(), "{row:?}");
    assert!(counters.contains(&row["Counter_Name"].as_str()), "{row:?}");
    assert!(
        row["Counter_Value"].parse::<f64>().unwrap() > 0.0,
        "{row:?}"
    );
}

/// The validators' test_agent_info: logical ids 0..n; a GPU row has SIMDs and waves per SIMD
/// and no CPU cores.
pub(crate) fn check_agent_info(path: &Path) {
    let agents = csv_rows(path);
    let most = agents
        .iter()
        .map(|a| a["Logical_Node_Id"].parse::<usize>().unwrap())
        .max()
        .unwrap();
    assert_eq!(most + 1, agents.len());
    for agent in &agents {
        assert_eq!(agent["Agent_Type"], "GPU");
        assert_eq!(agent["Cpu_Cores_Count"], "0");
        assert!(agent["Simd_Count"].parse::<u64>().unwrap() > 0, "{agent:?}");
        assert!(
            agent["Max_Waves_Per_Simd"].parse::<u64>().unwrap() > 0,
            "{agent:?}"
        );
    }
}

/// Dispatch ids in order of appearance, each once.
fn ids_in_order(rows: &[BTreeMap<String, String>]) -> Vec<u64> {
    let mut ids: Vec<u64> = Vec::new();
    for row in rows {
        let id = row["Dispatch_Id"].parse().unwrap();
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

#[test]
fn one_counter_passes_rocprofv3s_counter_collection_validator() {
    let dir = tempfile::tempdir().unwrap();
    run(dir.path(), &["--pmc", W, "-f", "csv", "json", "rocpd"]);
    let kernels = sim_kernels(dir.path());

    // CSV (input1's test_validate_counter_collection_pmc1).
    let rows = csv_rows(&dir.path().join("D/out_counter_collection.csv"));
    assert!(!rows.is_empty());
    rows.iter().for_each(|row| check_counter_row(row, &[W]));
    let seen_kernels: BTreeSet<String> = rows.iter().map(|r| r["Kernel_Name"].clone()).collect();
    assert_eq!(seen_kernels, kernels);
    // Dispatch ids unique and ordered: 1..=n for n rows.
    let mut ids = ids_in_order(&rows);
    ids.sort();
    assert_eq!(ids.len(), rows.len(), "one row per dispatch");
    assert_eq!(ids, (1..=rows.len() as u64).collect::<Vec<_>>());

    // JSON (input1's test_validate_counter_collection_pmc1_json).
    let tool = tool(dir.path());
    let names = counter_names(&tool);
    let agents: BTreeSet<u64> = tool["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| handle(&a["id"]))
        .collect();
    let mut ids = Vec::new();
    for record in tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap()
    {
        let info = &record["dispatch_data"]["dispatch_info"];
        assert!(info["dispatch_id"].as_u64().unwrap() > 0);
        assert!(handle(&info["agent_id"]) > 0);
        assert!(handle(&info["queue_id"]) > 0);
        assert!(agents.contains(&handle(&info["agent_id"])), "{info}");
        assert!(!kernel_name(&tool, info["kernel_id"].as_u64().unwrap()).is_empty());
        let mut sum = 0.0;
        for sample in record["records"].as_array().unwrap() {
            let name = names
                .get(&handle(&sample["counter_id"]))
                .expect("a known counter");
            assert_eq!(name, W);
            sum += sample["value"].as_f64().unwrap();
        }
        assert!(sum > 0.0, "{record}");
        ids.push(info["dispatch_id"].as_u64().unwrap());
    }
    let unique: BTreeSet<u64> = ids.iter().copied().collect();
    assert_eq!(
        unique.into_iter().collect::<Vec<_>>(),
        (1..=ids.len() as u64).collect::<Vec<_>>()
    );
}

#[test]
fn groups_sharing_a_counter_pass_rocprofv3s_kernel_replay_validator() {
    // Three groups, one counter common to all (deterministic: instructions), one of their own.
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &[
            "--pmc",
            I,
            W,
            "--pmc",
            I,
            C,
            "--pmc",
            I,
            R,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "-f",
            "json",
            "rocpd",
        ],
    );
    let passes = 3u32;
    let tool = tool(dir.path());
    let names = counter_names(&tool);
    let replayed: BTreeSet<u64> = tool["kreplay"]["replay_costs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["outcome"] == "replayed")
        .map(|c| c["dispatch_id"].as_u64().unwrap())
        .collect();
    // dispatch id -> (kernel id, pass -> counter -> value)
    type Passes = BTreeMap<u32, BTreeMap<String, f64>>;
    let mut table: BTreeMap<u64, (u64, Passes, Vec<u32>)> = BTreeMap::new();
    for record in tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap()
    {
        let info = &record["dispatch_data"]["dispatch_info"];
        let id = info["dispatch_id"].as_u64().unwrap();
        let kernel = info["kernel_id"].as_u64().unwrap();
        // Every record of a kernel-replay run carries its pass (test_dispatch_id_nonzero_every_pass
        // and the validator's _pass_index).
        let pass = record["replay_pass"]
            .as_u64()
            .expect("replay_pass on every record") as u32;
        assert!(id > 0);
        let entry = table
            .entry(id)
            .or_insert((kernel, Passes::new(), Vec::new()));
        assert_eq!(entry.0, kernel, "one dispatch id names one kernel");
        entry.2.push(pass);
        let values = entry.1.entry(pass).or_default();
        for sample in record["records"].as_array().unwrap() {
            let name = names[&handle(&sample["counter_id"])].clone();
            *values.entry(name).or_default() += sample["value"].as_f64().unwrap();
        }
    }
    // test_dispatch_ids_increment_sequentially.
    let ids: Vec<u64> = table.keys().copied().collect();
    assert_eq!(ids, (ids[0]..ids[0] + ids.len() as u64).collect::<Vec<_>>());
    // Every dispatch is replayed (the graph's kernel nodes too).
    assert_eq!(
        replayed,
        table.keys().copied().collect::<BTreeSet<u64>>(),
        "every dispatch replayed"
    );
    assert!(replayed.len() >= 10, "{replayed:?}");
    let mut signatures = BTreeMap::new();
    for id in &replayed {
        let (kernel, by_pass, seen) = &table[id];
        // test_dispatch_id_constant_across_replay_passes: passes 0..N-1, each once.
        let mut seen = seen.clone();
        seen.sort();
        assert_eq!(seen, (0..passes).collect::<Vec<_>>(), "dispatch {id}");
        // test_common_counters_constant_across_passes: in every pass, > 0, equal (exact: a
        // deterministic counter on restored inputs).
        let common: Vec<f64> = by_pass.values().map(|v| v[I]).collect();
        assert_eq!(common.len(), passes as usize);
        assert!(common.iter().all(|v| *v > 0.0), "dispatch {id}: {common:?}");
        assert!(
            common.iter().all(|v| *v == common[0]),
            "dispatch {id}: {common:?}"
        );
        // test_each_pass_collects_distinct_batch: one counter of its own per pass, all distinct.
        let own: BTreeSet<String> = by_pass
            .values()
            .map(|v| {
                let own: Vec<&String> = v.keys().filter(|n| n.as_str() != I).collect();
                assert_eq!(own.len(), 1, "dispatch {id}: {v:?}");
                own[0].clone()
            })
            .collect();
        assert_eq!(own.len(), passes as usize, "dispatch {id}");
        signatures.insert(kernel_name(&tool, *kernel), common[0]);
    }
    // test_expected_counters_present.
    let seen: BTreeSet<&String> = names.values().collect();
    for counter in [I, W, C, R] {
        assert!(seen.contains(&counter.to_string()), "{counter}");
    }
    // test_counters_differ_between_kernels (over the common counter, by kernel).
    let distinct: BTreeSet<u64> = signatures.values().map(|v| *v as u64).collect();
    assert_eq!(distinct.len(), signatures.len(), "{signatures:?}");
    // test_launch_dimensions: grid_size counts work-items, as the run's database says.
    let db = read_databases(&[dir.path().join("D/out_results.db")]).unwrap();
    let launches: BTreeMap<u64, ([u32; 3], [u32; 3])> = db.processes[0]
        .dispatches
        .iter()
        .map(|d| (d.dispatch_id, (d.grid, d.block)))
        .collect();
    for record in tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap()
    {
        let info = &record["dispatch_data"]["dispatch_info"];
        let (grid, block) = launches[&info["dispatch_id"].as_u64().unwrap()];
        assert_eq!(
            info["grid_size"]["x"].as_u64(),
            Some(u64::from(grid[0]) * u64::from(block[0]))
        );
        assert_eq!(
            info["workgroup_size"]["x"].as_u64(),
            Some(u64::from(block[0]))
        );
    }
}

#[test]
fn rotated_groups_pass_rocprofv3s_multiplex_validator() {
    let dir = tempfile::tempdir().unwrap();
    let interval = 2usize;
    let groups: Vec<BTreeSet<String>> = vec![
        [W, I].iter().map(|s| s.to_string()).collect(),
        [W, C].iter().map(|s| s.to_string()).collect(),
    ];
    std::fs::write(
        dir.path().join("rotate.yaml"),
        format!("jobs:\n  - pmc_groups: [[{W}, {I}], [{W}, {C}]]\n    pmc_group_interval: {interval}\n    output_format: [csv]\n"),
    )
    .unwrap();
    run(dir.path(), &["-i", "rotate.yaml"]);
    let folder = dir.path().join("D/pass_1");
    check_agent_info(&folder.join("out_agent_info.csv"));

    // test_counter_collection_multiplex.
    let all: BTreeSet<String> = groups.iter().flatten().cloned().collect();
    let mut per_agent: BTreeMap<String, BTreeMap<u64, BTreeSet<String>>> = BTreeMap::new();
    let counters: Vec<&str> = all.iter().map(String::as_str).collect();
    for row in csv_rows(&folder.join("out_counter_collection.csv")) {
        check_counter_row(&row, &counters);
        per_agent
            .entry(row["Agent_Id"].clone())
            .or_default()
            .entry(row["Dispatch_Id"].parse().unwrap())
            .or_default()
            .insert(row["Counter_Name"].clone());
    }
    assert!(!per_agent.is_empty());
    let mut ids: Vec<u64> = per_agent.values().flat_map(|d| d.keys().copied()).collect();
    ids.sort();
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
    let mut observed = vec![BTreeSet::new(); groups.len()];
    for dispatches in per_agent.values() {
        for (position, seen) in dispatches.values().enumerate() {
            let scheduled = (position / interval) % groups.len();
            assert_eq!(
                seen,
                &groups[scheduled],
                "dispatch {} on its device",
                position + 1
            );
            observed[scheduled].extend(seen.iter().cloned());
        }
    }
    assert_eq!(observed, groups);
}

#[test]
fn input_files_pass_rocprofv3s_input2_and_input3_validators() {
    input_file_validators(
        "input.yaml",
        &format!("jobs:\n  - pmc: [{W}, {I}]\n    output_format: [csv]\n"),
    );
    input_file_validators(
        "input.json",
        &format!(r#"{{"jobs": [{{"pmc": ["{W}", "{I}"], "output_format": ["csv"]}}]}}"#),
    );
}

/// Counters from an input file (input2: JSON, input3: YAML), CSV, and agent_info.
fn input_file_validators(file: &str, text: &str) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join(file), text).unwrap();
    run(dir.path(), &["-i", file]);
    // An input file's jobs are written per pass, as rocprofv3 does.
    let folder = dir.path().join("D/pass_1");
    check_agent_info(&folder.join("out_agent_info.csv"));
    let rows = csv_rows(&folder.join("out_counter_collection.csv"));
    rows.iter().for_each(|row| check_counter_row(row, &[W, I]));
    // Unique and in order of appearance: 1, 2, ...
    let ids = ids_in_order(&rows);
    assert_eq!(ids, (1..=ids.len() as u64).collect::<Vec<_>>());
}

/// (kernel name, dispatch id) of records.
type Dispatches = Vec<(String, u64)>;

/// Every counter record's (kernel name, dispatch id), and every traced dispatch's.
fn counter_and_trace_dispatches(tool: &Value) -> (Dispatches, Dispatches) {
    let of = |records: &Value, info: &dyn Fn(&Value) -> Value| -> Dispatches {
        records
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                let i = info(r);
                (
                    kernel_name(tool, i["kernel_id"].as_u64().unwrap()),
                    i["dispatch_id"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    (
        of(&tool["callback_records"]["counter_collection"], &|r| {
            r["dispatch_data"]["dispatch_info"].clone()
        }),
        of(&tool["buffer_records"]["kernel_dispatch"], &|r| {
            r["dispatch_info"].clone()
        }),
    )
}

#[test]
fn kernel_filters_pass_rocprofv3s_kernel_filtering_validator() {
    let sim_kernel = "scale_add(unsigned int*, unsigned int, unsigned int, unsigned int)";
    // One kernel, iterations 2 and 3 (test_validate_cli_single_kernel_csv/_json).
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &[
            "--pmc",
            W,
            "--kernel-trace",
            "--kernel-include-regex",
            "scale_add",
            "--kernel-iteration-range",
            "[2-3]",
            "-f",
            "csv",
            "json",
        ],
    );
    let rows = csv_rows(&dir.path().join("D/out_counter_collection.csv"));
    rows.iter().for_each(|row| check_counter_row(row, &[W]));
    let names: BTreeSet<&str> = rows.iter().map(|r| r["Kernel_Name"].as_str()).collect();
    assert_eq!(names, BTreeSet::from([sim_kernel]));
    assert_eq!(rows.len(), 2, "one row per requested iteration");
    let json = tool(dir.path());
    let (counted, traced) = counter_and_trace_dispatches(&json);
    // Ordinals of the kernel's launches, in dispatch order, from the (unfiltered) trace.
    let mut launches: Vec<u64> = traced
        .iter()
        .filter(|(name, _)| name == sim_kernel)
        .map(|(_, id)| *id)
        .collect();
    launches.sort();
    launches.dedup();
    assert!(
        launches.len() > 2,
        "more launches than the range: {launches:?}"
    );
    let ordinals: Vec<usize> = counted
        .iter()
        .map(|(name, id)| {
            assert_eq!(name, sim_kernel);
            launches.iter().position(|l| l == id).unwrap() + 1
        })
        .collect();
    assert_eq!(ordinals, vec![2, 3]);

    // Everything but one kernel (test_validate_cli_exclude_csv).
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &[
            "--pmc",
            W,
            "--kernel-exclude-regex",
            "accumulate",
            "-f",
            "csv",
        ],
    );
    let text = std::fs::read_to_string(dir.path().join("D/out_counter_collection.csv")).unwrap();
    assert!(
        !text.contains("accumulate") && text.contains("scale_add"),
        "{text}"
    );

    // A selection that matches nothing: no counter records, the trace still there
    // (test_validate_cli_empty_result_json).
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &[
            "--pmc",
            W,
            "--kernel-trace",
            "--kernel-include-regex",
            "no_such_kernel",
            "-f",
            "json",
        ],
    );
    let tool = tool(dir.path());
    assert_eq!(
        tool["callback_records"]["counter_collection"]
            .as_array()
            .unwrap()
            .len(),
        0
    );
    assert!(!tool["buffer_records"]["kernel_dispatch"]
        .as_array()
        .unwrap()
        .is_empty());
}

/// The fields rocprofv3's JSON readers index beyond the validators' (rocprofiler-sdk's structs
/// as rocprofv3 writes them: `size`, the correlation id's `ancestor`, `metadata.config` and
/// `.node`, the kernel symbols' and agents' fields), present on every record and entry.
#[test]
fn the_json_has_the_fields_rocprofv3s_readers_index() {
    let dir = tempfile::tempdir().unwrap();
    run(
        dir.path(),
        &[
            "--pmc",
            I,
            W,
            "--pmc",
            I,
            C,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "-f",
            "json",
        ],
    );
    let tool = tool(dir.path());
    let metadata = &tool["metadata"];
    assert!(metadata["node"]["hostname"].is_string(), "{metadata}");
    assert!(metadata["node"]["machine_id"].is_string(), "{metadata}");
    assert_eq!(metadata["config"]["kernel_replay"], true, "{metadata}");
    assert_eq!(
        metadata["config"]["counters"],
        serde_json::json!([I, W, C]),
        "{metadata}"
    );
    let records = tool["callback_records"]["counter_collection"]
        .as_array()
        .unwrap();
    assert!(!records.is_empty());
    for record in records {
        let data = &record["dispatch_data"];
        assert!(data["size"].as_u64().unwrap() > 0, "{record}");
        assert!(
            data["dispatch_info"]["size"].as_u64().unwrap() > 0,
            "{record}"
        );
        assert_eq!(data["correlation_id"]["ancestor"], 0, "{record}");
    }
    for record in tool["buffer_records"]["kernel_dispatch"]
        .as_array()
        .unwrap()
    {
        assert!(record["size"].as_u64().unwrap() > 0, "{record}");
        assert_eq!(record["correlation_id"]["ancestor"], 0, "{record}");
    }
    let symbols = tool["kernel_symbols"].as_array().unwrap();
    for symbol in symbols {
        for key in [
            "size",
            "kernarg_segment_alignment",
            "kernel_code_entry_byte_offset",
        ] {
            assert!(symbol[key].is_u64(), "{key}: {symbol}");
        }
        assert!(symbol["kernel_address"]["handle"].is_u64(), "{symbol}");
    }
    let agent = &tool["agents"][0];
    for key in [
        "size",
        "vendor_id",
        "location_id",
        "domain",
        "gpu_id",
        "logical_node_type_id",
        "workgroup_max_size",
        "grid_max_size",
        "gfx_target_version",
        "family_id",
        "cpu_cores_count",
        "array_count",
    ] {
        assert!(agent[key].is_u64(), "{key}: {agent}");
    }
    assert_eq!(agent["workgroup_max_dim"]["z"], 64, "{agent}");
    assert!(tool["code_objects"].is_array());
}
