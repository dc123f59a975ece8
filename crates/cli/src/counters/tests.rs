use super::*;
use crate::catalogs::*;

fn names(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| s.to_string()).collect()
}

fn one_line(error: &anyhow::Error) -> String {
    let text = format!("{error:#}");
    assert!(!text.contains('\n'), "one line: {text}");
    text
}

#[test]
fn recorded_counters_get_the_catalogs_description_and_unit() {
    use kreplay_format::{AgentInfo, CounterInfo, ProcessInfo, ProcessRun, RunData};
    let mut process = ProcessRun::new(ProcessInfo::default());
    process.agents.push(AgentInfo {
        chip: "GH100".into(),
        ..AgentInfo::default()
    });
    let counter = |name: &str| CounterInfo {
        name: name.into(),
        metric: name.into(),
        description: String::new(),
        unit: String::new(),
    };
    process.counters = vec![
        counter("gpu__time_duration.sum"),
        counter("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        counter("no__such_metric.sum"),
    ];
    let mut data = RunData {
        processes: vec![process],
    };
    describe_recorded_counters(&mut data);
    let counters = &data.processes[0].counters;
    assert_eq!(counters[0].unit, "nanosecond");
    assert!(!counters[0].description.is_empty());
    assert_eq!(counters[1].unit, "percent");
    assert!(
        counters[2].unit.is_empty(),
        "an unknown metric stays undescribed"
    );
}

#[test]
fn sim_groups_are_checked_against_the_software_device() {
    let groups = resolve_groups(
        &[
            names(&["sim__warps_launched.sum", "sim__inst_executed.sum"]),
            names(&["sim__bytes_read.sum"]),
        ],
        None,
        &CheckedIdentity::default(),
    )
    .unwrap();
    assert_eq!(groups.len(), 2);
    assert_eq!(groups[0].counters[1].metric, "sim__inst_executed.sum");
}

#[test]
fn a_sim_group_over_two_counters_is_refused_with_a_split() {
    let error = resolve_groups(
        &[names(&[
            "sim__warps_launched.sum",
            "sim__inst_executed.sum",
            "sim__bytes_read.sum",
        ])],
        Some("sim"),
        &CheckedIdentity::default(),
    )
    .unwrap_err();
    assert!(error.downcast_ref::<UsageError>().is_some());
    let text = one_line(&error);
    assert!(text.contains("needs 2 hardware passes on SIM"), "{text}");
    assert!(
        text.contains(
            "--pmc sim__warps_launched.sum sim__inst_executed.sum --pmc sim__bytes_read.sum"
        ),
        "{text}"
    );
}

#[test]
fn mixing_sim_and_gpu_metrics_is_refused() {
    let error = resolve_groups(
        &[names(&[
            "sim__warps_launched.sum",
            "sm__warps_launched.sum",
        ])],
        None,
        &CheckedIdentity::default(),
    )
    .unwrap_err();
    assert!(error.downcast_ref::<UsageError>().is_some());
    let text = one_line(&error);
    assert!(text.contains("separate runs"), "{text}");
}

#[test]
fn misspelt_sim_metric_gets_a_suggestion() {
    let error = resolve_groups(
        &[names(&["sim__warp_launched.sum"])],
        Some("SIM"),
        &CheckedIdentity::default(),
    )
    .unwrap_err();
    let text = one_line(&error);
    assert!(
        text.contains("did you mean sim__warps_launched.sum"),
        "{text}"
    );
}

#[test]
fn empty_group_is_refused_like_rocprofv3() {
    let error = resolve_groups(
        &[names(&["sim__bytes_read.sum"]), vec![]],
        None,
        &CheckedIdentity::default(),
    )
    .unwrap_err();
    assert!(one_line(&error).contains("Empty counter group in --pmc flag 2."));
}

#[test]
fn device_qualifier_is_refused_by_name() {
    let error = resolve_groups(
        &[names(&["sim__bytes_read.sum:device=1"])],
        None,
        &CheckedIdentity::default(),
    )
    .unwrap_err();
    assert!(error.downcast_ref::<UsageError>().is_some());
    let text = one_line(&error);
    assert!(
        text.contains("per-device counter qualifiers are not supported"),
        "{text}"
    );
    assert!(text.contains("write 'sim__bytes_read.sum'"), "{text}");
}

#[test]
fn unsupported_alias_is_a_usage_error() {
    let error = resolve_groups(
        &[names(&["SQ_INSTS_SALU"])],
        Some("SIM"),
        &CheckedIdentity::default(),
    )
    .unwrap_err();
    assert!(error.downcast_ref::<UsageError>().is_some());
    assert!(one_line(&error).contains("no NVIDIA equivalent"));
}

#[test]
fn packing_sim_metrics_keeps_every_name_once() {
    let groups = pack(
        &names(&[
            "sim__warps_launched.sum",
            "sim__inst_executed.sum",
            "sim__bytes_read.sum",
            "sim__warps_launched.sum",
            "sim__bytes_written.sum",
            "sim__cycles_elapsed.max",
        ]),
        None,
        true,
        &CheckedIdentity::default(),
    )
    .unwrap();
    let layout: Vec<Vec<&str>> = groups.iter().map(|(g, _)| g.metrics().collect()).collect();
    assert_eq!(
        layout,
        [
            vec!["sim__warps_launched.sum", "sim__inst_executed.sum"],
            vec!["sim__bytes_read.sum", "sim__bytes_written.sum"],
            vec!["sim__cycles_elapsed.max"],
        ]
    );
}

#[test]
fn a_name_twice_in_one_group_is_collected_once() {
    let groups = resolve_groups(
        &[names(&[
            "sim__warps_launched.sum",
            "sim__inst_executed.sum",
            "sim__warps_launched.sum",
        ])],
        None,
        &CheckedIdentity::default(),
    )
    .unwrap();
    let layout: Vec<&str> = groups[0].metrics().collect();
    assert_eq!(
        layout,
        ["sim__warps_launched.sum", "sim__inst_executed.sum"]
    );
}

#[test]
fn unknown_chip_is_a_usage_error() {
    std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR)
        .expect("KREPLAY_CUPTI_DIR is not set: run the tests through .ci/run");
    let error = resolve_groups(
        &[names(&["sm__warps_launched.sum"])],
        Some("GZ999"),
        &CheckedIdentity::default(),
    )
    .unwrap_err();
    assert!(error.downcast_ref::<UsageError>().is_some());
    assert!(one_line(&error).contains("unknown chip 'GZ999'"));
}

