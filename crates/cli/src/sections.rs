//! Nsight Compute's sections and sets (`--section NAME`, `--set NAME`): which metrics they
//! collect and how their rows are shown.
//!
//! The sections come from, in this order: the folders of `--section-folder`; else the `sections`
//! folder of the user's Nsight Compute installation ([`find_installation`]: `ncu` on `PATH`, then
//! `/usr/local/cuda*/nsight-compute-*` and `/opt/nvidia/nsight-compute/*`, newest first); else
//! kreplay's own ([`builtin`]). Section files are read with a schema-less text-format reader
//! ([`textproto`]); kreplay keeps of each section its identifier, display name, order, sets, the
//! metrics of its header and body (with their architecture filters and options) and its derived
//! metric definitions. Rules and the metrics a section collects only for its rules (the
//! top-level `Metrics` list) are not used.
//!
//! [`resolve`] turns the chosen sections into the metrics to collect and, per row, how its value
//! is obtained ([`kreplay_format::sections_out`]): a CUPTI metric, a launch attribute, a derived
//! expression, or `n/a` with the reason (regular expressions, breakdowns, PM sampling, names that
//! are not CUPTI metrics of the chip).

pub mod builtin;
mod expression;
mod install;
pub mod textproto;

use expression::Expander;
#[cfg(test)]
use expression::{parse_expression, Tree};
pub use install::{find_installation, SearchPlaces};

use crate::error::UsageError;
use kreplay_format::sections_out::{Expr, SectionRow, SectionSpec};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use textproto::{Message, Value};

/// An architecture filter of a metric, a body item or a section (`MinArch: CC_75`,
/// `MaxArch: CC_90`, or alternatives `Items { MinArch: 80 MaxArch: 86 } Items { MinArch: 89 }`;
/// `CollectionFilter { CollectionScopes: ... }`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Architecture ranges (`90` for 9.0), any of which lets an architecture through; empty:
    /// every architecture.
    pub ranges: Vec<(Option<u32>, Option<u32>)>,
    /// The filter names collection scopes, and kernel launches are not among them.
    pub not_for_launches: bool,
}

/// `CC_90` or `90` as 90.
fn arch_number(m: &Message, field: &str) -> Option<u32> {
    let text = m.scalar(field)?;
    text.strip_prefix("CC_").unwrap_or(text).parse().ok()
}

fn arch_range(m: &Message) -> Option<(Option<u32>, Option<u32>)> {
    let range = (arch_number(m, "MinArch"), arch_number(m, "MaxArch"));
    (range != (None, None)).then_some(range)
}

impl Filter {
    fn from_message(message: Option<&Message>) -> Filter {
        let Some(m) = message else {
            return Filter::default();
        };
        let scopes: Vec<&str> = m
            .messages("CollectionFilter")
            .flat_map(|c| c.all("CollectionScopes"))
            .filter_map(|v| match v {
                Value::Word(w) | Value::Text(w) => Some(w.as_str()),
                Value::Message(_) => None,
            })
            .collect();
        Filter {
            ranges: arch_range(m)
                .into_iter()
                .chain(m.messages("Items").filter_map(arch_range))
                .collect(),
            not_for_launches: !scopes.is_empty() && !scopes.iter().any(|s| s.ends_with("Launch")),
        }
    }

    /// Whether the filter lets a kernel launch on architecture `arch` (`90` for 9.0) through.
    /// With no known architecture, only filters without an architecture range match.
    pub fn matches(&self, arch: Option<u32>) -> bool {
        if self.not_for_launches {
            return false;
        }
        if self.ranges.is_empty() {
            return true;
        }
        arch.is_some_and(|a| {
            self.ranges
                .iter()
                .any(|(min, max)| min.is_none_or(|min| a >= min) && max.is_none_or(|max| a <= max))
        })
    }
}

/// A metric a row may show, with its filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Choice {
    pub name: String,
    pub filter: Filter,
}

/// A row: its label, the base metric and the options that replace it on other architectures.
#[derive(Debug, Clone, PartialEq)]
pub struct RowDef {
    pub label: Option<String>,
    pub base: Choice,
    pub options: Vec<Choice>,
    /// The filters of the body items it sits in, all of which must let the architecture through.
    pub within: Vec<Filter>,
}

