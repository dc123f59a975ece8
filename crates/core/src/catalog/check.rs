//! Checking one counter group: every metric known, all of them in one pass.

use crate::catalog::group_error::GroupError;
use crate::catalog::metric::MetricCatalog;
use crate::catalog::names::check_known;
use crate::catalog::packing::pack_known;

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
