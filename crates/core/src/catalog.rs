//! What a device's metric catalog answers, with no device needed: which metrics exist, what
//! they mean, and how many hardware passes a set of them needs. The CUPTI catalog
//! (`kreplay-cuda`, chips such as `GH100`) and the reference software device's catalog
//! (`kreplay-sim`, chip `SIM`) implement [`MetricCatalog`]; group checking, suggestions for
//! misspelt names and the packing of a flat list into single-pass groups are written once here.

mod check;
mod group_error;
mod metric;
mod names;
mod packing;

#[cfg(test)]
mod tests;

pub use check::check_group;
pub use group_error::{pmc_flags, GroupError};
pub use metric::{CatalogError, MetricCatalog, MetricDescription};
pub use names::{lookup, suggestions, MAX_SUGGESTIONS};
pub use packing::{pack_groups, pack_metrics, pack_metrics_spanning};
