//! `kreplay avail list|info|pmc-check|sections` and `-L/--list-avail`: which counters a GPU (or, with
//! `--chip`, a chip, with no GPU) offers, what they mean, and whether a set of them can be
//! collected in one pass. Output follows `rocprofv3-avail` (reference rocprofv3.md §1.10).

use crate::args::AvailCommand;
use crate::catalogs::{catalog_for, is_sim_chip};
use crate::counters::resolve_names;
use crate::error::UsageError;
use crate::input::split_words;
use kreplay_core::catalog::{check_group, lookup, pmc_flags, GroupError, MetricCatalog};
use kreplay_core::config::CounterSpec;
use std::io::{IsTerminal, Write};

/// Runs an `avail` subcommand; the result is the exit status (pmc-check: 1 when the counters
/// do not fit one pass).
pub fn run(cmd: &AvailCommand) -> anyhow::Result<i32> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    let columns = out.is_terminal().then(terminal_width);
    let result = match cmd {
        AvailCommand::List { chip } => list(&mut out, chip.as_deref(), columns),
        AvailCommand::Info { chip, pmc } => info(&mut out, chip.as_deref(), &words(pmc)),
        AvailCommand::PmcCheck { chip, names } => {
            pmc_check(&mut out, chip.as_deref(), &words(names))
        }
        AvailCommand::Sections {
            chip,
            section_folders,
            sections: named,
            print_details,
        } => sections(
            &mut out,
            chip.as_deref(),
            section_folders,
            named,
            print_details.unwrap_or_default(),
        ),
    };
    quiet_on_closed_pipe(result)
}

/// `kreplay avail list | head` closes the pipe early: that is the reader's choice, not an error.
fn quiet_on_closed_pipe(result: anyhow::Result<i32>) -> anyhow::Result<i32> {
    match result {
        Err(error)
            if error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe) =>
        {
            Ok(0)
        }
        other => other,
    }
}

/// `-L/--list-avail`: the list for the current GPU.
pub fn list_current_gpu() -> anyhow::Result<i32> {
    run(&AvailCommand::List { chip: None })
}

fn words(args: &[String]) -> Vec<String> {
    args.iter().flat_map(|a| split_words(a)).collect()
}

fn terminal_width() -> usize {
    crate::env::terminal_columns().unwrap_or(120)
}

/// `rocprofv3-avail`'s header lines: `Name<pad>:\t<chip>`, with the GPU when there is one.
fn header(
    out: &mut dyn Write,
    chip: Option<&str>,
    catalog: &dyn MetricCatalog,
) -> anyhow::Result<()> {
    if chip.is_none() && !is_sim_chip(catalog.chip()) {
        writeln!(out, "{:<30}:\t0", "GPU")?;
    }
    writeln!(out, "{:<30}:\t{}", "Name", catalog.chip())?;
    Ok(())
}

fn list(out: &mut dyn Write, chip: Option<&str>, columns: Option<usize>) -> anyhow::Result<i32> {
    let catalog = catalog_for(chip, &[])?;
    let names = catalog.metric_names().map_err(anyhow::Error::from)?;
    header(out, chip, catalog.as_ref())?;
    writeln!(out, "PMC:")?;
    match columns {
        // On a terminal, columns as rocprofv3-avail prints them; otherwise one name a line so
        // that the list can be piped into grep and wc.
        Some(width) => write_columns(out, &names, width)?,
        None => {
            for name in &names {
                writeln!(out, "{name}")?;
            }
        }
    }
    Ok(0)
}

