//! `kreplay convert`: databases merged and written again.

use super::stand_in::*;
use crate::common::*;
use kreplay_format::*;

#[test]
fn convert_merges_databases_into_csv_and_json() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(dir.path(), &["--pmc", W, "-d", "D", "-o", "out"], 0, false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            "D/out_results.db",
            "-f",
            "csv",
            "json",
            "-d",
            "conv",
            "-o",
            "merged",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let csv =
        std::fs::read_to_string(dir.path().join("conv/merged_counter_collection.csv")).unwrap();
    assert!(
        csv.starts_with("\"Correlation_Id\",\"Dispatch_Id\""),
        "{csv}"
    );
    let records = read_json_counter_records(dir.path().join("conv/merged_results.json")).unwrap();
    assert_eq!(records.len(), 4);
    let out = kreplay(dir.path(), &["convert", "-i", "missing.db", "-f", "csv"]);
    assert_usage_error(&out, "input database missing.db does not exist");
}

#[test]
fn convert_describes_counters_the_database_names_only() {
    // On a GPU the injected library records counter names only; every output file gets the
    // description and unit from the catalog of the chip the process ran on.
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("bare_results.db");
    fixture_db_with_units(&db, "");
    let out = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            db.to_str().unwrap(),
            "-f",
            "json",
            "-d",
            "conv",
            "-o",
            "c",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("conv/c_results.json")).unwrap(),
    )
    .unwrap();
    fn counters<'a>(value: &'a serde_json::Value, out: &mut Vec<&'a serde_json::Value>) {
        match value {
            serde_json::Value::Object(map) => {
                if map.contains_key("units") && map.contains_key("expression") {
                    out.push(value);
                }
                map.values().for_each(|v| counters(v, out));
            }
            serde_json::Value::Array(items) => items.iter().for_each(|v| counters(v, out)),
            _ => {}
        }
    }
    let mut found = Vec::new();
    counters(&json, &mut found);
    let warps = found
        .iter()
        .find(|c| c["name"] == W)
        .unwrap_or_else(|| panic!("no counter {W}: {found:?}"));
    assert_eq!(warps["units"], "warp", "{warps}");
    assert_ne!(warps["description"], "", "{warps}");
}
