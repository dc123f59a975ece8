//! `--stats` and the summary tables of the tracing domains (`--marker-trace`, `-s/--sys-trace`
//! with its API and memory traces) on the reference app: each domain's stats file with
//! rocprofv3's columns, as many calls per name as its trace CSV has rows, a table per domain
//! under `-D` and all of them under `-S`, the JSON's `summary` entry per domain equal to its
//! stats file; a domain not traced has no file.

use crate::common::*;
use std::collections::BTreeMap;
use std::path::Path;

const STATS_HEADER: &str =
    "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\",\"StdDev\"";

/// (domain, trace file, the trace's name column, stats file)
const DOMAINS: [(&str, &str, &str, &str); 4] = [
    ("CUDA_API", "cuda_api_trace", "Function", "cuda_api_stats"),
    (
        "MARKER_API",
        "marker_api_trace",
        "Function",
        "marker_api_stats",
    ),
    (
        "MEMORY_COPY",
        "memory_copy_trace",
        "Direction",
        "memory_copy_stats",
    ),
    (
        "MEMORY_ALLOCATION",
        "memory_allocation_trace",
        "Operation",
        "memory_allocation_stats",
    ),
];

/// A CSV file's values of `column` with the number of rows of each.
fn counts(path: &Path, column: &str) -> BTreeMap<String, u64> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let at = reader.headers().unwrap().iter().position(|h| h == column);
    let at = at.unwrap_or_else(|| panic!("{}: no {column}", path.display()));
    let mut counts = BTreeMap::new();
    for record in reader.records() {
        *counts.entry(record.unwrap()[at].to_string()).or_default() += 1;
    }
    counts
}

#[test]
fn each_traced_domain_has_its_stats_file_and_summary_tables() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--marker-trace",
        "-s",
        "--stats",
        "-S",
        "-D",
        "-f",
        "csv",
        "-d",
        "D",
        "-o",
        "out",
    ];
    let out = run_sim(dir.path(), &two_groups_replay(&args));
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let d = dir.path().join("D");
    for (domain, trace, column, stats) in DOMAINS {
        let stats_path = d.join(format!("out_{stats}.csv"));
        let file = std::fs::read_to_string(&stats_path).unwrap();
        assert_eq!(file.lines().next(), Some(STATS_HEADER), "{stats}");
        let trace_rows = counts(&d.join(format!("out_{trace}.csv")), column);
        assert!(!trace_rows.is_empty(), "{trace}");
        let mut reader = csv::Reader::from_path(&stats_path).unwrap();
        let by_name: BTreeMap<String, u64> = reader
            .records()
            .map(|r| {
                let r = r.unwrap();
                (r[0].to_string(), r[1].parse().unwrap())
            })
            .collect();
        assert_eq!(by_name, trace_rows, "{domain}: calls per name = trace rows");
        assert!(
            stderr.contains(&format!("ROCPROFV3 {domain} SUMMARY:")),
            "{domain}: {stderr}"
        );
    }
    assert!(stderr.contains("ROCPROFV3 SUMMARY:"), "{stderr}");
    let domain_rows = counts(&d.join("out_domain_stats.csv"), "Name");
    assert_eq!(domain_rows.len(), 1 + DOMAINS.len(), "{domain_rows:?}");

    let plain = tempfile::tempdir().unwrap();
    let args = ["--stats", "-f", "csv", "-d", "D", "-o", "out"];
    let out = run_sim(plain.path(), &two_groups_replay(&args));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(plain.path().join("D/out_kernel_stats.csv").exists());
    for (domain, _, _, stats) in DOMAINS {
        let path = plain.path().join(format!("D/out_{stats}.csv"));
        assert!(
            !path.exists(),
            "{domain} not traced, yet {}",
            path.display()
        );
    }
}

/// A stats file's rows: name → (calls, total, min, max).
fn stats_rows(path: &Path) -> BTreeMap<String, [u64; 4]> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            let number = |i: usize| r[i].parse::<u64>().unwrap();
            (
                r[0].to_string(),
                [number(1), number(2), number(5), number(6)],
            )
        })
        .collect()
}

#[test]
fn the_json_summary_has_every_traced_domains_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let args = [
        "--marker-trace",
        "-s",
        "--stats",
        "-f",
        "csv",
        "json",
        "-d",
        "D",
        "-o",
        "out",
    ];
    let out = run_sim(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let d = dir.path().join("D");
    let json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(d.join("out_results.json")).unwrap()).unwrap();
    let summary = json["rocprofiler-sdk-tool"][0]["summary"]
        .as_array()
        .unwrap();
    // rocprofv3's JSON lists its domains in its outputs' order.
    let domains: Vec<&str> = summary
        .iter()
        .map(|s| s["domain"].as_str().unwrap())
        .collect();
    assert_eq!(
        domains,
        [
            "KERNEL_DISPATCH",
            "CUDA_API",
            "MEMORY_COPY",
            "MEMORY_ALLOCATION",
            "MARKER_API"
        ]
    );
    let stats_files = DOMAINS
        .iter()
        .map(|(domain, _, _, stats)| (*domain, *stats))
        .chain([("KERNEL_DISPATCH", "kernel_stats")]);
    for (domain, file) in stats_files {
        let entry = summary.iter().find(|s| s["domain"] == domain).unwrap();
        let from_json: BTreeMap<String, [u64; 4]> = entry["stats"]["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| {
                let v = &o["value"];
                let number = |key: &str| v[key].as_u64().unwrap();
                let stats = [number("count"), number("sum"), number("min"), number("max")];
                (o["key"].as_str().unwrap().to_string(), stats)
            })
            .collect();
        let from_csv = stats_rows(&d.join(format!("out_{file}.csv")));
        assert_eq!(from_json, from_csv, "{domain}");
        let total = &entry["stats"];
        let calls: u64 = from_csv.values().map(|s| s[0]).sum();
        assert_eq!(total["count"].as_u64(), Some(calls), "{domain}");
    }
}
