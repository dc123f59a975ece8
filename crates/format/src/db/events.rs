//! What a process measured: a dispatch (its event, its dispatch row, its counter values), a
//! replay's cost, a warning.

use super::file::{to_sql, DbFile};
use super::process_rows::ProcessRows;
use crate::error::FormatError;
use crate::records::{DispatchRecord, ReplayCost, Warning};
use rusqlite::params;

impl ProcessRows {
    pub(super) fn insert_dispatch(
        &mut self,
        db: &DbFile,
        dispatch: &DispatchRecord,
    ) -> Result<(), FormatError> {
        let thread_row = self.thread_row(db, dispatch.tid)?;
        let (queue_row, stream_row) = self.stream_rows(db, dispatch.stream_id)?;
        let agent_row = self.agent_row(db, dispatch.agent_id)?;
        let (kernel_row, static_shared, local_bytes, region) =
            self.kernel_row(db, dispatch.kernel_id)?;
        let mut counter_rows = Vec::with_capacity(dispatch.counters.len());
        for sample in &dispatch.counters {
            counter_rows.push((self.counter_row(db, &sample.name)?, sample.value));
        }
        let rows = &*self;
        let (guid, node_id, category_id, process_row) = (
            rows.guid.clone(),
            rows.node_id,
            rows.category_id,
            rows.row_id,
        );
        let err = |e| FormatError::sqlite(&db.path, e);
        let mut insert_event = db
            .conn
            .prepare_cached(
                &db.names.sql("INSERT INTO rocpd_event (guid, category_id, stack_id, correlation_id) VALUES (?1, ?2, ?3, ?3)"),
            )
            .map_err(err)?;
        insert_event
            .execute(params![guid, category_id, to_sql(dispatch.correlation_id)])
            .map_err(err)?;
        let event_id = db.conn.last_insert_rowid();
        // rocpd's grid size counts work-items (threads), as rocprofv3's Grid_Size does.
        let threads =
            |axis: usize| u64::from(dispatch.grid[axis]) * u64::from(dispatch.block[axis]);
        let extdata = serde_json::json!({ "dynamic_shared_bytes": dispatch.dynamic_shared_bytes })
            .to_string();
        let mut insert_dispatch = db
            .conn
            .prepare_cached(&db.names.sql(
                r#"INSERT INTO rocpd_kernel_dispatch (guid, nid, pid, tid, agent_id, kernel_id,
                   dispatch_id, queue_id, stream_id, "start", "end", private_segment_size,
                   group_segment_size, workgroup_size_x, workgroup_size_y, workgroup_size_z,
                   grid_size_x, grid_size_y, grid_size_z, event_id, replay_pass, extdata,
                   region_name_id)
                   VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?22, ?9, ?10, ?11, ?12, ?13, ?14, ?15,
                   ?16, ?17, ?18, ?19, ?20, ?21, ?23)"#,
            ))
            .map_err(err)?;
        insert_dispatch
            .execute(params![
                guid,
                node_id,
                process_row,
                thread_row,
                agent_row,
                kernel_row,
                to_sql(dispatch.dispatch_id),
                queue_row,
                to_sql(dispatch.start_ns),
                to_sql(dispatch.end_ns),
                local_bytes,
                to_sql(u64::from(static_shared) + u64::from(dispatch.dynamic_shared_bytes)),
                dispatch.block[0],
                dispatch.block[1],
                dispatch.block[2],
                to_sql(threads(0)),
                to_sql(threads(1)),
                to_sql(threads(2)),
                event_id,
                dispatch.replay_pass,
                extdata,
                stream_row,
                region
            ])
            .map_err(err)?;
        let mut insert_value = db
            .conn
            .prepare_cached(
                &db.names.sql("INSERT INTO rocpd_pmc_event (guid, event_id, pmc_id, value) VALUES (?1, ?2, ?3, ?4)"),
            )
            .map_err(err)?;
        for (pmc_id, value) in counter_rows {
            insert_value
                .execute(params![guid, event_id, pmc_id, value])
                .map_err(err)?;
        }
        Ok(())
    }

    pub(super) fn insert_cost(
        &mut self,
        db: &DbFile,
        cost: &ReplayCost,
    ) -> Result<(), FormatError> {
        let rows = &*self;
        let pass_ns = serde_json::to_string(&cost.pass_ns).expect("a list of integers serializes");
        db.conn
            .prepare_cached(
                r#"INSERT INTO kreplay_replay_cost (guid, pid, dispatch_id, agent_id, outcome, passes,
                   bytes_tracked, bytes_snapshotted, bytes_restored, staging, drain_ns, snapshot_ns,
                   pass_ns, restore_ns, cache, sm_clock_min_mhz, sm_clock_max_mhz, memory_clock_min_mhz,
                   memory_clock_max_mhz, timing_execution_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9,
                   ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20)"#,
            )
            .and_then(|mut statement| {
                statement.execute(params![
                    rows.guid,
                    rows.pid,
                    to_sql(cost.dispatch_id),
                    to_sql(cost.agent_id),
                    cost.outcome.as_str(),
                    cost.passes,
                    to_sql(cost.bytes_tracked),
                    to_sql(cost.bytes_snapshotted),
                    to_sql(cost.bytes_restored),
                    cost.staging.as_str(),
                    to_sql(cost.drain_ns),
                    to_sql(cost.snapshot_ns),
                    pass_ns,
                    to_sql(cost.restore_ns),
                    cost.cache.as_str(),
                    cost.sm_clock_mhz[0],
                    cost.sm_clock_mhz[1],
                    cost.memory_clock_mhz[0],
                    cost.memory_clock_mhz[1],
                    to_sql(cost.timing_execution_ns)
                ])
            })
            .map_err(|e| db.err(e))?;
        Ok(())
    }

    pub(super) fn insert_warning(
        &mut self,
        db: &DbFile,
        warning: &Warning,
    ) -> Result<(), FormatError> {
        let rows = &*self;
        db.conn
            .execute(
                "INSERT INTO kreplay_warning (guid, pid, message) VALUES (?1, ?2, ?3)",
                params![rows.guid, rows.pid, warning.message],
            )
            .map_err(|e| db.err(e))?;
        Ok(())
    }
}
