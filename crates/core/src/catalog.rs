//! What a device's metric catalog answers, with no device needed: which metrics exist, what
//! they mean, and how many hardware passes a set of them needs. The CUPTI catalog
//! (`kreplay-cuda`, chips such as `GH100`) and the reference software device's catalog
//! (`kreplay-sim`, chip `SIM`) implement [`MetricCatalog`]; group checking, suggestions for
//! misspelt names and the packing of a flat list into single-pass groups are written once here.

/// What `kreplay avail info` prints of a metric.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct MetricDescription {
    pub name: String,
    pub description: String,
    /// The hardware unit that counts it (e.g. `sm`, `dram`, `lts`).
    pub hw_unit: String,
    /// The unit of its values (e.g. `warp`, `byte`, `cycle`).
    pub unit: String,
    /// Counter, ratio or throughput.
    pub metric_type: String,
    /// Roll-ups and sub-metrics the base name accepts (e.g. `.sum`, `.avg`, `.max`, `.per_second`).
    pub sub_metrics: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CatalogError {
    /// A name the catalog does not know; `suggestions` are the closest known names.
    #[error("unknown metric '{name}' on {chip}{}", suggestion_text(.suggestions))]
    UnknownMetric {
        name: String,
        chip: String,
        suggestions: Vec<String>,
    },
    /// The library or the chip could not answer.
    #[error("{0}")]
    Unavailable(String),
    /// The device's counters are held by another process (another profiler): the message says
    /// so and that one process per device can profile at a time.
    #[error("{0}")]
    CountersBusy(String),
}

fn suggestion_text(suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        "; list the known metrics with `kreplay avail list`".to_string()
    } else {
        format!("; did you mean {}?", suggestions.join(", "))
    }
}

pub trait MetricCatalog {
    /// The chip the catalog describes, upper case (`GH100`, `SIM`).
    fn chip(&self) -> &str;
    /// Every collectable metric name (base metrics with their usual roll-ups, as the catalog lists them).
    fn metric_names(&self) -> Result<Vec<String>, CatalogError>;
    /// One metric's description; unknown names are [`CatalogError::UnknownMetric`].
    fn describe(&self, metric: &str) -> Result<MetricDescription, CatalogError>;
    /// Hardware passes needed to collect `metrics` together (1 = they fit one pass).
    fn passes(&self, metrics: &[&str]) -> Result<u32, CatalogError>;
}

/// The closest known names to a misspelt one, best first (at most [`MAX_SUGGESTIONS`]).
///
/// Edit distance finds typos (`sm__warp_launched.sum` → `sm__warps_launched.sum`); when nothing
/// is that close, names containing what was typed are offered (`warps_launched` →
/// `sm__warps_launched.sum`), so a partial name still leads somewhere.
pub fn suggestions(known: &[String], name: &str) -> Vec<String> {
    let typed = name.to_ascii_lowercase();
    // Allow about one edit in five characters, and at least two (short names).
    let max_distance = (typed.len() / 5).max(2);
    let mut close: Vec<(usize, &String)> = known
        .iter()
        .filter(|candidate| candidate.len().abs_diff(typed.len()) <= max_distance)
        .map(|candidate| {
            let distance = strsim::levenshtein(&typed, &candidate.to_ascii_lowercase());
            (distance, candidate)
        })
        .filter(|(distance, _)| *distance <= max_distance)
        .collect();
    close.sort();
    if close.is_empty() && typed.len() >= 3 {
        let mut containing: Vec<&String> = known
            .iter()
            .filter(|candidate| candidate.to_ascii_lowercase().contains(&typed))
            .collect();
        // Shortest first, `.sum` before the other roll-ups of the same length, and one name per
        // base metric so that three roll-ups of one metric do not crowd out the others.
        containing.sort_by_key(|candidate| {
            (
                candidate.len(),
                !candidate.ends_with(".sum"),
                candidate.as_str(),
            )
        });
        let mut bases = std::collections::HashSet::new();
        return containing
            .into_iter()
            .filter(|candidate| bases.insert(candidate.split('.').next().unwrap_or(candidate)))
            .take(MAX_SUGGESTIONS)
            .cloned()
            .collect();
    }
    close
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, name)| name.clone())
        .collect()
}

/// How many names an unknown-metric error suggests.
pub const MAX_SUGGESTIONS: usize = 3;

