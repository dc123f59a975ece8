//! `kreplay avail` as users run it: the real binary against CUPTI's host API from the
//! nvidia-cuda-cupti wheel (`.ci/run` installs it and sets KREPLAY_CUPTI_DIR), with no GPU.

use std::process::{Command, Output};

fn kreplay(args: &[&str]) -> Output {
    if std::env::var_os("KREPLAY_CUPTI_DIR").is_none() {
        panic!("KREPLAY_CUPTI_DIR is not set: run the tests through .ci/run, which installs the nvidia-cuda-cupti wheel and sets it");
    }
    Command::new(env!("CARGO_BIN_EXE_kreplay"))
        .args(args)
        .output()
        .expect("run kreplay")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn list_for_gh100_prints_more_than_3000_metrics() {
    let output = kreplay(&["avail", "list", "--chip", "GH100"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    let names: Vec<&str> = text
        .lines()
        .skip_while(|line| *line != "PMC:")
        .skip(1)
        .flat_map(str::split_whitespace)
        .collect();
    assert!(names.len() > 3000, "{} names", names.len());
    assert!(names.contains(&"sm__warps_launched.sum"));
    assert!(text.contains("GH100"), "{text}");
}

#[test]
fn pmc_check_of_a_single_pass_group_exits_0() {
    let output = kreplay(&[
        "avail",
        "pmc-check",
        "--chip",
        "gh100",
        "sm__warps_launched.sum",
        "smsp__inst_executed.sum",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(
        stdout(&output).trim_end(),
        "Following input counters can be collected together on GH100: sm__warps_launched.sum smsp__inst_executed.sum"
    );
}

#[test]
fn pmc_check_of_a_multi_pass_metric_exits_non_zero_with_the_pass_count() {
    let output = kreplay(&[
        "avail",
        "pmc-check",
        "--chip",
        "GH100",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = format!("{}{}", stdout(&output), stderr(&output));
    assert!(text.contains("8 hardware passes"), "{text}");
}

#[test]
fn pmc_check_of_a_multi_pass_group_prints_a_split() {
    let output = kreplay(&[
        "avail",
        "pmc-check",
        "--chip",
        "GH100",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum,smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
        "l1tex__t_sector_hit_rate.pct",
        "dram__bytes_read.sum",
        "lts__t_sectors_lookup_hit.sum",
        "lts__t_sectors_lookup_miss.sum",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("hardware passes"), "{text}");
    assert!(text.contains("--pmc "), "{text}");
}

#[test]
fn info_prints_description_and_unit() {
    let output = kreplay(&[
        "avail",
        "info",
        "--chip",
        "GH100",
        "--pmc",
        "dram__bytes_read.sum",
    ]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(text.contains("# of bytes read from DRAM"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("Unit") && l.ends_with("byte")),
        "{text}"
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("Hardware_Unit") && l.ends_with("dram")),
        "{text}"
    );
}

#[test]
fn info_of_an_alias_names_the_metric() {
    let output = kreplay(&["avail", "info", "--chip", "GH100", "--pmc", "SQ_WAVES"]);
    assert!(output.status.success(), "{}", stderr(&output));
    let text = stdout(&output);
    assert!(
        text.lines()
            .any(|l| l.starts_with("Metric") && l.ends_with("sm__warps_launched.sum")),
        "{text}"
    );
}

#[test]
fn misspelt_metric_is_refused_with_the_real_name_suggested() {
    let output = kreplay(&[
        "avail",
        "pmc-check",
        "--chip",
        "GH100",
        "sm__warp_launched.sum",
    ]);
    assert_eq!(output.status.code(), Some(2), "usage error");
    let text = stderr(&output);
    assert!(
        text.contains("did you mean sm__warps_launched.sum"),
        "{text}"
    );
    assert_eq!(text.trim_end().lines().count(), 1, "one line: {text}");
}

#[test]
fn unknown_chip_lists_the_known_chips() {
    let output = kreplay(&["avail", "list", "--chip", "GZ999"]);
    assert_eq!(output.status.code(), Some(2));
    let text = stderr(&output);
    assert!(
        text.contains("unknown chip 'GZ999'") && text.contains("GH100"),
        "{text}"
    );
}

#[test]
fn sim_chip_uses_the_software_device_catalog() {
    let output = kreplay(&[
        "avail",
        "pmc-check",
        "--chip",
        "sim",
        "sim__warps_launched.sum",
        "sim__bytes_read.sum",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).contains("collected together on SIM"));
}
