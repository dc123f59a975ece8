//! The catalog against CUPTI's host library for GH100 (no GPU), and one device check.

use super::cupti_catalog::CuptiCatalog;
use super::errors::unavailable;
use super::host::CuptiCallError;
use super::tests_support::gh100;
use kreplay_core::catalog::{
    check_group, lookup, pack_metrics, CatalogError, GroupError, MetricCatalog,
};

#[test]
fn counters_held_elsewhere_are_their_own_error() {
    let error = |code| CuptiCallError {
        call: "cuptiProfilerGetCounterAvailability",
        code,
        code_name: String::new(),
        message: String::new(),
    };
    let busy = unavailable(error(kreplay_cuda::cupti::HARDWARE_BUSY));
    assert!(
        matches!(&busy, CatalogError::CountersBusy(m) if m.contains("another process")),
        "{busy:?}"
    );
    let other = unavailable(error(kreplay_cuda::cupti::UNKNOWN));
    assert!(matches!(other, CatalogError::Unavailable(_)), "{other:?}");
}

/// On the GPU machine: `cargo test -p kreplay-counters -- --ignored device_catalog`.
#[test]
#[ignore = "needs an NVIDIA GPU; run with --ignored on the GPU machine"]
fn device_catalog_reads_chip_and_counter_availability() {
    let device = CuptiCatalog::for_device(0).unwrap_or_else(|e| panic!("{e}"));
    let host = CuptiCatalog::for_chip(device.chip()).unwrap();
    let image_bytes = device.availability.as_ref().map_or(0, Vec::len);
    eprintln!(
        "device 0: chip {}, counter-availability image {image_bytes} bytes",
        device.chip()
    );
    assert!(image_bytes > 0);
    assert_eq!(
        device
            .passes(&["sm__warps_launched.sum", "smsp__inst_executed.sum"])
            .unwrap(),
        1
    );
    assert!(device.metric_names().unwrap().len() > 3000);
    for metric in [
        "lts__t_sector_hit_rate.pct",
        "l1tex__t_sector_hit_rate.pct",
        "gpu__time_duration.sum",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ] {
        let (on_device, chip_only) = (
            device.passes(&[metric]).unwrap(),
            host.passes(&[metric]).unwrap(),
        );
        eprintln!("{metric}: {on_device} passes with the device image, {chip_only} chip-only");
        // The image can only take counters away, never add room.
        assert!(on_device >= chip_only, "{metric}");
    }
}

#[test]
fn lists_more_than_3000_names_with_rollups() {
    let names = gh100().metric_names().unwrap();
    assert!(names.len() > 3000, "{} names", names.len());
    for expected in [
        "sm__warps_launched.sum",
        "sm__warps_launched.avg",
        "lts__t_sector_hit_rate.pct",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    ] {
        assert!(
            names.binary_search(&expected.to_string()).is_ok(),
            "{expected} listed"
        );
    }
    assert!(
        !names.contains(&"sm__warps_launched.sum.per_second".to_string()),
        "sub-metrics are for avail info"
    );
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(unique.len(), names.len(), "no name listed twice");
}

#[test]
fn chip_names_are_accepted_in_any_case() {
    assert_eq!(CuptiCatalog::for_chip("gh100").unwrap().chip(), "GH100");
}

#[test]
fn unknown_chip_lists_the_known_ones() {
    gh100();
    let message = CuptiCatalog::for_chip("GZ999").unwrap_err().to_string();
    assert!(message.contains("unknown chip 'GZ999'"), "{message}");
    assert!(
        message.contains("GH100") && message.contains("AD102"),
        "{message}"
    );
}

#[test]
fn describes_a_metric_with_unit_and_description() {
    let description = gh100().describe("dram__bytes_read.sum").unwrap();
    assert_eq!(description.description, "# of bytes read from DRAM");
    assert_eq!(description.unit, "byte");
    assert_eq!(description.hw_unit, "dram");
    assert_eq!(description.metric_type, "counter");
    assert!(description
        .sub_metrics
        .contains(&".sum.per_second".to_string()));
}

#[test]
fn sub_metrics_are_known_and_base_names_alone_are_not() {
    let catalog = gh100();
    catalog.describe("dram__bytes_read.sum.per_second").unwrap();
    for bad in [
        "dram__bytes_read",
        "dram__bytes_read.bogus",
        "dram__bytes_read.sum.",
        ".sum",
        "",
    ] {
        assert!(
            matches!(
                catalog.describe(bad),
                Err(CatalogError::UnknownMetric { .. })
            ),
            "{bad:?} must be unknown"
        );
    }
}

#[test]
fn misspelt_metric_suggests_the_real_one() {
    let error = lookup(&gh100(), "sm__warp_launched.sum").unwrap_err();
    let CatalogError::UnknownMetric { suggestions, .. } = &error else {
        panic!("unexpected {error:?}");
    };
    assert_eq!(suggestions[0], "sm__warps_launched.sum", "{error}");
}

