//! What run shaping asks of the counter catalogs, as a trait so that it is testable without one.

use kreplay_core::catalog::MetricCatalog;
use kreplay_core::config::CounterGroup;

/// Turns counter names into groups the device can collect (the catalog's job; a trait so that
/// run shaping is testable without one).
pub trait CounterResolver {
    /// Each inner list is one group; errors name the group and the fix.
    fn resolve_groups(&self, groups: &[Vec<String>]) -> anyhow::Result<Vec<CounterGroup>>;
    /// Packs a flat list into the fewest single-pass groups; a metric that alone needs several
    /// hardware passes is a group of its own, and with `share` (kernel replay) such groups
    /// share passes where that takes fewer. Each group comes with the passes it needs.
    fn pack(&self, metrics: &[String], share: bool) -> anyhow::Result<Vec<(CounterGroup, u32)>>;
    /// The catalog of the device that would collect `metrics` (for choosing the rows of
    /// Nsight Compute's sections: the chip, and which names it knows).
    fn catalog(&self, metrics: &[String]) -> anyhow::Result<Box<dyn MetricCatalog>>;
    /// The digest of the device identity the groups resolved so far were checked with (GPU
    /// 0's; `None` when no GPU was asked): the injected library compares it with the one it
    /// reads in the application.
    fn checked_identity(&self) -> Option<String>;
}
