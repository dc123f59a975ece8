//! A process's marker ranges and marks read back from its database (`db::markers` wrote them),
//! in the order they were recorded (their events' ids), a page at a time: ranges are
//! `rocpd_region` rows, marks `rocpd_sample` rows, each table read by a range of its row ids
//! (neither has an index on its event ids: a page found by event id scanned the table, quadratic,
//! issue 49) and the two merged by event id. The writer inserts each marker's event and then its
//! row, so row ids follow event ids in both tables ([`super::trace_order`]).

use super::pages::StoredProcess;
use super::trace_order::{merge_by_event, Keyed};
use crate::error::FormatError;
use crate::markers::{MarkerKind, MarkerRecord, MARKER_CATEGORY};
use crate::run::TraceCursor;
use rusqlite::Row;

/// Ranges of the marker category (`?4`) after a row (`?2`), in row order, a page (`?3`) at most.
pub(super) const REGIONS_SQL: &str = r#"
SELECT R.id, E.id, E.stack_id, E.extdata, P.pid, T.tid, R."start", R."end"
FROM rocpd_region R JOIN rocpd_event E ON E.id = R.event_id
JOIN rocpd_string C ON C.id = E.category_id
LEFT JOIN rocpd_info_process P ON P.id = R.pid
LEFT JOIN rocpd_info_thread T ON T.id = R.tid
WHERE R.guid = ?1 AND R.id > ?2 AND C.string = ?4
ORDER BY R.id LIMIT ?3"#;

/// Marks of the marker category (`?4`) after a row (`?2`), in row order, a page (`?3`) at most.
pub(super) const SAMPLES_SQL: &str = r#"
SELECT S.id, E.id, E.stack_id, E.extdata, P.pid, T.tid, S.timestamp, S.timestamp
FROM rocpd_sample S JOIN rocpd_event E ON E.id = S.event_id
JOIN rocpd_string C ON C.id = E.category_id
JOIN rocpd_track TR ON TR.id = S.track_id
LEFT JOIN rocpd_info_process P ON P.id = TR.pid
LEFT JOIN rocpd_info_thread T ON T.id = TR.tid
WHERE S.guid = ?1 AND S.id > ?2 AND C.string = ?4
ORDER BY S.id LIMIT ?3"#;

/// The markers of `process` after `at` (the last range row and mark row taken), a page at most
/// of each table; moves `at` past them. Empty: there are no more.
pub(super) fn markers_after(
    process: &StoredProcess,
    at: &mut TraceCursor,
) -> Result<Vec<MarkerRecord>, FormatError> {
    loop {
        let regions = process.trace_rows(REGIONS_SQL, &[MARKER_CATEGORY], at[0], marker)?;
        let samples = process.trace_rows(SAMPLES_SQL, &[MARKER_CATEGORY], at[1], marker)?;
        if regions.rows.is_empty() && samples.rows.is_empty() {
            return Ok(Vec::new());
        }
        let merged = merge_by_event([regions, samples], at);
        // A page of markers none of which reads as one (an unknown kind) is skipped.
        let markers: Vec<MarkerRecord> = merged.into_iter().flatten().collect();
        if !markers.is_empty() {
            return Ok(markers);
        }
    }
}

/// One range or mark row (row id, event id, then the marker's columns); None for a kind that
/// is not a marker's.
fn marker(row: &Row<'_>) -> rusqlite::Result<Keyed<Option<MarkerRecord>>> {
    let int = |index| -> rusqlite::Result<u64> {
        Ok(row.get::<_, Option<i64>>(index)?.unwrap_or(0) as u64)
    };
    let extdata: Option<String> = row.get(3)?;
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
    let record = MarkerKind::parse(&text("kind")).map(|kind| -> rusqlite::Result<_> {
        Ok(MarkerRecord {
            id: int(2)?,
            kind,
            operation: text("operation"),
            domain: text("domain"),
            message: text("message"),
            category: extdata
                .get("category")
                .and_then(|v| v.as_u64())
                .unwrap_or(0) as u32,
            pid: int(4)? as u32,
            tid: int(5)?,
            start_ns: int(6)?,
            end_ns: int(7)?,
        })
    });
    Ok(Keyed {
        row: row.get(0)?,
        event: row.get(1)?,
        record: record.transpose()?,
    })
}
