//! The files a run's data is written to after the application ends.

use crate::csv_out;
use crate::db::{Durability, RowInserter};
use crate::error::FormatError;
use crate::json_out;
use crate::run::RunData;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
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

/// What each output file adds to `-o` (the summary file's `_<NAME>.txt` aside).
pub mod suffix {
    pub const RESULTS_DB: &str = "_results.db";
    pub const RESULTS_JSON: &str = "_results.json";
    pub const RESULTS_PFTRACE: &str = "_results.pftrace";
    pub const COUNTER_COLLECTION: &str = "_counter_collection.csv";
    pub const KERNEL_TRACE: &str = "_kernel_trace.csv";
    pub const AGENT_INFO: &str = "_agent_info.csv";
    pub const REPLAY_COST: &str = "_replay_cost.csv";
    pub const KERNEL_STATS: &str = "_kernel_stats.csv";
    pub const DOMAIN_STATS: &str = "_domain_stats.csv";
    /// Nsight Compute's sections (`--section`, `--set`), `ncu --csv --page details` columns.
    pub const SECTIONS: &str = "_sections.csv";

    /// Every suffix above.
    pub const ALL: [&str; 10] = [
        RESULTS_DB,
        RESULTS_JSON,
        RESULTS_PFTRACE,
        COUNTER_COLLECTION,
        KERNEL_TRACE,
        AGENT_INFO,
        REPLAY_COST,
        KERNEL_STATS,
        DOMAIN_STATS,
        SECTIONS,
    ];

    /// The longest of [`ALL`], for checking file-name lengths before a run.
    pub const LONGEST: usize = {
        let mut longest = 0;
        let mut i = 0;
        while i < ALL.len() {
            if ALL[i].len() > longest {
                longest = ALL[i].len();
            }
            i += 1;
        }
        longest
    };
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
///   `_agent_info.csv` and `_replay_cost.csv` when they have rows, and `_sections.csv` when the
///   run was asked for Nsight Compute's sections;
/// - json: `<dir>/<name>_results.json`;
/// - pftrace: `<dir>/<name>_results.pftrace` (a Perfetto trace).
///
/// Parent folders are created. Each file is replaced atomically, once complete (an input database
/// may be rewritten in place: the run is already in memory; see [`write_rocpd`]); a failed write
/// leaves the file it would have replaced as it was.
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
                let path = output_path(dir, name, suffix::RESULTS_DB)?;
                write_rocpd(run, &path)?;
                written.push(path);
            }
            OutputFormat::Csv => {
                written.extend(csv_out::write_csv(run, dir, name)?);
                if crate::sections_out::has_sections(run) {
                    written.push(crate::sections_out::write_sections_csv(run, dir, name)?);
                }
            }
            OutputFormat::Json => {
                let path = output_path(dir, name, suffix::RESULTS_JSON)?;
                json_out::write_json(run, &path)?;
                written.push(path);
            }
            OutputFormat::Pftrace => {
                let path = output_path(dir, name, suffix::RESULTS_PFTRACE)?;
                crate::pftrace::write_pftrace(run, &path)?;
                written.push(path);
            }
        }
    }
    Ok(written)
}

/// The most bytes [`temp_path`] adds to a file name: `.`, `.tmp-` and a pid of up to 7 digits.
pub const TEMP_NAME_OVERHEAD: usize = 1 + ".tmp-".len() + 7;

/// Where [`replace_file`] writes `path` first: `.<file name>.tmp-<pid>` in the same folder.
fn temp_path(path: &Path) -> Result<PathBuf, FormatError> {
    let file_name = path.file_name().ok_or_else(|| {
        FormatError::io(
            path,
            io::Error::new(io::ErrorKind::InvalidInput, "not a file name"),
        )
    })?;
    let mut name = OsString::from(".");
    name.push(file_name);
    name.push(format!(".tmp-{}", std::process::id()));
    Ok(path.with_file_name(name))
}

/// Writes `path` atomically: `write` creates a temporary file next to it (the path it is given),
/// which is synced and renamed over `path` once `write` succeeds. On failure the temporary file
/// is removed and `path` is left as it was.
pub(crate) fn replace_file(
    path: &Path,
    write: impl FnOnce(&Path) -> Result<(), FormatError>,
) -> Result<(), FormatError> {
    let temp = temp_path(path)?;
    let written = write(&temp).and_then(|()| {
        File::open(&temp)
            .and_then(|file| file.sync_all())
            .and_then(|()| std::fs::rename(&temp, path))
            .map_err(|e| FormatError::io(path, e))
    });
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    written
}

/// [`replace_file`] for a file that `write` streams through a buffered writer, flushed before
/// the rename.
pub(crate) fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>,
) -> Result<(), FormatError> {
    replace_file(path, |temp| {
        File::create(temp)
            .map(BufWriter::new)
            .and_then(|mut out| {
                write(&mut out)?;
                out.flush()
            })
            .map_err(|e| FormatError::io(path, e))
    })
}

