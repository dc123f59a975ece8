//! A process's code objects in `rocpd_info_code_object`: the row of a module the process loaded,
//! which its kernel symbols' `code_object_id` refers to (the row id, as rocpd's views join).
//!
//! A kernel symbol that names a code object not described yet gets a placeholder row (no agent,
//! so rocpd's `code_objects` view leaves it out) that the description fills in later.

use super::file::{to_sql, DbFile};
use super::process_rows::ProcessRows;
use crate::code_object::{load_record_json, STORAGE_TYPE_MEMORY_NAME};
use crate::error::FormatError;
use crate::records::CodeObject;
use rusqlite::params;

/// `extdata` of a placeholder code object row: the placeholder mark, and the producer's id the
/// reader maps the kernel symbols' references through.
pub(super) fn placeholder_extdata(code_object_id: u64) -> String {
    serde_json::json!({ "placeholder": true, "code_object_id": to_sql(code_object_id) }).to_string()
}

impl ProcessRows {
    /// Inserts (or fills in) the row of `object`. `extdata` is rocprofiler-sdk's load record, as
    /// rocprofv3 stores it (its agent the producer's agent id); the producer's code object id is
    /// its `code_object_id`.
    pub(super) fn insert_code_object(
        &mut self,
        db: &DbFile,
        object: &CodeObject,
    ) -> Result<(), FormatError> {
        let agent = self.agent_row(db, object.agent_id)?;
        let extdata = load_record_json(object, object.agent_id).to_string();
        let existing = self.code_objects.get(&object.code_object_id).copied();
        let rows = &*self;
        let result = match existing {
            Some(id) => db.conn.execute(
                &db.names.sql(
                    r#"UPDATE rocpd_info_code_object SET agent_id = ?1, uri = ?2, load_base = ?3,
                   load_size = ?4, load_delta = 0, storage_type = ?5, extdata = ?6 WHERE id = ?7"#,
                ),
                params![
                    agent,
                    object.uri,
                    to_sql(object.load_base),
                    to_sql(object.load_size),
                    STORAGE_TYPE_MEMORY_NAME,
                    extdata,
                    id
                ],
            ),
            None => db.conn.execute(
                &db.names.sql(
                    r#"INSERT INTO rocpd_info_code_object (guid, nid, pid, agent_id, uri, load_base,
                   load_size, load_delta, storage_type, extdata)
                   VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 0, ?8, ?9)"#,
                ),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    agent,
                    object.uri,
                    to_sql(object.load_base),
                    to_sql(object.load_size),
                    STORAGE_TYPE_MEMORY_NAME,
                    extdata
                ],
            ),
        };
        result.map_err(|e| db.err(e))?;
        if existing.is_none() {
            let id = db.conn.last_insert_rowid();
            self.code_objects.insert(object.code_object_id, id);
        }
        Ok(())
    }

    /// The row id a kernel symbol's `code_object_id` column holds for the producer's code object
    /// `code_object_id`: 0 for 0 (none), else its row, a placeholder the first time when the
    /// code object is not described yet.
    pub(super) fn code_object_row(
        &mut self,
        db: &DbFile,
        code_object_id: u64,
    ) -> Result<i64, FormatError> {
        if code_object_id == 0 {
            return Ok(0);
        }
        if let Some(id) = self.code_objects.get(&code_object_id) {
            return Ok(*id);
        }
        let rows = &*self;
        db.conn
            .execute(
                &db.names.sql(
                    "INSERT INTO rocpd_info_code_object (guid, nid, pid, extdata) VALUES (?1, ?2, ?3, ?4)",
                ),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    placeholder_extdata(code_object_id)
                ],
            )
            .map_err(|e| db.err(e))?;
        let id = db.conn.last_insert_rowid();
        self.code_objects.insert(code_object_id, id);
        Ok(id)
    }
}
