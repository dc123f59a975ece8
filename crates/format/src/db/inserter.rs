//! [`RowInserter`]: records into rocpd rows, one process after another, synchronously (the
//! writer thread's part, also used to write merged databases). The rows of the current process
//! are [`ProcessRows`]'s job.

use super::file::{DbFile, Durability};
use super::process_rows::ProcessRows;
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
}

impl RowInserter {
    pub(crate) fn create(path: &Path, durability: Durability) -> Result<RowInserter, FormatError> {
        Ok(RowInserter {
            durability,
            db: DbFile::create(path, durability)?,
            current: None,
            early: Vec::new(),
            in_transaction: false,
        })
    }

    pub(crate) fn begin(&mut self) -> Result<(), FormatError> {
        if !self.in_transaction {
            self.db
                .conn
                .execute_batch("BEGIN")
                .map_err(|e| self.db.err(e))?;
            self.in_transaction = true;
        }
        Ok(())
    }

    pub(crate) fn commit(&mut self) -> Result<(), FormatError> {
        if self.in_transaction {
            self.in_transaction = false;
            self.db
                .conn
                .execute_batch("COMMIT")
                .map_err(|e| self.db.err(e))?;
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
        self.commit()?;
        if self.durability == Durability::Live {
            self.db
                .conn
                .execute_batch("PRAGMA journal_mode = DELETE;")
                .map_err(|e| self.db.err(e))?;
        }
        let DbFile { conn, path, .. } = self.db;
        conn.close().map_err(|(_, e)| FormatError::sqlite(&path, e))
    }

    /// Inserts one record. Must be called inside [`Self::begin`]/[`Self::commit`].
    pub(crate) fn insert(&mut self, record: Record) -> Result<(), FormatError> {
        if let Record::Process(process) = &record {
            self.current = Some(ProcessRows::start(&self.db, process)?);
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
