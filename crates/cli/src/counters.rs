//! Counter names on the command line → counter groups the device can collect, decided before
//! the application starts.
//!
//! Each name is first resolved as a rocprofv3 alias (`SQ_WAVES` → `sm__warps_launched.sum`,
//! [`kreplay_core::aliases`]), then checked against a catalog: the reference software device's
//! ([`SimCatalog`], chip `SIM`) when the metrics are `sim__*`, else CUPTI's for `--chip` or for
//! device 0. Every group must fit one hardware pass ([`check_group`]); `--metrics` lists are
//! packed into single-pass groups ([`pack_metrics`]).

use crate::error::UsageError;
use kreplay_core::aliases;
use kreplay_core::catalog::{
    check_group, pack_metrics_spanning, CatalogError, GroupError, MetricCatalog,
};
use kreplay_core::config::{CounterGroup, CounterSpec};
use kreplay_core::reference_chip::{SimCatalog, SIM_CHIP};
use kreplay_counters::catalog::{identity_cache, CuptiCatalog};
use std::sync::Mutex;

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
    fn cached(&self) -> bool {
        self.lock().as_ref().is_some_and(|(_, cached)| *cached)
    }

    fn set(&self, identity: Option<(String, bool)>) {
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
fn catalog_checked(
    chip: Option<&str>,
    metrics: &[&str],
    identity: &CheckedIdentity,
) -> anyhow::Result<Box<dyn MetricCatalog>> {
    identity.set(None);
    if let Some(chip) = chip {
        if is_sim_chip(chip) {
            return Ok(Box::new(SimCatalog::new()));
        }
        return Ok(Box::new(
            CuptiCatalog::for_chip(chip).map_err(|e| UsageError::new(e.to_string()))?,
        ));
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
fn device_catalog(read_cache: bool, identity: &CheckedIdentity) -> anyhow::Result<CuptiCatalog> {
    // Failing to reach the GPU (no driver, no device) is an error of the machine, not of the
    // command line, but the message says how to work without.
    let (catalog, cached) = CuptiCatalog::for_device_cached(0, identity_cache::slot(0, env_var), read_cache).map_err(|e| match e {
        // Its message already says what to do.
        CatalogError::CountersBusy(_) => anyhow::anyhow!("{e}"),
        _ => anyhow::anyhow!(
            "{e}; to check counters on a machine with no GPU, name the chip: `kreplay avail list --chip GH100`"
        ),
    })?;
    identity.set(catalog.identity_digest().map(|digest| (digest, cached)));
    Ok(catalog)
}

/// Drops a cached device identity that the injected library found stale (its warning
/// [`identity_cache::STALE_WARNING`] names the digest the checks used).
pub fn forget_stale_identities<'a>(warnings: impl IntoIterator<Item = &'a str>) {
    let Some(dir) = identity_cache::cache_dir(env_var) else {
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
            return Err(UsageError::new(crate::plan::msg_empty_group(index + 1)).into());
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
    let slot = on_gpu.then(|| identity_cache::slot(0, env_var)).flatten();
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

/// The CLI's own environment, as the catalog's cache looks it up.
fn env_var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    fn one_line(error: &anyhow::Error) -> String {
        let text = format!("{error:#}");
        assert!(!text.contains('\n'), "one line: {text}");
        text
    }

    #[test]
    fn recorded_counters_get_the_catalogs_description_and_unit() {
        use kreplay_format::{AgentInfo, CounterInfo, ProcessInfo, ProcessRun, RunData};
        let mut process = ProcessRun::new(ProcessInfo::default());
        process.agents.push(AgentInfo {
            chip: "GH100".into(),
            ..AgentInfo::default()
        });
        let counter = |name: &str| CounterInfo {
            name: name.into(),
            metric: name.into(),
            description: String::new(),
            unit: String::new(),
        };
        process.counters = vec![
            counter("gpu__time_duration.sum"),
            counter("sm__throughput.avg.pct_of_peak_sustained_elapsed"),
            counter("no__such_metric.sum"),
        ];
        let mut data = RunData {
            processes: vec![process],
        };
        describe_recorded_counters(&mut data);
        let counters = &data.processes[0].counters;
        assert_eq!(counters[0].unit, "nanosecond");
        assert!(!counters[0].description.is_empty());
        assert_eq!(counters[1].unit, "percent");
        assert!(
            counters[2].unit.is_empty(),
            "an unknown metric stays undescribed"
        );
    }

    #[test]
    fn sim_groups_are_checked_against_the_software_device() {
        let groups = resolve_groups(
            &[
                names(&["sim__warps_launched.sum", "sim__inst_executed.sum"]),
                names(&["sim__bytes_read.sum"]),
            ],
            None,
            &CheckedIdentity::default(),
        )
        .unwrap();
        assert_eq!(groups.len(), 2);
        assert_eq!(groups[0].counters[1].metric, "sim__inst_executed.sum");
    }

    #[test]
    fn a_sim_group_over_two_counters_is_refused_with_a_split() {
        let error = resolve_groups(
            &[names(&[
                "sim__warps_launched.sum",
                "sim__inst_executed.sum",
                "sim__bytes_read.sum",
            ])],
            Some("sim"),
            &CheckedIdentity::default(),
        )
        .unwrap_err();
        assert!(error.downcast_ref::<UsageError>().is_some());
        let text = one_line(&error);
        assert!(text.contains("needs 2 hardware passes on SIM"), "{text}");
        assert!(
            text.contains(
                "--pmc sim__warps_launched.sum sim__inst_executed.sum --pmc sim__bytes_read.sum"
            ),
            "{text}"
        );
    }

    #[test]
    fn mixing_sim_and_gpu_metrics_is_refused() {
        let error = resolve_groups(
            &[names(&[
                "sim__warps_launched.sum",
                "sm__warps_launched.sum",
            ])],
            None,
            &CheckedIdentity::default(),
        )
        .unwrap_err();
        assert!(error.downcast_ref::<UsageError>().is_some());
        let text = one_line(&error);
        assert!(text.contains("separate runs"), "{text}");
    }

    #[test]
    fn misspelt_sim_metric_gets_a_suggestion() {
        let error = resolve_groups(
            &[names(&["sim__warp_launched.sum"])],
            Some("SIM"),
            &CheckedIdentity::default(),
        )
        .unwrap_err();
        let text = one_line(&error);
        assert!(
            text.contains("did you mean sim__warps_launched.sum"),
            "{text}"
        );
    }

    #[test]
    fn empty_group_is_refused_like_rocprofv3() {
        let error = resolve_groups(
            &[names(&["sim__bytes_read.sum"]), vec![]],
            None,
            &CheckedIdentity::default(),
        )
        .unwrap_err();
        assert!(one_line(&error).contains("Empty counter group in --pmc flag 2."));
    }

    #[test]
    fn device_qualifier_is_refused_by_name() {
        let error = resolve_groups(
            &[names(&["sim__bytes_read.sum:device=1"])],
            None,
            &CheckedIdentity::default(),
        )
        .unwrap_err();
        assert!(error.downcast_ref::<UsageError>().is_some());
        let text = one_line(&error);
        assert!(
            text.contains("per-device counter qualifiers are not supported"),
            "{text}"
        );
        assert!(text.contains("write 'sim__bytes_read.sum'"), "{text}");
    }

    #[test]
    fn unsupported_alias_is_a_usage_error() {
        let error = resolve_groups(
            &[names(&["SQ_INSTS_SALU"])],
            Some("SIM"),
            &CheckedIdentity::default(),
        )
        .unwrap_err();
        assert!(error.downcast_ref::<UsageError>().is_some());
        assert!(one_line(&error).contains("no NVIDIA equivalent"));
    }

    #[test]
    fn packing_sim_metrics_keeps_every_name_once() {
        let groups = pack(
            &names(&[
                "sim__warps_launched.sum",
                "sim__inst_executed.sum",
                "sim__bytes_read.sum",
                "sim__warps_launched.sum",
                "sim__bytes_written.sum",
                "sim__cycles_elapsed.max",
            ]),
            None,
            true,
            &CheckedIdentity::default(),
        )
        .unwrap();
        let layout: Vec<Vec<&str>> = groups.iter().map(|(g, _)| g.metrics().collect()).collect();
        assert_eq!(
            layout,
            [
                vec!["sim__warps_launched.sum", "sim__inst_executed.sum"],
                vec!["sim__bytes_read.sum", "sim__bytes_written.sum"],
                vec!["sim__cycles_elapsed.max"],
            ]
        );
    }

    #[test]
    fn a_name_twice_in_one_group_is_collected_once() {
        let groups = resolve_groups(
            &[names(&[
                "sim__warps_launched.sum",
                "sim__inst_executed.sum",
                "sim__warps_launched.sum",
            ])],
            None,
            &CheckedIdentity::default(),
        )
        .unwrap();
        let layout: Vec<&str> = groups[0].metrics().collect();
        assert_eq!(
            layout,
            ["sim__warps_launched.sum", "sim__inst_executed.sum"]
        );
    }

    #[test]
    fn unknown_chip_is_a_usage_error() {
        std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR)
            .expect("KREPLAY_CUPTI_DIR is not set: run the tests through .ci/run");
        let error = resolve_groups(
            &[names(&["sm__warps_launched.sum"])],
            Some("GZ999"),
            &CheckedIdentity::default(),
        )
        .unwrap_err();
        assert!(error.downcast_ref::<UsageError>().is_some());
        assert!(one_line(&error).contains("unknown chip 'GZ999'"));
    }

    #[test]
    fn aliases_resolve_on_gh100_and_keep_the_requested_name() {
        std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR)
            .expect("KREPLAY_CUPTI_DIR is not set: run the tests through .ci/run");
        let groups = resolve_groups(
            &[names(&[
                "SQ_WAVES",
                "FETCH_SIZE",
                "smsp__inst_executed.sum",
            ])],
            Some("gh100"),
            &CheckedIdentity::default(),
        )
        .unwrap();
        let requested: Vec<&str> = groups[0]
            .counters
            .iter()
            .map(|c| c.requested.as_str())
            .collect();
        let metrics: Vec<&str> = groups[0].metrics().collect();
        assert_eq!(
            requested,
            ["SQ_WAVES", "FETCH_SIZE", "smsp__inst_executed.sum"]
        );
        assert_eq!(
            metrics,
            [
                "sm__warps_launched.sum",
                "dram__bytes_read.sum",
                "smsp__inst_executed.sum"
            ]
        );
    }

    #[test]
    fn packing_on_gh100_keeps_two_names_for_one_metric_together() {
        std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR)
            .expect("KREPLAY_CUPTI_DIR is not set: run the tests through .ci/run");
        let groups = pack(
            &names(&[
                "SQ_WAVES",
                "Wavefronts",
                "sm__warps_launched.sum",
                "TCC_HIT",
            ]),
            Some("GH100"),
            true,
            &CheckedIdentity::default(),
        )
        .unwrap();
        assert_eq!(groups.len(), 1);
        let requested: Vec<&str> = groups[0]
            .0
            .counters
            .iter()
            .map(|c| c.requested.as_str())
            .collect();
        assert_eq!(
            requested,
            [
                "SQ_WAVES",
                "Wavefronts",
                "sm__warps_launched.sum",
                "TCC_HIT"
            ]
        );
    }
}
