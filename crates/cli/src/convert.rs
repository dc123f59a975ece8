//! `kreplay convert`: databases of earlier runs merged and written again in other formats.

use crate::args::ConvertArgs;
use crate::catalogs::describe_recorded_counters;
use crate::error::UsageError;
use crate::{launch, plan, progress};
use anyhow::Context;
use kreplay_format::{read_databases, write_outputs};

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
    let formats = plan::check_formats(&args.formats, "-f/--output-format")?;
    let progress = progress::Progress::start("reading the databases", progress::WRITE_DELAY);
    let data = read_databases(&args.inputs)
        .map(|mut data| {
            describe_recorded_counters(&mut data);
            data
        })
        .context("reading the input databases");
    if let Ok(data) = &data {
        progress.set_message(format!(
            "writing outputs: {} records",
            launch::record_count(data)
        ));
    }
    let files = data.and_then(|data| {
        write_outputs(&data, &args.output_dir, &args.output_file, &formats)
            .with_context(|| format!("writing to {}", args.output_dir.display()))
            .map(|files| (files, data))
    });
    progress.finish();
    let (files, data) = files?;
    out!(
        "kreplay: merged {} database(s), {} process(es)",
        args.inputs.len(),
        data.processes.len()
    );
    for file in files {
        out!("kreplay: wrote {}", file.display());
    }
    Ok(0)
}
