//! The marker domain's rows (`--marker-trace`), as rocprofv3 writes ROCTx records: each
//! marker an event (category `MARKER_CORE_RANGE_API`, `extdata` with its message), a range a
//! `rocpd_region` named by its operation, a mark a `rocpd_sample` on its thread's marker track.
//! rocpd's `regions`, `samples` and `regions_and_samples` views read them.

use super::file::{to_sql, DbFile};
use super::process_rows::ProcessRows;
use crate::error::FormatError;
use crate::markers::{MarkerKind, MarkerRecord, MARKER_CATEGORY};
use rusqlite::params;

impl ProcessRows {
    pub(super) fn insert_marker(
        &mut self,
        db: &DbFile,
        marker: &MarkerRecord,
    ) -> Result<(), FormatError> {
        let thread = self.thread_row(db, marker.tid)?;
        let category = self.string_id(db, MARKER_CATEGORY)?;
        let name = self.string_id(db, &marker.operation)?;
        let err = |e| FormatError::sqlite(&db.path, e);
        let id = to_sql(marker.id);
        db.conn
            .prepare_cached(&db.names.sql(
                "INSERT INTO rocpd_event (guid, category_id, stack_id, parent_stack_id, correlation_id, extdata) VALUES (?1, ?2, ?3, ?3, 0, ?4)",
            ))
            .and_then(|mut insert| {
                insert.execute(params![self.guid, category, id, marker.extdata().to_string()])
            })
            .map_err(err)?;
        let event = db.conn.last_insert_rowid();
        self.trace_blocks
            .push_marker(db, &self.guid, event, marker)?;
        if marker.kind == MarkerKind::Mark {
            let track = self.marker_track(db, thread, category)?;
            db.conn
                .prepare_cached(&db.names.sql(
                    "INSERT INTO rocpd_sample (guid, track_id, timestamp, event_id) VALUES (?1, ?2, ?3, ?4)",
                ))
                .and_then(|mut insert| {
                    insert.execute(params![self.guid, track, to_sql(marker.start_ns), event])
                })
                .map_err(err)?;
            return Ok(());
        }
        db.conn
            .prepare_cached(&db.names.sql(
                r#"INSERT INTO rocpd_region (guid, nid, pid, tid, "start", "end", name_id, event_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)"#,
            ))
            .and_then(|mut insert| {
                insert.execute(params![
                    self.guid,
                    self.node_id,
                    self.row_id,
                    thread,
                    to_sql(marker.start_ns),
                    to_sql(marker.end_ns),
                    name,
                    event
                ])
            })
            .map_err(err)?;
        Ok(())
    }

    /// The thread's marker track (rocprofv3's: one per thread, named by the category), inserted
    /// the first time.
    fn marker_track(
        &mut self,
        db: &DbFile,
        thread: i64,
        category: i64,
    ) -> Result<i64, FormatError> {
        if let Some(track) = self.tracks.get(&thread) {
            return Ok(*track);
        }
        db.conn
            .execute(
                &db.names.sql(
                    "INSERT INTO rocpd_track (guid, nid, pid, tid, name_id) VALUES (?1, ?2, ?3, ?4, ?5)",
                ),
                params![self.guid, self.node_id, self.row_id, thread, category],
            )
            .map_err(|e| db.err(e))?;
        let track = db.conn.last_insert_rowid();
        self.tracks.insert(thread, track);
        Ok(track)
    }
}
