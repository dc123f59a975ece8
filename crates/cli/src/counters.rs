//! Counter names on the command line → counter groups the device can collect, decided before
//! the application starts.
//!
//! Each name is first resolved as a rocprofv3 alias (`SQ_WAVES` → `sm__warps_launched.sum`,
//! [`kreplay_core::aliases`]), then checked against a catalog: the reference software device's
//! (chip `SIM`) when the metrics are `sim__*`, else CUPTI's for `--chip` or for
//! device 0 (`catalogs.rs`). Every group must fit one hardware pass ([`check_group`]); `--metrics` lists are
//! packed into single-pass groups ([`pack_metrics`]).

use crate::catalogs::{catalog_checked, device_catalog, CheckedIdentity, SIM_PREFIX};
use crate::error::UsageError;
use crate::messages::msg_empty_group;
use kreplay_core::aliases;
use kreplay_core::catalog::{check_group, pack_metrics_spanning, GroupError, MetricCatalog};
use kreplay_core::config::{CounterGroup, CounterSpec};
use kreplay_counters::catalog::identity_cache;

/// Checks every group on `catalog`; when one is refused on a cached device identity, the
/// device is read again and the groups checked on that before the refusal stands (a changed
/// GPU configuration must not refuse a group the GPU can collect).
fn check_groups(
    catalog: Box<dyn MetricCatalog>,
    groups: &[Vec<CounterSpec>],
    identity: &CheckedIdentity,
) -> anyhow::Result<()> {
    let check_all = |catalog: &dyn MetricCatalog| {
        groups.iter().try_for_each(|specs| {
            let metrics: Vec<&str> = specs.iter().map(|s| s.metric.as_str()).collect();
            check_group(catalog, &metrics)
        })
    };
    match check_all(catalog.as_ref()) {
        Ok(()) => Ok(()),
        Err(_) if identity.cached() => {
            tracing::debug!("a group was refused on the cached device identity; reading GPU 0");
            check_all(&device_catalog(false, identity)?).map_err(group_error)
        }
        Err(error) => Err(group_error(error)),
    }
}

/// Resolves every name through the alias table; unsupported aliases are usage errors. A name
/// given twice in one group is collected once (each would otherwise be a record of its own,
/// and tools summing a dispatch's records by name would report twice the value).
pub fn resolve_names(names: &[String]) -> Result<Vec<CounterSpec>, UsageError> {
    let mut seen = std::collections::HashSet::new();
    names
        .iter()
        .filter(|name| seen.insert(name.as_str()))
        .map(|name| {
            refuse_device_qualifier(name)?;
            aliases::resolve(name).map_err(|e| UsageError::new(e.to_string()))
        })
        .collect()
}

/// rocprofv3's `NAME:device=N` restricts a counter to one GPU. kreplay collects every group on
/// every device, so the qualifier is refused by name rather than reported as an unknown metric.
fn refuse_device_qualifier(name: &str) -> Result<(), UsageError> {
    match name.split_once(':') {
        Some((counter, qualifier)) if qualifier.trim_start().starts_with("device") => {
            Err(UsageError::new(format!(
                "'{name}': per-device counter qualifiers are not supported (kreplay collects each \
                 group on every device); write '{counter}' and select devices with CUDA_VISIBLE_DEVICES"
            )))
        }
        _ => Ok(()),
    }
}

fn group_error(error: GroupError) -> anyhow::Error {
    UsageError::new(error.to_string()).into()
}

/// `--pmc` groups (or an input file's) → counter groups, each checked to fit one pass on the
/// catalog of `chip` (see [`catalog_for`]), GPU 0's identity kept in `identity`. Errors are one
/// line naming the problem and the fix.
pub fn resolve_groups(
    groups: &[Vec<String>],
    chip: Option<&str>,
    identity: &CheckedIdentity,
) -> anyhow::Result<Vec<CounterGroup>> {
    let mut resolved = Vec::with_capacity(groups.len());
    for (index, names) in groups.iter().enumerate() {
        if names.is_empty() {
            return Err(UsageError::new(msg_empty_group(index + 1)).into());
        }
        resolved.push(resolve_names(names)?);
    }
    if resolved.is_empty() {
        return Ok(Vec::new());
    }
    let all_metrics: Vec<&str> = resolved
        .iter()
        .flatten()
        .map(|spec| spec.metric.as_str())
        .collect();
    let began = std::time::Instant::now();
    let metric_groups: Vec<Vec<String>> = resolved
        .iter()
        .map(|specs| specs.iter().map(|s| s.metric.clone()).collect())
        .collect();
    // GPU 0's groups, all checked by an earlier run with this identity: no catalog needed.
    let on_gpu = chip.is_none() && !all_metrics.iter().any(|m| m.starts_with(SIM_PREFIX));
    let slot = on_gpu
        .then(|| identity_cache::slot(0, crate::env::var))
        .flatten();
    let known = slot
        .as_ref()
        .and_then(|(key, dir)| identity_cache::checked_groups(dir, key, &metric_groups));
    if let Some(known) = known {
        let digest = identity_cache::digest(&known.chip, &known.counter_availability);
        identity.set(Some((digest, true)));
        tracing::debug!(
            "counter groups checked by an earlier run with this GPU's identity ({:.1} ms)",
            began.elapsed().as_secs_f64() * 1e3
        );
    } else {
        let catalog = catalog_checked(chip, &all_metrics, identity)?;
        let identified = began.elapsed();
        check_groups(catalog, &resolved, identity)?;
        tracing::debug!(
            "counter groups checked in {:.1} ms (catalog {:.1} ms)",
            began.elapsed().as_secs_f64() * 1e3,
            identified.as_secs_f64() * 1e3
        );
        if let (Some((key, dir)), Some(digest)) = (&slot, identity.digest()) {
            if let Err(e) = identity_cache::remember_groups(dir, key, &digest, &metric_groups) {
                tracing::debug!("the group checks were not cached in {}: {e}", dir.display());
            }
        }
    }
    Ok(resolved
        .into_iter()
        .map(|counters| CounterGroup { counters })
        .collect())
}

/// `--metrics A,B,C`: a flat list packed into the fewest single-pass groups found. Every
/// requested name is kept (two names for one metric share its group); a name given twice is
/// collected once. GPU 0's identity is kept in `identity`.
pub fn pack(
    flat: &[String],
    chip: Option<&str>,
    share: bool,
    identity: &CheckedIdentity,
) -> anyhow::Result<Vec<(CounterGroup, u32)>> {
    if flat.is_empty() {
        return Err(UsageError::new(
            "--metrics needs at least one metric name (list them with `kreplay avail list`)",
        )
        .into());
    }
    let mut specs = resolve_names(flat)?;
    let mut seen = std::collections::HashSet::new();
    specs.retain(|spec| seen.insert(spec.requested.clone()));
    let metrics: Vec<&str> = specs.iter().map(|s| s.metric.as_str()).collect();
    let catalog = catalog_checked(chip, &metrics, identity)?;
    let packed = match pack_metrics_spanning(catalog.as_ref(), &metrics, share) {
        Err(_) if identity.cached() => {
            pack_metrics_spanning(&device_catalog(false, identity)?, &metrics, share)
                .map_err(group_error)?
        }
        packed => packed.map_err(group_error)?,
    };
    Ok(packed
        .iter()
        .map(|(group, passes)| {
            let counters = specs
                .iter()
                .filter(|spec| group.contains(&spec.metric))
                .cloned()
                .collect();
            (CounterGroup { counters }, *passes)
        })
        .collect())
}

#[cfg(test)]
mod tests;
