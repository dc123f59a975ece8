//! rocprofv3's kernel naming (`-M/--mangled-kernels`, `-T/--truncate-kernels`,
//! `--kernel-rename`) in every output that names a kernel, as rocprofv3 names it there
//! (rocprofiler-sdk `source/lib/output`): its `formatted_kernel_name` in the trace CSV files,
//! `kernel_stats.csv`, the `-S` summary, the JSON's `summary` and `formatted_kernel_name`, and
//! rocpd's `display_name` (so its `kernels` and `top_kernels` views); the Perfetto trace keeps
//! the demangled name, as rocprofv3's does (`generatePerfetto.cpp` demangles the symbol's name).

use crate::common::*;
use crate::markers::query;
use crate::pftrace::read_trace;
use crate::stats::{summary_tables, table};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const DEMANGLED: &str = "scale_add(unsigned int*, unsigned int, unsigned int, unsigned int)";
const MANGLED: &str = "_Z9scale_addPjjjj";
const TRUNCATED: &str = "scale_add";

/// A run of the sim app with `naming` and every output, `--stats` and `-S`; its folder and stderr.
fn run(dir: &Path, naming: &[&str]) -> (PathBuf, String) {
    let mut args = vec!["--kernel-trace", "--stats", "-S"];
    args.extend_from_slice(naming);
    args.extend_from_slice(&[
        "-f", "csv", "json", "rocpd", "pftrace", "-d", "D", "-o", "o",
    ]);
    let out = run_sim(dir, &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    (dir.join("D"), text(&out.stderr))
}

/// The values of `column` in a CSV file.
fn column(path: &Path, column: &str) -> BTreeSet<String> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let at = reader.headers().unwrap().iter().position(|h| h == column);
    let at = at.unwrap_or_else(|| panic!("{}: no {column}", path.display()));
    reader
        .records()
        .map(|r| r.unwrap()[at].to_string())
        .collect()
}

/// Every kernel name each output gives, by output.
struct Names {
    trace_csv: BTreeSet<String>,
    stats_csv: BTreeSet<String>,
    summary: BTreeSet<String>,
    json_summary: BTreeSet<String>,
    json_formatted: BTreeSet<String>,
    json_demangled: BTreeSet<String>,
    rocpd_kernels: BTreeSet<String>,
    rocpd_top_kernels: BTreeSet<String>,
    rocpd_demangled: BTreeSet<String>,
    pftrace: BTreeSet<String>,
}

fn names(d: &Path, stderr: &str) -> Names {
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("o_results.json")).unwrap()).unwrap();
    let process = &json["rocprofiler-sdk-tool"][0];
    let kernel_summary = process["summary"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["domain"] == "KERNEL_DISPATCH")
        .unwrap();
    let symbols = process["kernel_symbols"].as_array().unwrap();
    let symbol_names = |key: &str| {
        symbols
            .iter()
            .filter(|s| s["kernel_id"] != 0)
            .map(|s| s[key].as_str().unwrap().to_string())
            .collect()
    };
    let db = d.join("o_results.db");
    let sql = |sql: &str| -> BTreeSet<String> {
        query(&db, sql)
            .into_iter()
            .map(|r| r[0].as_str().unwrap().to_string())
            .collect()
    };
    let tables = summary_tables(stderr, "    ");
    Names {
        trace_csv: column(&d.join("o_kernel_trace.csv"), "Kernel_Name"),
        stats_csv: column(&d.join("o_kernel_stats.csv"), "Name"),
        summary: table(&tables, "SUMMARY")
            .iter()
            .filter(|row| row[1] == "KERNEL_DISPATCH")
            .map(|row| row[0].clone())
            .collect(),
        json_summary: kernel_summary["stats"]["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["key"].as_str().unwrap().to_string())
            .collect(),
        json_formatted: symbol_names("formatted_kernel_name"),
        json_demangled: symbol_names("demangled_kernel_name"),
        rocpd_kernels: sql("SELECT DISTINCT name FROM kernels"),
        rocpd_top_kernels: sql("SELECT name FROM top_kernels"),
        rocpd_demangled: sql("SELECT demangled_kernel_name FROM kernel_symbols"),
        pftrace: read_trace(&d.join("o_results.pftrace"))["slices"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|s| s["categories"][0] == "kernel_dispatch")
            .map(|s| s["name"].as_str().unwrap().to_string())
            .collect(),
    }
}

