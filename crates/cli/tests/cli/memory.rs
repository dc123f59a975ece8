//! `--memory-copy-trace` and `--memory-allocation-trace` on the reference app, whose workload
//! copies host to device, device to host and device to device, and allocates (and frees)
//! device, pitched, managed, pinned host, pool and virtual memory: rocpd's `memory_copies` and
//! `memory_allocations` views (plain SQL), the CSV files with rocprofv3's columns, the same
//! records with kernel replay as without (the tool's own snapshot copies and the replayed
//! passes are not the application's), and nothing without the options.

use crate::common::*;
use crate::markers::query;
use std::path::{Path, PathBuf};

/// The workload's iterations (kreplay-sim-app's default).
const ITERATIONS: usize = 3;
/// Its copies: four initial writes, two reads and a write per iteration, a device-to-device
/// copy at the end, and six buffers read back.
const COPIES: usize = 4 + 3 * ITERATIONS + 1 + 6;
/// Its allocations: four device and pitched buffers, managed, pinned host, pool and virtual
/// memory; then three frees.
const ALLOCATIONS: usize = 8 + 3;

const TRACES: [&str; 2] = ["--memory-copy-trace", "--memory-allocation-trace"];

fn run_in(dir: &Path, args: &[&str]) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    let mut all = vec!["-f", "rocpd", "csv", "-d", "DIR", "-o", "out"];
    all.extend_from_slice(args);
    let out = run_sim(dir, &all);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dir.join("DIR")
}

/// The data lines of a CSV file, split at commas (none of these values holds one).
fn csv_rows(path: &Path) -> (String, Vec<Vec<String>>) {
    let csv = std::fs::read_to_string(path).unwrap();
    let mut lines = csv.lines();
    let header = lines.next().unwrap().to_string();
    let rows = lines
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    (header, rows)
}

