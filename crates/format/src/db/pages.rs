//! A process's dispatch passes and replay costs read back from its database a page at a time
//! (keyed by row id, so that each page is one indexed range), for writers that stream.

use super::file::has_table;
use super::stepped::{Stepped, SteppedRow};
use crate::error::FormatError;
use crate::records::*;
use crate::run::{IdRanges, Page, RecordSource, Stored};
use rusqlite::{Connection, ToSql};
use std::collections::HashMap;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// How many passes (or costs) a page holds: a few MB, whatever the run's length.
pub(super) const PAGE_ROWS: i64 = 4096;

/// Where a file keeps its dispatch passes.
#[derive(Clone, Copy)]
pub(super) enum Layout {
    /// Version 3: one `rocpd_kernel_dispatch` row per pass, its values on the pass's event.
    RowPerPass,
    /// Version 4: one row per dispatch; the passes in `kreplay_dispatch_pass`, their values in
    /// `kreplay_pass_pmc`.
    PassTables,
}

impl Layout {
    /// Whether the file is laid out as this kreplay writes (the current schema version).
    pub(super) fn is_current(self) -> bool {
        matches!(self, Layout::PassTables)
    }

    pub(super) fn of_version(
        conn: &Connection,
        path: &Path,
        version: &str,
    ) -> Result<Layout, FormatError> {
        if version == "3" {
            return Ok(Layout::RowPerPass);
        }
        for table in ["kreplay_dispatch_pass", "kreplay_pass_pmc"] {
            if !has_table(conn, table).map_err(|e| FormatError::sqlite(path, e))? {
                return Err(FormatError::NotKreplayDatabase {
                    path: path.to_path_buf(),
                    table,
                });
            }
        }
        Ok(Layout::PassTables)
    }
}

/// Row ids → what they stand for, looked up several times per pass: hashed by one
/// multiplication ([`RowHasher`]) rather than SipHash, which cost more than the rest of a look-up.
pub(super) type RowMap<T> = HashMap<i64, T, std::hash::BuildHasherDefault<RowHasher>>;

/// [`RowMap`]'s hasher: a row id times an odd constant (Fibonacci hashing), which spreads
/// consecutive ids over every bit the table uses.
#[derive(Default)]
pub(super) struct RowHasher(u64);

impl std::hash::Hasher for RowHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_i64(&mut self, n: i64) {
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// One process of one database, its dispatches and costs read on demand. The connection stays
/// open, so that a file replaced meanwhile (`kreplay convert -f rocpd` in place) is still read
/// as it was.
pub(super) struct StoredProcess {
    pub(super) conn: Arc<Mutex<Connection>>,
    /// More connections to the file, opened with `conn`, for the threads that read the records
    /// by ranges of ids besides the first ([`RecordSource::id_ranges`]); none: one page after
    /// another on `conn`.
    pub(super) spares: Vec<Mutex<Connection>>,
    pub(super) path: PathBuf,
    pub(super) layout: Layout,
    pub(super) guid: String,
    pub(super) pid: u32,
    /// Row ids → the producer's agent and kernel ids, and counter rows → names.
    pub(super) agent_ids: RowMap<u64>,
    pub(super) kernel_ids: RowMap<u64>,
    pub(super) counter_names: RowMap<CounterName>,
    /// Stream rows → CUDA stream ids, thread rows → thread ids ([`id_map`]).
    pub(super) stream_ids: RowMap<u64>,
    pub(super) thread_ids: RowMap<u64>,
    /// (dispatch passes, replay costs), as the file stores them or counted when opened, and its
    /// records of each tracing kind where the file stores them (`db::record_counts`).
    pub(super) counts: ((usize, usize), Option<[usize; 4]>),
    /// Which kinds of records are read from the process's record blocks.
    pub(super) blocks: Blocks,
    /// The process is its file's only one: every row is its own ([`Self::own_rows`]).
    pub(super) alone: bool,
    /// Every agent, kernel and counter row is one the process describes (none is a placeholder
    /// for an id only its records mention).
    pub(super) only_described: bool,
    /// [`ProcessRun::fingerprint`](crate::run::ProcessRun) of the process as read: a run that
    /// still has it is the file's, unchanged, whose rows may be copied (none with traces).
    pub(super) fingerprint: Option<u64>,
    /// Whether it has records of each tracing kind (in [`TraceKind::ALL`]'s order), found when
    /// first asked.
    pub(super) has_traced: [std::sync::OnceLock<bool>; 4],
}

/// Whether a process's passes, costs and each tracing kind's records (in
/// [`crate::run::TraceKind::ALL`]'s order) are read from its record blocks (`db::blocks`,
/// `db::trace_blocks`): they hold every one of its records of that kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct Blocks {
    pub(super) passes: bool,
    pub(super) costs: bool,
    pub(super) traces: [bool; 4],
}