/// Every output that names a kernel by its formatted name gives `name` for the `scale_add`
/// kernel, and each the same set of names; the demangled names stay where rocprofv3 keeps them.
fn assert_named(names: &Names, name: &str) {
    assert!(names.trace_csv.contains(name), "{:?}", names.trace_csv);
    for (output, set) in [
        ("kernel_stats.csv", &names.stats_csv),
        ("-S summary", &names.summary),
        ("JSON summary", &names.json_summary),
        ("rocpd kernels", &names.rocpd_kernels),
        ("rocpd top_kernels", &names.rocpd_top_kernels),
    ] {
        assert_eq!(set, &names.trace_csv, "{output}");
    }
    // Every kernel the process loaded has a symbol, dispatched or not.
    assert!(names.json_formatted.is_superset(&names.trace_csv));
    assert!(names.json_demangled.contains(DEMANGLED));
    assert!(names.rocpd_demangled.contains(DEMANGLED));
    // rocprofv3's Perfetto slices are demangled whatever the options.
    assert!(names.pftrace.contains(DEMANGLED), "{:?}", names.pftrace);
    assert!(names.pftrace.is_subset(&names.json_demangled));
}

#[test]
fn truncated_and_mangled_names_in_every_output_as_rocprofv3() {
    let dir = tempfile::tempdir().unwrap();
    let (d, stderr) = run(dir.path(), &[]);
    assert_named(&names(&d, &stderr), DEMANGLED);
    for (naming, expected) in [
        (&["-T"][..], TRUNCATED),
        (&["--truncate-kernels"][..], TRUNCATED),
        (&["-M"][..], MANGLED),
        (&["-M", "-T"][..], MANGLED),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let (d, stderr) = run(dir.path(), naming);
        let names = names(&d, &stderr);
        assert_named(&names, expected);
        assert!(!names.stats_csv.contains(DEMANGLED), "{naming:?}");
    }
}

#[test]
fn convert_names_kernels_as_the_run_asked() {
    let dir = tempfile::tempdir().unwrap();
    let (d, _) = run(dir.path(), &["-T"]);
    let out = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            "D/o_results.db",
            "-f",
            "csv",
            "json",
            "-d",
            "C",
            "-o",
            "o",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let c = dir.path().join("C");
    let converted = column(&c.join("o_kernel_trace.csv"), "Kernel_Name");
    assert_eq!(
        converted,
        column(&d.join("o_kernel_trace.csv"), "Kernel_Name")
    );
    assert!(converted.contains(TRUNCATED));
    // The converted JSON's summary and symbols name kernels as the run did.
    let json = |path: &Path| -> serde_json::Value {
        let value: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        let process = &value["rocprofiler-sdk-tool"][0];
        serde_json::json!([process["summary"], process["kernel_symbols"]])
    };
    assert_eq!(
        json(&c.join("o_results.json")),
        json(&d.join("o_results.json"))
    );
}

#[test]
fn kernel_rename_names_the_statistics_by_range() {
    let dir = tempfile::tempdir().unwrap();
    let (d, stderr) = run(dir.path(), &["--kernel-rename"]);
    let names = names(&d, &stderr);
    // The workload launches inside the ranges `update` and `mix`.
    for range in ["update", "mix"] {
        assert!(names.trace_csv.contains(range), "{:?}", names.trace_csv);
    }
    for set in [&names.stats_csv, &names.summary, &names.json_summary] {
        assert_eq!(set, &names.trace_csv);
    }
}
