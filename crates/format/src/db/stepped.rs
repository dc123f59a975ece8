//! A statement stepped through SQLite's C API, for the readers of a run's millions of rows
//! (passes, dispatch rows, counter values, replay costs: issue 49). rusqlite reads a column by
//! three calls (its count, its type, its value), each through SQLite's checks; here an integer
//! column is one call. The statement borrows its connection, and a row borrows the statement, so
//! neither outlives what SQLite keeps valid: a row's text until the next step.

use rusqlite::types::{ToSqlOutput, Value, ValueRef};
use rusqlite::{ffi, Connection, ToSql};
use std::ffi::{c_int, CStr};
use std::marker::PhantomData;
use std::ptr::NonNull;

/// One prepared statement of `conn`, finalized when dropped.
pub(super) struct Stepped<'c> {
    stmt: NonNull<ffi::sqlite3_stmt>,
    db: *mut ffi::sqlite3,
    /// Columns of its rows: a column past them reads as NULL rather than asking SQLite.
    columns: usize,
    /// Whether the last step gave a row ([`Self::next`] after the end steps no more).
    done: bool,
    _conn: PhantomData<&'c Connection>,
}

impl<'c> Stepped<'c> {
    /// Prepares `sql` (one statement) on `conn`.
    pub(super) fn prepare(conn: &'c Connection, sql: &str) -> rusqlite::Result<Stepped<'c>> {
        // SAFETY: the handle stays valid while `conn` is borrowed, which `'c` ensures.
        let db = unsafe { conn.handle() };
        let mut stmt = std::ptr::null_mut();
        let len = c_int::try_from(sql.len()).map_err(|_| rusqlite::Error::InvalidQuery)?;
        // SAFETY: `sql` is `len` valid bytes; SQLite copies what it needs.
        let rc = unsafe {
            ffi::sqlite3_prepare_v2(
                db,
                sql.as_ptr().cast(),
                len,
                &mut stmt,
                std::ptr::null_mut(),
            )
        };
        if rc != ffi::SQLITE_OK {
            return Err(error(db, rc));
        }
        let stmt = NonNull::new(stmt).ok_or(rusqlite::Error::InvalidQuery)?;
        // SAFETY: `stmt` was just prepared.
        let columns = unsafe { ffi::sqlite3_column_count(stmt.as_ptr()) }.max(0) as usize;
        Ok(Stepped {
            stmt,
            db,
            columns,
            done: true,
            _conn: PhantomData,
        })
    }

    /// Starts the statement again with parameters `params` (?1, ?2, ...: integers and text,
    /// as `rusqlite::params!` gives them).
    pub(super) fn run(&mut self, params: &[&dyn ToSql]) -> rusqlite::Result<()> {
        let stmt = self.stmt.as_ptr();
        // SAFETY: `stmt` is live; reset and bind only touch it. A reset's code repeats the last
        // step's error, which that step already reported.
        unsafe { ffi::sqlite3_reset(stmt) };
        self.done = true;
        for (index, param) in params.iter().enumerate() {
            let index = index as c_int + 1;
            let value = param.to_sql()?;
            let rc = match value_of(&value) {
                // SAFETY: as above; SQLite checks the index.
                Some(ValueRef::Integer(value)) => unsafe {
                    ffi::sqlite3_bind_int64(stmt, index, value)
                },
                // SAFETY: as above; the text is `len` valid bytes, which SQLite copies
                // (SQLITE_TRANSIENT) before returning.
                Some(ValueRef::Text(text)) => unsafe {
                    let len =
                        c_int::try_from(text.len()).map_err(|_| rusqlite::Error::InvalidQuery)?;
                    ffi::sqlite3_bind_text(
                        stmt,
                        index,
                        text.as_ptr().cast(),
                        len,
                        ffi::SQLITE_TRANSIENT(),
                    )
                },
                _ => {
                    let why = format!("parameter {index} is neither an integer nor text");
                    return Err(rusqlite::Error::ToSqlConversionFailure(why.into()));
                }
            };
            if rc != ffi::SQLITE_OK {
                return Err(error(self.db, rc));
            }
        }
        self.done = false;
        Ok(())
    }

    /// The next row, none after the last.
    pub(super) fn next(&mut self) -> rusqlite::Result<Option<SteppedRow<'_>>> {
        if self.done {
            return Ok(None);
        }
        // SAFETY: `stmt` is live and bound by `run`.
        match unsafe { ffi::sqlite3_step(self.stmt.as_ptr()) } {
            ffi::SQLITE_ROW => Ok(Some(SteppedRow { of: self })),
            ffi::SQLITE_DONE => {
                self.done = true;
                Ok(None)
            }
            rc => {
                self.done = true;
                Err(error(self.db, rc))
            }
        }
    }
}

