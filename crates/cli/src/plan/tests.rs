use super::sections::first_few;
use super::settings::DEFAULT_OUTPUT_FILE;
use super::*;
use crate::args::Cli;
use crate::input::{InputFile, InputKind, Job, WindowSize, WordList};
use crate::messages::*;
use kreplay_core::catalog::MetricCatalog;
use kreplay_core::config::CounterSpec;
use kreplay_core::config::ReplayWindow;
use kreplay_format::stats_out::{SummaryTable, SummaryUnit};
use kreplay_format::OutputFormat;

/// Two counters per pass, like the reference software device.
struct FakeCatalog;

fn group(names: &[String]) -> CounterGroup {
    CounterGroup {
        counters: names
            .iter()
            .map(|n| CounterSpec {
                requested: n.clone(),
                metric: n.clone(),
            })
            .collect(),
    }
}

impl CounterResolver for FakeCatalog {
    fn resolve_groups(&self, groups: &[Vec<String>]) -> anyhow::Result<Vec<CounterGroup>> {
        groups
            .iter()
            .enumerate()
            .map(|(i, g)| {
                if g.len() > 2 {
                    // As the real catalogs report it: a usage error.
                    return Err(UsageError::new(format!(
                        "group {} needs {} passes (limit 2 counters per pass)",
                        i + 1,
                        g.len().div_ceil(2)
                    ))
                    .into());
                }
                Ok(group(g))
            })
            .collect()
    }
    fn pack(&self, metrics: &[String], _share: bool) -> anyhow::Result<Vec<(CounterGroup, u32)>> {
        // "MULTI" stands for a metric that alone needs 3 passes.
        let (multi, single): (Vec<String>, Vec<String>) =
            metrics.iter().cloned().partition(|m| m == "MULTI");
        Ok(single
            .chunks(2)
            .map(|c| (group(c), 1))
            .chain(multi.chunks(1).map(|c| (group(c), 3)))
            .collect())
    }
    fn catalog(&self, _: &[String]) -> anyhow::Result<Box<dyn MetricCatalog>> {
        Ok(Box::new(kreplay_core::reference_chip::SimCatalog::new()))
    }
    fn checked_identity(&self) -> Option<String> {
        Some("fake-identity".into())
    }
}

#[test]
fn runs_with_counters_carry_the_identity_their_groups_were_checked_with() {
    let plan = shape(&["--pmc", "A B", "--pmc", "C", "--", "a"], None).unwrap();
    assert_eq!(plan.runs.len(), 2);
    for run in &plan.runs {
        assert_eq!(run.checked_identity.as_deref(), Some("fake-identity"));
    }
    let trace = shape(&["--kernel-trace", "--", "a"], None).unwrap();
    assert_eq!(
        trace.runs[0].checked_identity, None,
        "no groups, nothing checked"
    );
}

fn args(cmd: &[&str]) -> ProfileArgs {
    Cli::parse_args(std::iter::once("kreplay").chain(cmd.iter().copied()))
        .unwrap()
        .profile
}

fn shape(cmd: &[&str], input: Option<&InputFile>) -> anyhow::Result<Plan> {
    plan(&args(cmd), input, false, &FakeCatalog)
}

fn names(run: &RunSpec) -> Vec<Vec<String>> {
    run.groups
        .iter()
        .map(|g| g.metrics().map(str::to_string).collect())
        .collect()
}

fn jobs(kind: InputKind, jobs: Vec<Job>) -> InputFile {
    InputFile {
        kind,
        jobs,
        warning: None,
    }
}

fn pmc_job(words: &[&str]) -> Job {
    Job {
        pmc: Some(WordList::Many(
            words.iter().map(|s| s.to_string()).collect(),
        )),
        ..Job::default()
    }
}

