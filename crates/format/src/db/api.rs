//! The API domain's rows (`--runtime-trace`, `--sys-trace`), as rocprofv3 writes HIP API calls:
//! each call a `rocpd_region` named by its function, with an event of its domain's category
//! (`CUDA_RUNTIME_API`, `CUDA_DRIVER_API`) whose `correlation_id` is the call's (a launch's
//! dispatch has the same) and `parent_stack_id` the call it was made inside. rocpd's `regions`
//! view reads them; its arguments are `rocpd_arg` rows of its event (`region_args`).

use super::file::{to_sql, DbFile};
use super::process_rows::ProcessRows;
use super::trace_blocks::ArgRow;
use crate::api::ApiRecord;
use crate::api_args::ApiArgs;
use crate::error::FormatError;
use rusqlite::params;
use std::borrow::Cow;
use std::sync::OnceLock;

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
        let args = arg_rows(&call.args);
        self.insert_args(db, event, &args)?;
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
        self.trace_blocks
            .push_api_call(db, &self.guid, event, call, &args)
    }

    /// The call's arguments, one `rocpd_arg` row each (rocpd's `region_args` view), as rocprofv3
    /// writes a HIP call's: position, C type, name, value as text. Inserted up to
    /// [`ARGS_PER_INSERT`] rows a statement: each statement of an AUTOINCREMENT table looks its
    /// counter up in `sqlite_sequence` and writes it back, a cost that one row a statement paid
    /// per argument (issue 49); the ids are the same, given in the same order.
    fn insert_args(&self, db: &DbFile, event: i64, rows: &[ArgRow<'_>]) -> Result<(), FormatError> {
        let err = |e| FormatError::sqlite(&db.path, e);
        for chunk in rows.chunks(ARGS_PER_INSERT) {
            let mut insert = db
                .conn
                .prepare_cached(&db.names.sql(args_insert_sql()[chunk.len() - 1].as_str()))
                .map_err(err)?;
            insert.raw_bind_parameter(1, &self.guid).map_err(err)?;
            insert.raw_bind_parameter(2, event).map_err(err)?;
            for (index, (position, ty, name, value)) in chunk.iter().enumerate() {
                let at = 3 + 4 * index;
                insert.raw_bind_parameter(at, position).map_err(err)?;
                insert.raw_bind_parameter(at + 1, ty).map_err(err)?;
                insert.raw_bind_parameter(at + 2, name).map_err(err)?;
                insert.raw_bind_parameter(at + 3, &**value).map_err(err)?;
            }
            insert.raw_execute().map_err(err)?;
        }
        Ok(())
    }
}

/// A call's arguments as their rows hold them: position, type, name, value as text.
fn arg_rows(args: &ApiArgs) -> Vec<ArgRow<'_>> {
    match args {
        ApiArgs::None => Vec::new(),
        ApiArgs::Recorded(recorded) => recorded
            .iter()
            .map(|(decl, value)| {
                (
                    decl.position,
                    decl.ty,
                    decl.name,
                    Cow::Owned(value.to_string()),
                )
            })
            .collect(),
        ApiArgs::Read(read) => read
            .iter()
            .map(|a| (a.position, &*a.ty, &*a.name, Cow::Borrowed(&*a.value)))
            .collect(),
    }
}

/// The most arguments one `rocpd_arg` statement inserts (a call has a handful).
const ARGS_PER_INSERT: usize = 8;

/// The statements inserting 1 to [`ARGS_PER_INSERT`] arguments of one event: `?1` the guid, `?2`
/// the event, then position, type, name and value of each.
fn args_insert_sql() -> &'static [String] {
    static SQL: OnceLock<Vec<String>> = OnceLock::new();
    SQL.get_or_init(|| {
        (1..=ARGS_PER_INSERT)
            .map(|count| {
                let values: Vec<String> = (0..count)
                    .map(|index| {
                        let at = 3 + 4 * index;
                        format!("(?1, ?2, ?{}, ?{}, ?{}, ?{})", at, at + 1, at + 2, at + 3)
                    })
                    .collect();
                format!(
                    "INSERT INTO rocpd_arg (guid, event_id, position, type, name, value) VALUES {}",
                    values.join(", ")
                )
            })
            .collect()
    })
}
