//! A page of a process's dispatch passes read back (issue 49): the passes' own rows in the order
//! written, then the dispatch rows they belong to, each read once however many passes it has, by
//! ranges of row ids (a replay unit's passes are written together, so a page's dispatches are
//! mostly neighbours), then the passes' counter values by key. Three scans rather than a join
//! per pass: SQLite steps fewer rows, and a dispatch's columns are decoded once.

use super::blocks::DispatchFields;
use super::pages::{release_cache, Extdata, Layout, RowMap, StoredProcess};
use super::stepped::{Stepped, SteppedRow};
use crate::error::FormatError;
use crate::records::*;
use rusqlite::{Connection, ToSql};
use std::collections::HashMap;

/// Dispatch rows further apart than this are read by separate ranges, so that a page whose
/// passes belong to far-apart dispatches steps at most this many rows per dispatch.
const RANGE_GAP: i64 = 32;

/// A pass's own row: its dispatch row, pass, start and end, and its counter values' key.
struct PassRow {
    dispatch_row: i64,
    replay_pass: Option<u32>,
    start_ns: u64,
    end_ns: u64,
    key: Option<i64>,
}

/// A dispatch row: its id, and what it gives each of its passes.
struct DispatchRow {
    id: i64,
    fields: DispatchFields,
}

impl Layout {
    /// Counter values: (pass key, counter row, value) for the pass keys from ?1 to ?2 (the key
    /// of [`PassRow`]), by key and then in the order written (the order of the index on the
    /// key: no sort). No guid filter: a key is a row id, one process's (values of other keys in
    /// the range are matched to no pass).
    fn values_sql(self) -> &'static str {
        match self {
            Layout::RowPerPass => {
                "SELECT event_id, pmc_id, value FROM rocpd_pmc_event WHERE event_id BETWEEN ?1 AND ?2 ORDER BY event_id, id"
            }
            Layout::PassTables => {
                "SELECT pass_id, pmc_id, value FROM kreplay_pass_pmc WHERE pass_id BETWEEN ?1 AND ?2 ORDER BY pass_id, id"
            }
        }
    }

    /// A page of pass rows in the order written: those after row ?2, at most ?3; columns as
    /// [`PassRow`], then the row's id (the page's cursor).
    fn pass_rows_sql(self) -> &'static str {
        match self {
            // Version 3: the dispatch row is the pass, its values keyed by its event.
            Layout::RowPerPass => {
                r#"SELECT id, replay_pass, "start", "end", event_id, id
                   FROM rocpd_kernel_dispatch WHERE guid = ?1 AND id > ?2 ORDER BY id LIMIT ?3"#
            }
            Layout::PassTables => {
                r#"SELECT dispatch_row, replay_pass, "start", "end", id, id
                   FROM kreplay_dispatch_pass WHERE guid = ?1 AND id > ?2 ORDER BY id LIMIT ?3"#
            }
        }
    }
}

/// The pass rows (current layout) with ids from ?1 to ?2, by id: columns as
/// [`Layout::pass_rows_sql`]. No guid filter: read so for a file's only process.
pub(super) const PASS_RANGE_SQL: &str = r#"SELECT dispatch_row, replay_pass, "start", "end", id, id
    FROM kreplay_dispatch_pass WHERE id BETWEEN ?1 AND ?2 ORDER BY id"#;

/// The dispatch rows with ids from ?1 to ?2, by id: the columns [`DispatchRow`] is read from.
/// Streams and threads are their rows' ids (mapped in memory: a join per row would cost more).
const DISPATCH_ROWS_SQL: &str = r#"SELECT K.id, K.dispatch_id, E.correlation_id, K.agent_id,
    K.stream_id, K.tid, K.kernel_id, K.grid_size_x, K.grid_size_y, K.grid_size_z,
    K.workgroup_size_x, K.workgroup_size_y, K.workgroup_size_z, K.extdata
    FROM rocpd_kernel_dispatch K LEFT JOIN rocpd_event E ON E.id = K.event_id
    WHERE K.id BETWEEN ?1 AND ?2 ORDER BY K.id"#;