impl Drop for Stepped<'_> {
    fn drop(&mut self) {
        // SAFETY: `stmt` is live and finalized once, here.
        unsafe { ffi::sqlite3_finalize(self.stmt.as_ptr()) };
    }
}

/// The row a statement stands on.
pub(super) struct SteppedRow<'s> {
    of: &'s Stepped<'s>,
}

impl SteppedRow<'_> {
    fn raw(&self) -> *mut ffi::sqlite3_stmt {
        self.of.stmt.as_ptr()
    }

    fn has(&self, index: usize) -> bool {
        index < self.of.columns
    }

    /// An integer column; NULL (and a column past the last) reads as 0.
    pub(super) fn int(&self, index: usize) -> i64 {
        if !self.has(index) {
            return 0;
        }
        // SAFETY: the statement stands on a row and `index` is one of its columns.
        unsafe { ffi::sqlite3_column_int64(self.raw(), index as c_int) }
    }

    /// An integer column that may be NULL.
    pub(super) fn optional(&self, index: usize) -> Option<i64> {
        (self.kind(index) != ffi::SQLITE_NULL).then(|| self.int(index))
    }

    /// A REAL column; NULL reads as NaN (SQLite stores NaN as NULL).
    pub(super) fn real_or_nan(&self, index: usize) -> f64 {
        if self.kind(index) == ffi::SQLITE_NULL {
            return f64::NAN;
        }
        // SAFETY: as in [`Self::int`].
        unsafe { ffi::sqlite3_column_double(self.raw(), index as c_int) }
    }

    /// A TEXT column's bytes; none where it is NULL or not text.
    pub(super) fn text(&self, index: usize) -> Option<&[u8]> {
        if self.kind(index) != ffi::SQLITE_TEXT {
            return None;
        }
        // SAFETY: as in [`Self::int`]; the text is read before its length, as SQLite asks, and
        // stays valid until the statement steps again, which needs `&mut` of it.
        unsafe {
            let text = ffi::sqlite3_column_text(self.raw(), index as c_int);
            let len = ffi::sqlite3_column_bytes(self.raw(), index as c_int);
            match text.is_null() {
                true => None,
                false => Some(std::slice::from_raw_parts(text, len.max(0) as usize)),
            }
        }
    }

    /// A BLOB column's bytes; none where it is NULL or not a blob.
    pub(super) fn blob(&self, index: usize) -> Option<&[u8]> {
        if self.kind(index) != ffi::SQLITE_BLOB {
            return None;
        }
        // SAFETY: as in [`Self::text`]; an empty blob's pointer may be NULL.
        unsafe {
            let blob = ffi::sqlite3_column_blob(self.raw(), index as c_int);
            let len = ffi::sqlite3_column_bytes(self.raw(), index as c_int);
            match blob.is_null() {
                true => Some(&[]),
                false => Some(std::slice::from_raw_parts(blob.cast(), len.max(0) as usize)),
            }
        }
    }

    fn kind(&self, index: usize) -> c_int {
        if !self.has(index) {
            return ffi::SQLITE_NULL;
        }
        // SAFETY: as in [`Self::int`].
        unsafe { ffi::sqlite3_column_type(self.raw(), index as c_int) }
    }
}

