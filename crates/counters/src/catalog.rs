//! The CUPTI metric catalog: metric names, descriptions and pass counts for a chip, from
//! CUPTI's Profiler Host API — on a machine with no GPU for `--chip GH100`, or for a device
//! with its own counter-availability image (which can raise pass counts; reference §6.3).

pub mod device;
pub mod host;
pub mod identity_cache;

use host::{metric_type_name, CuptiCallError, HostObject, MetricType, METRIC_TYPES};
use kreplay_core::catalog::{CatalogError, MetricCatalog, MetricDescription};
use kreplay_cuda::cupti::Cupti;
use std::collections::HashMap;
use std::sync::OnceLock;

/// The roll-ups `avail list` shows for each metric type (the first component of CUPTI's
/// sub-metric list); the full list of sub-metrics is in `avail info`.
fn is_listed_rollup(metric_type: MetricType, sub_metric: &str) -> bool {
    if metric_type == MetricType::Counter {
        // `.sum .avg .min .max`: one dot, not `.sum.per_second` and friends.
        sub_metric.matches('.').count() == 1
    } else {
        // Ratios: `.pct .ratio .max_rate`; throughputs: `.avg.pct_of_peak_sustained_elapsed`
        // and the like, which have nothing shorter.
        true
    }
}

/// The base metrics of a chip, read once.
struct MetricIndex {
    /// Base name → metric type, e.g. `sm__warps_launched` → counter.
    types: HashMap<String, MetricType>,
    /// Every base metric with its listed roll-ups, sorted.
    listed_names: Vec<String>,
}

/// A chip's metrics through CUPTI's Profiler Host API.
pub struct CuptiCatalog {
    cupti: &'static Cupti,
    chip: String,
    /// The device's counter-availability image; `None` for a chip-only (host) catalog.
    availability: Option<Vec<u8>>,
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

/// A CUPTI failure as the catalog reports it: the counters held by another process, or the
/// library unable to answer.
fn unavailable(error: CuptiCallError) -> CatalogError {
    if error.code == kreplay_cuda::cupti::HARDWARE_BUSY {
        CatalogError::CountersBusy(error.to_string())
    } else {
        CatalogError::Unavailable(error.to_string())
    }
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
        // A fresh host object: CUPTI appends to the list it returns on every call, so a second
        // query on the same object would list every metric twice.
        let host = self.host()?;
        let mut types = HashMap::new();
        let mut listed_names = Vec::new();
        for metric_type in METRIC_TYPES {
            for base in host.base_metrics(metric_type).map_err(unavailable)? {
                if types.insert(base.clone(), metric_type).is_some() {
                    continue;
                }
                let subs = host.sub_metrics(metric_type, &base).map_err(unavailable)?;
                listed_names.extend(
                    subs.iter()
                        .filter(|sub| is_listed_rollup(metric_type, sub))
                        .map(|sub| format!("{base}{sub}")),
                );
            }
        }
        listed_names.sort();
        listed_names.dedup();
        Ok(MetricIndex {
            types,
            listed_names,
        })
    }