#[test]
fn rejections_have_rocprofv3_texts() {
    let err = |cmd: &[&str]| shape(cmd, None).unwrap_err().to_string();
    assert_eq!(
        err(&[
            "--pmc",
            "A",
            "--pmc",
            "B",
            "--replay-mode",
            "kernel",
            "--",
            "true"
        ]),
        MSG_BETA
    );
    assert_eq!(
        err(&[
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--",
            "true"
        ]),
        MSG_NO_COUNTERS
    );
    assert_eq!(
        err(&[
            "--pmc",
            "A",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--spm",
            "--att",
            "--",
            "a"
        ]),
        msg_conflict(&["--att", "--spm"])
    );
    assert_eq!(err(&["--pmc", "A", "--pmc", "--", "a"]), msg_empty_group(2));
    let with_env = plan(
        &args(&[
            "--pmc",
            "A",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--",
            "a",
        ]),
        None,
        true,
        &FakeCatalog,
    );
    assert_eq!(
        with_env.unwrap_err().to_string(),
        msg_conflict(&["PC sampling"])
    );
    let input = jobs(
        InputKind::Structured,
        vec![Job {
            pmc_groups: Some(vec![WordList::One("X".into())]),
            pmc_group_interval: Some(2),
            ..Job::default()
        }],
    );
    assert_eq!(
        shape(&["--pmc", "A", "--", "a"], Some(&input))
            .unwrap_err()
            .to_string(),
        MSG_PMC_AND_GROUPS
    );
}

#[test]
fn beta_flag_false_is_not_an_acknowledgement() {
    let err = shape(
        &[
            "--pmc",
            "A",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "false",
            "--",
            "a",
        ],
        None,
    )
    .unwrap_err();
    assert_eq!(err.to_string(), MSG_BETA);
}

#[test]
fn replay_window_is_carried_only_with_kernel_replay() {
    const REPLAY: [&str; 6] = ["--pmc", "A", "--pmc", "B", "--replay-mode", "kernel"];
    let with = |extra: &[&str]| {
        let mut cmd: Vec<&str> = REPLAY.to_vec();
        cmd.push("--kernel-replay-beta-enabled");
        cmd.extend_from_slice(extra);
        cmd.extend_from_slice(&["--", "a"]);
        shape(&cmd, None)
    };
    assert_eq!(with(&[]).unwrap().runs[0].replay_window, ReplayWindow::Auto);
    assert_eq!(
        with(&["--replay-window", "1"]).unwrap().runs[0].replay_window,
        ReplayWindow::Dispatch
    );
    assert_eq!(
        with(&["--replay-window", "8"]).unwrap().runs[0].replay_window,
        ReplayWindow::Count(8)
    );
    assert_eq!(
        with(&["--replay-window", "auto"]).unwrap().runs[0].replay_window,
        ReplayWindow::Auto
    );
    let err = shape(&["--pmc", "A", "--replay-window", "8", "--", "a"], None)
        .unwrap_err()
        .to_string();
    assert_eq!(err, MSG_WINDOW_WITHOUT_REPLAY);
    let bad = Cli::parse_args(["kreplay", "--replay-window", "0", "--", "a"])
        .unwrap_err()
        .to_string();
    assert!(bad.contains("e.g. 8 or auto"), "{bad}");

    // The input-file key: a number or `auto`; the command line must agree with it.
    let job = |size: WindowSize| Job {
        replay_window: Some(size),
        ..pmc_job(&["A"])
    };
    let replay_job = |input: &InputFile, extra: &[&str]| {
        let mut cmd = vec!["--replay-mode", "kernel", "--kernel-replay-beta-enabled"];
        cmd.extend_from_slice(extra);
        cmd.extend_from_slice(&["--", "a"]);
        shape(&cmd, Some(input))
    };
    let input = jobs(InputKind::Structured, vec![job(WindowSize::Count(4))]);
    assert_eq!(
        replay_job(&input, &[]).unwrap().runs[0].replay_window,
        ReplayWindow::Count(4)
    );
    let err = replay_job(&input, &["--replay-window", "auto"])
        .unwrap_err()
        .to_string();
    assert!(err.contains("give it in one place"), "{err}");
    let input = jobs(
        InputKind::Structured,
        vec![job(WindowSize::Text("many".into()))],
    );
    let err = replay_job(&input, &[]).unwrap_err().to_string();
    assert!(
        err.starts_with("input job 1: replay_window \"many\""),
        "{err}"
    );
    let err = shape(&["--", "a"], Some(&input)).unwrap_err().to_string();
    assert_eq!(err, MSG_WINDOW_WITHOUT_REPLAY);
}

