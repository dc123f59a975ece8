//! A chip's base metrics ([`MetricIndex`]), read once from a host object: the type of each
//! and the names `avail list` shows.

use super::errors::unavailable;
use super::host::{HostObject, MetricType, METRIC_TYPES};
use kreplay_core::catalog::CatalogError;
use std::collections::HashMap;

/// The roll-ups `avail list` shows for each metric type (the first component of CUPTI's
/// sub-metric list); the full list of sub-metrics is in `avail info`.
fn is_listed_rollup(metric_type: MetricType, sub_metric: &str) -> bool {
    if metric_type == MetricType::Counter {
        // `.sum .avg .min .max`: one dot, not `.sum.per_second` and friends.
        sub_metric.matches('.').count() == 1
    } else {
        // Ratios: `.pct .ratio .max_rate`; throughputs: `.avg.pct_of_peak_sustained_elapsed`
        // and the like, which have nothing shorter.
        true
    }
}

/// The base metrics of a chip, read once.
pub(super) struct MetricIndex {
    /// Base name → metric type, e.g. `sm__warps_launched` → counter.
    pub(super) types: HashMap<String, MetricType>,
    /// Every base metric with its listed roll-ups, sorted.
    pub(super) listed_names: Vec<String>,
}

impl MetricIndex {
    /// The index of the metrics `host` knows. `host` must be fresh: CUPTI appends to the list
    /// it returns on every call, so a second query on the same object would list every metric
    /// twice.
    pub(super) fn read(host: &HostObject<'_>) -> Result<MetricIndex, CatalogError> {
        let mut types = HashMap::new();
        let mut listed_names = Vec::new();
        for metric_type in METRIC_TYPES {
            for base in host.base_metrics(metric_type).map_err(unavailable)? {
                if types.insert(base.clone(), metric_type).is_some() {
                    continue;
                }
                let subs = host.sub_metrics(metric_type, &base).map_err(unavailable)?;
                listed_names.extend(
                    subs.iter()
                        .filter(|sub| is_listed_rollup(metric_type, sub))
                        .map(|sub| format!("{base}{sub}")),
                );
            }
        }
        listed_names.sort();
        listed_names.dedup();
        Ok(MetricIndex {
            types,
            listed_names,
        })
    }

    /// Splits a full metric name into its base metric and type, if the base is known.
    /// Base names may contain dots themselves (`TPC.TriageCompute.sm__…`), so every split
    /// point is tried, longest base first.
    pub(super) fn split<'a>(&self, metric: &'a str) -> Option<(&'a str, MetricType)> {
        metric
            .char_indices()
            .rev()
            .filter(|&(_, c)| c == '.')
            .find_map(|(at, _)| {
                let base = &metric[..at];
                self.types.get(base).map(|&metric_type| (base, metric_type))
            })
    }
}
