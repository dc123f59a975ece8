//! A process's API calls read back from its database (`db::api` wrote them), in the order they
//! were recorded (their events' ids), in one pass: `rocpd_region` and `rocpd_arg` have no index
//! on their event ids, so paging through them by event id scanned both tables once a page (a
//! cost quadratic in the calls: 20 s at 10^5 dispatches under `--sys-trace`, issue 49); one
//! query each scans and sorts them once.

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
WHERE R.guid = ?1 AND C.string IN (?2, ?3)
ORDER BY E.id"#;

/// The process's arguments, by event, in position order.
const ARGS_SQL: &str = r#"
SELECT event_id, position, type, name, value FROM rocpd_arg
WHERE guid = ?1
ORDER BY event_id, position, id"#;

/// Every API call of the process `guid`, in the order they were recorded.
pub(super) fn api_calls(
    conn: &Connection,
    path: &Path,
    guid: &str,
) -> Result<Vec<ApiRecord>, FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn.prepare(API_SQL).map_err(err)?;
    let rows = statement
        .query_map(
            rusqlite::params![guid, CUDA_RUNTIME_API, CUDA_DRIVER_API],
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
    for row in rows {
        let (event, correlation_id, parent_id, category, function, pid, tid, start_ns, end_ns) =
            row.map_err(err)?;
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
    attach_args(conn, path, guid, &events, &mut calls)?;
    Ok(calls)
}

/// The arguments of the calls (their events `events`, in order).
fn attach_args(
    conn: &Connection,
    path: &Path,
    guid: &str,
    events: &[i64],
    calls: &mut [ApiRecord],
) -> Result<(), FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn.prepare(ARGS_SQL).map_err(err)?;
    let rows = statement
        .query_map(rusqlite::params![guid], |row| {
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