impl std::fmt::Debug for StoredProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "process {} of {}", self.guid, self.path.display())
    }
}

impl StoredProcess {
    pub(super) fn err(&self) -> impl Fn(rusqlite::Error) -> FormatError + Copy + '_ {
        |e| FormatError::sqlite(&self.path, e)
    }

    pub(super) fn corrupt(&self) -> impl Fn(String) -> FormatError + Copy + '_ {
        |detail| FormatError::Corrupt {
            path: self.path.to_path_buf(),
            detail,
        }
    }

    /// `sql`, whose rows are the process's by `guid = ?1`, for this process: the file's only
    /// process has every row, and its filter is left to a constant term (SQLite evaluates it once
    /// rather than reading and comparing each row's guid: a tenth of a scan, issue 49).
    pub(super) fn own_rows(&self, sql: &str) -> String {
        match self.alone {
            true => sql.replace("guid = ?1", "?1 = ?1"),
            false => sql.to_string(),
        }
    }

    pub(super) fn connection(&self) -> std::sync::MutexGuard<'_, Connection> {
        lock(&self.conn)
    }

    /// The connection reading thread `reader` uses: the first reads on `conn`, the others on a
    /// spare each (`conn` where there are too few).
    pub(super) fn reader_connection(&self, reader: usize) -> std::sync::MutexGuard<'_, Connection> {
        match reader
            .checked_sub(1)
            .and_then(|spare| self.spares.get(spare))
        {
            Some(spare) => lock(spare),
            None => self.connection(),
        }
    }

    /// The replay costs `sql` selects with `params` (columns as [`Self::cost`], then the row's
    /// id), and the id of the last (`after` if none).
    fn cost_rows(
        &self,
        conn: &Connection,
        sql: &str,
        params: &[&dyn ToSql],
        after: i64,
    ) -> Result<(Vec<ReplayCost>, i64), FormatError> {
        let err = self.err();
        // Databases written before the timing execution's column existed read as 0 there.
        let timing = if super::file::has_column(conn, "kreplay_replay_cost", "timing_execution_ns")
            .map_err(err)?
        {
            "timing_execution_ns"
        } else {
            "0"
        };
        let mut statement = Stepped::prepare(
            conn,
            &format!(
                r#"SELECT dispatch_id, agent_id, outcome, passes, bytes_tracked, bytes_snapshotted,
                   bytes_restored, staging, drain_ns, snapshot_ns, pass_ns, restore_ns, cache,
                   sm_clock_min_mhz, sm_clock_max_mhz, memory_clock_min_mhz, memory_clock_max_mhz,
                   {timing}, id
                   FROM kreplay_replay_cost {sql}"#
            ),
        )
        .map_err(err)?;
        statement.run(params).map_err(err)?;
        let mut costs = Vec::with_capacity(PAGE_ROWS as usize);
        let mut last = after;
        while let Some(row) = statement.next().map_err(err)? {
            costs.push(self.cost(&row)?);
            last = row.int(18);
        }
        Ok((costs, last))
    }

    /// One replay cost row.
    fn cost(&self, row: &SteppedRow<'_>) -> Result<ReplayCost, FormatError> {
        let corrupt = self.corrupt();
        let int = |index| row.int(index) as u64;
        let text = |index, what: &str| -> Result<&str, FormatError> {
            row.text(index)
                .and_then(|text| std::str::from_utf8(text).ok())
                .ok_or_else(|| corrupt(format!("a replay cost's {what} is not text")))
        };
        let outcome_text = text(2, "outcome")?;
        let outcome = parse_name(outcome_text)
            .ok_or_else(|| corrupt(format!("unknown replay outcome {outcome_text:?}")))?;
        let staging_text = text(7, "staging")?;
        let staging = parse_name(staging_text)
            .ok_or_else(|| corrupt(format!("unknown staging {staging_text:?}")))?;
        let cache_text = text(12, "cache")?;
        let cache = parse_name(cache_text)
            .ok_or_else(|| corrupt(format!("unknown cache state {cache_text:?}")))?;
        let mhz = |index| row.int(index) as u32;
        let pass_ns_text = text(10, "pass_ns")?;
        let pass_ns = parse_integers(pass_ns_text).map_err(|e| {
            corrupt(format!(
                "pass_ns {pass_ns_text:?} is not a list of integers: {e}"
            ))
        })?;
        Ok(ReplayCost {
            dispatch_id: int(0),
            agent_id: int(1),
            outcome,
            passes: row.int(3) as u32,
            bytes_tracked: int(4),
            bytes_snapshotted: int(5),
            bytes_restored: int(6),
            staging,
            drain_ns: int(8),
            snapshot_ns: int(9),
            pass_ns,
            restore_ns: int(11),
            timing_execution_ns: int(17),
            cache,
            sm_clock_mhz: [mhz(13), mhz(14)],
            memory_clock_mhz: [mhz(15), mhz(16)],
        })
    }
}

