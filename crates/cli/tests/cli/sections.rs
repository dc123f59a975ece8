//! `--section`, `--set`, `--section-folder` and `kreplay avail sections` end to end, with
//! section files of the reference software device's metrics (written for these tests).

use crate::common::*;
use std::path::Path;

/// Two sections over the sim's metrics: three counters (two hardware passes on the sim), a
/// launch attribute, a derived metric and a row the sim cannot give.
const WORK: &str = r#"
Identifier: "SimWork"
DisplayName: "Simulated Work"
Order: 1
Sets { Identifier: "simset" }
Header {
  Metrics { Label: "Warps" Name: "sim__warps_launched.sum" }
  Metrics { Label: "Instructions" Name: "sim__inst_executed.sum" }
  Metrics { Label: "Block Size" Name: "launch__block_size" }
  Metrics { Label: "Inst Per Warp" Name: "derived__inst_per_warp" }
  Metrics { Label: "Breakdown" Name: "breakdown:sim__inst_executed.sum" }
}
MetricDefinitions {
  MetricDefinitions { Name: "derived__inst_per_warp" Expression: "sim__inst_executed.sum / sim__warps_launched.sum" }
}
"#;

const TIME: &str = r#"
Identifier: "SimTime"
DisplayName: "Simulated Time"
Order: 2
Sets { Identifier: "simset" }
Body { Items { Table { Metrics { Label: "Cycles" Name: "sim__cycles_elapsed.max" } } } }
"#;

fn folder(dir: &Path) -> String {
    let sections = dir.join("sections");
    std::fs::create_dir_all(&sections).unwrap();
    std::fs::write(sections.join("SimWork.section"), WORK).unwrap();
    std::fs::write(sections.join("SimTime.section"), TIME).unwrap();
    sections.to_str().unwrap().to_string()
}

fn value_or_na(text: &str) -> bool {
    text == "n/a" || text.parse::<f64>().is_ok()
}

fn replay<'a>(folder: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--replay-mode",
        "kernel",
        "--kernel-replay-beta-enabled",
        "--section-folder",
        folder,
    ];
    args.extend_from_slice(more);
    args
}

#[test]
fn a_set_collects_its_sections_and_writes_their_rows_per_dispatch() {
    let dir = tempfile::tempdir().unwrap();
    let sections = folder(dir.path());
    let out = run_sim(
        dir.path(),
        &replay(
            &sections,
            &[
                "--set",
                "simset",
                "--print-details",
                "all",
                "-f",
                "csv",
                "rocpd",
                "json",
                "-d",
                "OUT",
                "-o",
                "run",
            ],
        ),
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(text(&out.stdout).contains("verification PASSED"));
    assert!(
        stderr.contains("sections SimWork, SimTime from --section-folder")
            && stderr.contains("3 metric(s) to collect")
            && stderr.contains(
                "breakdown:sim__inst_executed.sum (breakdowns are Nsight Compute's own tables)"
            ),
        "{stderr}"
    );

    let mut reader = csv::Reader::from_path(dir.path().join("OUT/run_sections.csv")).unwrap();
    let headers: Vec<String> = reader.headers().unwrap().iter().map(String::from).collect();
    assert_eq!(
        headers,
        [
            "ID",
            "Process ID",
            "Process Name",
            "Host Name",
            "Kernel Name",
            "Context",
            "Stream",
            "Block Size",
            "Grid Size",
            "Device",
            "CC",
            "Section Name",
            "Metric Name",
            "Metric Unit",
            "Metric Value"
        ]
    );
    let rows: Vec<csv::StringRecord> = reader.records().map(|r| r.unwrap()).collect();
    assert!(!rows.is_empty());
    // Six rows per dispatch (five of SimWork, one of SimTime), in section order.
    assert_eq!(rows.len() % 6, 0);
    let dispatches = rows.len() / 6;
    let mut complete = 0;
    for d in 0..dispatches {
        let block = &rows[d * 6..d * 6 + 6];
        assert!(block.iter().all(|r| r[0] == d.to_string()), "{block:?}");
        let labels: Vec<&str> = block.iter().map(|r| &r[12]).collect();
        assert_eq!(
            labels,
            [
                "Warps",
                "Instructions",
                "Block Size",
                "Inst Per Warp",
                "Breakdown",
                "Cycles"
            ]
        );
        let value = |i: usize| block[i][14].parse::<f64>().ok();
        assert!(block.iter().all(|r| value_or_na(&r[14])), "{block:?}");
        // Every dispatch was replayed (the graph's kernel nodes too): every counter is there.
        let (Some(warps), Some(inst), Some(cycles)) = (value(0), value(1), value(5)) else {
            panic!("dispatch {d} lacks a counter: {block:?}");
        };
        complete += 1;
        // Counters from both hardware passes of the dispatch, merged into one line each.
        assert!(warps > 0.0 && inst > 0.0 && cycles > 0.0, "{block:?}");
        assert!((value(3).unwrap() - inst / warps).abs() < 1e-9 * (inst / warps).max(1.0));
        let block_size: f64 = block[0][7]
            .trim_matches(|c| c == '(' || c == ')')
            .split(", ")
            .map(|v| v.parse::<f64>().unwrap())
            .product();
        assert_eq!(value(2), Some(block_size));
        assert_eq!(&block[4][14], "n/a");
        assert_eq!(&block[0][11], "Simulated Work");
        assert_eq!(&block[5][11], "Simulated Time");
    }
    assert!(
        complete >= 5 && complete == dispatches,
        "{complete} of {dispatches} dispatches have every counter"
    );
    // The database keeps the sections: `kreplay convert` writes the same page, and the JSON
    // lists the same rows.
    let page = std::fs::read_to_string(dir.path().join("OUT/run_sections.csv")).unwrap();
    let converted = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            "OUT/run_results.db",
            "-f",
            "csv",
            "json",
            "-d",
            "CONV",
            "-o",
            "run",
        ],
    );
    assert_eq!(
        converted.status.code(),
        Some(0),
        "{}",
        text(&converted.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("CONV/run_sections.csv")).unwrap(),
        page
    );
    let json: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("OUT/run_results.json")).unwrap(),
    )
    .unwrap();
    let listed = json["rocprofiler-sdk-tool"][0]["kreplay"]["sections"]
        .as_array()
        .unwrap_or_else(|| panic!("no kreplay.sections in {}", &json.to_string()[..300]));
    assert_eq!(listed.len(), rows.len());
    assert_eq!(listed[0]["label"], "Warps");
    assert_eq!(listed[4]["value"], serde_json::Value::Null);

    // By default only the headers: SimTime's body table is neither collected nor shown.
    let header = run_sim(
        dir.path(),
        &replay(
            &sections,
            &["--set", "simset", "-f", "csv", "-d", "HEAD", "-o", "run"],
        ),
    );
    assert!(
        text(&header.stderr).contains("2 metric(s) to collect"),
        "{}",
        text(&header.stderr)
    );
    let page = std::fs::read_to_string(dir.path().join("HEAD/run_sections.csv")).unwrap();
    assert!(!page.contains("Cycles") && page.contains("Inst Per Warp"));

    // The summary per kernel on stderr.
    assert!(stderr.contains("kreplay: sections per kernel"), "{stderr}");
    assert!(
        stderr.contains("Section: Simulated Work") && stderr.contains("Inst Per Warp"),
        "{stderr}"
    );
}

