//! Packing counters into hardware passes: groups into shared passes, a flat list of metrics
//! into single-pass groups, and multi-pass groups into fewer passes.

use crate::catalog::group_error::GroupError;
use crate::catalog::metric::MetricCatalog;
use crate::catalog::names::check_known;

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

/// First-fit packing; with `spanning`, a metric that alone needs several passes becomes a group
/// of its own (with its pass count) instead of an error.
pub(crate) fn pack_known(
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
