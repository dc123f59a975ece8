//! What a process measured: a dispatch (its event, its dispatch row, its counter values, every
//! pass of it), a replay's cost, a warning.

use super::blocks::DispatchFields;
use super::file::{to_sql, DbFile};
use super::process_rows::{ProcessRows, RecentDispatch, RECENT_DISPATCHES};
use crate::error::FormatError;
use crate::records::{DispatchRecord, ReplayCost, Warning};
use rusqlite::{params, OptionalExtension};
use std::collections::HashMap;

impl ProcessRows {
    /// One pass of a dispatch. Its first pass makes the dispatch's event and row; every pass adds
    /// a `kreplay_dispatch_pass` row and its values to `kreplay_pass_pmc`; `rocpd_pmc_event` and
    /// the dispatch row keep the lowest pass (see `schema.rs`).
    pub(super) fn insert_dispatch(
        &mut self,
        db: &DbFile,
        dispatch: &DispatchRecord,
    ) -> Result<(), FormatError> {
        let agent_row = self.agent_row(db, dispatch.agent_id)?;
        let mut counter_rows = Vec::with_capacity(dispatch.counters.len());
        for sample in &dispatch.counters {
            counter_rows.push((self.counter_row(db, agent_row, &sample.name)?, sample.value));
        }
        let key = (dispatch.dispatch_id, agent_row);
        let earlier = match dispatch.replay_pass {
            Some(_) => match self.recent.remove(&key) {
                Some(found) => Some(found),
                None if dispatch.dispatch_id >= self.fresh_dispatch_ids => None,
                None => self.dispatch_row(db, dispatch, agent_row)?,
            },
            None => None,
        };
        let err = |e| FormatError::sqlite(&db.path, e);
        let mut found = match earlier {
            Some(mut found) => {
                if dispatch.replay_pass < found.pass {
                    db.conn
                        .prepare_cached(&db.names.sql(
                            r#"UPDATE rocpd_kernel_dispatch SET "start" = ?1, "end" = ?2, replay_pass = ?3 WHERE id = ?4"#,
                        ))
                        .and_then(|mut update| {
                            update.execute(params![
                                to_sql(dispatch.start_ns),
                                to_sql(dispatch.end_ns),
                                dispatch.replay_pass,
                                found.row
                            ])
                        })
                        .map_err(err)?;
                    found.pass = dispatch.replay_pass;
                }
                found
            }
            None => {
                let (row, event) = self.new_dispatch_row(db, dispatch, agent_row)?;
                RecentDispatch {
                    row,
                    event,
                    pass: dispatch.replay_pass,
                    measured: HashMap::new(),
                    fields: DispatchFields::of(dispatch),
                }
            }
        };
        let guid = &self.guid;
        db.conn
            .prepare_cached(
                r#"INSERT INTO kreplay_dispatch_pass (guid, dispatch_row, replay_pass, "start", "end") VALUES (?1, ?2, ?3, ?4, ?5)"#,
            )
            .and_then(|mut insert| {
                insert.execute(params![
                    guid,
                    found.row,
                    dispatch.replay_pass,
                    to_sql(dispatch.start_ns),
                    to_sql(dispatch.end_ns)
                ])
            })
            .map_err(err)?;
        let pass_id = db.conn.last_insert_rowid();
        let mut insert_pass_value = db
            .conn
            .prepare_cached(
                "INSERT INTO kreplay_pass_pmc (guid, pass_id, pmc_id, value) VALUES (?1, ?2, ?3, ?4)",
            )
            .map_err(err)?;
        for (pmc_id, value) in &counter_rows {
            insert_pass_value
                .execute(params![guid, pass_id, pmc_id, value])
                .map_err(err)?;
        }
        self.pass_block
            .push_pass(db, guid, pass_id, &found.fields, dispatch, &counter_rows)?;
        // What `serde_json` writes for `{"replay_pass": pass}`, without building a JSON value.
        let extdata = match dispatch.replay_pass {
            Some(pass) => format!(r#"{{"replay_pass":{pass}}}"#),
            None => "{}".to_string(),
        };
        for (pmc_id, value) in counter_rows {
            let sql = match found.measured.get(&pmc_id) {
                None => "INSERT INTO rocpd_pmc_event (guid, event_id, pmc_id, value, extdata) VALUES (?1, ?2, ?3, ?4, ?5)",
                // A lower pass measured it too: its value is the dispatch's.
                Some(pass) if *pass <= dispatch.replay_pass => continue,
                Some(_) => "UPDATE rocpd_pmc_event SET value = ?4, extdata = ?5 WHERE guid = ?1 AND event_id = ?2 AND pmc_id = ?3",
            };
            db.conn
                .prepare_cached(&db.names.sql(sql))
                .and_then(|mut statement| {
                    statement.execute(params![guid, found.event, pmc_id, value, extdata])
                })
                .map_err(err)?;
            found.measured.insert(pmc_id, dispatch.replay_pass);
        }
        // Only replayed dispatches have later passes to come.
        if dispatch.replay_pass.is_some() {
            if self.recent.len() >= RECENT_DISPATCHES {
                self.recent.clear();
            }
            self.recent.insert(key, found);
        }
        Ok(())
    }

    /// The rows an earlier pass of the dispatch made, if any (from the database: the dispatch
    /// is no longer among the recent ones). Its fields are taken to be `dispatch`'s: every pass
    /// of a dispatch comes with the same launch (its first made the row).
    fn dispatch_row(
        &self,
        db: &DbFile,
        dispatch: &DispatchRecord,
        agent_row: i64,
    ) -> Result<Option<RecentDispatch>, FormatError> {
        let dispatch_id = dispatch.dispatch_id;
        let err = |e| FormatError::sqlite(&db.path, e);
        let found = db
            .conn
            .prepare_cached(&db.names.sql(
                "SELECT id, event_id, replay_pass FROM rocpd_kernel_dispatch WHERE dispatch_id = ?1 AND guid = ?2 AND agent_id = ?3",
            ))
            .and_then(|mut statement| {
                statement
                    .query_row(params![to_sql(dispatch_id), self.guid, agent_row], |r| {
                        Ok((r.get(0)?, r.get(1)?, r.get(2)?))
                    })
                    .optional()
            })
            .map_err(err)?;
        let Some((row, event, pass)) = found else {
            return Ok(None);
        };
        let mut statement = db
            .conn
            .prepare_cached(
                &db.names
                    .sql("SELECT pmc_id, extdata FROM rocpd_pmc_event WHERE event_id = ?1"),
            )
            .map_err(err)?;
        let measured = statement
            .query_map([event], |r| {
                let extdata: Option<String> = r.get(1)?;
                let pass = extdata
                    .and_then(|text| serde_json::from_str::<serde_json::Value>(&text).ok())
                    .and_then(|v| v.get("replay_pass")?.as_u64())
                    .map(|p| p as u32);
                Ok((r.get::<_, i64>(0)?, pass))
            })
            .map_err(err)?
            .collect::<Result<_, _>>()
            .map_err(err)?;
        Ok(Some(RecentDispatch {
            row,
            event,
            pass,
            measured,
            fields: DispatchFields::of(dispatch),
        }))
    }

    /// The dispatch's event and row, from its first pass to arrive.
    fn new_dispatch_row(
        &mut self,
        db: &DbFile,
        dispatch: &DispatchRecord,
        agent_row: i64,
    ) -> Result<(i64, i64), FormatError> {
        let thread_row = self.thread_row(db, dispatch.tid)?;
        let (queue_row, stream_row) = self.stream_rows(db, dispatch.stream_id)?;
        let (kernel_row, static_shared, local_bytes, region) =
            self.kernel_row(db, dispatch.kernel_id)?;
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
        // The range stack at launch; rocpd's region of the dispatch is its innermost range
        // (rocprofv3 stores the `--kernel-rename` name there whether or not it was asked for).
        let (region, extdata) = match dispatch.innermost_range() {
            Some(range) => {
                let extdata = serde_json::json!({
                    "dynamic_shared_bytes": dispatch.dynamic_shared_bytes,
                    "ranges": dispatch.ranges,
                });
                (self.string_id(db, range)?, extdata.to_string())
            }
            // What `serde_json` writes for that object without ranges.
            None => (
                region,
                format!(
                    r#"{{"dynamic_shared_bytes":{}}}"#,
                    dispatch.dynamic_shared_bytes
                ),
            ),
        };
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
        self.fresh_dispatch_ids = self
            .fresh_dispatch_ids
            .max(dispatch.dispatch_id.saturating_add(1));
        Ok((db.conn.last_insert_rowid(), event_id))
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
        let row = db.conn.last_insert_rowid();
        self.cost_block.push_cost(db, &self.guid, row, cost)
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
