//! A run written as one database in one go (`-f rocpd`, `kreplay convert`): the rows the
//! per-process writer makes, from the records read back (a page at a time when stored; each
//! process's dispatches first, then its markers, API calls, copies and allocations), or, where
//! the run is its stored files as they were read, those files copied (`db::bulk`: the same rows,
//! far faster; a traced process's with its ids in the order it was recorded).

use super::file::Durability;
use super::inserter::RowInserter;
use crate::error::FormatError;
use crate::files::replace_file;
use crate::progress::{Silent, Ticker, WriteProgress};
use crate::run::RunData;
use std::path::Path;

/// Writes `run` as one database, synchronously (the same rows the per-process writer makes),
/// through [`replace_file`]: `path` may be one of the inputs (`kreplay convert -f rocpd` in
/// place), which a failed write must not destroy.
pub fn write_rocpd(run: &RunData, path: &Path) -> Result<(), FormatError> {
    write_rocpd_with(run, path, &Silent)
}

/// [`write_rocpd`], telling `progress` (a step per dispatch pass and replay cost).
pub fn write_rocpd_with(
    run: &RunData,
    path: &Path,
    progress: &dyn WriteProgress,
) -> Result<(), FormatError> {
    let steps = run
        .processes
        .iter()
        .map(|p| (p.dispatch_count() + p.cost_count()) as u64)
        .sum();
    let ticker = Ticker::begin(progress, path, steps);
    replace_file(path, |temp| {
        if super::bulk::copy_stored(run, temp)? {
            ticker.tick_by(steps);
            return Ok(());
        }
        write_rows(run, temp, &ticker)
    })
}

/// Writes `run` into a new database at `path` record by record (the rows the per-process writer
/// makes), telling `ticker` a step per dispatch pass and replay cost.
pub(super) fn write_rows(run: &RunData, path: &Path, ticker: &Ticker) -> Result<(), FormatError> {
    let mut inserter = RowInserter::create(path, Durability::Output)?;
    inserter.begin()?;
    for record in run.each_record() {
        inserter.insert(record?)?;
        ticker.tick();
    }
    inserter.close()
}