/// Writes `run` as one database, synchronously (the same rows the per-process writer makes),
/// through [`replace_file`]: `path` may be one of the inputs (`kreplay convert -f rocpd` in
/// place), which a failed write must not destroy.
pub fn write_rocpd(run: &RunData, path: &Path) -> Result<(), FormatError> {
    replace_file(path, |temp| {
        let mut inserter = RowInserter::create(temp, Durability::Output)?;
        inserter.begin()?;
        for record in run.to_records() {
            inserter.insert(record)?;
        }
        inserter.close()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_file_written_ends_with_a_listed_suffix_and_every_suffix_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let mut run = RunData::from_records(crate::testdata::recorded_run(7));
        run.processes[0].process.sections = vec![crate::sections_out::SectionSpec {
            identifier: "S".into(),
            display_name: "S".into(),
            rows: Vec::new(),
        }];
        let mut written = write_outputs(&run, dir.path(), "out", &OutputFormat::ALL).unwrap();
        written.extend(crate::stats_out::write_stats_csv(&run, dir.path(), "out").unwrap());
        let mut seen: Vec<&str> = written
            .iter()
            .map(|path| {
                let name = path.file_name().unwrap().to_str().unwrap();
                let tail = name.strip_prefix("out").unwrap();
                *suffix::ALL
                    .iter()
                    .find(|s| **s == tail)
                    .unwrap_or_else(|| panic!("{name} is not in suffix::ALL"))
            })
            .collect();
        seen.sort();
        let mut all = suffix::ALL.to_vec();
        all.sort();
        assert_eq!(seen, all);
        assert_eq!(suffix::LONGEST, "_counter_collection.csv".len());
    }

    #[test]
    fn formats_parse_case_insensitively_and_reject_others() {
        assert_eq!(
            "ROCPD".parse::<OutputFormat>().unwrap(),
            OutputFormat::Rocpd
        );
        assert_eq!("csv".parse::<OutputFormat>().unwrap(), OutputFormat::Csv);
        assert_eq!("Json".parse::<OutputFormat>().unwrap(), OutputFormat::Json);
        assert_eq!(
            "pftrace".parse::<OutputFormat>().unwrap(),
            OutputFormat::Pftrace
        );
        let error = "otf2".parse::<OutputFormat>().unwrap_err().to_string();
        assert!(
            error.contains("\"otf2\"") && error.contains("rocpd csv json pftrace"),
            "{error}"
        );
    }

    /// The files in `dir`, sorted.
    fn files_in(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_failing_writer_keeps_the_old_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        std::fs::write(&path, "old contents\n").unwrap();
        let error = write_file(&path, |out| {
            // More than the write buffer holds, so that part of it reached the temporary file.
            out.write_all(&vec![b'x'; 64 * 1024])?;
            Err(io::Error::new(io::ErrorKind::StorageFull, "disk full"))
        })
        .unwrap_err()
        .to_string();
        assert_eq!(error, format!("cannot write {}: disk full", path.display()));
        assert_eq!(std::fs::read(&path).unwrap(), b"old contents\n");
        assert_eq!(files_in(dir.path()), ["out.csv"]);
    }

    #[test]
    fn a_complete_write_replaces_the_file_and_leaves_no_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out.csv");
        std::fs::write(&path, "old contents, longer than the new\n").unwrap();
        write_file(&path, |out| out.write_all(b"new\n")).unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"new\n");
        assert_eq!(files_in(dir.path()), ["out.csv"]);
    }

    #[test]
    fn the_temporary_file_is_hidden_next_to_the_destination() {
        let temp = temp_path(Path::new("/data/run/out_results.json")).unwrap();
        assert_eq!(
            temp,
            PathBuf::from(format!(
                "/data/run/.out_results.json.tmp-{}",
                std::process::id()
            ))
        );
        assert!(temp_path(Path::new("/")).is_err());
    }

    #[test]
    fn a_failed_rewrite_in_place_keeps_the_input_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("out_results.db");
        let run = RunData::from_records(crate::testdata::recorded_run(7));
        write_rocpd(&run, &path).unwrap();
        let before = crate::db::read_databases(std::slice::from_ref(&path)).unwrap();
        assert!(!before.processes.is_empty());
        // A folder where the temporary file would go makes the rewrite fail.
        let temp = temp_path(&path).unwrap();
        std::fs::create_dir(&temp).unwrap();
        assert!(write_rocpd(&before, &path).is_err());
        assert_eq!(
            crate::db::read_databases(std::slice::from_ref(&path)).unwrap(),
            before
        );
        // Once the way is clear, rewriting in place gives the same run and leaves no other file.
        std::fs::remove_dir(&temp).unwrap();
        write_rocpd(&before, &path).unwrap();
        assert_eq!(crate::db::read_databases(&[path]).unwrap(), before);
        assert_eq!(files_in(dir.path()), ["out_results.db"]);
    }
}