#[test]
fn sections_ask_for_kernel_replay_and_name_unknown_ones() {
    let dir = tempfile::tempdir().unwrap();
    let sections = folder(dir.path());
    let out = run_sim(
        dir.path(),
        &["--section-folder", &sections, "--section", "SimWork"],
    );
    assert_usage_error(
        &out,
        "add --replay-mode kernel --kernel-replay-beta-enabled",
    );
    let out = run_sim(dir.path(), &replay(&sections, &["--section", "SimWrok"]));
    assert_usage_error(&out, "--section SimWrok: no such section");
    assert!(text(&out.stderr).contains("SimWork, SimTime"));
    let out = run_sim(dir.path(), &replay(&sections, &["--set", "full"]));
    assert_usage_error(&out, "--set full: no section of --section-folder");
    // A file that does not parse is named before the run, and the rest is used.
    std::fs::write(
        dir.path().join("sections/Bad.section"),
        "Identifier: \"Bad\"\nHeader {",
    )
    .unwrap();
    let out = run_sim(
        dir.path(),
        &replay(&sections, &["--section", "SimWork", "-d", "BAD"]),
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("Bad.section (line 2, column"),
        "{}",
        text(&out.stderr)
    );
    let out = run_sim(dir.path(), &replay(&sections, &["--section", "Bad"]));
    assert_usage_error(&out, "--section Bad:");
    assert!(text(&out.stderr).contains("could not be read"));
    std::fs::remove_file(dir.path().join("sections/Bad.section")).unwrap();
    let out = run_sim(
        dir.path(),
        &replay("/nonexistent/sections", &["--section", "X"]),
    );
    assert_usage_error(&out, "not a folder");
    let out = run_sim(
        dir.path(),
        &[
            "--section-folder",
            &sections,
            "--pmc",
            W,
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
        ],
    );
    assert_usage_error(&out, "choose them with --section NAME or --set NAME");
}

#[test]
fn avail_sections_lists_the_folder_and_what_each_collects_on_a_chip() {
    let dir = tempfile::tempdir().unwrap();
    let sections = folder(dir.path());
    std::fs::write(
        dir.path().join("sections/Bad.section"),
        "Identifier: \"Bad\"\nHeader {",
    )
    .unwrap();
    let out = kreplay(
        dir.path(),
        &[
            "avail",
            "sections",
            "--section-folder",
            &sections,
            "--chip",
            "SIM",
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(stdout.starts_with("Sections: --section-folder"), "{stdout}");
    assert!(stdout.contains("Sets: simset"), "{stdout}");
    let work = stdout.lines().find(|l| l.starts_with("SimWork")).unwrap();
    assert!(
        work.contains("rows: 5") && work.contains("on SIM: 2 metric(s), 1 pass(es), 1 n/a"),
        "{work}"
    );
    assert!(
        stdout.contains("not readable:") && stdout.contains("Bad.section"),
        "{stdout}"
    );
    // One section's rows, and how each is obtained on the chip.
    let out = kreplay(
        dir.path(),
        &[
            "avail",
            "sections",
            "--section-folder",
            &sections,
            "--chip",
            "SIM",
            "--section",
            "SimWork",
        ],
    );
    let stdout = text(&out.stdout);
    for line in [
        "    Warps: sim__warps_launched.sum (counter)",
        "    Block Size: launch__block_size (launch or device attribute)",
        "    Inst Per Warp: derived__inst_per_warp (derived from sim__inst_executed.sum, sim__warps_launched.sum)",
        "    Breakdown: breakdown:sim__inst_executed.sum (n/a: breakdowns are Nsight Compute's own tables)",
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line:?} missing in {stdout}");
    }
    assert!(
        !stdout.contains("    Cycles:"),
        "only the named section's rows: {stdout}"
    );
    // Nsight Compute's spelling on the main command.
    let out = kreplay(dir.path(), &["--list-sets", "--section-folder", &sections]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(
        text(&out.stdout).contains("Sets: simset"),
        "{}",
        text(&out.stdout)
    );
}
