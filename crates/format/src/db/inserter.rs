//! [`RowInserter`]: records into rocpd rows, one process after another, synchronously (the
//! writer thread's part, also used to write merged databases). The rows of the current process
//! are [`ProcessRows`]'s job.

use super::file::{DbFile, Durability};
use super::process_rows::ProcessRows;
use super::record_counts::{self, Counts, TraceCounts};
use crate::error::FormatError;
use crate::records::{unnamed_process, Record};
use std::path::Path;

/// Inserts records into an open database, one process after another, synchronously.
pub(crate) struct RowInserter {
    durability: Durability,
    db: DbFile,
    current: Option<ProcessRows>,
    /// Records that arrived before the first `Process` record (they need its guid).
    early: Vec<Record>,
    in_transaction: bool,
    /// Dispatch passes, replay costs and tracing records inserted for each process, in the
    /// order the processes came, stored when the file closes (`db::record_counts`)...
    counts: Vec<(String, Counts, TraceCounts)>,
    /// ...if every insert and commit succeeded: the counts are then the file's.
    whole: bool,
}

impl RowInserter {
    pub(crate) fn create(path: &Path, durability: Durability) -> Result<RowInserter, FormatError> {
        Ok(RowInserter {
            durability,
            db: DbFile::create(path, durability)?,
            current: None,
            early: Vec::new(),
            in_transaction: false,
            counts: Vec::new(),
            whole: true,
        })
    }

    pub(crate) fn begin(&mut self) -> Result<(), FormatError> {
        if !self.in_transaction {
            let begun = self.db.conn.execute_batch("BEGIN");
            self.whole &= begun.is_ok();
            begun.map_err(|e| self.db.err(e))?;
            self.in_transaction = true;
        }
        Ok(())
    }

    pub(crate) fn commit(&mut self) -> Result<(), FormatError> {
        if self.in_transaction {
            self.in_transaction = false;
            let committed = self.db.conn.execute_batch("COMMIT");
            self.whole &= committed.is_ok();
            committed.map_err(|e| self.db.err(e))?;
        }
        Ok(())
    }

    /// Writes what is still held back, commits, and turns the file into a single self-contained
    /// file (rollback journal instead of WAL) so that it can be copied and read anywhere.
    pub(crate) fn close(mut self) -> Result<(), FormatError> {
        if self.current.is_none() && !self.early.is_empty() {
            // No `Process` record ever came: keep the data under a process made of what we know.
            let process = unnamed_process(&self.early);
            self.begin()?;
            self.insert(Record::Process(process))?;
        }
        // The record blocks still being filled (a commit leaves them open: blocks of a page of
        // rows fill the file's pages, where a block per commit would leave most of a page empty).
        if let Some(mut rows) = self.current.take() {
            self.begin()?;
            let flushed = rows.flush_blocks(&self.db);
            self.whole &= flushed.is_ok();
            flushed?;
        }
        self.commit()?;
        if self.whole {
            self.begin()?;
            record_counts::store(&self.db, &self.counts)?;
            self.commit()?;
        }
        if self.durability == Durability::Live {
            let conn = &self.db.conn;
            let kept_wal = match conn.query_row("PRAGMA journal_mode = DELETE", [], |r| {
                r.get::<_, String>(0)
            }) {
                Ok(mode) => !mode.eq_ignore_ascii_case("delete"),
                // Leaving WAL mode needs the file to itself: SQLite refuses at once, without
                // its busy handler, while any other connection has it open.
                Err(e) if is_busy(&e) => true,
                Err(e) => return Err(self.db.err(e)),
            };
            if kept_wal {
                // Another connection (`kreplay convert` of a live run, the command line reading
                // along) keeps the file in WAL mode: its rows are still copied into the file,
                // as far as that reader allows, and SQLite's readers apply the rest from the
                // WAL.
                let _ = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
            }
        }
        let DbFile { conn, path, .. } = self.db;
        conn.close().map_err(|(_, e)| FormatError::sqlite(&path, e))
    }

    /// Inserts one record. Must be called inside [`Self::begin`]/[`Self::commit`].
    pub(crate) fn insert(&mut self, record: Record) -> Result<(), FormatError> {
        // The count the record adds to: passes, costs, then the tracing kinds'.
        let counted = match &record {
            Record::Dispatch(_) => Some(0),
            Record::ReplayCost(_) => Some(1),
            Record::Marker(_) => Some(2),
            Record::Api(_) => Some(3),
            Record::MemoryCopy(_) => Some(4),
            Record::MemoryAllocation(_) => Some(5),
            _ => None,
        };
        let inserted = self.insert_rows(record);
        self.whole &= inserted.is_ok();
        // The current process's counts are the last (`insert_rows` moves them there).
        if let (Ok(()), Some(which), Some(_)) = (&inserted, counted, &self.current) {
            if let Some((_, counts, traces)) = self.counts.last_mut() {
                match which {
                    0 => counts.0 += 1,
                    1 => counts.1 += 1,
                    kind => traces[kind - 2] += 1,
                }
            }
        }
        inserted
    }

    /// [`Self::insert`]'s rows.
    fn insert_rows(&mut self, record: Record) -> Result<(), FormatError> {
        if let Record::Process(process) = &record {
            if let Some(earlier) = self.current.as_mut() {
                earlier.flush_blocks(&self.db)?;
            }
            let rows = ProcessRows::start(&self.db, process)?;
            let (_, counts, traces) =
                match self.counts.iter().position(|(guid, ..)| *guid == rows.guid) {
                    Some(at) => self.counts.remove(at),
                    None => (String::new(), (0, 0), [0; 4]),
                };
            self.counts.push((rows.guid.clone(), counts, traces));
            self.current = Some(rows);
            for early in std::mem::take(&mut self.early) {
                self.insert(early)?;
            }
            return Ok(());
        }
        let Some(rows) = self.current.as_mut() else {
            self.early.push(record);
            return Ok(());
        };
        let db = &self.db;
        match record {
            Record::Process(_) => unreachable!("handled above"),
            Record::Agent(agent) => rows.insert_agent(db, &agent),
            Record::CodeObject(object) => rows.insert_code_object(db, &object),
            Record::KernelSymbol(symbol) => rows.insert_kernel(db, &symbol),
            Record::Counter(counter) => rows.insert_counter(db, &counter),
            Record::Dispatch(dispatch) => rows.insert_dispatch(db, &dispatch),
            Record::ReplayCost(cost) => rows.insert_cost(db, &cost),
            Record::Warning(warning) => rows.insert_warning(db, &warning),
            Record::Marker(marker) => rows.insert_marker(db, &marker),
            Record::Api(call) => rows.insert_api_call(db, &call),
            Record::MemoryCopy(copy) => rows.insert_memory_copy(db, &copy),
            Record::MemoryAllocation(allocation) => rows.insert_memory_allocation(db, &allocation),
            Record::ProcessEnd { end_ns } => rows.end_process(db, end_ns),
        }
    }
}

/// Whether SQLite refused for another connection's lock (`SQLITE_BUSY` or `SQLITE_LOCKED`).
fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}
