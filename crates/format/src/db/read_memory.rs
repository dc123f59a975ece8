//! A process's memory copies and allocations read back from its database (`db::memory` wrote
//! them), in the order they were recorded (their rows' ids), a page at a time (a range of row
//! ids each).

use super::pages::StoredProcess;
use crate::error::FormatError;
use crate::memory::{AllocationOperation, CopyDirection, MemoryAllocationRecord, MemoryCopyRecord};
use crate::run::TraceCursor;
use rusqlite::{Connection, Row};
use std::path::Path;

/// Copies, with their sides' agents (type and device ordinal), thread and CUDA stream.
const COPIES_SQL: &str = r#"
SELECT M.id, E.stack_id, M.extdata, P.pid, T.tid, M."start", M."end", S.string,
    SRC.type, SRC.absolute_index, DST.type, DST.absolute_index, M.src_address, M.dst_address,
    M.size, ST.cuda_stream
FROM rocpd_memory_copy M
JOIN rocpd_event E ON E.id = M.event_id
JOIN rocpd_string S ON S.id = M.name_id
LEFT JOIN rocpd_info_agent SRC ON SRC.id = M.src_agent_id
LEFT JOIN rocpd_info_agent DST ON DST.id = M.dst_agent_id
LEFT JOIN rocpd_info_process P ON P.id = M.pid
LEFT JOIN rocpd_info_thread T ON T.id = M.tid
LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id
WHERE M.guid = ?1 AND M.id > ?2
ORDER BY M.id LIMIT ?3"#;

/// Allocations and frees, with their agent, thread and CUDA stream.
const ALLOCATIONS_SQL: &str = r#"
SELECT M.id, E.stack_id, M.extdata, P.pid, T.tid, M."start", M."end", M.type, M.level,
    A.type, A.absolute_index, M.address, M.size, ST.cuda_stream
FROM rocpd_memory_allocate M
JOIN rocpd_event E ON E.id = M.event_id
LEFT JOIN rocpd_info_agent A ON A.id = M.agent_id
LEFT JOIN rocpd_info_process P ON P.id = M.pid
LEFT JOIN rocpd_info_thread T ON T.id = M.tid
LEFT JOIN rocpd_info_stream ST ON ST.id = M.stream_id
WHERE M.guid = ?1 AND M.id > ?2
ORDER BY M.id LIMIT ?3"#;

/// How many records a page holds.
const PAGE_ROWS: i64 = 4096;

/// The copies of `process` after `at` (the last row taken), a page at most; moves `at` past
/// them. Empty: there are no more.
pub(super) fn copies_from(
    process: &StoredProcess,
    at: &mut TraceCursor,
) -> Result<Vec<MemoryCopyRecord>, FormatError> {
    non_empty(at, |after| {
        copies_after(&process.connection(), &process.path, &process.guid, after)
    })
}

/// The allocations and frees of `process` after `at`, as [`copies_from`].
pub(super) fn allocations_from(
    process: &StoredProcess,
    at: &mut TraceCursor,
) -> Result<Vec<MemoryAllocationRecord>, FormatError> {
    non_empty(at, |after| {
        allocations_after(&process.connection(), &process.path, &process.guid, after)
    })
}

/// The next page `page` gives with a record (a page of rows none of which is a record is
/// skipped), or none at the end.
fn non_empty<T>(
    at: &mut TraceCursor,
    mut page: impl FnMut(i64) -> Result<(Vec<T>, i64), FormatError>,
) -> Result<Vec<T>, FormatError> {
    loop {
        let (rows, last) = page(at[0])?;
        if last == at[0] {
            return Ok(Vec::new());
        }
        at[0] = last;
        if !rows.is_empty() {
            return Ok(rows);
        }
    }
}

fn int(row: &Row<'_>, index: usize) -> rusqlite::Result<u64> {
    Ok(row.get::<_, Option<i64>>(index)?.unwrap_or(0) as u64)
}

/// The device ordinal of an agent row (type, absolute index); `None` for the CPU agent.
fn device(row: &Row<'_>, type_index: usize) -> rusqlite::Result<Option<u64>> {
    let kind: Option<String> = row.get(type_index)?;
    Ok(match kind.as_deref() {
        Some("GPU") => Some(int(row, type_index + 1)?),
        _ => None,
    })
}

