//! rocprofv3's `--stats` files and `--summary` tables through the real binary, profiling the
//! reference software device's app: the values against the kernel trace and the database, the
//! table's columns, where the summary goes, the input-file keys, and the refusals (exit 2 before
//! the application starts). And the live progress line: on a terminal only.

use crate::common::*;
use kreplay_format::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const STATS_HEADER: &str =
    "\"Name\",\"Calls\",\"TotalDurationNs\",\"AverageNs\",\"Percentage\",\"MinNs\",\"MaxNs\",\"StdDev\"";

fn assert_ok(out: &std::process::Output) {
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout: {}\nstderr: {}",
        text(&out.stdout),
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("verification PASSED"));
}

/// The rows of a stats CSV by name: (calls, total, average, percentage, min, max, stddev).
type StatsRow = (u64, u64, f64, f64, u64, u64, f64);

fn read_stats(path: &Path) -> Vec<(String, StatsRow)> {
    let text = std::fs::read_to_string(path).unwrap();
    assert_eq!(
        text.lines().next().unwrap(),
        STATS_HEADER,
        "{}",
        path.display()
    );
    let mut reader = csv::Reader::from_path(path).unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            assert_eq!(r.len(), 8);
            (
                r[0].to_string(),
                (
                    r[1].parse().unwrap(),
                    r[2].parse().unwrap(),
                    r[3].parse().unwrap(),
                    r[4].parse().unwrap(),
                    r[5].parse().unwrap(),
                    r[6].parse().unwrap(),
                    r[7].parse().unwrap(),
                ),
            )
        })
        .collect()
}

/// Per kernel name, the duration of each dispatch's first pass (from the database).
fn first_pass_durations(run: &RunData) -> BTreeMap<String, Vec<u64>> {
    let mut first: BTreeMap<(usize, u64), (Option<u32>, String, u64)> = BTreeMap::new();
    for (p, process) in run.processes.iter().enumerate() {
        for d in &process.dispatches {
            let name = process.kernel(d.kernel_id).unwrap().demangled_name.clone();
            let entry = (d.replay_pass, name, d.end_ns - d.start_ns);
            first
                .entry((p, d.dispatch_id))
                .and_modify(|known| {
                    if entry.0 < known.0 {
                        *known = entry.clone();
                    }
                })
                .or_insert(entry);
        }
    }
    let mut out: BTreeMap<String, Vec<u64>> = BTreeMap::new();
    for (_, name, ns) in first.into_values() {
        out.entry(name).or_default().push(ns);
    }
    out
}

/// Per kernel name, the distinct dispatch ids of the kernel trace CSV (a row per pass).
fn trace_dispatches(path: &Path) -> BTreeMap<String, BTreeSet<u64>> {
    let mut reader = csv::Reader::from_path(path).unwrap();
    let headers = reader.headers().unwrap().clone();
    let col = |name: &str| headers.iter().position(|h| h == name).unwrap();
    let (id, name) = (col("Dispatch_Id"), col("Kernel_Name"));
    let mut out: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for row in reader.records() {
        let row = row.unwrap();
        out.entry(row[name].to_string())
            .or_default()
            .insert(row[id].parse().unwrap());
    }
    out
}

/// rocprofv3's own checks on a stats row (tests/rocprofv3/tracing-hip-in-libraries/validate.py).
fn rocprofv3_checks(name: &str, row: &StatsRow) {
    let (calls, total, avg, percent, min, max, stddev) = *row;
    assert!(calls > 0 && total > 0 && percent > 0.0, "{name}: {row:?}");
    assert!(
        (avg - total as f64 / calls as f64).abs() < 1e-3,
        "{name}: {row:?}"
    );
    if calls > 1 {
        assert!(min as f64 <= avg && avg <= max as f64, "{name}: {row:?}");
    } else {
        assert!(min == max && stddev == 0.0, "{name}: {row:?}");
    }
}

