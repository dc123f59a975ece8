//! The database read as rocprofv3's own tests and rocpd's tools read it: plain SQL (Python's
//! `sqlite3`, as rocprofv3's tests open it) on rocprofv3's view names and columns, on the
//! reference app with three groups that share a counter. rocpd's aggregations (calls and
//! durations per kernel, counter value per dispatch) must equal kreplay's `--stats` and JSON, and
//! every pass the JSON holds must be in the database.

use crate::common::*;
use kreplay_format::*;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;

/// Rows of `sql` on the database at `db`, through Python's `sqlite3` module (no extension, no
/// kreplay code): each row a JSON array.
fn query(db: &Path, sql: &str) -> Vec<Vec<Value>> {
    let script = "import json, sqlite3, sys\n\
                  c = sqlite3.connect(sys.argv[1])\n\
                  print(json.dumps([list(r) for r in c.execute(sys.argv[2])]))";
    let out = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(db)
        .arg(sql)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "{sql}: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every view rocprofv3 writes into its databases (rocprofiler-sdk's `data_views.sql` and
/// `rocpd_views.sql`).
const ROCPROFV3_VIEWS: &[&str] = &[
    "code_objects",
    "kernel_symbols",
    "processes",
    "threads",
    "regions",
    "region_args",
    "samples",
    "sample_regions",
    "regions_and_samples",
    "kernels",
    "pmc_info",
    "pmc_events",
    "events_args",
    "stream_args",
    "memory_copies",
    "memory_allocations",
    "scratch_memory",
    "counters_collection",
    "pc_sampling",
    "top_kernels",
    "busy",
    "top",
];

/// Three groups sharing `W` (the software device packs them into two hardware passes: every
/// group keeps its pass number), with every output.
fn three_groups(dir: &Path) -> std::path::PathBuf {
    let out = run_sim(
        dir,
        &[
            "--pmc",
            W,
            I,
            "--pmc",
            W,
            C,
            "--pmc",
            W,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--stats",
            "-f",
            "rocpd",
            "json",
            "csv",
            "-d",
            "DIR",
            "-o",
            "out",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join("DIR")
}

#[test]
fn every_rocprofv3_view_answers_plain_sql_with_rocpds_columns() {
    let dir = tempfile::tempdir().unwrap();
    let d = three_groups(dir.path());
    let db = d.join("out_results.db");
    for view in ROCPROFV3_VIEWS {
        query(&db, &format!("SELECT * FROM {view} LIMIT 1"));
    }
    // Columns rocprofv3's readers name.
    let kernels = query(
        &db,
        "SELECT category, region, name, agent_abs_index, dispatch_id, grid_x, workgroup_x, lds_size, corr_id, duration FROM kernels",
    );
    assert!(!kernels.is_empty());
    assert!(kernels.iter().all(|r| r[0] == "KERNEL_DISPATCH"));
    assert_eq!(
        query(&db, "SELECT COUNT(*) FROM regions")[0][0],
        0,
        "no host regions traced"
    );
    assert_eq!(query(&db, "SELECT COUNT(*) FROM processes")[0][0], 1);
    assert_eq!(query(&db, "SELECT COUNT(*) FROM threads")[0][0], 1);
    // pmc_info: a row per counter, on its agent (rocpd's view joins on the agent).
    let mut pmc: Vec<(String, i64)> = query(&db, "SELECT name, agent_abs_index FROM pmc_info")
        .iter()
        .map(|r| (r[0].as_str().unwrap().to_string(), r[1].as_i64().unwrap()))
        .collect();
    pmc.sort();
    let mut expected: Vec<(String, i64)> = [W, I, C].iter().map(|c| (c.to_string(), 0)).collect();
    expected.sort();
    assert_eq!(pmc, expected);
}

/// `kernel_stats.csv` as name → (calls, total ns).
fn stats(path: &Path) -> BTreeMap<String, (i64, i64)> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (
                r[0].to_string(),
                (r[1].parse().unwrap(), r[2].parse().unwrap()),
            )
        })
        .collect()
}