impl StoredProcess {
    /// The dispatch passes after the pass row `after`, at most a page of them, with the id of
    /// the last pass row read (the next page's `after`). A pass whose dispatch row is missing is
    /// left out, as a join would; a page left empty by that goes on to the next rows.
    pub(super) fn pass_page(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<(Vec<DispatchRecord>, i64), FormatError> {
        if !self.blocks.passes {
            return self.pass_page_of_rows(after, limit);
        }
        let conn = self.connection();
        let rows = after.saturating_add(1)..=i64::MAX;
        let (passes, last) = self.passes_from_blocks(&conn, rows, limit as usize)?;
        if (passes.len() as i64) < limit {
            release_cache(&conn);
        }
        drop(conn);
        let page = (passes, last.unwrap_or(after));
        #[cfg(test)]
        same_records(&page, &self.pass_page_of_rows(after, limit)?);
        Ok(page)
    }

    /// [`Self::pass_page`] read from the rows.
    fn pass_page_of_rows(
        &self,
        after: i64,
        limit: i64,
    ) -> Result<(Vec<DispatchRecord>, i64), FormatError> {
        let conn = self.connection();
        let mut after = after;
        loop {
            let sql = self.own_rows(self.layout.pass_rows_sql());
            let (rows, last) = self.pass_rows(
                &conn,
                &sql,
                rusqlite::params![self.guid, after, limit],
                after,
            )?;
            if rows.is_empty() {
                release_cache(&conn);
                return Ok((Vec::new(), after));
            }
            let passes = self.passes_of(&conn, &rows)?;
            if (rows.len() as i64) < limit {
                release_cache(&conn);
            }
            if !passes.is_empty() || (rows.len() as i64) < limit {
                return Ok((passes, last));
            }
            after = last;
        }
    }

    /// The dispatch passes whose pass rows have ids in `ids`, read on connection `reader`
    /// (the file's only process, current layout: [`Self::id_ranges`]); `last`: the reader's
    /// last range, after which its cache is freed.
    pub(super) fn passes_in(
        &self,
        ids: std::ops::RangeInclusive<i64>,
        reader: usize,
        last: bool,
    ) -> Result<Vec<DispatchRecord>, FormatError> {
        if !self.blocks.passes {
            return self.passes_in_rows(ids, reader, last);
        }
        let conn = self.reader_connection(reader);
        let (passes, _) = self.passes_from_blocks(&conn, ids.clone(), usize::MAX)?;
        if last {
            release_cache(&conn);
        }
        drop(conn);
        #[cfg(test)]
        same_records(&passes, &self.passes_in_rows(ids, reader, last)?);
        Ok(passes)
    }

    /// [`Self::passes_in`] read from the rows.
    fn passes_in_rows(
        &self,
        ids: std::ops::RangeInclusive<i64>,
        reader: usize,
        last: bool,
    ) -> Result<Vec<DispatchRecord>, FormatError> {
        let conn = self.reader_connection(reader);
        let (rows, _) = self.pass_rows(
            &conn,
            PASS_RANGE_SQL,
            rusqlite::params![ids.start(), ids.end()],
            0,
        )?;
        let passes = self.passes_of(&conn, &rows)?;
        if last {
            release_cache(&conn);
        }
        Ok(passes)
    }

    /// The records of pass rows `rows`: each joined to its dispatch row and given its values.
    fn passes_of(
        &self,
        conn: &Connection,
        rows: &[PassRow],
    ) -> Result<Vec<DispatchRecord>, FormatError> {
        let dispatches = self.dispatch_rows(conn, rows)?;
        let mut passes = Vec::with_capacity(rows.len());
        let mut keys = Vec::with_capacity(rows.len());
        // A pass's dispatch mostly follows the last pass's: looked at before searching.
        let mut at = 0;
        for pass in rows {
            let next = dispatches.get(at + 1).filter(|d| d.id == pass.dispatch_row);
            if next.is_some() {
                at += 1;
            } else {
                let found = dispatches.binary_search_by_key(&pass.dispatch_row, |d| d.id);
                let Ok(found) = found else { continue };
                at = found;
            }
            let pass_fields = (pass.replay_pass, pass.start_ns, pass.end_ns);
            passes.push(
                dispatches[at]
                    .fields
                    .record(self.pid, pass_fields, Vec::new()),
            );
            keys.push(pass.key);
        }
        let present = keys.iter().flatten();
        if let (Some(low), Some(high)) = (present.clone().min(), present.max()) {
            let values = self.values(conn, (*low, *high), passes.len())?;
            self.attach_values(&mut passes, &keys, &values)?;
        }
        Ok(passes)
    }

    /// The pass rows `sql` selects with `params` (columns as [`PassRow`], then the row's id),
    /// and the id of the last (`after` if none).
    fn pass_rows(
        &self,
        conn: &Connection,
        sql: &str,
        params: &[&dyn ToSql],
        after: i64,
    ) -> Result<(Vec<PassRow>, i64), FormatError> {
        let err = self.err();
        let mut statement = Stepped::prepare(conn, sql).map_err(err)?;
        statement.run(params).map_err(err)?;
        let mut passes = Vec::with_capacity(super::pages::PAGE_ROWS as usize);
        let mut last = after;
        while let Some(row) = statement.next().map_err(err)? {
            passes.push(PassRow {
                dispatch_row: row.int(0),
                replay_pass: row.optional(1).map(|pass| pass as u32),
                start_ns: row.int(2) as u64,
                end_ns: row.int(3) as u64,
                key: row.optional(4),
            });
            last = row.int(5);
        }
        Ok((passes, last))
    }

    /// The dispatch rows `passes` belong to, each once, by id: read by ranges of ids, rows of
    /// a range that no pass names skipped.
    fn dispatch_rows(
        &self,
        conn: &Connection,
        passes: &[PassRow],
    ) -> Result<Vec<DispatchRow>, FormatError> {
        let err = self.err();
        let mut wanted: Vec<i64> = passes.iter().map(|p| p.dispatch_row).collect();
        wanted.sort_unstable();
        wanted.dedup();
        let mut statement = Stepped::prepare(conn, DISPATCH_ROWS_SQL).map_err(err)?;
        let mut found = Vec::with_capacity(wanted.len());
        let mut extdata = Extdata::default();
        let mut start = 0;
        while start < wanted.len() {
            let mut end = start + 1;
            while end < wanted.len() && wanted[end] - wanted[end - 1] <= RANGE_GAP {
                end += 1;
            }
            let run = &wanted[start..end];
            statement
                .run(rusqlite::params![run[0], run[run.len() - 1]])
                .map_err(err)?;
            let mut next = 0;
            while let Some(row) = statement.next().map_err(err)? {
                let id = row.int(0);
                while run.get(next).is_some_and(|&w| w < id) {
                    next += 1;
                }
                if run.get(next) == Some(&id) {
                    found.push(self.dispatch_row(&row, id, &mut extdata)?);
                }
            }
            start = end;
        }
        Ok(found)
    }

    /// One dispatch row. `extdata` holds the last row's extdata text and what it gave (the
    /// rows of a run mostly share it).
    fn dispatch_row(
        &self,
        row: &SteppedRow<'_>,
        id: i64,
        extdata: &mut Extdata,
    ) -> Result<DispatchRow, FormatError> {
        let corrupt = self.corrupt();
        let agent_row = row.int(3);
        let kernel_row = row.int(6);
        let block = [row.int(10) as u32, row.int(11) as u32, row.int(12) as u32];
        // The database counts the grid in work-items; the record counts blocks.
        let grid_threads = [row.int(7) as u64, row.int(8) as u64, row.int(9) as u64];
        let mut grid = [0u32; 3];
        for axis in 0..3 {
            grid[axis] = match block[axis] {
                0 => 0,
                threads_per_block => (grid_threads[axis] / u64::from(threads_per_block)) as u32,
            };
        }
        let (dynamic_shared_bytes, ranges) = extdata.read(row.text(13));
        let mapped = |map: &RowMap<u64>, index, what: &str| {
            row.optional(index)
                .and_then(|id| map.get(&id).copied())
                .ok_or_else(|| corrupt(format!("a dispatch refers to an unknown {what} row")))
        };
        let fields = DispatchFields {
            dispatch_id: row.int(1) as u64,
            correlation_id: row.int(2) as u64,
            agent_id: *self.agent_ids.get(&agent_row).ok_or_else(|| {
                corrupt(format!(
                    "a dispatch refers to unknown agent row {agent_row}"
                ))
            })?,
            stream_id: mapped(&self.stream_ids, 4, "stream")?,
            tid: mapped(&self.thread_ids, 5, "thread")?,
            kernel_id: *self.kernel_ids.get(&kernel_row).ok_or_else(|| {
                corrupt(format!(
                    "a dispatch refers to unknown kernel row {kernel_row}"
                ))
            })?,
            grid,
            block,
            dynamic_shared_bytes,
            ranges,
        };
        Ok(DispatchRow { id, fields })
    }

    /// Counter values of the passes keyed `low..=high`: (key, counter row, value), by key and
    /// in the order written; room made for `expected` of them at first.
    fn values(
        &self,
        conn: &Connection,
        (low, high): (i64, i64),
        expected: usize,
    ) -> Result<Vec<(i64, i64, f64)>, FormatError> {
        let err = self.err();
        let mut values = Vec::with_capacity(expected);
        let mut statement = Stepped::prepare(conn, self.layout.values_sql()).map_err(err)?;
        statement.run(rusqlite::params![low, high]).map_err(err)?;
        while let Some(row) = statement.next().map_err(err)? {
            // SQLite stores NaN as NULL; we never write NULL otherwise.
            values.push((row.int(0), row.int(1), row.real_or_nan(2)));
        }
        Ok(values)
    }

    /// The samples of `values` (by key, from [`Self::values`]) for one counter row each.
    fn samples(&self, values: &[(i64, i64, f64)]) -> Result<Vec<CounterSample>, FormatError> {
        let mut samples = Vec::with_capacity(values.len());
        for &(_, pmc_id, value) in values {
            let name = self.counter_names.get(&pmc_id).ok_or_else(|| {
                (self.corrupt())(format!(
                    "rocpd_pmc_event refers to unknown counter row {pmc_id}"
                ))
            })?;
            samples.push(CounterSample { name: *name, value });
        }
        Ok(samples)
    }

    /// Gives each pass of a page the values of its key (`keys`, one per pass; values from
    /// [`Self::values`]); a key two passes share gives its values to the first.
    fn attach_values(
        &self,
        passes: &mut [DispatchRecord],
        keys: &[Option<i64>],
        values: &[(i64, i64, f64)],
    ) -> Result<(), FormatError> {
        let increasing = keys
            .iter()
            .flatten()
            .try_fold(i64::MIN, |last, &key| (key > last).then_some(key))
            .is_some();
        if increasing {
            // One walk over both, both in key order.
            let mut at = 0;
            for (record, key) in passes.iter_mut().zip(keys) {
                let Some(key) = *key else { continue };
                while values.get(at).is_some_and(|v| v.0 < key) {
                    at += 1;
                }
                let first = at;
                while values.get(at).is_some_and(|v| v.0 == key) {
                    at += 1;
                }
                record.counters = self.samples(&values[first..at])?;
            }
            return Ok(());
        }
        let mut ranges: HashMap<i64, std::ops::Range<usize>> = HashMap::new();
        for (index, value) in values.iter().enumerate() {
            ranges
                .entry(value.0)
                .and_modify(|r| r.end = index + 1)
                .or_insert(index..index + 1);
        }
        for (record, key) in passes.iter_mut().zip(keys) {
            if let Some(range) = key.and_then(|key| ranges.remove(&key)) {
                record.counters = self.samples(&values[range])?;
            }
        }
        Ok(())
    }
}

/// In tests, every read from the blocks is read from the rows too: both must give the same
/// records (the blocks' contract, `db::blocks`).
#[cfg(test)]
pub(super) fn same_records<T: std::fmt::Debug>(from_blocks: &T, from_rows: &T) {
    assert_eq!(
        format!("{from_blocks:?}"),
        format!("{from_rows:?}"),
        "records read from the blocks differ from those read from the rows"
    );
}
