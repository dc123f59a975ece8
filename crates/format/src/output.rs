//! The files a run's data is written to after the application ends.

use crate::csv_out;
use crate::db::write_rocpd_with;
use crate::error::FormatError;
use crate::files::output_path;
use crate::json_out;
use crate::pftrace::write_pftrace_with;
use crate::progress::{Silent, WriteProgress};
use crate::run::RunData;
use crate::sections_out::{has_sections, write_sections_csv};
use std::path::{Path, PathBuf};
use std::str::FromStr;

pub use crate::db::write_rocpd;
pub use crate::files::{suffix, TEMP_NAME_OVERHEAD};

/// An output format of `-f/--output-format`, spelled as rocprofv3 spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutputFormat {
    /// `<name>_results.db`, the rocpd-style SQLite database (the default).
    Rocpd,
    /// `<name>_counter_collection.csv` and friends.
    Csv,
    /// `<name>_results.json`.
    Json,
    /// `<name>_results.pftrace`, a Perfetto trace.
    Pftrace,
}

impl OutputFormat {
    pub const ALL: [OutputFormat; 4] = [
        OutputFormat::Rocpd,
        OutputFormat::Csv,
        OutputFormat::Json,
        OutputFormat::Pftrace,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Rocpd => "rocpd",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
            OutputFormat::Pftrace => "pftrace",
        }
    }
}

impl std::fmt::Display for OutputFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for OutputFormat {
    type Err = FormatError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        OutputFormat::ALL
            .into_iter()
            .find(|format| format.as_str().eq_ignore_ascii_case(text.trim()))
            .ok_or_else(|| FormatError::UnknownFormat(text.to_string()))
    }
}

/// Writes the run in each of `formats` and returns the paths written:
/// - rocpd: `<dir>/<name>_results.db`, every process merged into one database;
/// - csv: `<dir>/<name>_counter_collection.csv` (always), plus `_kernel_trace.csv`,
///   `_agent_info.csv` and `_replay_cost.csv` when they have rows, and `_sections.csv` when the
///   run was asked for Nsight Compute's sections;
/// - json: `<dir>/<name>_results.json`;
/// - pftrace: `<dir>/<name>_results.pftrace` (a Perfetto trace).
///
/// Parent folders are created. Each file is replaced atomically, once complete (an input database
/// may be rewritten in place: a stored run keeps the file it reads open; see [`write_rocpd`]); a
/// failed write leaves the file it would have replaced as it was.
pub fn write_outputs(
    run: &RunData,
    dir: &Path,
    name: &str,
    formats: &[OutputFormat],
) -> Result<Vec<PathBuf>, FormatError> {
    write_outputs_with(run, dir, name, formats, &Silent)
}

/// [`write_outputs`], telling `progress` which file is being written and how far it is.
pub fn write_outputs_with(
    run: &RunData,
    dir: &Path,
    name: &str,
    formats: &[OutputFormat],
    progress: &dyn WriteProgress,
) -> Result<Vec<PathBuf>, FormatError> {
    // Nsight Compute's sections merge every pass of a dispatch: a run that has them is read into
    // memory (the other formats stream from where the records are stored).
    let in_memory;
    let run = if has_sections(run) {
        in_memory = run.in_memory()?;
        &*in_memory
    } else {
        run
    };
    let mut wanted = formats.to_vec();
    wanted.sort();
    wanted.dedup();
    let mut written = Vec::new();
    for format in wanted {
        match format {
            OutputFormat::Rocpd => {
                let path = output_path(dir, name, suffix::RESULTS_DB)?;
                write_rocpd_with(run, &path, progress)?;
                written.push(path);
            }
            OutputFormat::Csv => {
                written.extend(csv_out::write_csv_with(run, dir, name, progress)?);
                if has_sections(run) {
                    written.push(write_sections_csv(run, dir, name)?);
                }
            }
            OutputFormat::Json => {
                let path = output_path(dir, name, suffix::RESULTS_JSON)?;
                json_out::write_json_with(run, &path, progress)?;
                written.push(path);
            }
            OutputFormat::Pftrace => {
                let path = output_path(dir, name, suffix::RESULTS_PFTRACE)?;
                write_pftrace_with(run, &path, progress)?;
                written.push(path);
            }
        }
    }
    Ok(written)
}

#[cfg(test)]
mod tests;
