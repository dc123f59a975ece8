//! The files a run's data is written to after the application ends.

use crate::csv_out;
use crate::db::{Durability, RowInserter};
use crate::error::FormatError;
use crate::json_out;
use crate::run::RunData;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// An output format of `-f/--output-format`, spelled as rocprofv3 spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OutputFormat {
    /// `<name>_results.db`, the rocpd-style SQLite database (the default).
    Rocpd,
    /// `<name>_counter_collection.csv` and friends.
    Csv,
    /// `<name>_results.json`.
    Json,
}

impl OutputFormat {
    pub const ALL: [OutputFormat; 3] = [OutputFormat::Rocpd, OutputFormat::Csv, OutputFormat::Json];

    pub fn as_str(self) -> &'static str {
        match self {
            OutputFormat::Rocpd => "rocpd",
            OutputFormat::Csv => "csv",
            OutputFormat::Json => "json",
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

/// `<dir>/<name><suffix>`, with the parent folders created (`name` may contain '/').
pub(crate) fn output_path(dir: &Path, name: &str, suffix: &str) -> Result<PathBuf, FormatError> {
    let path = dir.join(format!("{name}{suffix}"));
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| FormatError::io(parent, e))?;
    }
    Ok(path)
}

/// Writes the run in each of `formats` and returns the paths written:
/// - rocpd: `<dir>/<name>_results.db`, every process merged into one database;
/// - csv: `<dir>/<name>_counter_collection.csv` (always), plus `_kernel_trace.csv`,
///   `_agent_info.csv` and `_replay_cost.csv` when they have rows;
/// - json: `<dir>/<name>_results.json`.
///
/// Parent folders are created. An existing file of the same name is replaced, so an input
/// database may be rewritten in place (the run is already in memory; see [`write_rocpd`]).
pub fn write_outputs(
    run: &RunData,
    dir: &Path,
    name: &str,
    formats: &[OutputFormat],
) -> Result<Vec<PathBuf>, FormatError> {
    let mut wanted = formats.to_vec();
    wanted.sort();
    wanted.dedup();
    let mut written = Vec::new();
    for format in wanted {
        match format {
            OutputFormat::Rocpd => {
                let path = output_path(dir, name, "_results.db")?;
                write_rocpd(run, &path)?;
                written.push(path);
            }
            OutputFormat::Csv => written.extend(csv_out::write_csv(run, dir, name)?),
            OutputFormat::Json => {
                let path = output_path(dir, name, "_results.json")?;
                json_out::write_json(run, &path)?;
                written.push(path);
            }
        }
    }
    Ok(written)
}

/// Writes `run` as one database, synchronously (the same rows the per-process writer makes).
/// The rows go to `<path>.partial`, renamed over `path` once complete: `path` may be one of the
/// inputs (`kreplay convert -f rocpd` in place), which a failed write must not destroy.
pub fn write_rocpd(run: &RunData, path: &Path) -> Result<(), FormatError> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    let partial = PathBuf::from(partial);
    let written = (|| {
        let mut inserter = RowInserter::create(&partial, Durability::Output)?;
        inserter.begin()?;
        for record in run.to_records() {
            inserter.insert(record)?;
        }
        inserter.close()?;
        std::fs::rename(&partial, path).map_err(|e| FormatError::io(path, e))
    })();
    if written.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_case_insensitively_and_reject_others() {
        assert_eq!(
            "ROCPD".parse::<OutputFormat>().unwrap(),
            OutputFormat::Rocpd
        );
        assert_eq!("csv".parse::<OutputFormat>().unwrap(), OutputFormat::Csv);
        assert_eq!("Json".parse::<OutputFormat>().unwrap(), OutputFormat::Json);
        let error = "pftrace".parse::<OutputFormat>().unwrap_err().to_string();
        assert!(
            error.contains("\"pftrace\"") && error.contains("rocpd csv json"),
            "{error}"
        );
    }

    #[test]
    fn a_failed_rewrite_in_place_keeps_the_input_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out_results.db");
        let run = RunData::from_records(crate::testdata::recorded_run(7));
        write_rocpd(&run, &path).unwrap();
        let before = crate::run::read_databases(std::slice::from_ref(&path)).unwrap();
        assert!(!before.processes.is_empty());
        // A folder where the partial file would go makes the rewrite fail.
        std::fs::create_dir(dir.path().join("out_results.db.partial")).unwrap();
        assert!(write_rocpd(&before, &path).is_err());
        assert_eq!(
            crate::run::read_databases(std::slice::from_ref(&path)).unwrap(),
            before
        );
        // Once the way is clear, rewriting in place gives the same run and leaves no partial file.
        std::fs::remove_dir(dir.path().join("out_results.db.partial")).unwrap();
        write_rocpd(&before, &path).unwrap();
        assert_eq!(crate::run::read_databases(&[path]).unwrap(), before);
        assert!(!dir.path().join("out_results.db.partial").exists());
    }
}