/// [`MetricCatalog::describe`], with the closest known names filled in when `metric` is unknown.
pub fn lookup(
    catalog: &dyn MetricCatalog,
    metric: &str,
) -> Result<MetricDescription, CatalogError> {
    catalog
        .describe(metric)
        .map_err(|error| with_suggestions(catalog, error))
}

/// Fills an [`CatalogError::UnknownMetric`]'s suggestions from the catalog's names (if the
/// catalog left them empty); other errors pass through.
fn with_suggestions(catalog: &dyn MetricCatalog, error: CatalogError) -> CatalogError {
    match error {
        CatalogError::UnknownMetric {
            name,
            chip,
            suggestions: found,
        } if found.is_empty() => {
            let found = catalog
                .metric_names()
                .map(|known| suggestions(&known, &name))
                .unwrap_or_default();
            CatalogError::UnknownMetric {
                name,
                chip,
                suggestions: found,
            }
        }
        other => other,
    }
}

/// Why a counter group cannot be collected as one kernel-replay pass.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GroupError {
    /// An unknown metric (with suggestions), or a catalog that could not answer.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    #[error("empty counter group: each --pmc must name at least one counter")]
    Empty,
    /// The group needs several hardware passes; `split` is a grouping where each fits one.
    #[error(
        "counter group '{}' needs {passes} hardware passes on {chip}, but each group must fit one pass; split it, e.g. {}",
        .metrics.join(" "),
        pmc_flags(.split)
    )]
    TooManyPasses {
        metrics: Vec<String>,
        passes: u32,
        chip: String,
        split: Vec<Vec<String>>,
    },
    /// One metric alone needs several passes: no grouping can make it fit one.
    #[error(
        "metric '{metric}' alone needs {passes} hardware passes on {chip}, and each counter group must fit one pass; \
         choose metrics that fit one pass (check with `kreplay avail pmc-check --chip {chip} NAME`)"
    )]
    MetricNeedsPasses {
        metric: String,
        passes: u32,
        chip: String,
    },
}