#[test]
fn kernel_replay_cli_groups_are_one_run_without_subfolder() {
    let plan = shape(
        &[
            "--pmc",
            "A B",
            "--pmc",
            "A,C",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--",
            "a",
        ],
        None,
    )
    .unwrap();
    assert_eq!(plan.runs.len(), 1);
    let run = &plan.runs[0];
    assert_eq!(run.mode, InProcessMode::KernelReplay);
    assert_eq!(names(run), vec![vec!["A", "B"], vec!["A", "C"]]);
    assert_eq!(run.subdir, None);
    assert_eq!(run.formats, vec![OutputFormat::Rocpd]);
    assert_eq!(run.output_file, DEFAULT_OUTPUT_FILE);
}

#[test]
fn application_replay_runs_once_per_group_into_pass_folders() {
    let plan = shape(&["--pmc", "A", "B", "--pmc", "C", "--", "a"], None).unwrap();
    assert_eq!(plan.runs.len(), 2);
    assert_eq!(plan.runs[0].subdir.as_deref(), Some("pass_1"));
    assert_eq!(plan.runs[1].subdir.as_deref(), Some("pass_2"));
    assert_eq!(names(&plan.runs[1]), vec![vec!["C"]]);
    assert!(plan.runs.iter().all(|r| r.mode == InProcessMode::Single));
    assert!(plan.runs[1]
        .progress_line()
        .starts_with("kreplay: pass 2/2: C"));
    let one = shape(&["--pmc", "A", "--", "a"], None).unwrap();
    assert_eq!(one.runs[0].subdir, None);
}

#[test]
fn cli_groups_plus_jobs_under_replay() {
    let input = jobs(
        InputKind::Structured,
        vec![
            pmc_job(&["D"]),
            Job {
                pmc_groups: Some(vec![WordList::One("E F".into()), WordList::One("G".into())]),
                pmc_group_interval: Some(2),
                ..Job::default()
            },
        ],
    );
    let cmd = [
        "--pmc",
        "A",
        "--pmc",
        "B",
        "--replay-mode",
        "kernel",
        "--kernel-replay-beta-enabled",
        "--",
        "a",
    ];
    // --pmc with pmc_groups is refused, so check the replay shape with pmc-only jobs first.
    let only_pmc = jobs(
        InputKind::Structured,
        vec![pmc_job(&["D"]), pmc_job(&["E", "F"])],
    );
    let plan = shape(&cmd, Some(&only_pmc)).unwrap();
    assert_eq!(plan.runs.len(), 3);
    assert_eq!(names(&plan.runs[0]), vec![vec!["A"], vec!["B"]]);
    assert_eq!(names(&plan.runs[2]), vec![vec!["E", "F"]]);
    assert!(plan
        .runs
        .iter()
        .all(|r| r.mode == InProcessMode::KernelReplay));
    let dirs: Vec<_> = plan
        .runs
        .iter()
        .map(|r| r.subdir.clone().unwrap())
        .collect();
    assert_eq!(dirs, vec!["pass_1", "pass_2", "pass_3"]);
    // A pmc_groups job is replayed too, and its interval ignored.
    let plan = shape(&cmd[4..], Some(&input)).unwrap();
    assert_eq!(plan.runs[1].mode, InProcessMode::KernelReplay);
    assert_eq!(names(&plan.runs[1]), vec![vec!["E", "F"], vec!["G"]]);
}

#[test]
fn jobs_without_replay_and_rotation() {
    let input = jobs(
        InputKind::Structured,
        vec![Job {
            pmc_groups: Some(vec![WordList::One("A".into()), WordList::One("B".into())]),
            pmc_group_interval: Some(2),
            ..Job::default()
        }],
    );
    let plan = shape(&["--", "a"], Some(&input)).unwrap();
    assert_eq!(plan.runs.len(), 1);
    assert_eq!(plan.runs[0].mode, InProcessMode::Rotation { interval: 2 });
    assert_eq!(plan.runs[0].subdir.as_deref(), Some("pass_1"));
    let no_interval = jobs(
        InputKind::Structured,
        vec![Job {
            pmc_groups: Some(vec![WordList::One("A".into())]),
            ..Job::default()
        }],
    );
    assert!(shape(&["--", "a"], Some(&no_interval))
        .unwrap_err()
        .to_string()
        .contains("pmc_group_interval"));
    let text = jobs(InputKind::Text, vec![pmc_job(&["A"]), pmc_job(&["B"])]);
    let plan = shape(&["--", "a"], Some(&text)).unwrap();
    assert_eq!(plan.runs[1].subdir.as_deref(), Some("pmc_2"));
}