#[test]
fn stats_count_each_replayed_dispatch_once_with_its_first_pass() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &two_groups_replay(&["--stats", "-f", "csv", "rocpd", "-d", "D", "-o", "out"]),
    );
    assert_ok(&out);
    let d = dir.path().join("D");
    let stderr = text(&out.stderr);
    for file in ["out_kernel_stats.csv", "out_domain_stats.csv"] {
        assert!(
            stderr.contains(&format!("kreplay: wrote D/{file}")),
            "{stderr}"
        );
    }
    let rows = read_stats(&d.join("out_kernel_stats.csv"));
    let db = read_databases(&[d.join("out_results.db")]).unwrap();
    let durations = first_pass_durations(&db);
    let trace = trace_dispatches(&d.join("out_kernel_trace.csv"));
    assert!(
        db.processes[0]
            .dispatches
            .iter()
            .any(|d| d.replay_pass == Some(1)),
        "the run must have replayed dispatches"
    );

    let names: BTreeSet<&str> = rows.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, trace.keys().map(String::as_str).collect());
    let total_ns: u64 = durations.values().flatten().sum();
    let mut percent_sum = 0.0;
    for (name, row) in &rows {
        rocprofv3_checks(name, row);
        // Calls: the kernel's dispatches, not its trace rows (one per pass).
        assert_eq!(row.0 as usize, trace[name].len(), "{name}");
        let ns = &durations[name];
        assert_eq!(row.0 as usize, ns.len(), "{name}");
        assert_eq!(
            row.1,
            ns.iter().sum::<u64>(),
            "{name}: total of the first passes"
        );
        assert_eq!(row.4, *ns.iter().min().unwrap(), "{name}");
        assert_eq!(row.5, *ns.iter().max().unwrap(), "{name}");
        let mean = row.1 as f64 / row.0 as f64;
        let stddev = if ns.len() < 2 {
            0.0
        } else {
            (ns.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / (ns.len() - 1) as f64)
                .sqrt()
        };
        assert!(
            (row.6 - stddev).abs() < 1e-4 * stddev.max(1.0),
            "{name}: {row:?} vs {stddev}"
        );
        assert!(
            (row.3 - row.1 as f64 / total_ns as f64 * 100.0).abs() < 0.006,
            "{name}"
        );
        percent_sum += row.3;
    }
    assert!((percent_sum - 100.0).abs() < 0.05, "{percent_sum}");
    let totals: Vec<u64> = rows.iter().map(|(_, r)| r.1).collect();
    let mut sorted = totals.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(totals, sorted, "largest total first");

    let domain = read_stats(&d.join("out_domain_stats.csv"));
    assert_eq!(domain.len(), 1);
    assert_eq!(domain[0].0, "KERNEL_DISPATCH");
    let dispatches: usize = trace.values().map(BTreeSet::len).sum();
    assert_eq!(domain[0].1 .0 as usize, dispatches);
    assert_eq!(domain[0].1 .1, total_ns);
    assert_eq!(domain[0].1 .3, 100.0);
}

#[test]
fn stats_need_the_csv_format_and_say_so() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(dir.path(), &["--pmc", W, "--stats", "-d", "D", "-o", "out"]);
    assert_ok(&out);
    assert!(
        text(&out.stderr).contains(
            "--stats writes <o>_kernel_stats.csv and <o>_domain_stats.csv with -f csv only"
        ),
        "{}",
        text(&out.stderr)
    );
    assert_eq!(files_under(&dir.path().join("D")), ["out_results.db"]);
}

/// The tables of a summary text, in order: (label, rows of cells, header row first). Lines
/// are taken after `indent`; blank lines are skipped, other lines end a table.
pub(crate) fn summary_tables(text: &str, indent: &str) -> Vec<(String, Vec<Vec<String>>)> {
    let mut tables: Vec<(String, Vec<Vec<String>>)> = Vec::new();
    let mut open = false;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Some(line) = line.strip_prefix(indent) else {
            open = false;
            continue;
        };
        if let Some(label) = line
            .strip_prefix("ROCPROFV3 ")
            .and_then(|l| l.strip_suffix(':'))
        {
            tables.push((label.to_string(), Vec::new()));
            open = true;
        } else if open && line.starts_with("| ") {
            let cells = line
                .trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().to_string())
                .collect();
            tables.last_mut().unwrap().1.push(cells);
        } else if !(open && line.starts_with("|-")) {
            open = false;
        }
    }
    tables
}

pub(crate) fn table<'a>(
    tables: &'a [(String, Vec<Vec<String>>)],
    label: &str,
) -> &'a Vec<Vec<String>> {
    &tables.iter().find(|(l, _)| l == label).unwrap().1
}

