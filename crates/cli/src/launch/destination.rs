//! The outputs' destination checked before the application starts: what no run could write is a
//! usage error then, not a failure after the application ran.

use super::launcher::Launcher;
use crate::error::UsageError;
use crate::placeholders::{expand, PlaceholderValues};
use crate::plan::{RunSpec, SummaryOutput};
use kreplay_format::output::{suffix, TEMP_NAME_OVERHEAD};
use std::path::{Path, PathBuf};

/// The most a process id can be on Linux (`pid_max` at most 2^22): placeholders are expanded
/// with it when output paths are checked before the application exists.
const LARGEST_PID: u32 = 4_194_304;

/// The longest name an output file adds to `-o`, with the temporary name it is written under
/// before it replaces the file.
const LONGEST_OUTPUT_SUFFIX: usize = suffix::LONGEST + TEMP_NAME_OVERHEAD;

/// Finds, before the application starts, output paths no run could write: a file name longer
/// than the file system allows, a folder that would have to be made under a regular file, or
/// a folder kreplay may not write in. Placeholders are expanded as they will be (the process
/// ids with the largest possible one).
pub fn check_destination(spec: &RunSpec, launcher: &Launcher) -> Result<(), UsageError> {
    let mut values =
        PlaceholderValues::for_process(LARGEST_PID, &launcher.app, &launcher.launch_time);
    values.ppid = LARGEST_PID;
    values.pgid = LARGEST_PID;
    values.psid = LARGEST_PID;
    let mut dir = PathBuf::from(expand(&spec.output_directory, &values));
    if let Some(sub) = &spec.subdir {
        dir.push(sub);
    }
    let name = expand(&spec.output_file, &values);
    let path = dir.join(&name);
    // The summary file `<o>_<NAME>.txt` may be the longest name written.
    let summary_suffix = match spec.summary.as_ref().map(|s| &s.output) {
        Some(SummaryOutput::File(file)) if !file.contains('/') => {
            file.len() + "_.txt".len() + TEMP_NAME_OVERHEAD
        }
        _ => 0,
    };
    // The memory traces' files, longer than the others, only under their options.
    let traces = [
        (spec.memory_copy_trace, suffix::MEMORY_COPY_TRACE),
        (
            spec.memory_allocation_trace,
            suffix::MEMORY_ALLOCATION_TRACE,
        ),
    ]
    .into_iter()
    .filter(|(on, _)| *on)
    .map(|(_, suffix)| suffix.len() + TEMP_NAME_OVERHEAD)
    .max()
    .unwrap_or(0);
    let longest_suffix = LONGEST_OUTPUT_SUFFIX.max(summary_suffix).max(traces);
    let (existing, fresh) = writable_folder(
        path.parent().unwrap_or(Path::new(".")),
        &path,
        "choose another -d/--output-directory or -o/--output-file",
    )?;
    let c_existing = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok();
    // SAFETY: a NUL-terminated path; -1 (no limit known) keeps the usual 255.
    let name_max = c_existing
        .map(|c| unsafe { libc::pathconf(c.as_ptr(), libc::_PC_NAME_MAX) })
        .filter(|&n| n > 0)
        .unwrap_or(255) as usize;
    let file_name = path.file_name().map(|n| n.len()).unwrap_or(0);
    let too_long = fresh
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| (n.len(), n.to_string_lossy().into_owned()))
        .chain([(
            file_name + longest_suffix,
            format!(
                "{}_counter_collection.csv",
                path.file_name().unwrap_or_default().to_string_lossy()
            ),
        )])
        .find(|(bytes, _)| *bytes > name_max);
    if let Some((bytes, component)) = too_long {
        let shown: String = component.chars().take(40).collect();
        return Err(UsageError::new(format!(
            "an output name would be {bytes} bytes long ('{shown}…'), more than the {name_max} this file system allows in one name; shorten -o/--output-file or -d/--output-directory"
        )));
    }
    Ok(())
}

/// Checks that the folder `dir` exists or can be made, before anything is written: returns the
/// deepest folder of its path that exists and those below it that would be made (deepest
/// first). `shown` is the path named in the messages, `fix` the advice they end with.
pub fn writable_folder<'a>(
    dir: &'a Path,
    shown: &Path,
    fix: &str,
) -> Result<(&'a Path, Vec<&'a Path>), UsageError> {
    let mut existing = dir;
    let mut fresh = Vec::new();
    while !existing.as_os_str().is_empty() && !existing.exists() {
        fresh.push(existing);
        existing = existing.parent().unwrap_or(Path::new(""));
    }
    let existing = if existing.as_os_str().is_empty() {
        Path::new(".")
    } else {
        existing
    };
    if !existing.is_dir() {
        return Err(UsageError::new(format!(
            "the output path {} goes through {}, which is a file, not a folder; {fix}",
            shown.display(),
            existing.display()
        )));
    }
    probe_writable(existing, fresh.last().copied().unwrap_or(existing))?;
    Ok((existing, fresh))
}

/// Makes (and removes) a folder in `existing`, the deepest folder of the outputs' path that
/// exists: what `access` cannot tell (root may write anywhere `access` says, but not under
/// /proc, nor on a read-only file system) is found before the application starts. `first`
/// is the first folder kreplay would make there (or `existing` itself), named in the message.
fn probe_writable(existing: &Path, first: &Path) -> Result<(), UsageError> {
    let probe = existing.join(format!(".kreplay-probe-{}", std::process::id()));
    match std::fs::create_dir(&probe) {
        Ok(()) => {
            let _ = std::fs::remove_dir(&probe);
            Ok(())
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => {
            let what = if first == existing {
                format!("cannot write the outputs under {}", existing.display())
            } else {
                format!("cannot create the output directory {}", first.display())
            };
            Err(UsageError::new(format!(
                "{what} ({} does not allow it: {e}); choose another -d/--output-directory, a folder you may write in",
                existing.display()
            )))
        }
    }
}