impl RowDef {
    /// The metric for `arch` in a section filtered by `section`: the first option whose filter
    /// matches, else the base metric when its filter does, else none (the row is not shown
    /// there), as Nsight Compute chooses. A metric's own filter takes precedence over the
    /// section's; a metric without one follows the section's.
    pub fn metric_for(&self, arch: Option<u32>, section: &Filter) -> Option<&str> {
        if !self.within.iter().all(|f| f.matches(arch)) {
            return None;
        }
        let lets_through = |choice: &&Choice| {
            if choice.filter == Filter::default() {
                section.matches(arch)
            } else {
                choice.filter.matches(arch)
            }
        };
        self.options
            .iter()
            .find(lets_through)
            .or_else(|| Some(&self.base).filter(lets_through))
            .map(|c| c.name.as_str())
    }
}

/// Which rows of a section are shown and collected, as `ncu --print-details`: its header
/// (Nsight Compute's default), its body (tables and charts), or both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Details {
    #[default]
    Header,
    Body,
    All,
}

/// A derived metric: its name, expression and filter.
#[derive(Debug, Clone, PartialEq)]
pub struct Definition {
    pub name: String,
    pub expression: String,
    pub filter: Filter,
}

/// One section as its file defines it.
#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub identifier: String,
    pub display_name: String,
    pub order: i64,
    pub sets: Vec<String>,
    pub filter: Filter,
    /// The header's rows, then the body's.
    pub header: Vec<RowDef>,
    pub body: Vec<RowDef>,
    pub definitions: Vec<Definition>,
    /// The file it came from, or `built-in`.
    pub origin: String,
}

/// Reads one section file's text.
pub fn parse_section(text: &str, origin: &str) -> Result<Section, String> {
    let message = textproto::parse(text).map_err(|e| e.to_string())?;
    let identifier = message
        .scalar("Identifier")
        .ok_or("no Identifier")?
        .to_string();
    let mut header = Vec::new();
    for part in message.messages("Header") {
        header.extend(part.messages("Metrics").filter_map(|m| row_def(m, &[])));
    }
    let mut body = Vec::new();
    for part in message.messages("Body") {
        body_rows(part, &[], &mut body);
    }
    for rows in [&mut header, &mut body] {
        let mut seen = std::collections::HashSet::new();
        rows.retain(|r: &RowDef| seen.insert((r.label.clone(), r.base.name.clone())));
    }
    let definitions = message
        .messages("MetricDefinitions")
        .flat_map(|d| d.messages("MetricDefinitions"))
        .filter_map(|d| {
            Some(Definition {
                name: d.scalar("Name")?.to_string(),
                expression: d.scalar("Expression")?.to_string(),
                filter: Filter::from_message(d.message("Filter")),
            })
        })
        .collect();
    Ok(Section {
        display_name: message
            .scalar("DisplayName")
            .unwrap_or(&identifier)
            .to_string(),
        order: message
            .scalar("Order")
            .and_then(|o| o.parse().ok())
            .unwrap_or(i64::MAX),
        sets: message
            .messages("Sets")
            .filter_map(|s| s.scalar("Identifier").map(String::from))
            .collect(),
        filter: Filter::from_message(message.message("Filter")),
        identifier,
        header,
        body,
        definitions,
        origin: origin.to_string(),
    })
}

fn row_def(metric: &Message, within: &[Filter]) -> Option<RowDef> {
    // Tables use rows without a metric as spacers.
    let name = metric
        .scalar("Name")
        .filter(|n| !n.trim().is_empty())?
        .to_string();
    Some(RowDef {
        label: metric.scalar("Label").map(String::from),
        base: Choice {
            name,
            filter: Filter::from_message(metric.message("Filter")),
        },
        options: metric
            .messages("Options")
            .filter_map(|o| {
                Some(Choice {
                    name: o.scalar("Name")?.to_string(),
                    filter: Filter::from_message(o.message("Filter")),
                })
            })
            .collect(),
        within: within.to_vec(),
    })
}