#[test]
fn aliases_resolve_on_gh100_and_keep_the_requested_name() {
    std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR)
        .expect("KREPLAY_CUPTI_DIR is not set: run the tests through .ci/run");
    let groups = resolve_groups(
        &[names(&[
            "SQ_WAVES",
            "FETCH_SIZE",
            "smsp__inst_executed.sum",
        ])],
        Some("gh100"),
        &CheckedIdentity::default(),
    )
    .unwrap();
    let requested: Vec<&str> = groups[0]
        .counters
        .iter()
        .map(|c| c.requested.as_str())
        .collect();
    let metrics: Vec<&str> = groups[0].metrics().collect();
    assert_eq!(
        requested,
        ["SQ_WAVES", "FETCH_SIZE", "smsp__inst_executed.sum"]
    );
    assert_eq!(
        metrics,
        [
            "sm__warps_launched.sum",
            "dram__bytes_read.sum",
            "smsp__inst_executed.sum"
        ]
    );
}

#[test]
fn packing_on_gh100_keeps_two_names_for_one_metric_together() {
    std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR)
        .expect("KREPLAY_CUPTI_DIR is not set: run the tests through .ci/run");
    let groups = pack(
        &names(&[
            "SQ_WAVES",
            "Wavefronts",
            "sm__warps_launched.sum",
            "TCC_HIT",
        ]),
        Some("GH100"),
        true,
        &CheckedIdentity::default(),
    )
    .unwrap();
    assert_eq!(groups.len(), 1);
    let requested: Vec<&str> = groups[0]
        .0
        .counters
        .iter()
        .map(|c| c.requested.as_str())
        .collect();
    assert_eq!(
        requested,
        [
            "SQ_WAVES",
            "Wavefronts",
            "sm__warps_launched.sum",
            "TCC_HIT"
        ]
    );
}
