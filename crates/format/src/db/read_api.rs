//! A process's API calls read back from its database (`db::api` wrote them), in the order they
//! were recorded (their events' ids), a page at a time: a page of `rocpd_region` rows by row id,
//! then the `rocpd_arg` rows of their events, read on by row id from where the last page's
//! ended (neither table has an index on its event ids: a page found by event id scanned both,
//! quadratic, issue 49). The writer inserts each call's event, its arguments, then its region,
//! so both tables' row ids follow event ids ([`super::trace_order`]).

use super::pages::StoredProcess;
use super::trace_order::{Keyed, Rows};
use crate::api::{ApiDomain, ApiRecord, CUDA_DRIVER_API, CUDA_RUNTIME_API};
use crate::api_args::{ApiArg, ApiArgs};
use crate::error::FormatError;
use crate::run::TraceCursor;
use rusqlite::Row;
use std::borrow::Cow;

/// Regions of the API categories (`?4`, `?5`) after a row (`?2`), a page (`?3`) at most.
pub(super) const API_SQL: &str = r#"
SELECT R.id, E.id, E.correlation_id, E.parent_stack_id, C.string, N.string, P.pid, T.tid,
       R."start", R."end"
FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id
JOIN rocpd_string C ON C.id = E.category_id
JOIN rocpd_string N ON N.id = R.name_id
LEFT JOIN rocpd_info_process P ON P.id = R.pid
LEFT JOIN rocpd_info_thread T ON T.id = R.tid
WHERE R.guid = ?1 AND R.id > ?2 AND C.string IN (?4, ?5)
ORDER BY R.id LIMIT ?3"#;

/// The process's arguments after a row (`?2`), a page (`?3`) at most.
pub(super) const ARGS_SQL: &str = r#"
SELECT A.id, A.event_id, A.position, A.type, A.name, A.value FROM rocpd_arg A
WHERE A.guid = ?1 AND A.id > ?2
ORDER BY A.id LIMIT ?3"#;

/// [`ARGS_SQL`] of the calls of the categories `?4`, `?5` only: the others' arguments are
/// skipped by SQLite instead of read.
pub(super) const ARGS_OF_SQL: &str = r#"
SELECT A.id, A.event_id, A.position, A.type, A.name, A.value FROM rocpd_arg A
JOIN rocpd_event E ON E.id = A.event_id
JOIN rocpd_string C ON C.id = E.category_id
WHERE A.guid = ?1 AND A.id > ?2 AND C.string IN (?4, ?5)
ORDER BY A.id LIMIT ?3"#;

/// The API calls of `process` after `at` (the last region row and argument row taken), a page
/// at most, of `domain` only if given, with their arguments if `args`; moves `at` past them.
/// Empty: there are no more.
pub(super) fn api_calls_after(
    process: &StoredProcess,
    at: &mut TraceCursor,
    args: bool,
    domain: Option<ApiDomain>,
) -> Result<Vec<ApiRecord>, FormatError> {
    let categories = match domain {
        None => [CUDA_RUNTIME_API, CUDA_DRIVER_API],
        Some(domain) => [domain.category(); 2],
    };
    loop {
        let Rows { rows, .. } = process.trace_rows(API_SQL, &categories, at[0], call)?;
        let Some(last) = rows.last() else {
            return Ok(Vec::new());
        };
        at[0] = last.row;
        let events: Vec<i64> = rows.iter().map(|row| row.event).collect();
        let mut calls: Vec<Option<ApiRecord>> = rows.into_iter().map(|row| row.record).collect();
        if args {
            let sql = match domain {
                None => (ARGS_SQL, &[][..]),
                Some(_) => (ARGS_OF_SQL, &categories[..]),
            };
            attach_args(process, sql, &events, &mut calls, &mut at[1])?;
        }
        // A page of regions none of which is a call of a known domain is skipped.
        let calls: Vec<ApiRecord> = calls.into_iter().flatten().collect();
        if !calls.is_empty() {
            return Ok(calls);
        }
    }
}

/// One region row (row id, event id, then the call's columns); None for a category that is no
/// API domain's.
fn call(row: &Row<'_>) -> rusqlite::Result<Keyed<Option<ApiRecord>>> {
    let int = |index| -> rusqlite::Result<u64> {
        Ok(row.get::<_, Option<i64>>(index)?.unwrap_or(0) as u64)
    };
    let category: String = row.get(4)?;
    let record = match ApiDomain::from_category(&category) {
        None => None,
        Some(domain) => Some(ApiRecord {
            correlation_id: int(2)?,
            parent_id: int(3)?,
            domain,
            function: Cow::Owned(row.get::<_, String>(5)?),
            pid: int(6)? as u32,
            tid: int(7)?,
            start_ns: int(8)?,
            end_ns: int(9)?,
            args: Default::default(),
        }),
    };
    Ok(Keyed {
        row: row.get(0)?,
        event: row.get(1)?,
        record,
    })
}

/// The arguments of the calls (their events `events`, rising), read by `sql` ([`ARGS_SQL`] or
/// [`ARGS_OF_SQL`] with its categories) from the row after `after` up to the last call's event;
/// moves `after` past them. Each call's arguments in position order (then row order), as they
/// were written.
fn attach_args(
    process: &StoredProcess,
    (sql, categories): (&str, &[&str]),
    events: &[i64],
    calls: &mut [Option<ApiRecord>],
    after: &mut i64,
) -> Result<(), FormatError> {
    let last_event = *events.last().expect("a page of calls");
    'pages: loop {
        let Rows { rows, full } = process.trace_rows(sql, categories, *after, arg)?;
        for row in rows {
            if row.event > last_event {
                // The next page's calls': read again with them.
                break 'pages;
            }
            *after = row.row;
            let Ok(index) = events.binary_search(&row.event) else {
                continue;
            };
            if let Some(call) = &mut calls[index] {
                match &mut call.args {
                    ApiArgs::Read(args) => args.push(row.record),
                    other => *other = ApiArgs::Read(vec![row.record]),
                }
            }
        }
        if !full {
            break;
        }
    }
    sort_args(calls);
    Ok(())
}

/// Each call's arguments in position order (a stable sort: row order among equal positions).
fn sort_args(calls: &mut [Option<ApiRecord>]) {
    for call in calls.iter_mut().flatten() {
        if let ApiArgs::Read(args) = &mut call.args {
            args.sort_by_key(|arg| arg.position);
        }
    }
}

/// One argument row (row id, event id, then the argument's columns).
fn arg(row: &Row<'_>) -> rusqlite::Result<Keyed<ApiArg>> {
    Ok(Keyed {
        row: row.get(0)?,
        event: row.get(1)?,
        record: ApiArg {
            position: row.get::<_, Option<u32>>(2)?.unwrap_or(0),
            ty: row.get(3)?,
            name: row.get(4)?,
            value: row.get::<_, Option<String>>(5)?.unwrap_or_default(),
        },
    })
}
