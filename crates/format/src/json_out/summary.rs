//! The `summary` of a process: rocprofv3's `statistics<uint64_t, double>` of each traced
//! domain's durations (kernel dispatches, CUDA API calls, copies, allocations, markers),
//! serialized as its `serialize` writes them.

use crate::name_stats::Names;
use crate::stats::DurationStats;
use serde::ser::{Error as _, SerializeMap, SerializeSeq, Serializer};
use serde::Serialize;

/// rocprofv3's `statistics<uint64_t, double>` of durations (ns), written as its `serialize`
/// does: the keys sorted; `operations` (for a domain) goes between `min` and `sqr`.
fn serialize_stats<M: SerializeMap>(
    stats: &DurationStats,
    map: &mut M,
    operations: Option<&Names>,
) -> Result<(), M::Error> {
    map.serialize_entry("count", &stats.count)?;
    map.serialize_entry("max", &stats.max)?;
    map.serialize_entry("mean", &stats.mean())?;
    map.serialize_entry("min", &stats.min)?;
    if let Some(operations) = operations {
        map.serialize_entry("operations", &Operations(operations))?;
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

/// A domain's names, as cereal writes a std::map: a list of {key, value}, in name order (read
/// from their file if they are in one).
struct Operations<'a>(&'a Names);

impl Serialize for Operations<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for entry in self.0.iter() {
            let (key, value) = entry.map_err(S::Error::custom)?;
            seq.serialize_element(&MapItem {
                key: &key,
                value: StatsOfKernel(&value),
            })?;
        }
        seq.end()
    }
}

/// One `summary` entry's statistics: the domain's total and one entry per name (a kernel's,
/// an API function's, a marker's message, a copy's direction, an allocation's operation), in
/// name order.
#[derive(Debug)]
pub(super) struct DomainStats {
    pub(super) domain: &'static str,
    pub(super) operations: Names,
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
        let operations = &self.0.operations;
        serialize_stats(operations.total(), &mut map, Some(operations))?;
        map.end()
    }
}