    /// Splits a full metric name into its base metric and type, if the base is known.
    /// Base names may contain dots themselves (`TPC.TriageCompute.sm__…`), so every split
    /// point is tried, longest base first.
    fn split_metric<'a>(
        &self,
        metric: &'a str,
    ) -> Result<Option<(&'a str, MetricType)>, CatalogError> {
        let index = self.index()?;
        let split = metric
            .char_indices()
            .rev()
            .filter(|&(_, c)| c == '.')
            .find_map(|(at, _)| {
                let base = &metric[..at];
                index
                    .types
                    .get(base)
                    .map(|&metric_type| (base, metric_type))
            });
        Ok(split)
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

/// The error for a chip CUPTI refused: the list of chips it knows, when it can tell.
fn unknown_chip(cupti: &Cupti, chip: &str, error: CuptiCallError) -> CatalogError {
    if error.code != kreplay_cuda::cupti::INVALID_CHIP_NAME {
        return unavailable(error);
    }
    match host::supported_chips(cupti) {
        Ok(chips) if !chips.is_empty() => CatalogError::Unavailable(format!(
            "unknown chip '{chip}'; this CUPTI knows {}; pass one of them to --chip",
            chips.join(", ")
        )),
        _ => CatalogError::Unavailable(format!(
            "unknown chip '{chip}' ({error}); pass a chip such as GH100 to --chip"
        )),
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
        host::passes_of_config_image(self.cupti, &mut image).map_err(unavailable)
    }
}

#[cfg(test)]
pub mod tests_support {
    use super::CuptiCatalog;

    /// The GH100 catalog from the wheel `.ci/run` installs; fails (never skips) without it.
    pub fn gh100() -> CuptiCatalog {
        if std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR).is_none() {
            panic!(
                "{} is not set: run the tests through .ci/run, which installs the nvidia-cuda-cupti wheel and points it there",
                kreplay_cuda::loader::ENV_CUPTI_DIR
            );
        }
        CuptiCatalog::for_chip("GH100").unwrap_or_else(|e| panic!("{e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::gh100;
    use super::*;

    #[test]
    fn counters_held_elsewhere_are_their_own_error() {
        let error = |code| CuptiCallError {
            call: "cuptiProfilerGetCounterAvailability",
            code,
            code_name: String::new(),
            message: String::new(),
        };
        let busy = unavailable(error(kreplay_cuda::cupti::HARDWARE_BUSY));
        assert!(
            matches!(&busy, CatalogError::CountersBusy(m) if m.contains("another process")),
            "{busy:?}"
        );
        let other = unavailable(error(kreplay_cuda::cupti::UNKNOWN));
        assert!(matches!(other, CatalogError::Unavailable(_)), "{other:?}");
    }
    use kreplay_core::catalog::{check_group, lookup, pack_metrics, GroupError};

    /// On the GPU machine: `cargo test -p kreplay-cuda -- --ignored device_catalog`.
    #[test]
    #[ignore = "needs an NVIDIA GPU; run with --ignored on the GPU machine"]
    fn device_catalog_reads_chip_and_counter_availability() {
        let device = CuptiCatalog::for_device(0).unwrap_or_else(|e| panic!("{e}"));
        let host = CuptiCatalog::for_chip(device.chip()).unwrap();
        let image_bytes = device.availability.as_ref().map_or(0, Vec::len);
        eprintln!(
            "device 0: chip {}, counter-availability image {image_bytes} bytes",
            device.chip()
        );
        assert!(image_bytes > 0);
        assert_eq!(
            device
                .passes(&["sm__warps_launched.sum", "smsp__inst_executed.sum"])
                .unwrap(),
            1
        );
        assert!(device.metric_names().unwrap().len() > 3000);
        for metric in [
            "lts__t_sector_hit_rate.pct",
            "l1tex__t_sector_hit_rate.pct",
            "gpu__time_duration.sum",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ] {
            let (on_device, chip_only) = (
                device.passes(&[metric]).unwrap(),
                host.passes(&[metric]).unwrap(),
            );
            eprintln!("{metric}: {on_device} passes with the device image, {chip_only} chip-only");
            // The image can only take counters away, never add room.
            assert!(on_device >= chip_only, "{metric}");
        }
    }

    #[test]
    fn lists_more_than_3000_names_with_rollups() {
        let names = gh100().metric_names().unwrap();
        assert!(names.len() > 3000, "{} names", names.len());
        for expected in [
            "sm__warps_launched.sum",
            "sm__warps_launched.avg",
            "lts__t_sector_hit_rate.pct",
            "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        ] {
            assert!(
                names.binary_search(&expected.to_string()).is_ok(),
                "{expected} listed"
            );
        }
        assert!(
            !names.contains(&"sm__warps_launched.sum.per_second".to_string()),
            "sub-metrics are for avail info"
        );
        let mut unique = names.clone();
        unique.dedup();
        assert_eq!(unique.len(), names.len(), "no name listed twice");
    }

    #[test]
    fn chip_names_are_accepted_in_any_case() {
        assert_eq!(CuptiCatalog::for_chip("gh100").unwrap().chip(), "GH100");
    }

    #[test]
    fn unknown_chip_lists_the_known_ones() {
        gh100();
        let message = CuptiCatalog::for_chip("GZ999").unwrap_err().to_string();
        assert!(message.contains("unknown chip 'GZ999'"), "{message}");
        assert!(
            message.contains("GH100") && message.contains("AD102"),
            "{message}"
        );
    }

    #[test]
    fn describes_a_metric_with_unit_and_description() {
        let description = gh100().describe("dram__bytes_read.sum").unwrap();
        assert_eq!(description.description, "# of bytes read from DRAM");
        assert_eq!(description.unit, "byte");
        assert_eq!(description.hw_unit, "dram");
        assert_eq!(description.metric_type, "counter");
        assert!(description
            .sub_metrics
            .contains(&".sum.per_second".to_string()));
    }

    #[test]
    fn sub_metrics_are_known_and_base_names_alone_are_not() {
        let catalog = gh100();
        catalog.describe("dram__bytes_read.sum.per_second").unwrap();
        for bad in [
            "dram__bytes_read",
            "dram__bytes_read.bogus",
            "dram__bytes_read.sum.",
            ".sum",
            "",
        ] {
            assert!(
                matches!(
                    catalog.describe(bad),
                    Err(CatalogError::UnknownMetric { .. })
                ),
                "{bad:?} must be unknown"
            );
        }
    }

    #[test]
    fn misspelt_metric_suggests_the_real_one() {
        let error = lookup(&gh100(), "sm__warp_launched.sum").unwrap_err();
        let CatalogError::UnknownMetric { suggestions, .. } = &error else {
            panic!("unexpected {error:?}");
        };
        assert_eq!(suggestions[0], "sm__warps_launched.sum", "{error}");
    }

    #[test]
    fn pass_counts_match_the_reference_measurements() {
        let catalog = gh100();
        assert_eq!(
            catalog
                .passes(&["sm__warps_launched.sum", "smsp__inst_executed.sum"])
                .unwrap(),
            1
        );
        assert_eq!(
            catalog
                .passes(&["sm__throughput.avg.pct_of_peak_sustained_elapsed"])
                .unwrap(),
            8
        );
        let seven = [
            "sm__warps_launched.sum",
            "sm__cycles_active.avg",
            "gpc__cycles_elapsed.max",
            "dram__bytes_read.sum",
            "smsp__inst_executed.sum",
            "lts__t_bytes.sum",
            "l1tex__t_bytes.sum",
        ];
        assert_eq!(catalog.passes(&seven).unwrap(), 1);
    }

    #[test]
    fn passes_of_an_unknown_metric_is_unknown_metric() {
        let error = gh100()
            .passes(&["sm__warps_launched.sum", "bogus__metric.sum"])
            .unwrap_err();
        assert!(
            matches!(error, CatalogError::UnknownMetric { ref name, .. } if name == "bogus__metric.sum"),
            "{error:?}"
        );
    }

    #[test]
    fn multi_pass_group_is_refused_with_a_split_that_fits() {
        let catalog = gh100();
        // Instruction-mix metrics and hit rates do not share a pass (reference §6.3).
        // (`lts__t_sector_hit_rate.pct` is left out: alone it needs 2 passes with this CUPTI.)
        let group = [
            "sm__ctas_launched.sum",
            "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
            "l1tex__t_sector_hit_rate.pct",
            "dram__bytes_read.sum",
            "dram__bytes_write.sum",
            "lts__t_sectors_lookup_hit.sum",
            "lts__t_sectors_lookup_miss.sum",
        ];
        let passes = catalog.passes(&group).unwrap();
        assert!(passes > 1, "the group needs {passes} passes");
        match check_group(&catalog, &group).unwrap_err() {
            GroupError::TooManyPasses {
                passes: reported,
                split,
                ..
            } => {
                assert_eq!(reported, passes);
                assert_single_pass_partition(&catalog, &group, &split);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    fn assert_single_pass_partition(
        catalog: &CuptiCatalog,
        input: &[&str],
        groups: &[Vec<String>],
    ) {
        let mut flat: Vec<&str> = groups.iter().flatten().map(String::as_str).collect();
        let mut expected = input.to_vec();
        flat.sort();
        expected.sort();
        expected.dedup();
        assert_eq!(flat, expected, "no metric lost or duplicated");
        for group in groups {
            let refs: Vec<&str> = group.iter().map(String::as_str).collect();
            assert_eq!(catalog.passes(&refs).unwrap(), 1, "{group:?} is one pass");
        }
    }

    #[test]
    fn packing_against_the_library_gives_single_pass_groups() {
        let catalog = gh100();
        // Every listed counter `.sum` of a few hardware units: far more than one pass holds.
        let names = catalog.metric_names().unwrap();
        let picked: Vec<&str> = names
            .iter()
            .map(String::as_str)
            .filter(|n| {
                (n.starts_with("smsp__sass_thread_inst_executed_op_")
                    || n.starts_with("lts__t_sectors_op_"))
                    && n.ends_with(".sum")
            })
            .take(40)
            .collect();
        assert!(picked.len() >= 20, "{picked:?}");
        assert!(catalog.passes(&picked).unwrap() > 1);
        let groups = pack_metrics(&catalog, &picked).unwrap();
        assert!(groups.len() > 1);
        assert_single_pass_partition(&catalog, &picked, &groups);
    }

    /// A typical mixed list: greedy first fit reaches the pass count CUPTI's own scheduler
    /// needs for the whole set, which no grouping can beat.
    #[test]
    fn packing_a_mixed_list_needs_no_more_groups_than_cupti_needs_passes() {
        let catalog = gh100();
        let mixed = [
            "smsp__sass_thread_inst_executed_op_dadd_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum",
            "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum",
            "l1tex__t_sector_hit_rate.pct",
            "dram__bytes_read.sum",
            "dram__bytes_write.sum",
            "lts__t_sectors_lookup_hit.sum",
            "lts__t_sectors_lookup_miss.sum",
            "sm__warps_launched.sum",
            "smsp__inst_executed.sum",
            "sm__cycles_active.avg",
            "gpc__cycles_elapsed.max",
            "l1tex__t_bytes.sum",
            "lts__t_bytes.sum",
            "sm__inst_executed_pipe_tensor_op_hmma.sum",
            "smsp__sass_inst_executed_op_shared.sum",
            "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum",
            "sm__warps_active.avg.pct_of_peak_sustained_active",
            "gpu__time_duration.sum",
            "smsp__sass_inst_executed_op_global_ld.sum",
            "smsp__sass_inst_executed_op_global_st.sum",
            "sm__pipe_tensor_op_hmma_cycles_active.sum",
            "smsp__inst_executed_pipe_uniform.sum",
        ];
        let groups = pack_metrics(&catalog, &mixed).unwrap();
        assert_single_pass_partition(&catalog, &mixed, &groups);
        let cupti_passes = catalog.passes(&mixed).unwrap();
        assert!(cupti_passes > 1);
        assert_eq!(groups.len() as u32, cupti_passes, "{groups:?}");
    }

    #[test]
    fn packing_refuses_a_metric_that_alone_needs_several_passes() {
        let error = pack_metrics(
            &gh100(),
            &[
                "sm__warps_launched.sum",
                "sm__throughput.avg.pct_of_peak_sustained_elapsed",
            ],
        )
        .unwrap_err();
        assert_eq!(
            error,
            GroupError::MetricNeedsPasses {
                metric: "sm__throughput.avg.pct_of_peak_sustained_elapsed".to_string(),
                passes: 8,
                chip: "GH100".to_string(),
            }
        );
    }
}

#[cfg(test)]
mod alias_tests {
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
}