/// An integer or text parameter as a value (anything else: none).
fn value_of<'a>(value: &'a ToSqlOutput<'a>) -> Option<ValueRef<'a>> {
    match value {
        ToSqlOutput::Borrowed(value @ (ValueRef::Integer(_) | ValueRef::Text(_))) => Some(*value),
        ToSqlOutput::Owned(Value::Integer(value)) => Some(ValueRef::Integer(*value)),
        ToSqlOutput::Owned(Value::Text(text)) => Some(ValueRef::Text(text.as_bytes())),
        _ => None,
    }
}

/// The error SQLite gives for `rc` on `db`, as rusqlite reports it.
fn error(db: *mut ffi::sqlite3, rc: c_int) -> rusqlite::Error {
    // SAFETY: `db` is a live handle; its message is copied before anything else runs on it.
    let message = unsafe { CStr::from_ptr(ffi::sqlite3_errmsg(db)) }
        .to_string_lossy()
        .into_owned();
    rusqlite::Error::SqliteFailure(ffi::Error::new(rc), Some(message))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        conn.execute_batch(
            "CREATE TABLE t (a INTEGER, b REAL, c TEXT);
             INSERT INTO t VALUES (1, 1.5, 'one'), (NULL, NULL, NULL), (-7, 2.0, '');",
        )
        .unwrap();
        conn
    }

    #[test]
    fn reads_integers_reals_and_text_with_nulls_as_the_readers_expect() {
        let conn = table();
        let mut s = Stepped::prepare(&conn, "SELECT a, b, c FROM t ORDER BY rowid").unwrap();
        s.run(&[]).unwrap();
        let mut seen = Vec::new();
        while let Some(row) = s.next().unwrap() {
            let text = row.text(2).map(|t| String::from_utf8(t.to_vec()).unwrap());
            seen.push((
                row.int(0),
                row.optional(0),
                row.real_or_nan(1),
                text,
                row.int(9),
            ));
        }
        assert_eq!(seen.len(), 3);
        assert_eq!(seen[0], (1, Some(1), 1.5, Some("one".to_string()), 0));
        assert_eq!((seen[1].0, seen[1].1, seen[1].3.clone()), (0, None, None));
        assert!(seen[1].2.is_nan());
        assert_eq!(seen[2], (-7, Some(-7), 2.0, Some(String::new()), 0));
        // Past the end it stays ended.
        assert!(s.next().unwrap().is_none());
    }

    #[test]
    fn runs_again_with_new_parameters() {
        let conn = table();
        let mut s = Stepped::prepare(&conn, "SELECT a FROM t WHERE a BETWEEN ?1 AND ?2").unwrap();
        for (low, high, expected) in [(0, 5, vec![1]), (-10, 0, vec![-7]), (2, 3, vec![])] {
            s.run(rusqlite::params![low, high]).unwrap();
            let mut got = Vec::new();
            while let Some(row) = s.next().unwrap() {
                got.push(row.int(0));
            }
            assert_eq!(got, expected);
        }
    }

    #[test]
    fn errors_name_what_sqlite_said() {
        let conn = table();
        let bad = Stepped::prepare(&conn, "SELECT nope FROM t").err().unwrap();
        assert!(bad.to_string().contains("no such column: nope"), "{bad}");
        let mut s = Stepped::prepare(&conn, "SELECT a FROM t WHERE a = ?1").unwrap();
        assert!(
            s.run(rusqlite::params![1, 2]).is_err(),
            "a parameter the statement has not"
        );
        assert!(
            s.run(rusqlite::params![1.5]).is_err(),
            "neither an integer nor text"
        );
        let mut t = Stepped::prepare(&conn, "SELECT count(*) FROM t WHERE c = ?1").unwrap();
        t.run(rusqlite::params!["one"]).unwrap();
        assert_eq!(t.next().unwrap().map(|row| row.int(0)), Some(1));
        // A statement that fails while stepping reports it once, then has no rows.
        let mut f = Stepped::prepare(&conn, "SELECT abs(-9223372036854775807 - 1)").unwrap();
        f.run(&[]).unwrap();
        assert!(f.next().is_err());
        assert!(f.next().unwrap().is_none());
    }
}