#[test]
fn job_settings_merge_with_the_command_line() {
    let mut job = pmc_job(&["A"]);
    job.output_file = Some("job_out".into());
    job.kernel_include_regex = Some("saxpy".into());
    job.output_format = Some(WordList::Many(vec!["csv".into(), "JSON".into()]));
    let input = jobs(InputKind::Structured, vec![job]);
    let plan = shape(&["-d", "dir", "--", "a"], Some(&input)).unwrap();
    let run = &plan.runs[0];
    assert_eq!(run.output_file, "job_out");
    assert_eq!(run.output_directory, "dir");
    assert_eq!(run.formats, vec![OutputFormat::Csv, OutputFormat::Json]);
    assert_eq!(run.filter.include_regex.as_deref(), Some("saxpy"));
    let err = shape(&["-o", "cli_out", "--", "a"], Some(&input)).unwrap_err();
    assert!(err.to_string().contains("give it in one place"), "{err}");
}

#[test]
fn counter_errors_and_bad_values_are_usage_errors() {
    // Exit status 2 depends on the kind surviving run shaping, not only on the message.
    let usage_error = |cmd: &[&str], needle: &str| {
        let err = shape(cmd, None).unwrap_err();
        assert!(err.to_string().contains(needle), "{err}");
        assert!(
            err.downcast_ref::<UsageError>().is_some(),
            "not a usage error: {err}"
        );
    };
    usage_error(
        &["--pmc", "A", "B", "C", "--", "a"],
        "group 1 needs 2 passes",
    );
    usage_error(
        &["--pmc", "A", "-f", "otf2", "--", "a"],
        "'otf2' is not supported",
    );
    usage_error(
        &["--pmc", "A", "--kernel-include-regex", "(", "--", "a"],
        "--kernel-include-regex '('",
    );
    usage_error(
        &["--pmc", "A", "--kernel-iteration-range", "[x]", "--", "a"],
        "not an iteration range",
    );
    usage_error(&["--", "a"], "nothing to collect");
    usage_error(&["--att", "--pmc", "A", "--", "a"], "--att not available");
}

#[test]
fn metrics_are_packed_and_announced() {
    let plan = shape(
        &[
            "--metrics",
            "A,B,C",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--",
            "a",
        ],
        None,
    )
    .unwrap();
    assert_eq!(names(&plan.runs[0]), vec![vec!["A", "B"], vec!["C"]]);
    assert_eq!(
        plan.notices,
        vec!["kreplay: --metrics packed into 2 single-pass group(s): --pmc A B --pmc C"]
    );
    let app_replay = shape(&["--metrics", "A,B,C", "--", "a"], None).unwrap();
    assert_eq!(app_replay.runs.len(), 2);
}

#[test]
fn a_metric_needing_several_passes_is_a_replay_group_of_its_own() {
    let plan = shape(
        &[
            "--metrics",
            "A,MULTI,B",
            "--replay-mode",
            "kernel",
            "--kernel-replay-beta-enabled",
            "--",
            "a",
        ],
        None,
    )
    .unwrap();
    assert_eq!(names(&plan.runs[0]), vec![vec!["A", "B"], vec!["MULTI"]]);
    assert_eq!(
        plan.notices,
        vec!["kreplay: --metrics packed into 1 single-pass group(s): --pmc A B; measured over several replay passes each: MULTI (3 passes)"]
    );
    // Without kernel replay the application would have to run once per pass.
    let error = shape(&["--metrics", "A,MULTI", "--", "a"], None).unwrap_err();
    assert!(
        error.to_string().contains("add --replay-mode kernel"),
        "{error}"
    );
}