const SUMMARY_COLUMNS: [&str; 9] = [
    "NAME",
    "DOMAIN",
    "CALLS",
    "DURATION (nsec)",
    "AVERAGE (nsec)",
    "PERCENT (INC)",
    "MIN (nsec)",
    "MAX (nsec)",
    "STDDEV",
];

#[test]
fn the_summary_goes_to_stderr_with_rocprofv3s_columns() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &two_groups_replay(&[
            "--stats",
            "-S",
            "-D",
            "--summary-groups",
            "KERNEL_DISPATCH|MEMORY_COPY",
            "SCRATCH_.*",
            "-f",
            "csv",
            "-d",
            "D",
            "-o",
            "out",
        ]),
    );
    assert_ok(&out);
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("kreplay: warning: --summary-groups 'SCRATCH_.*' matches no domain"),
        "{stderr}"
    );
    assert!(!text(&out.stdout).contains("ROCPROFV3"));
    // -D, then the matching group, then -S: rocprofv3's order.
    let tables = summary_tables(&stderr, "    ");
    let labels: Vec<&str> = tables.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(
        labels,
        [
            "KERNEL_DISPATCH SUMMARY",
            "KERNEL_DISPATCH SUMMARY",
            "SUMMARY"
        ]
    );
    let stats = read_stats(&dir.path().join("D/out_kernel_stats.csv"));
    for (label, table) in &tables {
        assert_eq!(table[0], SUMMARY_COLUMNS, "{label}");
        assert_eq!(table.len(), stats.len() + 1, "{label}: a row per kernel");
        for (row, (name, s)) in table[1..].iter().zip(&stats) {
            assert_eq!(row[0], *name);
            assert_eq!(row[1], "KERNEL_DISPATCH");
            assert_eq!(row[2], s.0.to_string(), "calls");
            assert_eq!(row[3], s.1.to_string(), "duration");
            let avg: f64 = row[4].parse().unwrap();
            assert!((avg - s.2).abs() <= s.2 * 5e-4, "{row:?} vs {s:?}");
            assert!(row[4].contains("e+"), "3-digit scientific: {row:?}");
            let percent: f64 = row[5].parse().unwrap();
            assert!((percent - s.3).abs() < 0.006, "{row:?}");
            assert_eq!(row[5].split('.').nth(1).unwrap().len(), 6, "{row:?}");
            assert_eq!(row[6], s.4.to_string(), "min");
            assert_eq!(row[7], s.5.to_string(), "max");
        }
    }
    // The table comes before the list of files written.
    let table_at = stderr.find("    ROCPROFV3 SUMMARY:").unwrap();
    assert!(table_at < stderr.find("kreplay: wrote").unwrap());
}

#[test]
fn the_summary_goes_to_a_file_or_stdout_in_the_units_asked() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &[
            "--pmc",
            W,
            "-S",
            "--summary-output-file",
            "summary",
            "-u",
            "usec",
            "--stats",
            "-f",
            "csv",
            "-d",
            "D",
            "-o",
            "out",
        ],
    );
    assert_ok(&out);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("ROCPROFV3"), "{stderr}");
    assert!(
        stderr.contains("kreplay: wrote D/out_summary.txt"),
        "{stderr}"
    );
    let file = std::fs::read_to_string(dir.path().join("D/out_summary.txt")).unwrap();
    assert!(
        file.starts_with("\nROCPROFV3 SUMMARY:\n\n| "),
        "unindented in a file: {file}"
    );
    let tables = summary_tables(&file, "");
    assert_eq!(tables.len(), 1);
    let table = table(&tables, "SUMMARY");
    assert_eq!(table[0][3], "DURATION (usec)");
    assert_eq!(table[0][8], "STDDEV");
    let stats = read_stats(&dir.path().join("D/out_kernel_stats.csv"));
    assert_eq!(
        table.len(),
        stats.len() + 1,
        "a header and one row per kernel"
    );
    for (row, (name, s)) in table[1..].iter().zip(&stats) {
        assert_eq!(row[0], *name);
        let usec = |cell: &str| cell.parse::<f64>().unwrap();
        assert_eq!(usec(&row[3]), s.1 as f64 / 1e3, "{row:?}");
        assert_eq!(usec(&row[6]), s.4 as f64 / 1e3, "{row:?}");
        assert_eq!(usec(&row[7]), s.5 as f64 / 1e3, "{row:?}");
    }

    let out = run_sim(
        dir.path(),
        &[
            "--pmc",
            W,
            "-D",
            "--summary-output-file",
            "stdout",
            "-d",
            "E",
        ],
    );
    assert_ok(&out);
    let stdout = text(&out.stdout);
    assert!(
        stdout.contains("\n    ROCPROFV3 KERNEL_DISPATCH SUMMARY:\n\n    | "),
        "{stdout}"
    );
    assert!(!text(&out.stderr).contains("ROCPROFV3"));
}

