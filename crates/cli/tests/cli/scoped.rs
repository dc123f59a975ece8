//! Scoped collection on the reference app: `--nvtx-include`/`--nvtx-exclude` (Nsight Compute's
//! syntax) and `--selected-regions`/`--profile-from-start` (the app's `--profile-region` calls
//! the profiler start and stop), alone and with the kernel regexes and iteration range. The
//! profiled dispatches are the ones with counter records.
//!
//! The app's dispatches, by id: iteration i (0-based) is `5i+1` (`scale_add`, in range
//! `iteration i/update`) and `5i+2..=5i+5` (`accumulate`, `bump_counter`, `neighbor_mix`,
//! `managed_touch`, in `iteration i/mix`); after the loop, in range `tail` of domain
//! `kreplay-sim`, the graph's `scale_add` (16) and `accumulate` (17) and a last `accumulate`
//! (18). A start/end range `workload` (default domain) is open throughout.

use crate::common::*;
use std::collections::BTreeSet;
use std::path::Path;

/// kreplay (kernel replay of two groups, CSV) with `options`, then the app with `app_args`;
/// returns the ids of the dispatches with counter records.
fn profiled(options: &[&str], app_args: &[&str]) -> BTreeSet<u64> {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), options, app_args);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    dispatch_ids(&dir.path().join("D/o_counter_collection.csv"))
}

fn run(dir: &Path, options: &[&str], app_args: &[&str]) -> std::process::Output {
    let mut args = two_groups_replay(&["-f", "csv", "-d", "D", "-o", "o"]);
    args.extend_from_slice(options);
    let app = sim_app();
    args.push("--");
    args.push(app.to_str().unwrap());
    args.extend_from_slice(app_args);
    kreplay(dir, &args)
}

/// The distinct `Dispatch_Id`s of a CSV file (none when it was not written: nothing to say).
fn dispatch_ids(csv: &Path) -> BTreeSet<u64> {
    let Ok(mut reader) = ::csv::Reader::from_path(csv) else {
        return BTreeSet::new();
    };
    let column = reader
        .headers()
        .unwrap()
        .iter()
        .position(|h| h == "Dispatch_Id")
        .expect("a Dispatch_Id column");
    reader
        .records()
        .map(|r| r.unwrap()[column].parse().unwrap())
        .collect()
}

fn ids(range: impl IntoIterator<Item = u64>) -> BTreeSet<u64> {
    range.into_iter().collect()
}

/// The dispatches of the `mix` ranges: every iteration's last four.
fn mix() -> BTreeSet<u64> {
    (0..3).flat_map(|i| 5 * i + 2..=5 * i + 5).collect()
}

#[test]
fn a_push_pop_include_profiles_exactly_the_dispatches_inside_the_range() {
    assert_eq!(profiled(&["--nvtx-include", "mix/"], &[]), mix());
    assert_eq!(
        profiled(&["--nvtx-include", "update/"], &[]),
        ids([1, 6, 11])
    );
    // Several includes: inside any one of them.
    assert_eq!(
        profiled(
            &["--nvtx-include", "update/", "--nvtx-include", "mix/"],
            &[]
        ),
        ids(1..=15)
    );
}

#[test]
fn nesting_anchors_and_steps_select_within_the_stack() {
    assert_eq!(
        profiled(&["--nvtx-include", "iteration 1/update"], &[]),
        ids([6])
    );
    assert_eq!(
        profiled(&["--nvtx-include", "[iteration 2/mix]"], &[]),
        ids(12..=15)
    );
    // `iteration 1` with exactly one range above it, at the top: all of iteration 1.
    assert_eq!(
        profiled(&["--nvtx-include", "iteration 1/+]"], &[]),
        ids(6..=10)
    );
    assert!(
        profiled(&["--nvtx-include", "iteration 1]"], &[]).is_empty(),
        "no kernel runs with `iteration 1` on top"
    );
}

#[test]
fn a_domain_names_its_own_ranges_and_no_domain_is_the_default_domain() {
    assert_eq!(
        profiled(&["--nvtx-include", "kreplay-sim@tail/"], &[]),
        ids(16..=18)
    );
    assert!(profiled(&["--nvtx-include", "tail/"], &[]).is_empty());
    assert_eq!(
        profiled(&["--nvtx-include", "regex:^kreplay@ai/"], &[]),
        ids(16..=18)
    );
}

#[test]
fn a_start_end_include_is_a_name_without_slash() {
    // `workload` is open (started on the main thread) across every launch of the workload.
    assert_eq!(profiled(&["--nvtx-include", "workload"], &[]), ids(1..=18));
    assert!(profiled(&["--nvtx-include", "kreplay-sim@workload"], &[]).is_empty());
    // `update` is a push/pop range, not a start/end one.
    assert!(profiled(&["--nvtx-include", "update"], &[]).is_empty());
}

#[test]
fn excludes_leave_out_what_they_match() {
    assert_eq!(
        profiled(&["--nvtx-exclude", "mix/"], &[]),
        ids([1, 6, 11, 16, 17, 18])
    );
    assert_eq!(
        profiled(
            &[
                "--nvtx-include",
                "workload",
                "--nvtx-exclude",
                "[iteration 0"
            ],
            &[]
        ),
        ids(6..=18)
    );
}

