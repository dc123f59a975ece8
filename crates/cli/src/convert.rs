//! `kreplay convert`: databases of earlier runs merged and written again in other formats.

use crate::args::ConvertArgs;
use crate::catalogs::describe_recorded_counters;
use crate::error::UsageError;
use crate::{launch, plan, progress};
use anyhow::Context;
use kreplay_format::{open_databases, write_outputs_with, FormatError};
use std::io::Read;
use std::path::Path;

/// Merges `args.inputs` and writes them in `args.formats`.
pub fn convert(args: &ConvertArgs) -> anyhow::Result<i32> {
    for path in &args.inputs {
        if !path.is_file() {
            return Err(UsageError::new(format!(
                "input database {} does not exist; give the path of a *_results.db file",
                path.display()
            ))
            .into());
        }
    }
    for path in &args.inputs {
        check_database(path)?;
    }
    let formats = plan::check_formats(&args.formats, "-f/--output-format")?;
    if args.output_file.trim().is_empty() || args.output_file.ends_with('/') {
        return Err(UsageError::new(format!(
            "-o/--output-file '{}' names no file; give a file name such as `-o merged`, and the folder with -d",
            args.output_file
        ))
        .into());
    }
    launch::writable_folder(
        &args.output_dir,
        &args.output_dir,
        "choose another -d/--output-path",
    )?;
    let progress = progress::Progress::start("reading the databases", progress::WRITE_DELAY);
    let data = open_databases(&args.inputs)
        .map(|mut data| {
            describe_recorded_counters(&mut data);
            data
        })
        .map_err(|e| match e {
            // An SQLite file of something else: the user named the wrong file.
            FormatError::NotKreplayDatabase { .. } => UsageError::new(e.to_string()).into(),
            e => anyhow::Error::new(e).context("reading the input databases"),
        });
    if let Ok(data) = &data {
        progress.set_message(format!(
            "writing outputs: {} records",
            launch::record_count(data)
        ));
    }
    let files = data.and_then(|data| {
        write_outputs_with(
            &data,
            &args.output_dir,
            &args.output_file,
            &formats,
            &progress,
        )
        .with_context(|| format!("writing to {}", args.output_dir.display()))
        .map(|files| (files, data))
    });
    progress.finish();
    let (files, data) = files?;
    // On stderr, as a run's report: stdout stays free for what a user pipes.
    say!(
        "kreplay: merged {} database(s), {} process(es)",
        args.inputs.len(),
        data.processes.len()
    );
    for file in files {
        say!("kreplay: wrote {}", file.display());
    }
    Ok(0)
}

/// What every SQLite database begins with.
const SQLITE_MAGIC: &[u8; 16] = b"SQLite format 3\0";

/// An input that is no SQLite database at all is a usage error, said in one line.
fn check_database(path: &Path) -> Result<(), UsageError> {
    let mut head = [0u8; 16];
    let read = std::fs::File::open(path).and_then(|mut f| f.read_exact(&mut head));
    match read {
        Ok(()) if &head == SQLITE_MAGIC => Ok(()),
        Err(e) if e.kind() != std::io::ErrorKind::UnexpectedEof => Err(UsageError::new(format!(
            "cannot read input database {}: {e}; check its permissions",
            path.display()
        ))),
        _ => Err(UsageError::new(format!(
            "{} is not a kreplay/rocpd database (not an SQLite file); give the path of a *_results.db file that kreplay or rocprofv3 wrote",
            path.display()
        ))),
    }
}