/// Every metric under a body's items (`Metrics`, `Metric`, `ValuePerCycleMetrics`, ... with a
/// `Name`: tables, charts, rooflines, containers), in file order, each with the filters of the
/// items around it; PM-sampling timelines are left out.
fn body_rows(message: &Message, within: &[Filter], rows: &mut Vec<RowDef>) {
    let mut within = within.to_vec();
    if let Some(filter) = message.message("Filter") {
        within.push(Filter::from_message(Some(filter)));
    }
    for (field, value) in &message.fields {
        let Value::Message(inner) = value else {
            continue;
        };
        if field == "Timeline" || field == "Filter" {
            continue;
        }
        if field.contains("Metric") && inner.scalar("Name").is_some() {
            rows.extend(row_def(inner, &within));
            continue;
        }
        body_rows(inner, &within, rows);
    }
}

impl Section {
    /// The rows `details` shows; with `all`, a body row that repeats a header row (same label
    /// and metric) is shown once.
    pub fn rows(&self, details: Details) -> impl Iterator<Item = &RowDef> {
        let header = matches!(details, Details::Header | Details::All);
        let body = matches!(details, Details::Body | Details::All);
        let in_header = move |r: &RowDef| {
            details == Details::All
                && self
                    .header
                    .iter()
                    .any(|h| h.label == r.label && h.base.name == r.base.name)
        };
        self.header
            .iter()
            .filter(move |_| header)
            .chain(self.body.iter().filter(move |r| body && !in_header(r)))
    }
}

/// Where the sections came from.
#[derive(Debug, Clone, PartialEq)]
pub enum Origin {
    /// `--section-folder`.
    Folders(Vec<PathBuf>),
    /// The `sections` folder of an Nsight Compute installation.
    Installation(PathBuf),
    BuiltIn,
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Folders(folders) => {
                let list: Vec<String> = folders.iter().map(|p| p.display().to_string()).collect();
                write!(f, "--section-folder {}", list.join(", "))
            }
            Origin::Installation(dir) => {
                write!(f, "Nsight Compute's sections in {}", dir.display())
            }
            Origin::BuiltIn => {
                f.write_str("kreplay's built-in sections (no Nsight Compute installation found)")
            }
        }
    }
}

/// The sections available to a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Library {
    pub origin: Origin,
    /// By order, then identifier.
    pub sections: Vec<Section>,
    /// Files that could not be read: path and why.
    pub errors: Vec<(String, String)>,
}

