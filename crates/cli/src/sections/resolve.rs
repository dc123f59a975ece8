//! The chosen sections resolved for one chip: per row how its value is obtained, and the CUPTI
//! metrics to collect.

use super::expression::Expander;
use super::section_file::{Details, Section};
use kreplay_format::sections_out::{Expr, SectionRow, SectionSpec};
use std::collections::HashMap;

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
