//! Where output files go and how they are written: `<dir>/<name><suffix>`, each file replaced
//! atomically once complete.

use crate::error::FormatError;
pub(crate) use crate::output_file::OutputFile;
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

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
    /// `--marker-trace`: rocprofv3's marker (ROCTx; here NVTX) records.
    pub const MARKER_API_TRACE: &str = "_marker_api_trace.csv";
    /// `--runtime-trace`/`--sys-trace`: rocprofv3's `hip_api_trace.csv`, named for CUDA.
    pub const CUDA_API_TRACE: &str = "_cuda_api_trace.csv";
    /// `--memory-copy-trace`: rocprofv3's memory copy records.
    pub const MEMORY_COPY_TRACE: &str = "_memory_copy_trace.csv";
    /// `--memory-allocation-trace`: rocprofv3's memory allocation records.
    pub const MEMORY_ALLOCATION_TRACE: &str = "_memory_allocation_trace.csv";
    /// `--stats` with `--marker-trace`: rocprofv3's marker statistics.
    pub const MARKER_API_STATS: &str = "_marker_api_stats.csv";
    /// `--stats` with `--runtime-trace`/`--sys-trace`: rocprofv3's `hip_api_stats.csv`, named
    /// for CUDA as the API trace is.
    pub const CUDA_API_STATS: &str = "_cuda_api_stats.csv";
    /// `--stats` with `--memory-copy-trace`.
    pub const MEMORY_COPY_STATS: &str = "_memory_copy_stats.csv";
    /// `--stats` with `--memory-allocation-trace`.
    pub const MEMORY_ALLOCATION_STATS: &str = "_memory_allocation_stats.csv";

    /// Every suffix above.
    pub const ALL: [&str; 18] = [
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
        MARKER_API_TRACE,
        CUDA_API_TRACE,
        MARKER_API_STATS,
        CUDA_API_STATS,
        MEMORY_COPY_STATS,
        MEMORY_COPY_TRACE,
        MEMORY_ALLOCATION_TRACE,
        MEMORY_ALLOCATION_STATS,
    ];

    /// The longest of [`ALL`] but the memory files' ([`MEMORY_COPY_TRACE`],
    /// [`MEMORY_ALLOCATION_TRACE`], [`MEMORY_ALLOCATION_STATS`]: longer, and written only under
    /// their options), for checking file-name lengths before a run.
    pub const LONGEST: usize = {
        let mut longest = 0;
        let mut i = 0;
        // The long memory files are the last three of ALL.
        while i < ALL.len() - 3 {
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

/// The most bytes [`temp_path`] adds to a file name: `.`, `.tmp-` and a pid of up to 7 digits.
pub const TEMP_NAME_OVERHEAD: usize = 1 + ".tmp-".len() + 7;

/// Where [`replace_file`] writes `path` first: `.<file name>.tmp-<pid>` in the same folder.
pub(crate) fn temp_path(path: &Path) -> Result<PathBuf, FormatError> {
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

/// How many bytes an output file's writer gathers per `write` call: with the default 8 KiB, a
/// 2 GB JSON document took 270,000 system calls.
pub(crate) const WRITE_BUFFER: usize = 1 << 20;

/// [`replace_file`] for a file that `write` streams through a buffered writer, flushed before
/// the rename; dropped from the page cache behind the writing ([`OutputFile`]).
pub(crate) fn write_file(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<OutputFile>) -> io::Result<()>,
) -> Result<(), FormatError> {
    replace_file(path, |temp| {
        File::create(temp)
            .map(|file| BufWriter::with_capacity(WRITE_BUFFER, OutputFile::new(file, temp)))
            .and_then(|mut out| {
                write(&mut out)?;
                out.flush()
            })
            .map_err(|e| FormatError::io(path, e))
    })
}

/// Copies the file at `source` over `path` (created, or truncated), its bytes written as an
/// output's are ([`OutputFile`]: straight to the disk where it can). The file system's own copy
/// (`copy_file_range`) went through the page cache: 28-33 s for the 8.3 GB database of 10^7
/// dispatches (issue 49).
pub(crate) fn copy_file(source: &Path, path: &Path) -> io::Result<()> {
    let mut from = File::open(source)?;
    let mut out = OutputFile::new(File::create(path)?, path);
    let mut buffer = vec![0u8; WRITE_BUFFER];
    loop {
        match io::Read::read(&mut from, &mut buffer) {
            Ok(0) => break,
            Ok(read) => out.write_all(&buffer[..read])?,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    out.flush()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The copy is the file, whatever its length, over a longer file that was there.
    #[test]
    fn a_copy_is_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let (source, copy) = (dir.path().join("source"), dir.path().join("copy"));
        for length in [
            0,
            1,
            4_095,
            4_096,
            3 * WRITE_BUFFER + 4_097,
            5 * WRITE_BUFFER,
        ] {
            let bytes: Vec<u8> = (0..length).map(|i| (i % 251) as u8).collect();
            std::fs::write(&source, &bytes).unwrap();
            std::fs::write(&copy, vec![7u8; 6 * WRITE_BUFFER]).unwrap();
            copy_file(&source, &copy).unwrap();
            assert!(std::fs::read(&copy).unwrap() == bytes, "{length} bytes");
        }
        let missing = copy_file(&dir.path().join("missing"), &copy).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
