//! Metric names: lookups that suggest the closest known names for a misspelt one.

use crate::catalog::group_error::GroupError;
use crate::catalog::metric::{CatalogError, MetricCatalog, MetricDescription};

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

/// Checks that every metric of `metrics` is known (an unknown one names the closest known ones).
pub(crate) fn check_known(catalog: &dyn MetricCatalog, metrics: &[&str]) -> Result<(), GroupError> {
    for metric in metrics {
        lookup(catalog, metric)?;
    }
    Ok(())
}
