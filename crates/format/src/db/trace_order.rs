//! Pages of a stored process's tracing rows, each one query over a range of row ids (the
//! tables' primary key: an indexed range, never a scan of the table per page, which made reading
//! quadratic, issue 49), and rows of two tables merged in the order they were recorded (their
//! events' ids).
//!
//! Row ids follow event ids: the writer (`db::api`, `db::markers`) inserts a record's event and
//! then its rows, one record after another, and copies rows in id order. A file whose rows do not
//! is refused rather than read in another order.

use super::pages::StoredProcess;
use crate::error::FormatError;
use crate::run::TraceCursor;
use rusqlite::types::ToSql;
use rusqlite::Row;

/// How many rows of one table a page holds: a few MB, whatever the run's length.
pub(super) const TRACE_PAGE_ROWS: i64 = 4096;

/// A row read: its row id, its event's id, and what it gives.
pub(super) struct Keyed<T> {
    pub(super) row: i64,
    pub(super) event: i64,
    pub(super) record: T,
}

/// A page of one table's rows, in row order, and whether it is full (more rows may follow).
pub(super) struct Rows<T> {
    pub(super) rows: Vec<Keyed<T>>,
    pub(super) full: bool,
}

/// `sql` for the file's only process: its `X.guid = ?1` filter left to a constant term (every
/// row is the process's; SQLite then compares no row's guid).
pub(super) fn own_trace_rows(sql: &str, alone: bool) -> String {
    const FILTER: &str = ".guid = ?1";
    match (alone, sql.find(FILTER)) {
        (true, Some(at)) if at > 0 => {
            format!("{}?1 = ?1{}", &sql[..at - 1], &sql[at + FILTER.len()..])
        }
        _ => sql.to_string(),
    }
}

impl StoredProcess {
    /// A page of rows of `sql` (`?1` the guid, `?2` the row to read after, `?3` the page's
    /// size, `?4`... `categories`), each read by `read`.
    pub(super) fn trace_rows<T>(
        &self,
        sql: &str,
        categories: &[&str],
        after: i64,
        mut read: impl FnMut(&Row<'_>) -> rusqlite::Result<Keyed<T>>,
    ) -> Result<Rows<T>, FormatError> {
        let err = self.err();
        let conn = self.connection();
        let mut statement = conn
            .prepare_cached(&own_trace_rows(sql, self.alone))
            .map_err(err)?;
        let mut params: Vec<&dyn ToSql> = vec![&self.guid, &after, &TRACE_PAGE_ROWS];
        params.extend(categories.iter().map(|c| c as &dyn ToSql));
        let mut rows = statement.query(params.as_slice()).map_err(err)?;
        let mut page = Vec::new();
        while let Some(row) = rows.next().map_err(err)? {
            page.push(read(row).map_err(err)?);
        }
        in_event_order(self, &page)?;
        let full = page.len() as i64 == TRACE_PAGE_ROWS;
        Ok(Rows { rows: page, full })
    }
}

/// Refuses rows whose event ids fall as their row ids rise (not a file kreplay wrote).
fn in_event_order<T>(process: &StoredProcess, rows: &[Keyed<T>]) -> Result<(), FormatError> {
    match rows.windows(2).find(|pair| pair[1].event < pair[0].event) {
        None => Ok(()),
        Some(pair) => Err(process.corrupt()(format!(
            "tracing row {} (event {}) follows event {}: rows out of recording order; convert the file with the kreplay that wrote it",
            pair[1].row, pair[1].event, pair[0].event
        ))),
    }
}

/// The rows of two tables' pages in event order, up to the last event both pages hold (all of a
/// page that is not full: its table has no more); moves `at` past the rows taken.
pub(super) fn merge_by_event<T>(pages: [Rows<T>; 2], at: &mut TraceCursor) -> Vec<T> {
    let bound = pages
        .iter()
        .filter(|page| page.full)
        .filter_map(|page| page.rows.last().map(|row| row.event))
        .min()
        .unwrap_or(i64::MAX);
    let [first, second] = pages;
    let mut first = first.rows.into_iter().peekable();
    let mut second = second.rows.into_iter().peekable();
    let mut merged = Vec::new();
    loop {
        let take_first = match (first.peek(), second.peek()) {
            (Some(a), Some(b)) => a.event <= b.event,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        let (side, next) = match take_first {
            true => (0, first.peek()),
            false => (1, second.peek()),
        };
        if next.is_some_and(|row| row.event > bound) {
            break;
        }
        let row = match side {
            0 => first.next(),
            _ => second.next(),
        }
        .expect("peeked");
        at[side] = row.row;
        merged.push(row.record);
    }
    merged
}