#[test]
fn both_options_fill_rocpds_memory_views_and_rocprofv3s_csv_files() {
    let dir = tempfile::tempdir().unwrap();
    let d = run_in(dir.path(), &two_groups_replay(&TRACES));
    let db = d.join("out_results.db");
    let copies = query(&db, "SELECT * FROM memory_copies");
    assert_eq!(copies.len(), COPIES);
    let directions = query(
        &db,
        "SELECT name, src_agent_type, dst_agent_type, COUNT(*), MIN(size) > 0, MIN(duration) > 0
         FROM memory_copies GROUP BY name ORDER BY name",
    );
    let row = |name: &str, src: &str, dst: &str, count: usize| {
        vec![
            serde_json::json!(name),
            serde_json::json!(src),
            serde_json::json!(dst),
            serde_json::json!(count),
            serde_json::json!(1),
            serde_json::json!(1),
        ]
    };
    assert_eq!(
        directions,
        [
            row("MEMORY_COPY_DEVICE_TO_DEVICE", "GPU", "GPU", 1),
            row(
                "MEMORY_COPY_DEVICE_TO_HOST",
                "GPU",
                "CPU",
                2 * ITERATIONS + 6
            ),
            row("MEMORY_COPY_HOST_TO_DEVICE", "CPU", "GPU", 4 + ITERATIONS),
        ]
    );
    let categories = query(&db, "SELECT DISTINCT category FROM memory_copies");
    assert_eq!(categories, [vec![serde_json::json!("MEMORY_COPY")]]);

    let allocations = query(
        &db,
        "SELECT M.category, M.type, M.level, M.agent_type, M.size, json_extract(R.extdata, '$.memory')
         FROM memory_allocations M JOIN rocpd_memory_allocate R ON R.id = M.id ORDER BY M.id",
    );
    assert_eq!(allocations.len(), ALLOCATIONS);
    let kinds: Vec<(String, String, String)> = allocations
        .iter()
        .map(|r| {
            (
                r[1].as_str().unwrap().to_string(),
                r[2].as_str().unwrap().to_string(),
                r[5].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let expected: Vec<(String, String, String)> = [
        ("ALLOC", "REAL", "device"),
        ("ALLOC", "REAL", "pitched"),
        ("ALLOC", "REAL", "device"),
        ("ALLOC", "REAL", "device"),
        ("ALLOC", "REAL", "managed"),
        ("ALLOC", "REAL", "host"),
        ("ALLOC", "REAL", "pool"),
        ("ALLOC", "VIRTUAL", "virtual"),
        ("FREE", "VIRTUAL", "virtual"),
        ("FREE", "REAL", "pool"),
        ("FREE", "REAL", "host"),
    ]
    .iter()
    .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
    .collect();
    assert_eq!(kinds, expected);
    assert!(allocations.iter().all(|r| r[0] == "MEMORY_ALLOCATION"));
    // Pinned host memory is the CPU agent's; frees name no agent and no size (rocprofv3's).
    assert_eq!(allocations[5][3], "CPU");
    assert_eq!(allocations[0][3], "GPU");
    assert!(allocations[8..].iter().all(|r| r[3].is_null() && r[4] == 0));
    // Every free's address is one the run allocated.
    let unmatched = query(
        &db,
        "SELECT COUNT(*) FROM memory_allocations F WHERE F.type = 'FREE' AND NOT EXISTS
         (SELECT 1 FROM memory_allocations A WHERE A.type = 'ALLOC' AND A.address = F.address)",
    );
    assert_eq!(unmatched[0][0], 0);

    let (header, rows) = csv_rows(&d.join("out_memory_copy_trace.csv"));
    assert_eq!(
        header,
        r#""Kind","Direction","Stream_Id","Source_Agent_Id","Destination_Agent_Id","Correlation_Id","Start_Timestamp","End_Timestamp""#
    );
    assert_eq!(rows.len(), COPIES);
    assert_eq!(
        &rows[0][..6],
        [
            r#""MEMORY_COPY""#,
            r#""MEMORY_COPY_HOST_TO_DEVICE""#,
            "0",
            r#""CPU 0""#,
            r#""Agent 0""#,
            "1"
        ]
    );
    let (header, rows) = csv_rows(&d.join("out_memory_allocation_trace.csv"));
    assert_eq!(
        header,
        r#""Kind","Operation","Agent_Id","Allocation_Size","Address","Correlation_Id","Start_Timestamp","End_Timestamp""#
    );
    assert_eq!(rows.len(), ALLOCATIONS);
    assert_eq!(rows[0][1], r#""MEMORY_ALLOCATION_ALLOCATE""#);
    assert_eq!(rows[7][1], r#""MEMORY_ALLOCATION_VMEM_ALLOCATE""#);
    assert_eq!(rows[8][1], r#""MEMORY_ALLOCATION_VMEM_FREE""#);
    assert!(rows[0][4].starts_with("\"0x") && rows[0][4].len() == 20);
    // The CPU agent is no device of the run.
    let (_, agents) = csv_rows(&d.join("out_agent_info.csv"));
    assert_eq!(agents.len(), 1);

    // The database keeps them: `kreplay convert` writes the same files.
    let args = [
        "convert",
        "-i",
        "DIR/out_results.db",
        "-f",
        "csv",
        "-d",
        "C",
        "-o",
        "out",
    ];
    let out = kreplay(dir.path(), &args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for file in [
        "out_memory_copy_trace.csv",
        "out_memory_allocation_trace.csv",
    ] {
        assert_eq!(
            std::fs::read_to_string(dir.path().join("C").join(file)).unwrap(),
            std::fs::read_to_string(d.join(file)).unwrap(),
            "{file}"
        );
    }
}

/// The records of a file without their timestamps (the last two columns).
fn untimed(path: &Path) -> Vec<Vec<String>> {
    let (_, rows) = csv_rows(path);
    rows.into_iter()
        .map(|mut r| {
            r.truncate(r.len() - 2);
            r
        })
        .collect()
}

#[test]
fn kernel_replay_records_the_same_copies_and_allocations_as_a_run_without_replay() {
    let dir = tempfile::tempdir().unwrap();
    let replayed = run_in(&dir.path().join("a"), &two_groups_replay(&TRACES));
    // The options alone are a run: no counters, no replay, no snapshot.
    let alone = run_in(&dir.path().join("b"), &TRACES);
    // Replay windows that stay open across the application's copies, whose later passes
    // re-execute the window's copies: each is still recorded once, in the application's order.
    let mut windowed = two_groups_replay(&TRACES);
    windowed.extend(["--replay-window", "auto"]);
    let windowed = run_in(&dir.path().join("w"), &windowed);
    for file in [
        "out_memory_copy_trace.csv",
        "out_memory_allocation_trace.csv",
    ] {
        let (a, b) = (untimed(&replayed.join(file)), untimed(&alone.join(file)));
        assert!(!a.is_empty());
        assert_eq!(a, b, "{file}");
        assert_eq!(untimed(&windowed.join(file)), b, "{file}, windowed");
    }
    let bytes = |d: &Path| {
        query(
            &d.join("out_results.db"),
            "SELECT SUM(size) FROM memory_copies",
        )
    };
    assert_eq!(bytes(&replayed), bytes(&alone));
    assert!(!alone.join("out_counter_collection.csv").exists());
}

#[test]
fn each_option_records_its_own_domain_and_nothing_without_them() {
    let dir = tempfile::tempdir().unwrap();
    let copies = run_in(&dir.path().join("c"), &["--memory-copy-trace"]);
    assert!(copies.join("out_memory_copy_trace.csv").is_file());
    assert!(!copies.join("out_memory_allocation_trace.csv").exists());
    let db = copies.join("out_results.db");
    assert_eq!(
        query(&db, "SELECT COUNT(*) FROM memory_allocations")[0][0],
        0
    );

    let none = run_in(&dir.path().join("n"), &two_groups_replay(&[]));
    let db = none.join("out_results.db");
    for view in ["memory_copies", "memory_allocations"] {
        assert_eq!(
            query(&db, &format!("SELECT COUNT(*) FROM {view}"))[0][0],
            0,
            "{view}"
        );
    }
    assert_eq!(
        query(
            &db,
            "SELECT COUNT(*) FROM rocpd_info_agent WHERE type = 'CPU'"
        )[0][0],
        0
    );
    assert!(!none.join("out_memory_copy_trace.csv").exists());
    assert!(!none.join("out_memory_allocation_trace.csv").exists());
}

#[test]
fn an_output_name_too_long_for_the_allocation_trace_is_refused_before_the_run() {
    // Long enough for every other file (see the launcher's test), not for this one's suffix.
    let dir = tempfile::tempdir().unwrap();
    let longest = "n".repeat(255 - 36);
    let out = run_sim(
        dir.path(),
        &["--memory-allocation-trace", "-d", "L", "-o", &longest],
    );
    assert_usage_error(&out, "more than the");
}
