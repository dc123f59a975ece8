//! Code objects as rocprofv3's tools read them: the JSON's `code_objects` and rocpd's
//! `code_objects` view (plain `sqlite3`), one per module the reference app loads (one per
//! device), and every kernel symbol's `code_object_id` naming one of them, in a run's outputs and
//! in databases merged by `kreplay convert`.

use crate::common::*;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Column names and rows of `sql` on the database at `db`, through Python's `sqlite3` (no
/// kreplay code), each row a JSON array.
fn query(db: &Path, sql: &str) -> (Vec<String>, Vec<Vec<Value>>) {
    let script = "import json, sqlite3, sys\n\
                  c = sqlite3.connect(sys.argv[1]).execute(sys.argv[2])\n\
                  rows = [list(r) for r in c]\n\
                  print(json.dumps([[d[0] for d in c.description], rows]))";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(db)
        .arg(sql)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{sql}: {}", text(&out.stderr));
    let parsed: (Vec<String>, Vec<Vec<Value>>) = serde_json::from_slice(&out.stdout).unwrap();
    parsed
}

/// The reference app on two devices with two counter groups replayed, written as rocpd and JSON
/// under `dir/name`; returns that folder.
fn two_device_run(dir: &Path, name: &str) -> PathBuf {
    let app = sim_app();
    let out = kreplay(
        dir,
        &[
            "--pmc",
            W,
            "--pmc",
            I,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "-f",
            "rocpd",
            "json",
            "-d",
            name,
            "-o",
            "out",
            "--",
            app.to_str().unwrap(),
            "--threads",
            "2",
            "--devices",
            "2",
            "--iterations",
            "2",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join(name)
}

/// Checks a process object of the JSON: one code object per device, loaded from memory by this
/// process, on one of its agents; every described kernel symbol names one. Returns the pid.
fn check_json_process(process: &Value) -> u64 {
    let pid = process["metadata"]["pid"].as_u64().unwrap();
    let agents: BTreeSet<u64> = process["agents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["id"]["handle"].as_u64().unwrap())
        .collect();
    let objects = process["code_objects"].as_array().unwrap();
    assert_eq!(objects[0]["size"], 0, "slot 0: rocprofv3's placeholder");
    let described: Vec<&Value> = objects.iter().filter(|o| o["size"] == 88).collect();
    assert_eq!(described.len(), 2, "one module per device: {objects:?}");
    let mut on = BTreeSet::new();
    for (slot, object) in objects.iter().enumerate().skip(1) {
        assert_eq!(object["code_object_id"].as_u64(), Some(slot as u64));
        assert_eq!(
            object["storage_type"], 2,
            "ROCPROFILER_CODE_OBJECT_STORAGE_TYPE_MEMORY"
        );
        let size = object["memory_size"].as_u64().unwrap();
        assert!(size > 0);
        let uri = object["uri"].as_str().unwrap();
        assert!(
            uri.starts_with(&format!("memory://{pid}#offset=0x"))
                && uri.ends_with(&format!("&size={size}")),
            "{uri}"
        );
        let agent = object["agent_id"]["handle"].as_u64().unwrap();
        assert!(agents.contains(&agent), "{object}");
        on.insert(agent);
    }
    assert_eq!(on, agents, "a module on every device");
    let symbols: Vec<&Value> = process["kernel_symbols"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["kernel_id"] != 0)
        .collect();
    assert!(!symbols.is_empty());
    for symbol in symbols {
        let id = symbol["code_object_id"].as_u64().unwrap() as usize;
        assert!(id > 0, "{symbol}");
        assert_eq!(objects[id]["size"], 88, "{symbol} names no code object");
    }
    pid
}

/// Checks rocpd's `code_objects` view: `processes` code objects per process (two each), from
/// memory, with rocpd's columns; every kernel symbol's `code_object_id` is one of its rows.
fn check_rocpd(db: &Path, processes: usize) {
    let (columns, rows) = query(db, "SELECT * FROM code_objects ORDER BY id");
    for column in [
        "id",
        "guid",
        "pid",
        "agent_abs_index",
        "uri",
        "load_size",
        "storage_type_str",
        "code_object_size",
        "storage_type",
        "memory_base",
        "memory_size",
    ] {
        assert!(columns.iter().any(|c| c == column), "{column}: {columns:?}");
    }
    assert_eq!(rows.len(), 2 * processes, "{rows:?}");
    let at = |name: &str| columns.iter().position(|c| c == name).unwrap();
    let mut devices = BTreeSet::new();
    for row in &rows {
        assert_eq!(row[at("storage_type_str")], "MEMORY");
        assert_eq!(row[at("storage_type")], 2);
        assert_eq!(row[at("code_object_size")], 88);
        let pid = &row[at("pid")];
        assert!(
            row[at("uri")]
                .as_str()
                .unwrap()
                .starts_with(&format!("memory://{pid}#offset=0x")),
            "{row:?}"
        );
        devices.insert(row[at("agent_abs_index")].as_i64().unwrap());
    }
    assert_eq!(devices, [0, 1].into());
    let (_, symbols) = query(db, "SELECT COUNT(*) FROM kernel_symbols");
    assert!(symbols[0][0].as_i64().unwrap() > 0);
    let (_, dangling) = query(
        db,
        "SELECT K.kernel_name, K.code_object_id FROM rocpd_info_kernel_symbol K WHERE NOT EXISTS
         (SELECT 1 FROM rocpd_info_code_object C WHERE C.id = K.code_object_id AND C.guid = K.guid)",
    );
    assert!(
        dangling.is_empty(),
        "kernels naming no code object: {dangling:?}"
    );
}

#[test]
fn every_kernel_symbol_names_a_code_object_in_the_json_and_rocpd() {
    let dir = tempfile::tempdir().unwrap();
    let out = two_device_run(dir.path(), "DIR");
    let json: Value =
        serde_json::from_slice(&std::fs::read(out.join("out_results.json")).unwrap()).unwrap();
    let processes = json["rocprofiler-sdk-tool"].as_array().unwrap();
    assert_eq!(processes.len(), 1);
    check_json_process(&processes[0]);
    check_rocpd(&out.join("out_results.db"), 1);
}

#[test]
fn merged_databases_keep_each_process_its_code_objects() {
    let dir = tempfile::tempdir().unwrap();
    two_device_run(dir.path(), "A");
    two_device_run(dir.path(), "B");
    let out = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            "A/out_results.db",
            "B/out_results.db",
            "-f",
            "rocpd",
            "json",
            "-d",
            "M",
            "-o",
            "merged",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: Value =
        serde_json::from_slice(&std::fs::read(dir.path().join("M/merged_results.json")).unwrap())
            .unwrap();
    let processes = json["rocprofiler-sdk-tool"].as_array().unwrap();
    assert_eq!(processes.len(), 2);
    let pids: BTreeSet<u64> = processes.iter().map(check_json_process).collect();
    assert_eq!(pids.len(), 2);
    check_rocpd(&dir.path().join("M/merged_results.db"), 2);
}
