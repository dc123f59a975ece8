//! `--stats` and the summary tables of the tracing domains (`--marker-trace`, `-s/--sys-trace`
//! with its API and memory traces) on the reference app: each domain's stats file with
//! rocprofv3's columns, as many calls per name as its trace CSV has rows, a table per domain
//! under `-D` and all of them under `-S`; a domain not traced has no file.

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
