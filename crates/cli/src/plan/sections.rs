//! `--section`/`--set` planned: Nsight Compute's sections resolved for the device that collects
//! them, and the notice that says where they came from.

use super::resolver::CounterResolver;
use crate::args::ProfileArgs;
use crate::error::UsageError;
use kreplay_format::sections_out::chip_arch;

/// `--section`/`--set`: the sections chosen, resolved for the device that collects them, and the
/// notice that says where they came from and which rows this run cannot give. `None` without
/// those options.
pub(super) fn planned_sections(
    args: &ProfileArgs,
    replay: bool,
    resolver: &dyn CounterResolver,
) -> anyhow::Result<Option<(crate::sections::Resolution, String)>> {
    use crate::sections::{candidate_metrics, resolve, Library, SearchPlaces};
    if args.sections.is_empty() && args.sets.is_empty() {
        if !args.section_folders.is_empty() || args.print_details.is_some() {
            return Err(UsageError::new("--section-folder and --print-details only say where sections come from and which rows they show; choose them with --section NAME or --set NAME").into());
        }
        return Ok(None);
    }
    if !replay {
        return Err(UsageError::new("--section and --set collect Nsight Compute's sections by kernel replay (their metrics need several passes): add --replay-mode kernel --kernel-replay-beta-enabled").into());
    }
    let library = Library::load(&args.section_folders, &SearchPlaces::from_process())?;
    let chosen = library.select(&args.sections, &args.sets)?;
    // Which device answers (the software device's catalog for sim__ names) is decided by the
    // names alone; then the rows are chosen for its architecture.
    let details = args.print_details.unwrap_or_default();
    let catalog = resolver.catalog(&candidate_metrics(&chosen, None, details))?;
    let chip = catalog.chip().to_string();
    let arch = chip_arch(&chip);
    let known = |metric: &str| crate::sections::collectable(catalog.as_ref(), metric);
    let resolution = resolve(&chosen, arch, details, &chip, &known);
    if resolution.collect.is_empty() {
        return Err(UsageError::new(format!(
            "the chosen sections ({}) collect no counter on {chip}; choose sections with counters, e.g. --section SpeedOfLight (list them with `kreplay avail sections`)",
            chosen.iter().map(|s| s.identifier.as_str()).collect::<Vec<_>>().join(", ")
        ))
        .into());
    }
    let mut notice = format!(
        "kreplay: sections {} from {}: {} metric(s) to collect",
        chosen
            .iter()
            .map(|s| s.identifier.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        library.origin,
        resolution.collect.len()
    );
    if arch.is_none() {
        notice += &format!(
            "; {chip} has no known compute capability: rows with architecture filters are left out"
        );
    }
    if !library.errors.is_empty() {
        let files = library
            .errors
            .iter()
            .map(|(file, why)| format!("{file} ({why})"));
        notice += &format!("; not read: {}", first_few(files, "kreplay avail sections"));
    }
    if !resolution.unavailable.is_empty() {
        let rows = resolution
            .unavailable
            .iter()
            .map(|(metric, why)| format!("{metric} ({why})"));
        let list_them = format!("kreplay avail sections --chip {chip} --section NAME");
        notice += &format!("; shown as n/a on {chip}: {}", first_few(rows, &list_them));
    }
    Ok(Some((resolution, notice)))
}

/// The first entries of a list for a one-line notice, then how many more and the command that
/// lists them all.
pub(super) fn first_few(items: impl Iterator<Item = String>, list_them: &str) -> String {
    const SHOWN: usize = 8;
    let items: Vec<String> = items.collect();
    let mut text = items
        .iter()
        .take(SHOWN)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if items.len() > SHOWN {
        text += &format!(
            " and {} more (`{list_them}` lists them)",
            items.len() - SHOWN
        );
    }
    text
}
