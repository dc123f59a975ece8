//! [`CuptiCatalog`]: a chip's metrics through CUPTI's Profiler Host API, for a chip by name or
//! for a device (its counter-availability image read now or taken from the identity cache).

use super::device;
use super::errors::{unavailable, unknown_chip};
use super::host::{metric_type_name, passes_of_config_image, HostObject, MetricType};
use super::identity_cache;
use super::index::MetricIndex;
use kreplay_core::catalog::{CatalogError, MetricCatalog, MetricDescription};
use kreplay_cuda::cupti::Cupti;
use std::sync::OnceLock;

/// A chip's metrics through CUPTI's Profiler Host API.
pub struct CuptiCatalog {
    cupti: &'static Cupti,
    chip: String,
    /// The device's counter-availability image; `None` for a chip-only (host) catalog.
    pub(super) availability: Option<Vec<u8>>,
    index: OnceLock<Result<MetricIndex, CatalogError>>,
}

impl std::fmt::Debug for CuptiCatalog {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CuptiCatalog")
            .field("chip", &self.chip)
            .field(
                "availability_image_bytes",
                &self.availability.as_ref().map(Vec::len),
            )
            .finish()
    }
}

/// The chip and counter-availability image of CUDA device `ordinal`, read from the device.
fn read_identity(cupti: &Cupti, ordinal: i32) -> Result<device::DeviceIdentity, CatalogError> {
    let driver =
        kreplay_cuda::loader::driver().map_err(|e| CatalogError::Unavailable(e.to_string()))?;
    device::identify(driver, cupti, ordinal).map_err(|e| match e {
        device::DeviceError::Cupti(error) => unavailable(error),
        other => CatalogError::Unavailable(other.to_string()),
    })
}

impl CuptiCatalog {
    /// The catalog of a chip by name (any case: `gh100` is `GH100`), with no device.
    pub fn for_chip(chip: &str) -> Result<Self, CatalogError> {
        let cupti =
            kreplay_cuda::loader::cupti().map_err(|e| CatalogError::Unavailable(e.to_string()))?;
        Self::new(cupti, &chip.trim().to_ascii_uppercase(), None)
    }

    /// The catalog of CUDA device `ordinal`: its chip and its counter-availability image
    /// (which needs the driver and briefly the device's primary context).
    pub fn for_device(ordinal: i32) -> Result<Self, CatalogError> {
        let cupti =
            kreplay_cuda::loader::cupti().map_err(|e| CatalogError::Unavailable(e.to_string()))?;
        let identity = read_identity(cupti, ordinal)?;
        Self::new(cupti, &identity.chip, Some(identity.counter_availability))
    }

    /// [`for_device`](Self::for_device) through the identity cache ([`identity_cache`]): an
    /// identity stored by an earlier run under this machine's key (when `read_cache`), else
    /// the device read now and stored. The flag says whether the identity came from the cache.
    /// `slot`: [`identity_cache::slot`] of `ordinal`.
    pub fn for_device_cached(
        ordinal: i32,
        slot: Option<(identity_cache::Key, std::path::PathBuf)>,
        read_cache: bool,
    ) -> Result<(Self, bool), CatalogError> {
        let cupti =
            kreplay_cuda::loader::cupti().map_err(|e| CatalogError::Unavailable(e.to_string()))?;
        if let Some((key, dir)) = slot.as_ref().filter(|_| read_cache) {
            if let Some(identity) = identity_cache::load(dir, key) {
                tracing::debug!(dir = %dir.display(), "device identity from the cache");
                if let Ok(catalog) =
                    Self::new(cupti, &identity.chip, Some(identity.counter_availability))
                {
                    return Ok((catalog, true));
                }
            }
        }
        let identity = read_identity(cupti, ordinal)?;
        if let Some((key, dir)) = &slot {
            if let Err(e) = identity_cache::store(dir, key, &identity) {
                tracing::debug!(
                    "the device identity was not cached in {}: {e}",
                    dir.display()
                );
            }
        }
        Ok((
            Self::new(cupti, &identity.chip, Some(identity.counter_availability))?,
            false,
        ))
    }

    /// [`identity_cache::digest`] of this catalog's chip and availability image (`None` for a
    /// chip-only catalog).
    pub fn identity_digest(&self) -> Option<String> {
        self.availability
            .as_ref()
            .map(|image| identity_cache::digest(&self.chip, image))
    }

