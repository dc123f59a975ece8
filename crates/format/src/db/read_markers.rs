//! A process's marker ranges and marks read back from its database (`db::markers` wrote them),
//! in the order they were recorded (their events' ids), in one query: paging by event id
//! scanned `rocpd_region` (no index on its event ids) once a page, quadratic (issue 49).

use crate::error::FormatError;
use crate::markers::{MarkerKind, MarkerRecord, MARKER_CATEGORY};
use rusqlite::Connection;
use std::path::Path;

/// Ranges (`rocpd_region`) and marks (`rocpd_sample`) of the marker category, by event id.
const MARKERS_SQL: &str = r#"
SELECT E.id, E.stack_id, E.extdata, P.pid, T.tid, R."start", R."end"
FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id
JOIN rocpd_string C ON C.id = E.category_id
LEFT JOIN rocpd_info_process P ON P.id = R.pid
LEFT JOIN rocpd_info_thread T ON T.id = R.tid
WHERE R.guid = ?1 AND C.string = ?2
UNION ALL
SELECT E.id, E.stack_id, E.extdata, P.pid, T.tid, S.timestamp, S.timestamp
FROM rocpd_sample S JOIN rocpd_event E ON E.id = S.event_id
JOIN rocpd_string C ON C.id = E.category_id
JOIN rocpd_track TR ON TR.id = S.track_id
LEFT JOIN rocpd_info_process P ON P.id = TR.pid
LEFT JOIN rocpd_info_thread T ON T.id = TR.tid
WHERE S.guid = ?1 AND C.string = ?2
ORDER BY 1"#;

/// Every marker of the process `guid`, in the order they were recorded.
pub(super) fn markers(
    conn: &Connection,
    path: &Path,
    guid: &str,
) -> Result<Vec<MarkerRecord>, FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    let mut statement = conn.prepare(MARKERS_SQL).map_err(err)?;
    let rows = statement
        .query_map(rusqlite::params![guid, MARKER_CATEGORY], |row| {
            let extdata: Option<String> = row.get(2)?;
            let int = |index| -> rusqlite::Result<u64> {
                Ok(row.get::<_, Option<i64>>(index)?.unwrap_or(0) as u64)
            };
            Ok((
                row.get::<_, i64>(0)?,
                int(1)?,
                extdata,
                int(3)? as u32,
                int(4)?,
                int(5)?,
                int(6)?,
            ))
        })
        .map_err(err)?;
    let mut markers = Vec::new();
    for row in rows {
        let (_event, id, extdata, pid, tid, start_ns, end_ns) = row.map_err(err)?;
        let extdata: serde_json::Value = extdata
            .as_deref()
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap_or_default();
        let text = |key: &str| {
            extdata
                .get(key)
                .and_then(|v| v.as_str())
                .unwrap_or_default()
                .to_string()
        };
        let Some(kind) = MarkerKind::parse(&text("kind")) else {
            continue;
        };
        markers.push(MarkerRecord {
            id,
            kind,
            operation: text("operation"),
            domain: text("domain"),
            message: text("message"),
            category: extdata
                .get("category")
                .and_then(|v| v.as_u64())
                .unwrap_or(0) as u32,
            pid,
            tid,
            start_ns,
            end_ns,
        });
    }
    Ok(markers)
}