#[test]
fn nvtx_filters_come_before_the_kernel_regex_and_the_iteration_range() {
    // accumulate runs as dispatches 2, 7, 12 (mix), 17 and 18 (tail). Inside `tail` its
    // iteration 2 is dispatch 18: the range counts only what the NVTX filter kept (its
    // iteration 2 over all dispatches would be 7, outside `tail`).
    assert_eq!(
        profiled(
            &[
                "--nvtx-include",
                "kreplay-sim@tail/",
                "--kernel-include-regex",
                "accumulate",
                "--kernel-iteration-range",
                "[2]",
            ],
            &[]
        ),
        ids([18])
    );
    assert_eq!(
        profiled(
            &[
                "--nvtx-include",
                "mix/",
                "--kernel-exclude-regex",
                "bump|touch",
            ],
            &[]
        ),
        ids([2, 4, 7, 9, 12, 14])
    );
}

#[test]
fn nvtx_filters_follow_ranges_without_recording_them() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(dir.path(), &["--nvtx-include", "mix/"], &[]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let files = files_under(&dir.path().join("D"));
    assert!(
        !files.iter().any(|f| f.contains("marker_api_trace")),
        "{files:?}"
    );
    // With --marker-trace too, the ranges are recorded as usual.
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["--nvtx-include", "mix/", "--marker-trace"],
        &[],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let markers = std::fs::read_to_string(dir.path().join("D/o_marker_api_trace.csv")).unwrap();
    assert!(markers.contains(r#""update""#), "{markers}");
    assert_eq!(
        dispatch_ids(&dir.path().join("D/o_counter_collection.csv")),
        mix()
    );
}

#[test]
fn selected_regions_collect_between_the_profiler_start_and_stop_only() {
    let region = ["--profile-region", "1-1"];
    assert_eq!(profiled(&["--selected-regions"], &region), ids(6..=10));
    assert_eq!(
        profiled(&["--profile-from-start", "off"], &region),
        ids(6..=10)
    );
    // Without the option the calls do nothing.
    assert_eq!(profiled(&[], &region), ids(1..=18));
    // Nsight Compute's `--profile-from-start on`: from the start until the stop.
    assert_eq!(
        profiled(&["--profile-from-start", "on"], &region),
        ids(1..=10)
    );
    // Outside the regions nothing is recorded, kernel trace included (rocprofv3 pauses every
    // service).
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["--selected-regions", "--kernel-trace"],
        &region,
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        dispatch_ids(&dir.path().join("D/o_kernel_trace.csv")),
        ids(6..=10)
    );
}

#[test]
fn nested_regions_end_at_the_first_stop_unless_counted() {
    // Starts before iterations 0 and 1, stops after iterations 1 and 2.
    let nested = ["--profile-region", "0-2", "--profile-region", "1-1"];
    assert_eq!(profiled(&["--selected-regions"], &nested), ids(1..=10));
    assert_eq!(
        profiled(&["--selected-regions-ref-count"], &nested),
        ids(1..=15)
    );
}

#[test]
fn selected_regions_combine_with_nvtx_filters_and_the_iteration_range() {
    let region = ["--profile-region", "1-2"];
    // The iteration range counts only dispatches collected: accumulate's first in the regions
    // is dispatch 7.
    assert_eq!(
        profiled(
            &[
                "--selected-regions",
                "--nvtx-include",
                "mix/",
                "--kernel-include-regex",
                "accumulate",
                "--kernel-iteration-range",
                "[1]",
            ],
            &region
        ),
        ids([7])
    );
}

#[test]
fn bad_filters_are_usage_errors_before_the_application_starts() {
    for (options, message) in [
        (
            vec!["--nvtx-include", "A//B"],
            "--nvtx-include \"A//B\": a range name is empty",
        ),
        (
            vec!["--nvtx-exclude", "D1@A,D2@B"],
            "--nvtx-exclude \"D1@A,D2@B\": ranges of different domains",
        ),
        (
            vec!["--nvtx-include", "regex:(open/"],
            "not a valid regular expression",
        ),
        (vec!["--nvtx-include", ""], "names no range"),
        (
            vec!["--profile-from-start", "on", "--selected-regions"],
            "give one of them",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), &options, &[]);
        assert_usage_error(&out, message);
        assert!(
            !dir.path().join("D").exists(),
            "{options:?}: the application did not run"
        );
    }
}

#[test]
fn push_pop_ranges_are_each_threads_own() {
    // Two threads run the workload at once, each with its own ranges: `iteration 1/update`
    // holds one dispatch of each, whatever the other thread has open meanwhile.
    let dir = tempfile::tempdir().unwrap();
    let out = run(
        dir.path(),
        &["--nvtx-include", "iteration 1/update", "--marker-trace"],
        &["--threads", "2"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let profiled = dispatch_ids(&dir.path().join("D/o_counter_collection.csv"));
    assert_eq!(profiled.len(), 2, "{profiled:?}");
    let csv = std::fs::read_to_string(dir.path().join("D/o_counter_collection.csv")).unwrap();
    let threads: BTreeSet<&str> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').nth(5).unwrap())
        .collect();
    assert_eq!(threads.len(), 2, "one dispatch per thread: {threads:?}");
}
