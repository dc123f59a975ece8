//! The memory domains' rows (`--memory-copy-trace`, `--memory-allocation-trace`), as rocprofv3
//! writes them: each record an event (category `MEMORY_COPY` or `MEMORY_ALLOCATION`, stack id
//! the record's id), a copy a `rocpd_memory_copy` row named by its direction, an allocation or
//! free a `rocpd_memory_allocate` row (`type` ALLOC/FREE, `level` REAL/VIRTUAL). The host side
//! of a copy, or host memory, is the process's CPU agent, a `rocpd_info_agent` row of type
//! `CPU` inserted the first time. rocpd's `memory_copies` and `memory_allocations` views read
//! them.

use super::file::{to_sql, DbFile};
use super::process_rows::ProcessRows;
use crate::error::FormatError;
use crate::memory::{
    MemoryAllocationRecord, MemoryCopyRecord, MEMORY_ALLOCATION_CATEGORY, MEMORY_COPY_CATEGORY,
};
use rusqlite::params;

impl ProcessRows {
    pub(super) fn insert_memory_copy(
        &mut self,
        db: &DbFile,
        copy: &MemoryCopyRecord,
    ) -> Result<(), FormatError> {
        let thread = self.thread_row(db, copy.tid)?;
        let event = self.memory_event(db, MEMORY_COPY_CATEGORY, copy.id, "{}")?;
        let name = self.string_id(db, copy.direction.as_str())?;
        let src = self.memory_agent_row(db, copy.src_agent)?;
        let dst = self.memory_agent_row(db, copy.dst_agent)?;
        let (queue, stream) = self.stream_rows(db, copy.stream_id)?;
        let extdata = serde_json::json!({ "operation": copy.operation }).to_string();
        db.conn
            .prepare_cached(&db.names.sql(
                r#"INSERT INTO rocpd_memory_copy (guid, nid, pid, tid, "start", "end", name_id, dst_agent_id,
                   dst_address, src_agent_id, src_address, size, queue_id, stream_id, event_id, extdata)
                   VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"#,
            ))
            .and_then(|mut insert| {
                insert.execute(params![
                    self.guid,
                    self.node_id,
                    self.row_id,
                    thread,
                    to_sql(copy.start_ns),
                    to_sql(copy.end_ns),
                    name,
                    dst,
                    to_sql(copy.dst_address),
                    src,
                    to_sql(copy.src_address),
                    to_sql(copy.bytes),
                    queue,
                    stream,
                    event,
                    extdata
                ])
            })
            .map_err(|e| db.err(e))?;
        self.trace_blocks.push_copy(db, &self.guid, event, copy)
    }

    pub(super) fn insert_memory_allocation(
        &mut self,
        db: &DbFile,
        allocation: &MemoryAllocationRecord,
    ) -> Result<(), FormatError> {
        let thread = self.thread_row(db, allocation.tid)?;
        let event = self.memory_event(db, MEMORY_ALLOCATION_CATEGORY, allocation.id, "{}")?;
        // rocprofv3 names the agent of allocations only; host memory is the CPU agent.
        let agent = if allocation.operation.allocates() {
            Some(self.memory_agent_row(db, allocation.agent_id)?)
        } else {
            None
        };
        let stream = match allocation.stream_id {
            Some(stream) => Some(self.stream_rows(db, stream)?),
            None => None,
        };
        let (kind, level) = allocation.operation.db_type_level();
        let extdata = serde_json::json!({
            "memory": allocation.memory,
            "operation": allocation.api,
        })
        .to_string();
        db.conn
            .prepare_cached(&db.names.sql(
                r#"INSERT INTO rocpd_memory_allocate (guid, nid, pid, tid, agent_id, type, level, "start", "end",
                   address, size, queue_id, stream_id, event_id, extdata)
                   VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)"#,
            ))
            .and_then(|mut insert| {
                insert.execute(params![
                    self.guid,
                    self.node_id,
                    self.row_id,
                    thread,
                    agent,
                    kind,
                    level,
                    to_sql(allocation.start_ns),
                    to_sql(allocation.end_ns),
                    to_sql(allocation.address),
                    to_sql(allocation.size),
                    stream.map(|s| s.0),
                    stream.map(|s| s.1),
                    event,
                    extdata
                ])
            })
            .map_err(|e| db.err(e))?;
        self.trace_blocks
            .push_allocation(db, &self.guid, event, allocation)
    }

    /// A memory record's event: its category, its id as stack id (rocprofv3's internal
    /// correlation id).
    fn memory_event(
        &mut self,
        db: &DbFile,
        category: &str,
        id: u64,
        extdata: &str,
    ) -> Result<i64, FormatError> {
        let category = self.string_id(db, category)?;
        db.conn
            .prepare_cached(&db.names.sql(
                "INSERT INTO rocpd_event (guid, category_id, stack_id, parent_stack_id, correlation_id, extdata) VALUES (?1, ?2, ?3, ?3, 0, ?4)",
            ))
            .and_then(|mut insert| insert.execute(params![self.guid, category, to_sql(id), extdata]))
            .map_err(|e| db.err(e))?;
        Ok(db.conn.last_insert_rowid())
    }

    /// The agent row of one side of a copy or allocation: the device's, or (`None`) the
    /// process's CPU agent, inserted the first time.
    fn memory_agent_row(&mut self, db: &DbFile, agent: Option<u64>) -> Result<i64, FormatError> {
        if let Some(agent) = agent {
            return self.agent_row(db, agent);
        }
        if let Some(host) = self.host_agent {
            return Ok(host);
        }
        db.conn
            .execute(
                &db.names.sql(
                    r#"INSERT INTO rocpd_info_agent (guid, nid, pid, type, type_index, name,
                   model_name, vendor_name, product_name, user_name, extdata)
                   VALUES (?1, ?2, ?3, 'CPU', 0, 'CPU', 'CPU', '', 'host', 'host', '{}')"#,
                ),
                params![self.guid, self.node_id, self.row_id],
            )
            .map_err(|e| db.err(e))?;
        let host = db.conn.last_insert_rowid();
        self.host_agent = Some(host);
        Ok(host)
    }
}