impl StoredProcess {
    /// [`RecordSource::costs_after`] read from the rows.
    fn cost_page_of_rows(&self, after: i64) -> Result<Page<ReplayCost>, FormatError> {
        let conn = self.connection();
        let (costs, last) = self.cost_rows(
            &conn,
            &self.own_rows("WHERE guid = ?1 AND id > ?2 ORDER BY id LIMIT ?3"),
            rusqlite::params![self.guid, after, PAGE_ROWS],
            after,
        )?;
        if costs.len() < PAGE_ROWS as usize {
            release_cache(&conn);
        }
        Ok((costs, last))
    }

    /// [`RecordSource::costs_in`] read from the rows.
    fn costs_in_rows(
        &self,
        ids: RangeInclusive<i64>,
        reader: usize,
        last: bool,
    ) -> Result<Vec<ReplayCost>, FormatError> {
        let conn = self.reader_connection(reader);
        let params = rusqlite::params![ids.start(), ids.end()];
        let (costs, _) = self.cost_rows(&conn, COST_RANGE_SQL, params, 0)?;
        if last {
            release_cache(&conn);
        }
        Ok(costs)
    }
}

impl RecordSource for StoredProcess {
    fn dispatches_after(&self, after: i64) -> Result<Page<DispatchRecord>, FormatError> {
        self.pass_page(after, PAGE_ROWS)
    }

    fn costs_after(&self, after: i64) -> Result<Page<ReplayCost>, FormatError> {
        if !self.blocks.costs {
            return self.cost_page_of_rows(after);
        }
        let conn = self.connection();
        let rows = after.saturating_add(1)..=i64::MAX;
        let (costs, last) = self.costs_from_blocks(&conn, rows, PAGE_ROWS as usize)?;
        if costs.len() < PAGE_ROWS as usize {
            release_cache(&conn);
        }
        drop(conn);
        let page = (costs, last.unwrap_or(after));
        #[cfg(test)]
        super::pass_pages::same_records(&page, &self.cost_page_of_rows(after)?);
        Ok(page)
    }

    fn id_ranges(&self, kind: Stored) -> Option<IdRanges> {
        // A file's only process, whose rows are every row of the tables (no guid to filter).
        if !self.alone || self.spares.is_empty() {
            return None;
        }
        let table = match (kind, self.layout) {
            (Stored::Passes, Layout::PassTables) => "kreplay_dispatch_pass",
            (Stored::Passes, Layout::RowPerPass) => return None,
            (Stored::Costs, _) => "kreplay_replay_cost",
        };
        // An error here is met again by the pages read one after another.
        let (first, last) = self
            .connection()
            .query_row(&ends_sql(table), [], |row| {
                Ok((row.get::<_, Option<i64>>(0)?, row.get::<_, Option<i64>>(1)?))
            })
            .ok()?;
        Some(IdRanges {
            first: first.unwrap_or(1),
            last: last.unwrap_or(0),
            width: PAGE_ROWS,
        })
    }

    fn dispatches_in(
        &self,
        ids: RangeInclusive<i64>,
        reader: usize,
        last: bool,
    ) -> Result<Vec<DispatchRecord>, FormatError> {
        self.passes_in(ids, reader, last)
    }

    fn costs_in(
        &self,
        ids: RangeInclusive<i64>,
        reader: usize,
        last: bool,
    ) -> Result<Vec<ReplayCost>, FormatError> {
        if !self.blocks.costs {
            return self.costs_in_rows(ids, reader, last);
        }
        let conn = self.reader_connection(reader);
        let (costs, _) = self.costs_from_blocks(&conn, ids.clone(), usize::MAX)?;
        if last {
            release_cache(&conn);
        }
        drop(conn);
        #[cfg(test)]
        super::pass_pages::same_records(&costs, &self.costs_in_rows(ids, reader, last)?);
        Ok(costs)
    }

    fn counts(&self) -> (usize, usize) {
        self.counts.0
    }