impl Library {
    /// The `.section` files of `folders` when given (as `ncu --section-folder`, not recursive),
    /// else of the installation `places` lead to, else the built-in sections.
    pub fn load(folders: &[PathBuf], places: &SearchPlaces) -> Result<Library, UsageError> {
        for folder in folders {
            if !folder.is_dir() {
                return Err(UsageError::new(format!(
                    "--section-folder {}: not a folder; give the folder that holds the .section files (Nsight Compute's is <installation>/sections)",
                    folder.display()
                )));
            }
        }
        let (origin, dirs) = if !folders.is_empty() {
            (Origin::Folders(folders.to_vec()), folders.to_vec())
        } else if let Some(found) = find_installation(places) {
            (Origin::Installation(found.clone()), vec![found])
        } else {
            (Origin::BuiltIn, Vec::new())
        };
        let mut library = Library {
            origin,
            sections: Vec::new(),
            errors: Vec::new(),
        };
        if dirs.is_empty() {
            for (file, text) in builtin::SECTIONS {
                let section = parse_section(text, "built-in")
                    .map_err(|e| UsageError::new(format!("built-in section {file}: {e}")))?;
                library.sections.push(section);
            }
        }
        for dir in &dirs {
            let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
                .map_err(|e| UsageError::new(format!("cannot read {}: {e}", dir.display())))?
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.extension().is_some_and(|x| x == "section"))
                .collect();
            files.sort();
            for file in files {
                let shown = file.display().to_string();
                let read = std::fs::read_to_string(&file)
                    .map_err(|e| e.to_string())
                    .and_then(|text| parse_section(&text, &shown));
                match read {
                    Ok(section) => match library
                        .sections
                        .iter()
                        .find(|s| s.identifier == section.identifier)
                    {
                        Some(first) => library.errors.push((
                            shown,
                            format!(
                                "section {} is already defined by {}, which is used",
                                section.identifier, first.origin
                            ),
                        )),
                        None => library.sections.push(section),
                    },
                    Err(e) => library.errors.push((shown, e)),
                }
            }
        }
        library
            .sections
            .sort_by(|a, b| (a.order, &a.identifier).cmp(&(b.order, &b.identifier)));
        Ok(library)
    }

    /// The sets the sections name, sorted.
    pub fn sets(&self) -> Vec<&str> {
        let mut sets: Vec<&str> = self
            .sections
            .iter()
            .flat_map(|s| s.sets.iter().map(String::as_str))
            .collect();
        sets.sort();
        sets.dedup();
        sets
    }

    /// The sections `--section` and `--set` choose, each once, in library order.
    pub fn select(
        &self,
        sections: &[String],
        sets: &[String],
    ) -> Result<Vec<&Section>, UsageError> {
        let mut chosen = vec![false; self.sections.len()];
        for wanted in sections {
            // `regex:PATTERN`, as Nsight Compute takes it: every section whose identifier matches.
            if let Some(pattern) = wanted.strip_prefix("regex:") {
                let re = regex::Regex::new(pattern).map_err(|e| {
                    UsageError::new(format!(
                        "--section {wanted}: not a regular expression ({}); write regex:PATTERN with a valid pattern",
                        e.to_string().lines().last().unwrap_or("invalid")
                    ))
                })?;
                let mut any = false;
                for (at, section) in self.sections.iter().enumerate() {
                    if re.is_match(&section.identifier) {
                        chosen[at] = true;
                        any = true;
                    }
                }
                if !any {
                    return Err(UsageError::new(format!(
                        "--section {wanted}: no section identifier of {} matches; they are {} (list them with `kreplay avail sections`)",
                        self.origin,
                        self.sections.iter().map(|s| s.identifier.as_str()).collect::<Vec<_>>().join(", ")
                    )));
                }
                continue;
            }
            let Some(at) = self
                .sections
                .iter()
                .position(|s| s.identifier == *wanted)
                .or_else(|| {
                    self.sections
                        .iter()
                        .position(|s| s.identifier.eq_ignore_ascii_case(wanted))
                })
            else {
                let unreadable = self
                    .errors
                    .iter()
                    .find(|(file, _)| file_stem_is(file, wanted));
                return Err(UsageError::new(match unreadable {
                    Some((file, why)) => format!("--section {wanted}: {file} could not be read ({why}); fix the file or choose another section"),
                    None => format!(
                        "--section {wanted}: no such section in {}; it has {} (list them with `kreplay avail sections`)",
                        self.origin,
                        self.sections.iter().map(|s| s.identifier.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                }));
            };
            chosen[at] = true;
        }
        for set in sets {
            let mut any = false;
            for (at, section) in self.sections.iter().enumerate() {
                if section.sets.iter().any(|s| s.eq_ignore_ascii_case(set)) {
                    chosen[at] = true;
                    any = true;
                }
            }
            if !any {
                return Err(UsageError::new(format!(
                    "--set {set}: no section of {} belongs to it; the sets are {} (list them with `kreplay avail sections`)",
                    self.origin,
                    self.sets().join(", ")
                )));
            }
        }
        Ok(self
            .sections
            .iter()
            .zip(chosen)
            .filter_map(|(s, c)| c.then_some(s))
            .collect())
    }
}

fn file_stem_is(file: &str, name: &str) -> bool {
    Path::new(file)
        .file_stem()
        .and_then(|s| s.to_str())
        .is_some_and(|s| s.eq_ignore_ascii_case(name))
}

/// The chosen sections, resolved for one chip.
#[derive(Debug, Clone, PartialEq)]
pub struct Resolution {
    pub specs: Vec<SectionSpec>,
    /// The CUPTI metrics to collect, each once, in row order.
    pub collect: Vec<String>,
    /// Names no row can obtain, each once, with the reason.
    pub unavailable: Vec<(String, String)>,
}

/// Whether `catalog`'s chip can collect `metric`: known to it, and configurable (CUPTI knows
/// some metrics, e.g. C2C link counters on a GPU without the link, that it cannot configure).
pub fn collectable(catalog: &dyn kreplay_core::catalog::MetricCatalog, metric: &str) -> bool {
    catalog.describe(metric).is_ok() && catalog.passes(&[metric]).is_ok()
}

/// Why a metric name is not a CUPTI metric kreplay collects, if it is one of the kinds Nsight
/// Compute handles itself.
fn not_collected(name: &str) -> Option<&'static str> {
    if name.starts_with("regex:") {
        Some("regular-expression rows are not expanded")
    } else if name.starts_with("breakdown:") {
        Some("breakdowns are Nsight Compute's own tables")
    } else if name.starts_with("pmsampling:") {
        Some("PM sampling is not collected")
    } else if name.starts_with("group:") {
        Some("metric groups are Nsight Compute's own")
    } else if name.starts_with("launch__")
        || name.starts_with("device__")
        || name.starts_with("profiler__")
    {
        Some("Nsight Compute computes it itself")
    } else {
        None
    }
}

