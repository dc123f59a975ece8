use super::*;
use std::collections::HashMap;

/// A catalog where each metric costs some counter slots and a pass holds `slots_per_pass`.
struct FakeCatalog {
    cost: HashMap<String, u32>,
    slots_per_pass: u32,
}

impl FakeCatalog {
    fn new(metrics: &[(&str, u32)], slots_per_pass: u32) -> Self {
        FakeCatalog {
            cost: metrics.iter().map(|(m, c)| (m.to_string(), *c)).collect(),
            slots_per_pass,
        }
    }

    fn gpu() -> Self {
        Self::new(
            &[
                ("sm__warps_launched.sum", 1),
                ("sm__ctas_launched.sum", 1),
                ("smsp__inst_executed.sum", 1),
                ("dram__bytes_read.sum", 2),
                ("dram__bytes_write.sum", 2),
                ("lts__t_sector_hit_rate.pct", 3),
                ("sm__throughput.avg.pct_of_peak_sustained_elapsed", 30),
            ],
            4,
        )
    }
}

impl MetricCatalog for FakeCatalog {
    fn chip(&self) -> &str {
        "FAKE"
    }
    fn metric_names(&self) -> Result<Vec<String>, CatalogError> {
        let mut names: Vec<String> = self.cost.keys().cloned().collect();
        names.sort();
        Ok(names)
    }
    fn describe(&self, metric: &str) -> Result<MetricDescription, CatalogError> {
        if !self.cost.contains_key(metric) {
            return Err(CatalogError::UnknownMetric {
                name: metric.to_string(),
                chip: "FAKE".to_string(),
                suggestions: Vec::new(),
            });
        }
        Ok(MetricDescription {
            name: metric.to_string(),
            ..Default::default()
        })
    }
    fn passes(&self, metrics: &[&str]) -> Result<u32, CatalogError> {
        let mut slots = 0;
        for metric in metrics {
            self.describe(metric)?;
            slots += self.cost[*metric];
        }
        Ok(slots.div_ceil(self.slots_per_pass))
    }
}

fn assert_partition(catalog: &FakeCatalog, input: &[&str], groups: &[Vec<String>]) {
    let mut flat: Vec<&str> = groups.iter().flatten().map(String::as_str).collect();
    let mut expected: Vec<&str> = input.to_vec();
    flat.sort();
    expected.sort();
    expected.dedup();
    assert_eq!(flat, expected, "every metric exactly once");
    for group in groups {
        let refs: Vec<&str> = group.iter().map(String::as_str).collect();
        assert_eq!(catalog.passes(&refs).unwrap(), 1, "{group:?} fits one pass");
    }
}

#[test]
fn packing_puts_whole_groups_first_fit_into_passes() {
    // Each "group" weighs its index + 1; a pass holds a weight of 4 at most.
    let weight = |members: &[usize]| members.iter().map(|g| g + 1).sum::<usize>();
    let passes = pack_groups(4, |m| Ok::<_, ()>(weight(m) <= 4)).unwrap();
    assert_eq!(passes, vec![vec![0, 1], vec![2], vec![3]]);
    let all_fit = pack_groups(3, |_| Ok::<_, ()>(true)).unwrap();
    assert_eq!(all_fit, vec![vec![0, 1, 2]]);
    let none_fit = pack_groups(3, |m| Ok::<_, ()>(m.len() == 1)).unwrap();
    assert_eq!(none_fit, vec![vec![0], vec![1], vec![2]]);
    assert_eq!(pack_groups(2, |_| Err::<bool, _>("boom")), Err("boom"));
}

#[test]
fn misspelt_metric_suggests_the_real_name_first() {
    let catalog = FakeCatalog::gpu();
    let error = check_group(&catalog, &["sm__warp_launched.sum"]).unwrap_err();
    match &error {
        GroupError::Catalog(CatalogError::UnknownMetric { suggestions, .. }) => {
            assert_eq!(suggestions[0], "sm__warps_launched.sum");
        }
        other => panic!("unexpected {other:?}"),
    }
    let message = error.to_string();
    assert!(
        message.contains("did you mean sm__warps_launched.sum"),
        "{message}"
    );
}