/// `--pmc a b --pmc c`: how a user writes a split on the command line.
pub fn pmc_flags(groups: &[Vec<String>]) -> String {
    groups
        .iter()
        .map(|group| format!("--pmc {}", group.join(" ")))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Checks that every metric of `metrics` is known and that together they fit one pass.
///
/// An unknown metric names the closest known ones; a group needing several passes is refused
/// with its pass count and a split into single-pass groups (or, if one metric alone needs
/// several passes, an error naming that metric).
pub fn check_group(catalog: &dyn MetricCatalog, metrics: &[&str]) -> Result<(), GroupError> {
    if metrics.is_empty() {
        return Err(GroupError::Empty);
    }
    check_known(catalog, metrics)?;
    let passes = catalog.passes(metrics)?;
    if passes <= 1 {
        return Ok(());
    }
    let split = pack_known(catalog, metrics, false)?
        .into_iter()
        .map(|(group, _)| group)
        .collect();
    Err(GroupError::TooManyPasses {
        metrics: metrics.iter().map(|m| m.to_string()).collect(),
        passes,
        chip: catalog.chip().to_string(),
        split,
    })
}

/// Packs counter groups into hardware passes, first fit in group order: a group joins the first pass
/// whose union with it stays one pass (`fits`), or opens a new one. Returns the groups of each
/// pass. `fits` is asked only about unions of whole groups.
pub fn pack_groups<E>(
    count: usize,
    mut fits: impl FnMut(&[usize]) -> Result<bool, E>,
) -> Result<Vec<Vec<usize>>, E> {
    let mut passes: Vec<Vec<usize>> = Vec::new();
    for group in 0..count {
        let mut placed = false;
        for members in passes.iter_mut() {
            let mut trial = members.clone();
            trial.push(group);
            if fits(&trial)? {
                *members = trial;
                placed = true;
                break;
            }
        }
        if !placed {
            passes.push(vec![group]);
        }
    }
    Ok(passes)
}

/// Packs a flat list of metrics into the fewest single-pass groups it can find.
///
/// Greedy first fit, in the order given: each metric joins the first group it still fits in
/// one pass with, else starts a new group. Every metric appears exactly once in the result
/// (repeats in the input are collected once); a metric that alone needs several passes is an
/// error naming it.
pub fn pack_metrics(
    catalog: &dyn MetricCatalog,
    metrics: &[&str],
) -> Result<Vec<Vec<String>>, GroupError> {
    if metrics.is_empty() {
        return Err(GroupError::Empty);
    }
    check_known(catalog, metrics)?;
    Ok(pack_known(catalog, metrics, false)?
        .into_iter()
        .map(|(group, _)| group)
        .collect())
}

/// [`pack_metrics`] for kernel replay's `--metrics`: a metric that alone needs several passes
/// is not an error but a group of its own, measured over that many executions; with `share`
/// (kernel replay), such groups share passes where that takes fewer.
/// Returns each group with the hardware passes it needs (1 for packed groups).
pub fn pack_metrics_spanning(
    catalog: &dyn MetricCatalog,
    metrics: &[&str],
    share: bool,
) -> Result<Vec<(Vec<String>, u32)>, GroupError> {
    if metrics.is_empty() {
        return Err(GroupError::Empty);
    }
    check_known(catalog, metrics)?;
    let mut packed = pack_known(catalog, metrics, true)?;
    if share {
        share_passes(catalog, &mut packed);
    }
    Ok(packed)
}

fn check_known(catalog: &dyn MetricCatalog, metrics: &[&str]) -> Result<(), GroupError> {
    for metric in metrics {
        lookup(catalog, metric)?;
    }
    Ok(())
}

/// First-fit packing; with `spanning`, a metric that alone needs several passes becomes a group
/// of its own (with its pass count) instead of an error.
fn pack_known(
    catalog: &dyn MetricCatalog,
    metrics: &[&str],
    spanning: bool,
) -> Result<Vec<(Vec<String>, u32)>, GroupError> {
    let mut groups: Vec<Vec<&str>> = Vec::new();
    let mut alone_passes: Vec<u32> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for &metric in metrics {
        if !seen.insert(metric) {
            continue;
        }
        let mut placed = false;
        for (group, _) in groups
            .iter_mut()
            .zip(&alone_passes)
            .filter(|(_, passes)| **passes <= 1)
        {
            group.push(metric);
            if catalog.passes(group)? <= 1 {
                placed = true;
                break;
            }
            group.pop();
        }
        if placed {
            continue;
        }
        let alone = catalog.passes(&[metric])?;
        if alone > 1 && !spanning {
            return Err(GroupError::MetricNeedsPasses {
                metric: metric.to_string(),
                passes: alone,
                chip: catalog.chip().to_string(),
            });
        }
        groups.push(vec![metric]);
        alone_passes.push(alone);
    }
    Ok(groups
        .into_iter()
        .zip(alone_passes)
        .map(|(group, passes)| {
            (
                group.into_iter().map(str::to_string).collect(),
                passes.max(1),
            )
        })
        .collect())
}

/// Kernel replay's groups that need several passes, shared: CUPTI schedules a group's metrics
/// over its passes itself, so metrics that each need several passes are measured together when
/// that takes fewer passes than apart (Nsight Compute's `pct_of_peak` metrics share most of
/// their counters). A single-pass group never joins a multi-pass one, even where it would not
/// lengthen it: CUPTI may then spread its counters over that configuration's executions, and a
/// ratio of counters from two executions is not one execution's (docs/sections.md, 2026-12-04:
/// a one-block kernel of 4 warps read 5.1 active warps per active cycle). The first single-pass
/// group comes first: a dispatch that runs once (a graph launch, a kernel calling `printf`) is
/// measured with the first group only. A union CUPTI cannot schedule is not made.
fn share_passes(catalog: &dyn MetricCatalog, groups: &mut Vec<(Vec<String>, u32)>) {
    let passes_of = |a: &[String], b: &[String]| -> Option<u32> {
        let union: Vec<&str> = a.iter().chain(b).map(String::as_str).collect();
        catalog.passes(&union).ok()
    };
    let mut i = 0;
    while i < groups.len() {
        let mut j = i + 1;
        while groups[i].1 > 1 && j < groups.len() {
            if groups[j].1 > 1 {
                if let Some(together) = passes_of(&groups[i].0, &groups[j].0) {
                    if together < groups[i].1 + groups[j].1 {
                        let (metrics, _) = groups.remove(j);
                        groups[i].0.extend(metrics);
                        groups[i].1 = together;
                        continue;
                    }
                }
            }
            j += 1;
        }
        i += 1;
    }
    if let Some(first) = groups.iter().position(|(_, p)| *p <= 1) {
        let group = groups.remove(first);
        groups.insert(0, group);
    }
}

#[cfg(test)]
mod tests {
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
}
