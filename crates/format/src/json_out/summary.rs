//! The `summary` of a process: rocprofv3's `statistics<uint64_t, double>` of each traced
//! domain's durations (kernel dispatches, CUDA API calls, copies, allocations, markers),
//! serialized as its `serialize` writes them.

use super::parts::Array;
use crate::stats::DurationStats;
use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use std::collections::BTreeMap;

/// rocprofv3's `statistics<uint64_t, double>` of durations (ns), written as its `serialize`
/// does: the keys sorted; `operations` (for a domain) goes between `min` and `sqr`.
fn serialize_stats<M: SerializeMap>(
    stats: &DurationStats,
    map: &mut M,
    operations: Option<&BTreeMap<String, DurationStats>>,
) -> Result<(), M::Error> {
    map.serialize_entry("count", &stats.count)?;
    map.serialize_entry("max", &stats.max)?;
    map.serialize_entry("mean", &stats.mean())?;
    map.serialize_entry("min", &stats.min)?;
    if let Some(operations) = operations {
        // A std::map, as cereal writes one: a list of {key, value}.
        let entries = operations.iter().map(|(key, value)| MapItem {
            key,
            value: StatsOfKernel(value),
        });
        map.serialize_entry("operations", &Array(|| entries.clone()))?;
    }
    map.serialize_entry("sqr", &stats.sum_of_squares)?;
    map.serialize_entry("stddev", &stats.stddev())?;
    map.serialize_entry("sum", &stats.sum)?;
    map.serialize_entry("variance", &stats.variance())
}

/// One kernel's statistics in `operations`.
#[derive(Clone, Copy)]
pub(super) struct StatsOfKernel<'a>(pub(super) &'a DurationStats);

impl Serialize for StatsOfKernel<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(8))?;
        serialize_stats(self.0, &mut map, None)?;
        map.end()
    }
}

#[derive(Serialize)]
struct MapItem<'a, V> {
    key: &'a str,
    value: V,
}

/// One `summary` entry's statistics: the domain's total and one entry per name (a kernel's,
/// an API function's, a marker's message, a copy's direction, an allocation's operation).
#[derive(Debug)]
pub(super) struct DomainStats {
    pub(super) domain: &'static str,
    pub(super) total: DurationStats,
    pub(super) operations: BTreeMap<String, DurationStats>,
}

impl Serialize for DomainStats {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut entry = serializer.serialize_map(Some(2))?;
        entry.serialize_entry("domain", self.domain)?;
        entry.serialize_entry("stats", &StatsOf(self))?;
        entry.end()
    }
}

struct StatsOf<'a>(&'a DomainStats);

impl Serialize for StatsOf<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(9))?;
        serialize_stats(&self.0.total, &mut map, Some(&self.0.operations))?;
        map.end()
    }
}