#[test]
fn stats_and_summary_options_shape_the_run() {
    let plan = shape(
        &[
            "--pmc",
            "A",
            "--stats",
            "-f",
            "csv",
            "-S",
            "-D",
            "--summary-groups",
            "KERNEL_.*",
            "KERNEL",
            "--summary-output-file",
            "STDOUT",
            "-u",
            "msec",
            "--",
            "a",
        ],
        None,
    )
    .unwrap();
    let run = &plan.runs[0];
    assert!(run.stats);
    let summary = run.summary.as_ref().unwrap();
    // -D, the group that matches the whole name (not the partial `KERNEL`), then -S.
    assert_eq!(
        summary.tables,
        [
            SummaryTable::Domain,
            SummaryTable::Group(vec!["KERNEL_DISPATCH"]),
            SummaryTable::Total
        ]
    );
    assert_eq!(summary.output, SummaryOutput::Stdout);
    assert_eq!(summary.unit, SummaryUnit::Msec);
    assert_eq!(plan.notices, [msg_group_matches_nothing("KERNEL")]);
    assert_eq!(
        run.post_processing(),
        " stats summary to stdout in msec: <DOMAIN> SUMMARY, KERNEL_DISPATCH SUMMARY, SUMMARY"
    );

    let plain = shape(&["--pmc", "A", "--", "a"], None).unwrap();
    assert!(!plain.runs[0].stats && plain.runs[0].summary.is_none());
    assert_eq!(plain.runs[0].post_processing(), "");
    let file = shape(
        &[
            "--pmc",
            "A",
            "-S",
            "--summary-output-file",
            "sum",
            "--",
            "a",
        ],
        None,
    )
    .unwrap();
    let summary = file.runs[0].summary.as_ref().unwrap();
    assert_eq!(summary.output, SummaryOutput::File("sum".into()));
    assert_eq!(summary.unit, SummaryUnit::Nsec);

    let alone = shape(&["--pmc", "A", "--stats", "-u", "sec", "--", "a"], None).unwrap();
    assert!(alone.runs[0].summary.is_none());
    assert_eq!(
        alone.notices,
        [MSG_SUMMARY_SETTINGS_ALONE, MSG_STATS_WITHOUT_CSV]
    );

    let error = shape(&["--summary-groups", "X", "-S", "--", "a"], None).unwrap_err();
    assert_eq!(error.to_string(), msg_no_tracing("summary"));
    assert!(error.downcast_ref::<UsageError>().is_some());
    // --kernel-trace is something traced.
    assert!(shape(&["--kernel-trace", "--stats", "--", "a"], None).is_ok());
}

#[test]
fn filters_reach_the_run() {
    let plan = shape(
        &[
            "--pmc",
            "A",
            "--kernel-include-regex",
            "k.*",
            "--kernel-exclude-regex",
            "x",
            "--kernel-iteration-range",
            "[1-2]",
            "[4]",
            "--kernel-trace",
            "--",
            "a",
        ],
        None,
    )
    .unwrap();
    let run = &plan.runs[0];
    assert_eq!(run.filter.iteration_range.as_deref(), Some("[1-2], [4]"));
    assert_eq!(run.filter.exclude_regex.as_deref(), Some("x"));
    assert!(run.kernel_trace);
}

#[test]
fn long_lists_in_a_notice_are_cut_with_the_command_that_lists_them() {
    let items = (0..11).map(|i| format!("m{i}"));
    let text = first_few(items, "kreplay avail sections");
    assert_eq!(
        text,
        "m0, m1, m2, m3, m4, m5, m6, m7 and 3 more (`kreplay avail sections` lists them)"
    );
    assert_eq!(first_few(["a".to_string()].into_iter(), "x"), "a");
}

#[test]
fn marker_trace_and_kernel_rename_from_the_command_line_and_from_jobs() {
    // --marker-trace alone is something to collect; --kernel-rename needs the ranges.
    let plan = shape(&["--marker-trace", "--", "a"], None).unwrap();
    assert!(plan.runs[0].marker_trace && !plan.runs[0].kernel_rename);
    let plan = shape(&["--pmc", "A", "--kernel-rename", "--", "a"], None).unwrap();
    assert!(plan.runs[0].marker_trace && plan.runs[0].kernel_rename);
    let plain = shape(&["--pmc", "A", "--", "a"], None).unwrap();
    assert!(!plain.runs[0].marker_trace && !plain.runs[0].kernel_rename);
    // A job's keys, merged as the other settings are.
    let job = Job {
        marker_trace: Some(true),
        ..Job::default()
    };
    let plan = shape(&["--", "a"], Some(&jobs(InputKind::Structured, vec![job]))).unwrap();
    assert!(plan.runs[0].marker_trace);
    let mut job = pmc_job(&["A"]);
    job.kernel_rename = Some(false);
    let err = shape(
        &["--kernel-rename", "--", "a"],
        Some(&jobs(InputKind::Structured, vec![job])),
    )
    .unwrap_err();
    assert!(err.to_string().contains("kernel_rename"), "{err}");
}

