//! A process's API calls read back from its database (`db::api` wrote them), in the order they
//! were recorded (their events' ids), a page at a time.

use crate::api::{ApiDomain, ApiRecord, CUDA_DRIVER_API, CUDA_RUNTIME_API};
use crate::api_args::{ApiArg, ApiArgs};
use crate::error::FormatError;
use rusqlite::Connection;
use std::borrow::Cow;
use std::path::Path;

/// Regions of the API categories, by event id.
const API_SQL: &str = r#"
SELECT E.id, E.correlation_id, E.parent_stack_id, C.string, N.string, P.pid, T.tid,
       R."start", R."end"
FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id
JOIN rocpd_string C ON C.id = E.category_id
JOIN rocpd_string N ON N.id = R.name_id
LEFT JOIN rocpd_info_process P ON P.id = R.pid
LEFT JOIN rocpd_info_thread T ON T.id = R.tid
WHERE R.guid = ?1 AND C.string IN (?2, ?3) AND E.id > ?4
ORDER BY E.id LIMIT ?5"#;

/// The arguments of the events of a page of calls, in position order.
const ARGS_SQL: &str = r#"
SELECT event_id, position, type, name, value FROM rocpd_arg
WHERE guid = ?1 AND event_id > ?2 AND event_id <= ?3
ORDER BY event_id, position, id"#;

/// How many calls a page holds.
const PAGE_ROWS: i64 = 4096;

/// Every API call of the process `guid`, page after page.
pub(super) fn api_calls(
    conn: &Connection,
    path: &Path,
    guid: &str,
) -> Result<Vec<ApiRecord>, FormatError> {
    let mut calls = Vec::new();
    let mut after = 0;
    loop {
        let (page, last) = api_calls_after(conn, path, guid, after)?;
        if last == after {
            return Ok(calls);
        }
        calls.extend(page);
        after = last;
    }
}

/// The API calls of the process `guid` recorded after the one whose event is `after` (0: from
/// the first), at most a page; and the event id to ask the next page after (`after` itself at
/// the end).
pub(super) fn api_calls_after(
    conn: &Connection,
    path: &Path,
    guid: &str,
    after: i64,
) -> Result<(Vec<ApiRecord>, i64), FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn.prepare_cached(API_SQL).map_err(err)?;
    let rows = statement
        .query_map(
            rusqlite::params![guid, CUDA_RUNTIME_API, CUDA_DRIVER_API, after, PAGE_ROWS],
            |row| {
                let int = |index| -> rusqlite::Result<u64> {
                    Ok(row.get::<_, Option<i64>>(index)?.unwrap_or(0) as u64)
                };
                Ok((
                    row.get::<_, i64>(0)?,
                    int(1)?,
                    int(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, String>(4)?,
                    int(5)? as u32,
                    int(6)?,
                    int(7)?,
                    int(8)?,
                ))
            },
        )
        .map_err(err)?;
    let mut calls = Vec::new();
    let mut events = Vec::new();
    let mut last = after;
    for row in rows {
        let (event, correlation_id, parent_id, category, function, pid, tid, start_ns, end_ns) =
            row.map_err(err)?;
        last = event;
        let Some(domain) = ApiDomain::from_category(&category) else {
            continue;
        };
        events.push(event);
        calls.push(ApiRecord {
            correlation_id,
            parent_id,
            domain,
            function: Cow::Owned(function),
            pid,
            tid,
            start_ns,
            end_ns,
            args: Default::default(),
        });
    }
    drop(statement);
    attach_args(conn, path, guid, (after, last), &events, &mut calls)?;
    Ok((calls, last))
}

/// The arguments of a page's calls (their events `events`, ids in `(after, last]`).
fn attach_args(
    conn: &Connection,
    path: &Path,
    guid: &str,
    (after, last): (i64, i64),
    events: &[i64],
    calls: &mut [ApiRecord],
) -> Result<(), FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn.prepare_cached(ARGS_SQL).map_err(err)?;
    let rows = statement
        .query_map(rusqlite::params![guid, after, last], |row| {
            Ok((
                row.get::<_, i64>(0)?,
                ApiArg {
                    position: row.get::<_, Option<u32>>(1)?.unwrap_or(0),
                    ty: row.get(2)?,
                    name: row.get(3)?,
                    value: row.get::<_, Option<String>>(4)?.unwrap_or_default(),
                },
            ))
        })
        .map_err(err)?;
    for row in rows {
        let (event, arg) = row.map_err(err)?;
        // Events and calls are both in event order.
        if let Ok(index) = events.binary_search(&event) {
            match &mut calls[index].args {
                ApiArgs::Read(args) => args.push(arg),
                other => *other = ApiArgs::Read(vec![arg]),
            }
        }
    }
    Ok(())
}