    fn trace_counts(&self) -> Option<[usize; 4]> {
        self.counts.1
    }

    fn mentions_only_described(&self) -> bool {
        self.only_described
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn traces(&self) -> Option<&dyn crate::run::TraceSource> {
        Some(self)
    }
}

/// The first and last row ids of `table`: two subqueries, since SQLite finds a lone min() or
/// max() of the row id at an end of the table but scans the whole table for both in one query.
pub(super) fn ends_sql(table: &str) -> String {
    format!("SELECT (SELECT min(id) FROM {table}), (SELECT max(id) FROM {table})")
}

/// The replay costs with row ids from ?1 to ?2, by id (after the columns [`StoredProcess::cost`]
/// reads). No guid filter: read so for a file's only process.
pub(super) const COST_RANGE_SQL: &str = "WHERE id BETWEEN ?1 AND ?2 ORDER BY id";

fn lock(conn: &Mutex<Connection>) -> std::sync::MutexGuard<'_, Connection> {
    conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Frees the pages a connection cached while its records were read to their end: the files of
/// a run of many processes stay open, and their caches would otherwise add up.
pub(super) fn release_cache(conn: &Connection) {
    // Only memory is at stake: a failure leaves the cache as it was.
    let _ = conn.execute_batch("PRAGMA shrink_memory");
}

/// Every row of a table of ids (`sql` selects the row id and the id it holds), as a map:
/// `rocpd_info_stream` (CUDA streams) and `rocpd_info_thread` (thread ids).
pub(super) fn id_map(
    conn: &Connection,
    path: &Path,
    sql: &str,
) -> Result<HashMap<i64, u64>, FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn.prepare(sql).map_err(err)?;
    let mut rows = statement.query([]).map_err(err)?;
    let mut ids = HashMap::new();
    while let Some(row) = rows.next().map_err(err)? {
        let id: Option<i64> = row.get(1).map_err(err)?;
        if let Some(id) = id {
            ids.insert(row.get(0).map_err(err)?, id as u64);
        }
    }
    Ok(ids)
}

/// The stream rows' CUDA stream ids.
pub(super) const STREAMS_SQL: &str = "SELECT id, cuda_stream FROM rocpd_info_stream";
/// The thread rows' thread ids.
pub(super) const THREADS_SQL: &str = "SELECT id, tid FROM rocpd_info_thread";

/// A unit enum from the name the writers give it (`ReplayOutcome::as_str`, `Staging::as_str`,
/// which are the serde names), so every variant parses without a second list of them.
pub(super) fn parse_name<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    use serde::de::IntoDeserializer;
    let name: serde::de::value::StrDeserializer<'_, serde::de::value::Error> =
        text.into_deserializer();
    T::deserialize(name).ok()
}

/// A JSON list of integers (`[1,2]`, as the writer stores `pass_ns`), read without building a
/// JSON value; anything else is left to serde_json, which reads it or says why not.
fn parse_integers(text: &str) -> Result<Vec<u64>, serde_json::Error> {
    let plain = text
        .strip_prefix('[')
        .and_then(|t| t.strip_suffix(']'))
        .and_then(|inner| match inner {
            "" => Some(Vec::new()),
            _ => inner
                .split(',')
                .map(|n| match n.as_bytes().first() {
                    Some(b'0'..=b'9') if n.len() == 1 || !n.starts_with('0') => n.parse().ok(),
                    _ => None,
                })
                .collect(),
        });
    match plain {
        Some(values) => Ok(values),
        None => serde_json::from_str(text),
    }
}

/// A pass row's extdata (`{"dynamic_shared_bytes":N,"ranges":[..]}`) as the last row gave it:
/// rows mostly repeat it, and parsing JSON per row would cost more than the rest of the row.
#[derive(Default)]
pub(super) struct Extdata {
    text: Option<Vec<u8>>,
    parsed: (u32, Vec<String>),
}

impl Extdata {
    /// The dynamic shared bytes and ranges of extdata `text` (0 and none where absent or
    /// unreadable).
    pub(super) fn read(&mut self, text: Option<&[u8]>) -> (u32, Vec<String>) {
        if self.text.as_deref() != text {
            let owned = text.map(|t| String::from_utf8_lossy(t).into_owned());
            self.parsed = (
                super::file::json_field(&owned, "dynamic_shared_bytes").unwrap_or(0),
                super::file::json_field(&owned, "ranges").unwrap_or_default(),
            );
            self.text = text.map(<[u8]>::to_vec);
        }
        self.parsed.clone()
    }
}