#[test]
fn pass_counts_match_the_reference_measurements() {
    let catalog = gh100();
    assert_eq!(
        catalog
            .passes(&["sm__warps_launched.sum", "smsp__inst_executed.sum"])
            .unwrap(),
        1
    );
    assert_eq!(
        catalog
            .passes(&["sm__throughput.avg.pct_of_peak_sustained_elapsed"])
            .unwrap(),
        8
    );
    let seven = [
        "sm__warps_launched.sum",
        "sm__cycles_active.avg",
        "gpc__cycles_elapsed.max",
        "dram__bytes_read.sum",
        "smsp__inst_executed.sum",
        "lts__t_bytes.sum",
        "l1tex__t_bytes.sum",
    ];
    assert_eq!(catalog.passes(&seven).unwrap(), 1);
}

#[test]
fn passes_of_an_unknown_metric_is_unknown_metric() {
    let error = gh100()
        .passes(&["sm__warps_launched.sum", "bogus__metric.sum"])
        .unwrap_err();
    assert!(
        matches!(error, CatalogError::UnknownMetric { ref name, .. } if name == "bogus__metric.sum"),
        "{error:?}"
    );
}

#[test]
fn multi_pass_group_is_refused_with_a_split_that_fits() {
    let catalog = gh100();
    // Instruction-mix metrics and hit rates do not share a pass (reference §6.3).
    // (`lts__t_sector_hit_rate.pct` is left out: alone it needs 2 passes with this CUPTI.)
    let group = [
        "sm__ctas_launched.sum",
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
        "l1tex__t_sector_hit_rate.pct",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "lts__t_sectors_lookup_hit.sum",
        "lts__t_sectors_lookup_miss.sum",
    ];
    let passes = catalog.passes(&group).unwrap();
    assert!(passes > 1, "the group needs {passes} passes");
    match check_group(&catalog, &group).unwrap_err() {
        GroupError::TooManyPasses {
            passes: reported,
            split,
            ..
        } => {
            assert_eq!(reported, passes);
            assert_single_pass_partition(&catalog, &group, &split);
        }
        other => panic!("unexpected {other:?}"),
    }
}

fn assert_single_pass_partition(catalog: &CuptiCatalog, input: &[&str], groups: &[Vec<String>]) {
    let mut flat: Vec<&str> = groups.iter().flatten().map(String::as_str).collect();
    let mut expected = input.to_vec();
    flat.sort();
    expected.sort();
    expected.dedup();
    assert_eq!(flat, expected, "no metric lost or duplicated");
    for group in groups {
        let refs: Vec<&str> = group.iter().map(String::as_str).collect();
        assert_eq!(catalog.passes(&refs).unwrap(), 1, "{group:?} is one pass");
    }
}

#[test]
fn packing_against_the_library_gives_single_pass_groups() {
    let catalog = gh100();
    // Every listed counter `.sum` of a few hardware units: far more than one pass holds.
    let names = catalog.metric_names().unwrap();
    let picked: Vec<&str> = names
        .iter()
        .map(String::as_str)
        .filter(|n| {
            (n.starts_with("smsp__sass_thread_inst_executed_op_")
                || n.starts_with("lts__t_sectors_op_"))
                && n.ends_with(".sum")
        })
        .take(40)
        .collect();
    assert!(picked.len() >= 20, "{picked:?}");
    assert!(catalog.passes(&picked).unwrap() > 1);
    let groups = pack_metrics(&catalog, &picked).unwrap();
    assert!(groups.len() > 1);
    assert_single_pass_partition(&catalog, &picked, &groups);
}

/// A typical mixed list: greedy first fit reaches the pass count CUPTI's own scheduler
/// needs for the whole set, which no grouping can beat.
#[test]
fn packing_a_mixed_list_needs_no_more_groups_than_cupti_needs_passes() {
    let catalog = gh100();
    let mixed = [
        "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
        "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
        "l1tex__t_sector_hit_rate.pct",
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "lts__t_sectors_lookup_hit.sum",
        "lts__t_sectors_lookup_miss.sum",
        "sm__warps_launched.sum",
        "smsp__inst_executed.sum",
        "sm__cycles_active.avg",
        "gpc__cycles_elapsed.max",
        "l1tex__t_bytes.sum",
        "lts__t_bytes.sum",
        "sm__inst_executed_pipe_tensor_op_hmma.sum",
        "smsp__sass_inst_executed_op_shared.sum",
        "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "gpu__time_duration.sum",
        "smsp__sass_inst_executed_op_global_ld.sum",
        "smsp__sass_inst_executed_op_global_st.sum",
        "sm__pipe_tensor_op_hmma_cycles_active.sum",
        "smsp__inst_executed_pipe_uniform.sum",
    ];
    let groups = pack_metrics(&catalog, &mixed).unwrap();
    assert_single_pass_partition(&catalog, &mixed, &groups);
    let cupti_passes = catalog.passes(&mixed).unwrap();
    assert!(cupti_passes > 1);
    assert_eq!(groups.len() as u32, cupti_passes, "{groups:?}");
}

#[test]
fn packing_refuses_a_metric_that_alone_needs_several_passes() {
    let error = pack_metrics(
        &gh100(),
        &[
            "sm__warps_launched.sum",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ],
    )
    .unwrap_err();
    assert_eq!(
        error,
        GroupError::MetricNeedsPasses {
            metric: "sm__throughput.avg.pct_of_peak_sustained_elapsed".to_string(),
            passes: 8,
            chip: "GH100".to_string(),
        }
    );
}