/// Every metric name a row of `sections` may read on `arch` (derived metrics expanded), that
/// could be a CUPTI metric: what the catalog is asked about.
pub fn candidate_metrics(
    sections: &[&Section],
    arch: Option<u32>,
    details: Details,
) -> Vec<String> {
    let definitions = definitions(sections, arch);
    let mut expander = Expander::new(&definitions, &|_| true, "");
    let mut out: Vec<String> = Vec::new();
    for section in sections {
        for row in section.rows(details) {
            if let Some(name) = row.metric_for(arch, &section.filter) {
                let mut counters = Vec::new();
                let expr = expander.expr(name);
                expr.counters(&mut counters);
                for c in counters {
                    if !out.iter().any(|m| m == c) {
                        out.push(c.to_string());
                    }
                }
            }
        }
    }
    out
}

/// The derived metrics of `sections` on `arch`: for each name, the first definition whose
/// filter matches.
fn definitions<'a>(sections: &[&'a Section], arch: Option<u32>) -> HashMap<&'a str, &'a str> {
    let mut map = HashMap::new();
    for d in sections.iter().flat_map(|s| &s.definitions) {
        if d.filter.matches(arch) {
            map.entry(d.name.as_str()).or_insert(d.expression.as_str());
        }
    }
    map
}

/// Resolves `sections` for architecture `arch`, `known` saying which names are CUPTI metrics of
/// the chip (`chip` names it in the reasons).
pub fn resolve(
    sections: &[&Section],
    arch: Option<u32>,
    details: Details,
    chip: &str,
    known: &dyn Fn(&str) -> bool,
) -> Resolution {
    let definitions = definitions(sections, arch);
    let mut expander = Expander::new(&definitions, known, chip);
    let mut resolution = Resolution {
        specs: Vec::new(),
        collect: Vec::new(),
        unavailable: Vec::new(),
    };
    for section in sections {
        let mut rows = Vec::new();
        for row in section.rows(details) {
            let Some(metric) = row.metric_for(arch, &section.filter) else {
                continue;
            };
            let value = expander.expr(metric);
            if let Some(why) = value.unavailable() {
                if !resolution.unavailable.iter().any(|(m, _)| m == metric) {
                    resolution
                        .unavailable
                        .push((metric.to_string(), why.to_string()));
                }
            } else {
                let mut counters = Vec::new();
                value.counters(&mut counters);
                for c in counters {
                    if !resolution.collect.iter().any(|m| m == c) {
                        resolution.collect.push(c.to_string());
                    }
                }
            }
            let unit = match &value {
                Expr::Attribute(attribute) => Some(attribute.unit().to_string()),
                Expr::Counter(_) => None,
                _ => Some(String::new()),
            };
            rows.push(SectionRow {
                label: row.label.clone().unwrap_or_else(|| metric.to_string()),
                metric: metric.to_string(),
                value,
                unit,
            });
        }
        // A section none of whose rows applies to this architecture is left out.
        if !rows.is_empty() {
            resolution.specs.push(SectionSpec {
                identifier: section.identifier.clone(),
                display_name: section.display_name.clone(),
                rows,
            });
        }
    }
    resolution
}

#[cfg(test)]
mod tests;
