//! The API domain's rows (`--runtime-trace`, `--sys-trace`), as rocprofv3 writes HIP API calls:
//! each call a `rocpd_region` named by its function, with an event of its domain's category
//! (`CUDA_RUNTIME_API`, `CUDA_DRIVER_API`) whose `correlation_id` is the call's (a launch's
//! dispatch has the same) and `parent_stack_id` the call it was made inside. rocpd's `regions`
//! view reads them; its arguments are `rocpd_arg` rows of its event (`region_args`).

use super::file::{to_sql, DbFile};
use super::process_rows::ProcessRows;
use crate::api::ApiRecord;
use crate::api_args::ApiArgs;
use crate::error::FormatError;
use rusqlite::params;

impl ProcessRows {
    pub(super) fn insert_api_call(
        &mut self,
        db: &DbFile,
        call: &ApiRecord,
    ) -> Result<(), FormatError> {
        let thread = self.thread_row(db, call.tid)?;
        let category = self.string_id(db, call.domain.category())?;
        let name = self.string_id(db, &call.function)?;
        let err = |e| FormatError::sqlite(&db.path, e);
        let id = to_sql(call.correlation_id);
        db.conn
            .prepare_cached(&db.names.sql(
                "INSERT INTO rocpd_event (guid, category_id, stack_id, parent_stack_id, correlation_id) VALUES (?1, ?2, ?3, ?4, ?3)",
            ))
            .and_then(|mut insert| {
                insert.execute(params![self.guid, category, id, to_sql(call.parent_id)])
            })
            .map_err(err)?;
        let event = db.conn.last_insert_rowid();
        self.insert_args(db, event, &call.args)?;
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
                    to_sql(call.start_ns),
                    to_sql(call.end_ns),
                    name,
                    event
                ])
            })
            .map_err(err)?;
        Ok(())
    }

    /// The call's arguments, one `rocpd_arg` row each (rocpd's `region_args` view), as rocprofv3
    /// writes a HIP call's: position, C type, name, value as text.
    fn insert_args(&self, db: &DbFile, event: i64, args: &ApiArgs) -> Result<(), FormatError> {
        if args.is_empty() {
            return Ok(());
        }
        let err = |e| FormatError::sqlite(&db.path, e);
        let mut insert = db
            .conn
            .prepare_cached(&db.names.sql(
                "INSERT INTO rocpd_arg (guid, event_id, position, type, name, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            ))
            .map_err(err)?;
        let mut row = |position: u32, ty: &str, name: &str, value: &str| {
            insert
                .execute(params![self.guid, event, position, ty, name, value])
                .map(drop)
        };
        match args {
            ApiArgs::None => Ok(()),
            ApiArgs::Recorded(recorded) => recorded.iter().try_for_each(|(decl, value)| {
                row(decl.position, decl.ty, decl.name, &value.to_string())
            }),
            ApiArgs::Read(read) => read
                .iter()
                .try_for_each(|a| row(a.position, &a.ty, &a.name, &a.value)),
        }
        .map_err(err)
    }
}