#[test]
fn memory_traces_from_the_command_line_and_from_jobs() {
    // Either is something to collect on its own.
    let plan = shape(&["--memory-copy-trace", "--", "a"], None).unwrap();
    assert!(plan.runs[0].memory_copy_trace && !plan.runs[0].memory_allocation_trace);
    let plan = shape(&["--memory-allocation-trace", "--", "a"], None).unwrap();
    assert!(!plan.runs[0].memory_copy_trace && plan.runs[0].memory_allocation_trace);
    let plain = shape(&["--pmc", "A", "--", "a"], None).unwrap();
    assert!(!plain.runs[0].memory_copy_trace && !plain.runs[0].memory_allocation_trace);
    let job = Job {
        memory_allocation_trace: Some(true),
        ..Job::default()
    };
    let plan = shape(&["--", "a"], Some(&jobs(InputKind::Structured, vec![job]))).unwrap();
    assert!(plan.runs[0].memory_allocation_trace);
    let mut job = pmc_job(&["A"]);
    job.memory_copy_trace = Some(false);
    let err = shape(
        &["--memory-copy-trace", "--", "a"],
        Some(&jobs(InputKind::Structured, vec![job])),
    )
    .unwrap_err();
    assert!(err.to_string().contains("memory_copy_trace"), "{err}");
}

#[test]
fn nvtx_filters_and_selected_regions_from_the_command_line_and_from_jobs() {
    use kreplay_core::config::SelectedRegions;
    let plan = shape(
        &[
            "--pmc",
            "A",
            "--nvtx-include",
            "layer/",
            "--nvtx-include",
            "D@step",
            "--nvtx-exclude",
            "warmup/",
            "--selected-regions-ref-count",
            "--",
            "a",
        ],
        None,
    )
    .unwrap();
    let filter = &plan.runs[0].filter;
    assert_eq!(filter.nvtx_include, ["layer/", "D@step"]);
    assert_eq!(filter.nvtx_exclude, ["warmup/"]);
    assert!(filter.tracks_ranges() && !plan.runs[0].marker_trace);
    // The ref-count option implies --selected-regions.
    assert_eq!(
        filter.selected_regions,
        Some(SelectedRegions {
            from_start: false,
            ref_count: true
        })
    );
    let from_start = |value: &str| {
        shape(
            &["--pmc", "A", "--profile-from-start", value, "--", "a"],
            None,
        )
        .unwrap()
        .runs[0]
            .filter
            .selected_regions
    };
    assert_eq!(from_start("off").map(|s| s.from_start), Some(false));
    assert_eq!(from_start("on").map(|s| s.from_start), Some(true));
    let plain = shape(&["--pmc", "A", "--", "a"], None).unwrap();
    assert_eq!(plain.runs[0].filter.selected_regions, None);
    assert!(!plain.runs[0].filter.tracks_ranges());
    // A job's keys; a bad configuration names the job and the key.
    let mut job = pmc_job(&["A"]);
    job.nvtx_include = Some(WordList::One("mix/".into()));
    job.selected_regions = Some(true);
    let plan = shape(&["--", "a"], Some(&jobs(InputKind::Structured, vec![job]))).unwrap();
    assert_eq!(plan.runs[0].filter.nvtx_include, ["mix/"]);
    assert!(plan.runs[0].filter.selected_regions.is_some());
    let mut job = pmc_job(&["A"]);
    job.nvtx_exclude = Some(WordList::Many(vec!["a//b".into()]));
    let err = shape(&["--", "a"], Some(&jobs(InputKind::Structured, vec![job])))
        .unwrap_err()
        .to_string();
    assert!(
        err.starts_with("input job 1: nvtx_exclude \"a//b\": a range name is empty"),
        "{err}"
    );
}
