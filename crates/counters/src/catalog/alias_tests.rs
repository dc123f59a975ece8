//! Every alias names a metric GH100 has, collectable in one pass.

use super::tests_support::gh100;
use kreplay_core::aliases::{AliasTarget, ALIASES};
use kreplay_core::catalog::MetricCatalog;

#[test]
fn every_alias_metric_exists_on_gh100_and_fits_one_pass() {
    let catalog = gh100();
    for alias in ALIASES {
        if let AliasTarget::Metric(metric) = alias.target {
            catalog
                .describe(metric)
                .unwrap_or_else(|e| panic!("{}: {e}", alias.name));
            assert_eq!(
                catalog.passes(&[metric]).unwrap(),
                1,
                "{} = {metric}",
                alias.name
            );
        }
    }
}
