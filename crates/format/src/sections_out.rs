//! Nsight Compute's sections over kreplay's records: per dispatch and section, the section's rows
//! (label, unit, value) as `ncu --csv --page details` lays them out (`<o>_sections.csv`), and a
//! per-kernel summary like `ncu --print-summary per-kernel`. The sections themselves are
//! [`SectionSpec`]s (`section_spec.rs`), their values computed in `section_values.rs`.

use crate::csv_file::csv_file;
use crate::error::FormatError;
use crate::files::{output_path, suffix};
use crate::numbers::{quoted, shortest};
use crate::run::RunData;
use crate::section_values::{dispatch_values, row_unit};
use std::path::{Path, PathBuf};

pub use crate::section_spec::{
    chip_arch, chip_compute_capability, Attribute, BinaryOp, Expr, SectionRow, SectionSpec,
};
pub use crate::section_values::{has_sections, section_values, DispatchValues, SectionValue};

/// `v` as the sections page prints it: base units, no thousands separators, the shortest digits
/// that read back the same; `n/a` when it could not be obtained.
fn value_text(value: Option<f64>) -> String {
    match value {
        Some(v) if v.is_finite() => shortest(v),
        _ => "n/a".to_string(),
    }
}

fn dims(v: [u32; 3]) -> String {
    format!("({}, {}, {})", v[0], v[1], v[2])
}

/// Nsight Compute's `--csv --page details` columns.
const COLUMNS: [&str; 15] = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    "Section Name",
    "Metric Name",
    "Metric Unit",
    "Metric Value",
];

/// Writes `<name>_sections.csv` in `dir`: one line per dispatch, section of its process and row.
/// `ID` counts the dispatches of the run from 0 in dispatch order, process by process, as
/// Nsight Compute numbers profiled kernels.
pub fn write_sections_csv(run: &RunData, dir: &Path, name: &str) -> Result<PathBuf, FormatError> {
    let path = output_path(dir, name, suffix::SECTIONS)?;
    csv_file(path, &COLUMNS, |csv| {
        let mut id = 0u64;
        for process in &run.processes {
            let program = process.process.program_name();
            for at in dispatch_values(process) {
                let kernel = at.kernel.map(|k| k.demangled_name.as_str()).unwrap_or("");
                let cc = at
                    .agent
                    .and_then(|a| chip_compute_capability(&a.chip))
                    .map(|(major, minor)| format!("{major}.{minor}"))
                    .unwrap_or_default();
                let fixed = [
                    id.to_string(),
                    process.process.pid.to_string(),
                    program.to_string(),
                    process.process.hostname.clone(),
                    kernel.to_string(),
                    String::new(),
                    at.first.stream_id.to_string(),
                    dims(at.first.block),
                    dims(at.first.grid),
                    at.first.agent_id.to_string(),
                    cc,
                ];
                for section in &process.process.sections {
                    for row in &section.rows {
                        let line: Vec<String> = fixed
                            .iter()
                            .map(String::as_str)
                            .chain([
                                section.display_name.as_str(),
                                row.label.as_str(),
                                &row_unit(row, process),
                                &value_text(row.value.eval(&at)),
                            ])
                            .map(quoted)
                            .collect();
                        csv.row(&line)?;
                    }
                }
                id += 1;
            }
        }
        Ok(())
    })
}

/// Per kernel (by name, first dispatched first) and section: each row's minimum, maximum and
/// average over the kernel's dispatches, as `ncu --print-summary per-kernel` shows them.
pub fn render_sections_summary(run: &RunData) -> String {
    let mut text = String::new();
    for process in &run.processes {
        let sections = &process.process.sections;
        if sections.is_empty() {
            continue;
        }
        // Every pass of a dispatch is merged: the process is read into memory (one that cannot
        // be read has no summary; writing its files said why).
        let Ok(process) = process.in_memory() else {
            continue;
        };
        let values = dispatch_values(&process);
        let mut kernels: Vec<(&str, Vec<&DispatchValues<'_>>)> = Vec::new();
        for at in &values {
            let name = at.kernel.map(|k| k.demangled_name.as_str()).unwrap_or("?");
            match kernels.iter_mut().find(|(n, _)| *n == name) {
                Some((_, list)) => list.push(at),
                None => kernels.push((name, vec![at])),
            }
        }
        for (name, list) in kernels {
            let first = list[0].first;
            text.push_str(&format!(
                "  {name} {} x {}, Device {}, Invocations {} (process {})\n",
                dims(first.grid),
                dims(first.block),
                first.agent_id,
                list.len(),
                process.process.pid
            ));
            for section in sections {
                text.push_str(&format!("    Section: {}\n", section.display_name));
                let mut lines = vec![[
                    "Metric Name".to_string(),
                    "Metric Unit".to_string(),
                    "Minimum".to_string(),
                    "Maximum".to_string(),
                    "Average".to_string(),
                ]];
                for row in &section.rows {
                    let seen: Vec<f64> = list
                        .iter()
                        .filter_map(|at| row.value.eval(at))
                        .filter(|v| v.is_finite())
                        .collect();
                    let (min, max, avg) = if seen.is_empty() {
                        (None, None, None)
                    } else {
                        let min = seen.iter().copied().fold(f64::INFINITY, f64::min);
                        let max = seen.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                        (
                            Some(min),
                            Some(max),
                            Some(seen.iter().sum::<f64>() / seen.len() as f64),
                        )
                    };
                    lines.push([
                        row.label.clone(),
                        row_unit(row, &process).to_string(),
                        value_text(min),
                        value_text(max),
                        value_text(avg),
                    ]);
                }
                let widths: Vec<usize> = (0..5)
                    .map(|c| {
                        lines
                            .iter()
                            .map(|l| l[c].chars().count())
                            .max()
                            .unwrap_or(0)
                    })
                    .collect();
                for line in &lines {
                    let cells: Vec<String> = line
                        .iter()
                        .zip(&widths)
                        .enumerate()
                        .map(|(c, (cell, &w))| {
                            if c < 2 {
                                format!("{cell:<w$}")
                            } else {
                                format!("{cell:>w$}")
                            }
                        })
                        .collect();
                    text.push_str(&format!("    {}\n", cells.join("  ").trim_end()));
                }
            }
        }
    }
    text
}

#[cfg(test)]
mod tests;