#[test]
fn input_file_jobs_take_the_stats_and_summary_keys() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("in.yaml"),
        format!(
            "jobs:\n  - pmc: [{W}]\n    output_directory: D\n    output_file: out\n    output_format: [csv]\n    stats: true\n    summary: true\n    summary_per_domain: true\n    summary_groups: [\"KERNEL_DISPATCH|MEMORY_COPY\"]\n    summary_output_file: summary\n    summary_units: msec\n"
        ),
    )
    .unwrap();
    let out = run_sim(dir.path(), &["-i", "in.yaml"]);
    assert_ok(&out);
    let files = files_under(&dir.path().join("D"));
    for file in [
        "pass_1/out_kernel_stats.csv",
        "pass_1/out_domain_stats.csv",
        "pass_1/out_summary.txt",
    ] {
        assert!(files.contains(&file.to_string()), "{files:?}");
    }
    let summary = std::fs::read_to_string(dir.path().join("D/pass_1/out_summary.txt")).unwrap();
    assert_eq!(
        summary
            .matches("ROCPROFV3 KERNEL_DISPATCH SUMMARY:")
            .count(),
        2
    );
    assert!(summary.contains("ROCPROFV3 SUMMARY:") && summary.contains("DURATION (msec)"));
}

#[test]
fn application_replay_writes_stats_into_each_pass_folder() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(
        dir.path(),
        &[
            "--pmc", W, I, "--pmc", W, C, "--stats", "-f", "csv", "-d", "D", "-o", "out",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for pass in ["pass_1", "pass_2"] {
        let folder = dir.path().join("D").join(pass);
        let rows = read_stats(&folder.join("out_kernel_stats.csv"));
        let trace = trace_dispatches(&folder.join("out_kernel_trace.csv"));
        assert_eq!(rows.len(), trace.len(), "{pass}");
        for (name, row) in &rows {
            rocprofv3_checks(name, row);
            assert_eq!(row.0 as usize, trace[name].len(), "{pass} {name}");
        }
    }
}

/// Asserts a usage error before the application starts: exit 2, `message` on one line, the
/// app never ran and no output folder was made.
fn assert_refused(dir: &Path, args: &[&str], message: &str) {
    let out = run_sim(dir, args);
    assert_usage_error(&out, message);
    assert!(
        !text(&out.stdout).contains("verification"),
        "{args:?}: the app must not start"
    );
    assert!(!dir.join("D").exists(), "{args:?}");
}

#[test]
fn stats_and_summary_options_are_refused_before_the_app_starts() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // rocprofv3's rule: these need something traced.
    for (args, option) in [
        (&["--stats"][..], "stats"),
        (&["-S"][..], "summary"),
        (&["--summary-per-domain"][..], "summary-per-domain"),
        (
            &["--summary-groups", "KERNEL_DISPATCH"][..],
            "summary-groups",
        ),
        (&["--summary-output-file", "x"][..], "summary-output-file"),
        (&["-u", "sec"][..], "summary-units"),
    ] {
        let mut all = args.to_vec();
        all.extend(["-d", "D"]);
        assert_refused(
            d,
            &all,
            &format!("No tracing options were enabled for --{option} option"),
        );
    }
    assert_refused(
        d,
        &["--pmc", W, "--summary-groups", "KERNEL_(", "-S", "-d", "D"],
        "--summary-groups 'KERNEL_(' is not a valid regular expression",
    );
    assert_refused(
        d,
        &["--pmc", W, "-S", "--summary-output-file", "", "-d", "D"],
        "--summary-output-file needs a value",
    );
    std::fs::write(
        d.join("bad.yaml"),
        format!("jobs:\n  - pmc: [{W}]\n    summary: true\n    summary_units: minutes\n"),
    )
    .unwrap();
    assert_refused(
        d,
        &["-i", "bad.yaml", "-d", "D"],
        "input job 1: summary_units 'minutes' is not one of sec, msec, usec, nsec",
    );
    std::fs::write(
        d.join("conflict.yaml"),
        format!("jobs:\n  - pmc: [{W}]\n    summary_units: usec\n"),
    )
    .unwrap();
    assert_refused(
        d,
        &["-i", "conflict.yaml", "-S", "-u", "sec", "-d", "D"],
        "give it in one place",
    );
    // clap's own refusal of a unit rocprofv3 does not have: exit 2 too.
    let out = run_sim(d, &["--pmc", W, "-S", "-u", "min", "-d", "D"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("'min'"), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).contains("verification"));
}

