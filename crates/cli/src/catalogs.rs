//! Which catalog answers for a run's counters: the reference software device's ([`SimCatalog`],
//! chip `SIM`) for `sim__*` metrics, else CUPTI's for `--chip` or for GPU 0 (whose identity is
//! kept for the run and cached between runs); and the recorded counters described from it.

use crate::error::UsageError;
use kreplay_core::catalog::{CatalogError, MetricCatalog};
use kreplay_core::reference_chip::{SimCatalog, SIM_CHIP};
use kreplay_counters::catalog::{identity_cache, CuptiCatalog};
use std::sync::Mutex;

mod cupti_dir;
pub use cupti_dir::with_cupti_dir_hint;

/// Metric names of the reference software device start with this.
pub const SIM_PREFIX: &str = "sim__";

/// Whether `chip` names the reference software device (any case).
pub fn is_sim_chip(chip: &str) -> bool {
    chip.trim().eq_ignore_ascii_case(SIM_CHIP)
}

/// GPU 0's identity the counter groups were checked with, kept by the checks for the run plan:
/// its digest (the injected library compares it with what it reads in the application) and
/// whether it came from the cache. `None` when the checks used no GPU (the software device,
/// a named chip).
#[derive(Default)]
pub struct CheckedIdentity(Mutex<Option<(String, bool)>>);

impl CheckedIdentity {
    /// The digest of the identity the last checks used.
    pub fn digest(&self) -> Option<String> {
        self.lock().as_ref().map(|(digest, _)| digest.clone())
    }

    /// Whether the last checks' identity came from the cache.
    pub(crate) fn cached(&self) -> bool {
        self.lock().as_ref().is_some_and(|(_, cached)| *cached)
    }

    pub(crate) fn set(&self, identity: Option<(String, bool)>) {
        *self.lock() = identity;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<(String, bool)>> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// The catalog that answers for `chip`, or (no chip) for the device the metrics belong to:
/// the software device for `sim__*` metrics, else GPU 0 with its counter-availability image.
pub fn catalog_for(chip: Option<&str>, metrics: &[&str]) -> anyhow::Result<Box<dyn MetricCatalog>> {
    catalog_checked(chip, metrics, &CheckedIdentity::default())
}

/// [`catalog_for`], keeping GPU 0's identity in `identity` when it is GPU 0's catalog.
pub(crate) fn catalog_checked(
    chip: Option<&str>,
    metrics: &[&str],
    identity: &CheckedIdentity,
) -> anyhow::Result<Box<dyn MetricCatalog>> {
    identity.set(None);
    if let Some(chip) = chip {
        if is_sim_chip(chip) {
            return Ok(Box::new(SimCatalog::new()));
        }
        return Ok(Box::new(CuptiCatalog::for_chip(chip).map_err(|e| {
            UsageError::new(with_cupti_dir_hint(e.to_string()))
        })?));
    }
    let sim: Vec<&str> = metrics
        .iter()
        .copied()
        .filter(|m| m.starts_with(SIM_PREFIX))
        .collect();
    if !sim.is_empty() {
        if let Some(gpu) = metrics.iter().find(|m| !m.starts_with(SIM_PREFIX)) {
            return Err(UsageError::new(format!(
                "'{}' is a metric of the reference software device and '{gpu}' is not; one run \
                 profiles one kind of device, so collect them in separate runs",
                sim[0]
            ))
            .into());
        }
        return Ok(Box::new(SimCatalog::new()));
    }
    Ok(Box::new(device_catalog(true, identity)?))
}

/// Fills the description and unit of every recorded counter that has none (the injected library
/// records the names only) from the catalog of the chip its process ran on, so that every output
/// states them. A chip whose catalog cannot be had leaves them empty.
pub fn describe_recorded_counters(data: &mut kreplay_format::RunData) {
    // One catalog per chip, however many processes ran on it.
    let mut catalogs: std::collections::HashMap<String, Option<Box<dyn MetricCatalog>>> =
        std::collections::HashMap::new();
    for process in &mut data.processes {
        if process
            .counters
            .iter()
            .all(|c| !c.unit.is_empty() || !c.description.is_empty())
        {
            continue;
        }
        let Some(chip) = process.agents.first().map(|a| a.chip.clone()) else {
            continue;
        };
        let catalog = catalogs.entry(chip.clone()).or_insert_with(|| {
            if is_sim_chip(&chip) {
                return Some(Box::new(SimCatalog::new()) as Box<dyn MetricCatalog>);
            }
            CuptiCatalog::for_chip(&chip)
                .map(|catalog| Box::new(catalog) as Box<dyn MetricCatalog>)
                .map_err(|e| tracing::debug!("no catalog of {chip} to describe the counters: {e}"))
                .ok()
        });
        let Some(catalog) = catalog else { continue };
        for counter in process
            .counters
            .iter_mut()
            .filter(|c| c.unit.is_empty() && c.description.is_empty())
        {
            match catalog.describe(&counter.metric) {
                Ok(described) => {
                    counter.description = described.description;
                    counter.unit = described.unit;
                }
                Err(e) => tracing::debug!("{} not described: {e}", counter.metric),
            }
        }
    }
}

/// GPU 0's catalog (its identity from the cache when `read_cache` and the cache has it); the
/// identity is kept in `identity`.
pub(crate) fn device_catalog(
    read_cache: bool,
    identity: &CheckedIdentity,
) -> anyhow::Result<CuptiCatalog> {
    // Failing to reach the GPU (no driver, no device) is an error of the machine, not of the
    // command line, but the message says how to work without.
    let (catalog, cached) = CuptiCatalog::for_device_cached(0, identity_cache::slot(0, crate::env::var), read_cache).map_err(|e| match e {
        // Its message already says what to do.
        CatalogError::CountersBusy(_) => anyhow::anyhow!("{e}"),
        _ => anyhow::anyhow!(
            "{}; to check counters on a machine with no GPU, name the chip (`kreplay avail list --chip GH100`), or use the reference software device's sim__* counters (`kreplay avail list --chip SIM`)",
            with_cupti_dir_hint(e.to_string())
        ),
    })?;
    identity.set(catalog.identity_digest().map(|digest| (digest, cached)));
    Ok(catalog)
}

/// Drops a cached device identity that the injected library found stale (its warning
/// [`identity_cache::STALE_WARNING`] names the digest the checks used).
pub fn forget_stale_identities<'a>(warnings: impl IntoIterator<Item = &'a str>) {
    let Some(dir) = identity_cache::cache_dir(crate::env::var) else {
        return;
    };
    for warning in warnings {
        if let Some(digest) = identity_cache::stale_digest(warning) {
            if let Err(e) = identity_cache::forget(&dir, digest) {
                tracing::warn!(
                    "cannot drop the stale device identity from {}: {e}",
                    dir.display()
                );
            }
        }
    }
}