    fn new(
        cupti: &'static Cupti,
        chip: &str,
        availability: Option<Vec<u8>>,
    ) -> Result<Self, CatalogError> {
        // Initialising a host object is how CUPTI validates a chip name.
        if let Err(error) = HostObject::new(cupti, chip, availability.as_deref()) {
            return Err(unknown_chip(cupti, chip, error));
        }
        Ok(CuptiCatalog {
            cupti,
            chip: chip.to_string(),
            availability,
            index: OnceLock::new(),
        })
    }

    /// Whether this catalog uses a device's counter-availability image.
    pub fn has_availability_image(&self) -> bool {
        self.availability.is_some()
    }

    fn host(&self) -> Result<HostObject<'static>, CatalogError> {
        HostObject::new(self.cupti, &self.chip, self.availability.as_deref()).map_err(unavailable)
    }

    fn index(&self) -> Result<&MetricIndex, CatalogError> {
        self.index
            .get_or_init(|| self.read_index())
            .as_ref()
            .map_err(Clone::clone)
    }

    fn read_index(&self) -> Result<MetricIndex, CatalogError> {
        // A fresh host object (see `MetricIndex::read`).
        MetricIndex::read(&self.host()?)
    }

    /// Splits a full metric name into its base metric and type, if the base is known.
    fn split_metric<'a>(
        &self,
        metric: &'a str,
    ) -> Result<Option<(&'a str, MetricType)>, CatalogError> {
        Ok(self.index()?.split(metric))
    }

    fn unknown(&self, metric: &str) -> CatalogError {
        CatalogError::UnknownMetric {
            name: metric.to_string(),
            chip: self.chip.clone(),
            // Filled in by `kreplay_core::catalog::lookup` from the full list.
            suggestions: Vec::new(),
        }
    }

    /// The base metric, its type and all its sub-metrics, or `UnknownMetric`.
    fn resolve(
        &self,
        host: &HostObject<'_>,
        metric: &str,
    ) -> Result<(MetricType, Vec<String>), CatalogError> {
        let Some((base, metric_type)) = self.split_metric(metric)? else {
            return Err(self.unknown(metric));
        };
        let subs = host.sub_metrics(metric_type, base).map_err(unavailable)?;
        if !subs
            .iter()
            .any(|sub| metric.len() == base.len() + sub.len() && metric.ends_with(sub.as_str()))
        {
            return Err(self.unknown(metric));
        }
        Ok((metric_type, subs))
    }

    /// The config image CUPTI builds for `metrics` (what the range profiler is programmed
    /// with), after checking every name.
    pub fn config_image(&self, metrics: &[&str]) -> Result<Vec<u8>, CatalogError> {
        // The index first: reading it needs a host object of its own, and only one may be
        // alive at a time (see `host::host_api_lock`).
        self.index()?;
        let mut host = self.host()?;
        for metric in metrics {
            self.resolve(&host, metric)?;
        }
        host.add_metrics(metrics).map_err(unavailable)?;
        host.config_image().map_err(unavailable)
    }
}

impl MetricCatalog for CuptiCatalog {
    fn chip(&self) -> &str {
        &self.chip
    }

    fn metric_names(&self) -> Result<Vec<String>, CatalogError> {
        Ok(self.index()?.listed_names.clone())
    }

    fn describe(&self, metric: &str) -> Result<MetricDescription, CatalogError> {
        // The index first, before this call's host object exists (one at a time).
        self.index()?;
        let host = self.host()?;
        let (metric_type, sub_metrics) = self.resolve(&host, metric)?;
        let properties = host.properties(metric).map_err(unavailable)?;
        Ok(MetricDescription {
            name: metric.to_string(),
            description: properties.description,
            hw_unit: properties.hw_unit,
            unit: properties.dim_unit,
            metric_type: metric_type_name(metric_type).to_string(),
            sub_metrics,
        })
    }

    fn passes(&self, metrics: &[&str]) -> Result<u32, CatalogError> {
        if metrics.is_empty() {
            return Ok(0);
        }
        let mut image = self.config_image(metrics)?;
        passes_of_config_image(self.cupti, &mut image).map_err(unavailable)
    }
}