#[test]
fn without_a_terminal_there_is_no_progress_line() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let out = kreplay_command(
        dir.path(),
        &["--pmc", W, "-d", "D", "--", app.to_str().unwrap()],
    )
    .env("KREPLAY_TEST_HOLD_OUTPUTS_MS", "1300")
    .output()
    .unwrap();
    assert_ok(&out);
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("writing outputs"), "{stderr}");
    assert!(
        !stderr.contains('\r') && !stderr.contains('\x1b'),
        "{stderr:?}"
    );
}

#[test]
fn on_a_terminal_the_progress_line_shows_the_running_app_and_the_writing() {
    use std::io::Read;
    use std::os::fd::{FromRawFd, OwnedFd};
    let dir = tempfile::tempdir().unwrap();
    let (mut master, mut slave) = (0, 0);
    let size = libc::winsize {
        ws_row: 24,
        ws_col: 200,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: openpty into two ints, with a window size; each fd gets one owner below.
    let opened = unsafe {
        libc::openpty(
            &mut master,
            &mut slave,
            std::ptr::null_mut(),
            std::ptr::null(),
            &size,
        )
    };
    assert_eq!(opened, 0, "openpty failed");
    // SAFETY: fresh descriptors from openpty, owned once each.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(master), OwnedFd::from_raw_fd(slave)) };
    // The app runs longer than the delay (sim app, then a sleep), and the writing is held.
    let fake_lib = dir.path().join("libfake_inject.so");
    std::fs::write(&fake_lib, b"").unwrap();
    let app = sim_app();
    let mut child = kreplay_command(
        dir.path(),
        &[
            "--pmc",
            W,
            "-d",
            "D",
            "--",
            "sh",
            "-c",
            "\"$0\" && sleep 2.6",
            app.to_str().unwrap(),
        ],
    )
    .env("KREPLAY_INJECT_LIB", &fake_lib)
    .env("KREPLAY_TEST_HOLD_OUTPUTS_MS", "1600")
    .env("TERM", "xterm")
    .env_remove("KREPLAY_PROGRESS")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::from(slave))
    .spawn()
    .unwrap();
    let reader = std::thread::spawn(move || {
        let mut terminal = std::fs::File::from(master);
        let mut seen = Vec::new();
        let mut buffer = [0u8; 4096];
        // Read until the last writer closes the terminal (EIO on Linux).
        while let Ok(n) = terminal.read(&mut buffer) {
            if n == 0 {
                break;
            }
            seen.extend_from_slice(&buffer[..n]);
        }
        String::from_utf8_lossy(&seen).into_owned()
    });
    let status = child.wait().unwrap();
    let seen = reader.join().unwrap();
    assert_eq!(status.code(), Some(0), "{seen}");
    assert!(
        seen.contains("kreplay: the application is running"),
        "{seen:?}"
    );
    assert!(seen.contains("kreplay: writing outputs: "), "{seen:?}");
    assert!(seen.contains(" records ("), "{seen:?}");
    assert!(seen.contains(" s)"), "elapsed seconds: {seen:?}");
    // The rest of the report still arrives, after the line was cleared.
    assert!(seen.contains("kreplay: wrote D/"), "{seen:?}");
}