#[test]
fn partial_name_suggests_names_containing_it() {
    let known = FakeCatalog::gpu().metric_names().unwrap();
    assert_eq!(
        suggestions(&known, "bytes_write"),
        ["dram__bytes_write.sum"]
    );
    assert!(suggestions(&known, "completely_unrelated_thing").is_empty());
    let rollups: Vec<String> = [
        "sm__warps_launched.avg",
        "sm__warps_launched.max",
        "sm__warps_launched.sum",
        "smsp__warps_launched.avg",
        "smsp__warps_launched.sum",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(
        suggestions(&rollups, "warps_launched"),
        ["sm__warps_launched.sum", "smsp__warps_launched.sum"]
    );
}

#[test]
fn unknown_metric_without_close_names_points_at_the_list() {
    let catalog = FakeCatalog::gpu();
    let message = check_group(&catalog, &["zzzzzzzz"])
        .unwrap_err()
        .to_string();
    assert!(message.contains("kreplay avail list"), "{message}");
}

#[test]
fn single_pass_group_is_accepted() {
    let catalog = FakeCatalog::gpu();
    check_group(
        &catalog,
        &["sm__warps_launched.sum", "dram__bytes_read.sum"],
    )
    .unwrap();
}

#[test]
fn empty_group_is_refused() {
    assert_eq!(
        check_group(&FakeCatalog::gpu(), &[]),
        Err(GroupError::Empty)
    );
}

#[test]
fn multi_pass_group_names_its_passes_and_a_split_that_fits() {
    let catalog = FakeCatalog::gpu();
    let group = [
        "dram__bytes_read.sum",
        "dram__bytes_write.sum",
        "lts__t_sector_hit_rate.pct",
        "sm__warps_launched.sum",
    ];
    let error = check_group(&catalog, &group).unwrap_err();
    let GroupError::TooManyPasses { passes, split, .. } = &error else {
        panic!("unexpected {error:?}");
    };
    assert_eq!(*passes, 2);
    assert_partition(&catalog, &group, split);
    let message = error.to_string();
    assert!(
        message.contains("needs 2 hardware passes on FAKE"),
        "{message}"
    );
    assert!(
        message.contains("--pmc dram__bytes_read.sum dram__bytes_write.sum --pmc"),
        "{message}"
    );
}

#[test]
fn metric_needing_several_passes_alone_is_named() {
    let catalog = FakeCatalog::gpu();
    let metric = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
    let error = check_group(&catalog, &[metric]).unwrap_err();
    assert_eq!(
        error,
        GroupError::MetricNeedsPasses {
            metric: metric.to_string(),
            passes: 8,
            chip: "FAKE".to_string()
        }
    );
    assert!(error.to_string().contains("needs 8 hardware passes"));
    let error = pack_metrics(&catalog, &["sm__warps_launched.sum", metric]).unwrap_err();
    assert!(
        matches!(error, GroupError::MetricNeedsPasses { .. }),
        "{error:?}"
    );
    // For kernel replay's --metrics it is a group of its own, over its 8 passes, and the
    // single-pass metrics after it still pack together (not into its group).
    let spanned = pack_metrics_spanning(
        &catalog,
        &["sm__warps_launched.sum", metric, "dram__bytes_read.sum"],
        true,
    )
    .unwrap();
    assert_eq!(
        spanned,
        vec![
            (
                vec![
                    "sm__warps_launched.sum".to_string(),
                    "dram__bytes_read.sum".to_string()
                ],
                1
            ),
            (vec![metric.to_string()], 8),
        ]
    );
}

#[test]
fn multi_pass_metrics_share_passes_and_single_pass_groups_stay_apart() {
    // Two metrics of 2 passes each need 3 together, with a spare slot a single-pass group
    // would fit in; it stays a pass of its own (CUPTI would spread its counters over the
    // three), and the first single-pass group comes first (a dispatch that runs once is
    // measured with it).
    let catalog = FakeCatalog::new(&[("a", 5), ("b", 5), ("mid", 2), ("big", 3), ("c", 8)], 4);
    let spanned = pack_metrics_spanning(&catalog, &["big", "a", "mid", "b"], true).unwrap();
    assert_eq!(
        spanned,
        vec![
            (vec!["big".to_string()], 1),
            (vec!["a".into(), "b".into()], 3),
            (vec!["mid".to_string()], 1),
        ]
    );
    // A list that starts with a multi-pass metric still puts a single-pass group first.
    let spanned = pack_metrics_spanning(&catalog, &["a", "mid"], true).unwrap();
    assert_eq!(spanned[0], (vec!["mid".to_string()], 1));
    // Without sharing (application replay) the groups stay as packed.
    let apart = pack_metrics_spanning(&catalog, &["big", "a", "mid", "b"], false).unwrap();
    assert_eq!(apart.len(), 4);
    // Sharing that saves nothing keeps the groups apart: 2 + 2 passes either way.
    let apart = pack_metrics_spanning(&catalog, &["c", "a"], true).unwrap();
    assert_eq!(
        apart,
        vec![(vec!["c".to_string()], 2), (vec!["a".to_string()], 2)]
    );
}

#[test]
fn packing_fills_groups_first_fit_and_drops_repeats() {
    let catalog = FakeCatalog::gpu();
    let input = [
        "dram__bytes_read.sum",
        "lts__t_sector_hit_rate.pct",
        "dram__bytes_write.sum",
        "sm__warps_launched.sum",
        "sm__ctas_launched.sum",
        "sm__warps_launched.sum",
    ];
    let groups = pack_metrics(&catalog, &input).unwrap();
    assert_eq!(
        groups,
        [
            vec!["dram__bytes_read.sum", "dram__bytes_write.sum"],
            vec!["lts__t_sector_hit_rate.pct", "sm__warps_launched.sum"],
            vec!["sm__ctas_launched.sum"],
        ]
    );
    assert_partition(&catalog, &input, &groups);
}

#[test]
fn packing_reports_unknown_metrics_before_any_pass_query() {
    let catalog = FakeCatalog::gpu();
    let error =
        pack_metrics(&catalog, &["sm__warps_launched.sum", "dram__byte_read.sum"]).unwrap_err();
    assert!(
        error
            .to_string()
            .contains("did you mean dram__bytes_read.sum"),
        "{error}"
    );
}

proptest::proptest! {
    #[test]
    fn packing_is_a_partition_into_single_pass_groups(
        picks in proptest::collection::vec(0usize..6, 1..20)
    ) {
        let catalog = FakeCatalog::gpu();
        let names = catalog.metric_names().unwrap();
        let fitting: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|m| catalog.passes(&[m]).unwrap() == 1)
            .collect();
        let input: Vec<&str> = picks.iter().map(|&i| fitting[i % fitting.len()]).collect();
        let groups = pack_metrics(&catalog, &input).unwrap();
        assert_partition(&catalog, &input, &groups);
        // Greedy first fit never uses more than twice the optimum; with these costs
        // (slots 1..3 of 4) a lower bound is the total cost over the pass size.
        let total: u32 = groups.iter().flatten().map(|m| catalog.cost[m]).sum();
        proptest::prop_assert!(groups.len() as u32 <= 2 * total.div_ceil(4));
    }
}
