//! A `.section` file as kreplay keeps it: identifier, display name, order, sets, the metrics of
//! its header and body with their architecture filters and options, its derived metrics.

use super::textproto::{Message, Value};

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
    let message = super::textproto::parse(text).map_err(|e| e.to_string())?;
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