#[test]
fn rocpds_calls_durations_and_counter_values_equal_stats_and_the_json() {
    let dir = tempfile::tempdir().unwrap();
    let d = three_groups(dir.path());
    let db = d.join("out_results.db");
    let expected = stats(&d.join("out_kernel_stats.csv"));

    // rocpd's summary: calls per kernel and total time (top_kernels is in microseconds), as
    // `rocpd summary` and the `kernels` view count them.
    let from_kernels: BTreeMap<String, (i64, i64)> = query(
        &db,
        "SELECT name, COUNT(*), SUM(duration) FROM kernels GROUP BY name",
    )
    .iter()
    .map(|r| {
        (
            r[0].as_str().unwrap().to_string(),
            (r[1].as_i64().unwrap(), r[2].as_i64().unwrap()),
        )
    })
    .collect();
    assert_eq!(from_kernels, expected, "kernels view against --stats");
    for row in query(
        &db,
        "SELECT name, total_calls, total_duration FROM top_kernels",
    ) {
        let (calls, total) = expected[row[0].as_str().unwrap()];
        assert_eq!(row[1].as_i64().unwrap(), calls, "{row:?}");
        assert_eq!(row[2].as_f64().unwrap(), total as f64 / 1000.0, "{row:?}");
    }
    let accumulate = expected
        .iter()
        .find(|(name, _)| name.starts_with("accumulate"))
        .unwrap();
    assert_eq!(
        accumulate.1 .0, 5,
        "the reference app runs accumulate 5 times (3 iterations, its graph's kernel node, the last)"
    );

    // Counter value per dispatch: rocpd's counters_collection (grouped by dispatch, summed)
    // gives each counter once, the value of the lowest pass that measured it in the JSON.
    let json = read_json_counter_records(d.join("out_results.json")).unwrap();
    let mut lowest: BTreeMap<(u64, String), (u32, f64)> = BTreeMap::new();
    for record in &json {
        let pass = record.replay_pass.unwrap();
        for (name, value) in &record.counters {
            let entry = lowest
                .entry((record.dispatch_id, name.clone()))
                .or_insert((pass, *value));
            if pass < entry.0 {
                *entry = (pass, *value);
            }
        }
    }
    let collected: BTreeMap<(u64, String), (u32, f64)> = query(
        &db,
        "SELECT dispatch_id, counter_name, replay_pass, value FROM counters_collection",
    )
    .iter()
    .map(|r| {
        (
            (r[0].as_u64().unwrap(), r[1].as_str().unwrap().to_string()),
            // Every dispatch of the reference app is replayed (its graph's kernel nodes too).
            (
                r[2].as_u64().expect("a pass on every row") as u32,
                r[3].as_f64().unwrap(),
            ),
        )
    })
    .collect();
    assert_eq!(collected, lowest);
    let rows = query(&db, "SELECT COUNT(*) FROM counters_collection")[0][0]
        .as_u64()
        .unwrap();
    assert_eq!(
        rows as usize,
        lowest.len(),
        "one row per dispatch and counter"
    );
    // W is in all three groups, measured in every pass, and not summed over them.
    let shared: Vec<f64> = query(
        &db,
        &format!(
            "SELECT value FROM counters_collection WHERE counter_name = '{W}' AND kernel_name LIKE 'accumulate%'"
        ),
    )
    .iter()
    .map(|r| r[0].as_f64().unwrap())
    .collect();
    let from_json: Vec<f64> = json
        .iter()
        .filter(|r| r.kernel_name.starts_with("accumulate") && r.replay_pass == Some(0))
        .map(|r| r.counters[W])
        .collect();
    assert_eq!(shared, from_json);

    // Nothing the JSON holds is lost: every pass's value is in kreplay_pass_counters, and in
    // rocpd_pmc_event's extdata the pass its value came from.
    let mut passes: Vec<(u64, u32, String, f64)> = query(
        &db,
        "SELECT dispatch_id, replay_pass, counter_name, value FROM kreplay_pass_counters",
    )
    .iter()
    .map(|r| {
        (
            r[0].as_u64().unwrap(),
            r[1].as_u64().unwrap_or(0) as u32,
            r[2].as_str().unwrap().to_string(),
            r[3].as_f64().unwrap(),
        )
    })
    .collect();
    let mut all: Vec<(u64, u32, String, f64)> = json
        .iter()
        .flat_map(|r| {
            r.counters.iter().map(move |(name, value)| {
                (r.dispatch_id, r.replay_pass.unwrap(), name.clone(), *value)
            })
        })
        .collect();
    let key = |r: &(u64, u32, String, f64)| (r.0, r.1, r.2.clone());
    passes.sort_by_key(key);
    all.sort_by_key(key);
    assert_eq!(passes, all);
    assert_eq!(
        query(&db, "SELECT COUNT(*) FROM rocpd_pmc_event")[0][0]
            .as_u64()
            .unwrap() as usize,
        lowest.len()
    );
    assert_eq!(
        query(
            &db,
            "SELECT COUNT(*) FROM rocpd_pmc_event WHERE JSON_EXTRACT(extdata, '$.replay_pass') IS NOT NULL",
        ),
        query(
            &db,
            "SELECT COUNT(*) FROM counters_collection WHERE replay_pass IS NOT NULL",
        ),
        "the pass of each value (none for the dispatch that ran once)"
    );
}

/// A database of the previous layout (kreplay schema 3: one dispatch row per pass) still
/// converts, to the new layout.
#[test]
fn convert_reads_a_database_of_the_previous_schema() {
    let dir = tempfile::tempdir().unwrap();
    let sql = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../format/src/db/testdata/kreplay_schema_3.sql");
    let old = dir.path().join("old.db");
    let script = "import sqlite3, sys\n\
                  c = sqlite3.connect(sys.argv[1])\n\
                  c.executescript(open(sys.argv[2]).read())\n\
                  c.commit()";
    let made = std::process::Command::new("python3")
        .args(["-c", script])
        .arg(&old)
        .arg(&sql)
        .output()
        .unwrap();
    assert!(made.status.success(), "{}", text(&made.stderr));
    let out = kreplay(
        dir.path(),
        &[
            "convert", "-i", "old.db", "-f", "rocpd", "json", "-d", "NEW", "-o", "new",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let db = dir.path().join("NEW/new_results.db");
    assert_eq!(
        query(&db, "SELECT COUNT(*) FROM kernels")[0][0],
        7,
        "one row per dispatch"
    );
    assert_eq!(
        query(
            &db,
            "SELECT COUNT(DISTINCT replay_pass) FROM kreplay_dispatch_pass"
        )[0][0],
        3
    );
    let json = read_json_counter_records(dir.path().join("NEW/new_results.json")).unwrap();
    assert_eq!(
        query(&db, "SELECT COUNT(*) FROM kreplay_pass_counters")[0][0]
            .as_u64()
            .unwrap() as usize,
        json.iter().map(|r| r.counters.len()).sum::<usize>()
    );
}