fn write_columns(out: &mut dyn Write, names: &[String], width: usize) -> std::io::Result<()> {
    let cell = names.iter().map(String::len).max().unwrap_or(0) + 2;
    // The last column needs no gap after it.
    let per_line = ((width + 2) / cell.max(1)).max(1);
    for row in names.chunks(per_line) {
        let line: String = row.iter().map(|n| format!("{n:<cell$}")).collect();
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

fn info(out: &mut dyn Write, chip: Option<&str>, names: &[String]) -> anyhow::Result<i32> {
    let specs = resolve_names(names)?;
    let metrics: Vec<&str> = specs.iter().map(|s| s.metric.as_str()).collect();
    let catalog = catalog_for(chip, &metrics)?;
    // Every name is looked up before anything is printed, so a typo is one clear error.
    let descriptions = specs
        .iter()
        .map(|spec| {
            lookup(catalog.as_ref(), &spec.metric).map_err(|e| UsageError::new(e.to_string()))
        })
        .collect::<Result<Vec<_>, _>>()?;
    header(out, chip, catalog.as_ref())?;
    for (spec, description) in specs.iter().zip(&descriptions) {
        writeln!(out)?;
        writeln!(out, "{:<20}:\t{}", "Counter_Name", spec.requested)?;
        if spec.requested != spec.metric {
            writeln!(out, "{:<20}:\t{}", "Metric", spec.metric)?;
        }
        writeln!(out, "{:<20}:\t{}", "Description", description.description)?;
        writeln!(out, "{:<20}:\t{}", "Hardware_Unit", description.hw_unit)?;
        writeln!(out, "{:<20}:\t{}", "Unit", description.unit)?;
        writeln!(out, "{:<20}:\t{}", "Type", description.metric_type)?;
        writeln!(
            out,
            "{:<20}:\t{}",
            "Sub_Metrics",
            description.sub_metrics.join(" ")
        )?;
    }
    Ok(0)
}

/// The names the user typed for each metric of a split (aliases stay aliases).
fn requested_split(split: &[Vec<String>], specs: &[CounterSpec]) -> Vec<Vec<String>> {
    split
        .iter()
        .map(|group| {
            specs
                .iter()
                .filter(|spec| group.contains(&spec.metric))
                .map(|spec| spec.requested.clone())
                .collect()
        })
        .collect()
}

fn pmc_check(out: &mut dyn Write, chip: Option<&str>, names: &[String]) -> anyhow::Result<i32> {
    let specs = resolve_names(names)?;
    let metrics: Vec<&str> = specs.iter().map(|s| s.metric.as_str()).collect();
    let catalog = catalog_for(chip, &metrics)?;
    let requested: Vec<&str> = specs.iter().map(|s| s.requested.as_str()).collect();
    match check_group(catalog.as_ref(), &metrics) {
        Ok(()) => {
            writeln!(
                out,
                "Following input counters can be collected together on {}: {}",
                catalog.chip(),
                requested.join(" ")
            )?;
            Ok(0)
        }
        Err(GroupError::TooManyPasses { passes, split, .. }) => {
            writeln!(
                out,
                "Input counters cannot be collected together on {}: they need {passes} hardware passes, and each counter group must fit one.",
                catalog.chip()
            )?;
            let split = requested_split(&split, &specs);
            writeln!(
                out,
                "They fit {} single-pass groups: {}",
                split.len(),
                pmc_flags(&split)
            )?;
            Ok(1)
        }
        Err(error @ GroupError::MetricNeedsPasses { .. }) => {
            writeln!(out, "{error}")?;
            Ok(1)
        }
        Err(error) => Err(UsageError::new(error.to_string()).into()),
    }
}

/// `kreplay avail sections`: where the sections come from, then one line per section
/// (identifier, display name, sets, header and body rows; with a chip, the metrics of its header
/// rows and their passes there), then the files that could not be read.
fn sections(
    out: &mut impl Write,
    chip: Option<&str>,
    folders: &[std::path::PathBuf],
    named: &[String],
    details: crate::sections::Details,
) -> anyhow::Result<i32> {
    use crate::sections::{resolve, Details, Library, SearchPlaces};
    let library = Library::load(folders, &SearchPlaces::from_process())?;
    let shown = library.select(named, &[])?;
    let catalog = chip.map(|c| catalog_for(Some(c), &[])).transpose()?;
    writeln!(out, "Sections: {}", library.origin)?;
    writeln!(out, "Sets: {}", library.sets().join(", "))?;
    for section in &library.sections {
        let mut line = format!(
            "{:<32} {:<44} sets: {:<24} rows: {} header, {} body",
            section.identifier,
            section.display_name,
            section.sets.join(","),
            section.header.len(),
            section.body.len()
        );
        if let Some(catalog) = &catalog {
            let chip = catalog.chip();
            let arch = kreplay_format::sections_out::chip_arch(chip);
            let known = |m: &str| crate::sections::collectable(catalog.as_ref(), m);
            let r = resolve(&[section], arch, Details::Header, chip, &known);
            let metrics: Vec<&str> = r.collect.iter().map(String::as_str).collect();
            let passes = if metrics.is_empty() {
                "no counters".to_string()
            } else {
                match catalog.passes(&metrics) {
                    Ok(p) => format!("{p} pass(es)"),
                    Err(e) => format!("passes unknown ({e})"),
                }
            };
            line += &format!(
                "  on {chip}: {} metric(s), {passes}, {} n/a",
                metrics.len(),
                r.unavailable.len()
            );
        }
        writeln!(out, "{}", line.trim_end())?;
        if shown.iter().any(|s| s.identifier == section.identifier) {
            // Without a chip, every name is taken as a metric and no architecture is known.
            let chip = catalog.as_ref().map_or("this chip", |c| c.chip());
            let known = |m: &str| {
                catalog
                    .as_ref()
                    .is_none_or(|c| crate::sections::collectable(c.as_ref(), m))
            };
            let arch = kreplay_format::sections_out::chip_arch(chip);
            for spec in resolve(&[section], arch, details, chip, &known).specs {
                for row in &spec.rows {
                    writeln!(
                        out,
                        "    {}: {} ({})",
                        row.label,
                        row.metric,
                        row.value.describe()
                    )?;
                }
            }
        }
    }
    for (file, why) in &library.errors {
        writeln!(out, "not readable: {file}: {why}")?;
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_to_string(cmd: impl FnOnce(&mut Vec<u8>) -> anyhow::Result<i32>) -> (i32, String) {
        let mut buffer = Vec::new();
        let code = cmd(&mut buffer).unwrap();
        (code, String::from_utf8(buffer).unwrap())
    }

    fn strings(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn sim_list_prints_every_metric_under_pmc() {
        let (code, text) = run_to_string(|out| list(out, Some("sim"), None));
        assert_eq!(code, 0);
        assert!(
            text.starts_with(&format!("{:<30}:\tSIM\nPMC:\n", "Name")),
            "{text}"
        );
        assert!(
            text.lines().any(|l| l == "sim__warps_launched.sum"),
            "{text}"
        );
        assert!(!text.contains("GPU"), "a chip is not a GPU: {text}");
    }

    #[test]
    fn a_closed_pipe_is_not_an_error() {
        let closed = std::io::Error::from(std::io::ErrorKind::BrokenPipe);
        assert_eq!(quiet_on_closed_pipe(Err(closed.into())).unwrap(), 0);
        let other = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        assert!(quiet_on_closed_pipe(Err(other.into())).is_err());
    }

    #[test]
    fn columns_fit_the_width() {
        let names = strings(&["aaaa", "bb", "cccccc", "d", "eeee"]);
        let mut buffer = Vec::new();
        write_columns(&mut buffer, &names, 22).unwrap();
        let text = String::from_utf8(buffer).unwrap();
        assert_eq!(text, "aaaa    bb      cccccc\nd       eeee\n");
    }

    #[test]
    fn pmc_check_success_names_the_chip_and_counters() {
        let names = strings(&["sim__warps_launched.sum,sim__inst_executed.sum"]);
        let (code, text) = run_to_string(|out| pmc_check(out, Some("SIM"), &words(&names)));
        assert_eq!(code, 0);
        assert_eq!(
            text,
            "Following input counters can be collected together on SIM: sim__warps_launched.sum sim__inst_executed.sum\n"
        );
    }

    #[test]
    fn pmc_check_failure_gives_passes_and_a_split_and_exit_1() {
        let names = strings(&[
            "sim__warps_launched.sum",
            "sim__inst_executed.sum",
            "sim__bytes_read.sum",
        ]);
        let (code, text) = run_to_string(|out| pmc_check(out, Some("sim"), &names));
        assert_eq!(code, 1);
        assert!(text.contains("need 2 hardware passes"), "{text}");
        assert!(
            text.contains(
                "--pmc sim__warps_launched.sum sim__inst_executed.sum --pmc sim__bytes_read.sum"
            ),
            "{text}"
        );
    }

    #[test]
    fn pmc_check_misspelling_is_a_usage_error_with_a_suggestion() {
        let mut buffer = Vec::new();
        let error = pmc_check(
            &mut buffer,
            Some("SIM"),
            &strings(&["sim__warp_launched.sum"]),
        )
        .unwrap_err();
        assert!(error.downcast_ref::<UsageError>().is_some());
        assert!(
            error
                .to_string()
                .contains("did you mean sim__warps_launched.sum"),
            "{error}"
        );
    }

    #[test]
    fn info_prints_description_unit_and_type() {
        let (code, text) =
            run_to_string(|out| info(out, Some("SIM"), &strings(&["sim__bytes_read.sum"])));
        assert_eq!(code, 0);
        assert!(
            text.contains("Counter_Name        :\tsim__bytes_read.sum"),
            "{text}"
        );
        assert!(
            text.contains("Description         :\tBytes read from device memory"),
            "{text}"
        );
        assert!(text.contains("Unit                :\tbyte"), "{text}");
        assert!(text.contains("Type                :\tcounter"), "{text}");
    }

    #[test]
    fn clap_spells_the_subcommands_like_rocprofv3_avail() {
        use clap::Parser;
        #[derive(Parser)]
        struct Wrapper {
            #[command(subcommand)]
            command: AvailCommand,
        }
        let parsed =
            Wrapper::try_parse_from(["avail", "pmc-check", "--chip", "gh100", "a", "b"]).unwrap();
        assert_eq!(
            parsed.command,
            AvailCommand::PmcCheck {
                chip: Some("gh100".into()),
                names: strings(&["a", "b"])
            }
        );
        let parsed = Wrapper::try_parse_from(["avail", "info", "--pmc", "x", "y"]).unwrap();
        assert_eq!(
            parsed.command,
            AvailCommand::Info {
                chip: None,
                pmc: strings(&["x", "y"])
            }
        );
        assert!(
            Wrapper::try_parse_from(["avail", "info"]).is_err(),
            "--pmc is required"
        );
    }
}