fn extdata_text(extdata: &Option<String>, key: &str) -> String {
    extdata
        .as_deref()
        .and_then(|text| serde_json::from_str::<serde_json::Value>(text).ok())
        .and_then(|v| v.get(key)?.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The copies of the process `guid` after row `after` (0: from the first), at most a page; and
/// the row id to ask the next page after (`after` itself at the end).
fn copies_after(
    conn: &Connection,
    path: &Path,
    guid: &str,
    after: i64,
) -> Result<(Vec<MemoryCopyRecord>, i64), FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn.prepare_cached(COPIES_SQL).map_err(err)?;
    let rows = statement
        .query_map(rusqlite::params![guid, after, PAGE_ROWS], |row| {
            let extdata: Option<String> = row.get(2)?;
            let name: String = row.get(7)?;
            let src_agent = device(row, 8)?;
            let dst_agent = device(row, 10)?;
            let direction = CopyDirection::parse(&name)
                .unwrap_or_else(|| CopyDirection::between(src_agent, dst_agent));
            Ok((
                row.get::<_, i64>(0)?,
                MemoryCopyRecord {
                    id: int(row, 1)?,
                    operation: extdata_text(&extdata, "operation"),
                    direction,
                    src_agent,
                    dst_agent,
                    src_address: int(row, 12)?,
                    dst_address: int(row, 13)?,
                    bytes: int(row, 14)?,
                    stream_id: int(row, 15)?,
                    pid: int(row, 3)? as u32,
                    tid: int(row, 4)?,
                    start_ns: int(row, 5)?,
                    end_ns: int(row, 6)?,
                },
            ))
        })
        .map_err(err)?;
    let mut copies = Vec::new();
    let mut last = after;
    for row in rows {
        let (id, copy) = row.map_err(err)?;
        last = id;
        copies.push(copy);
    }
    Ok((copies, last))
}

/// The allocations of the process `guid` after row `after`, as [`copies_after`].
fn allocations_after(
    conn: &Connection,
    path: &Path,
    guid: &str,
    after: i64,
) -> Result<(Vec<MemoryAllocationRecord>, i64), FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn.prepare_cached(ALLOCATIONS_SQL).map_err(err)?;
    let rows = statement
        .query_map(rusqlite::params![guid, after, PAGE_ROWS], |row| {
            let extdata: Option<String> = row.get(2)?;
            let kind: Option<String> = row.get(7)?;
            let level: Option<String> = row.get(8)?;
            let operation = AllocationOperation::from_db(
                kind.as_deref().unwrap_or_default(),
                level.as_deref().unwrap_or_default(),
            );
            let stream: Option<i64> = row.get(13)?;
            Ok((
                row.get::<_, i64>(0)?,
                operation.map(|operation| MemoryAllocationRecord {
                    id: 0,
                    operation,
                    memory: extdata_text(&extdata, "memory"),
                    api: extdata_text(&extdata, "operation"),
                    agent_id: None,
                    address: 0,
                    size: 0,
                    stream_id: stream.map(|s| s as u64),
                    pid: 0,
                    tid: 0,
                    start_ns: 0,
                    end_ns: 0,
                }),
                [
                    int(row, 1)?,
                    int(row, 3)?,
                    int(row, 4)?,
                    int(row, 5)?,
                    int(row, 6)?,
                ],
                device(row, 9)?,
                [int(row, 11)?, int(row, 12)?],
            ))
        })
        .map_err(err)?;
    let mut allocations = Vec::new();
    let mut last = after;
    for row in rows {
        let (id, record, [stack, pid, tid, start_ns, end_ns], agent_id, [address, size]) =
            row.map_err(err)?;
        last = id;
        // A row of a type or level rocprofv3's memory allocations do not have (scratch) is
        // not one of ours.
        let Some(record) = record else { continue };
        allocations.push(MemoryAllocationRecord {
            id: stack,
            agent_id,
            address,
            size,
            pid: pid as u32,
            tid,
            start_ns,
            end_ns,
            ..record
        });
    }
    Ok((allocations, last))
}
