//! The rows of the process being written: created when its `Process` record arrives, then the
//! ids of its agents, kernels, counters, threads, streams and strings, each row inserted the first
//! time it is referred to (a placeholder when it is not described yet).

use super::blocks::{self, BlockBuffer, DispatchFields};
use super::file::{to_sql, DbFile, PLACEHOLDER_EXTDATA};
use super::trace_blocks::TraceBlocks;
use crate::error::FormatError;
use crate::identity::guid_for;
use crate::naming::metric_block;
use crate::records::{CacheControl, CounterInfo, ProcessInfo};
use crate::schema;
use rusqlite::params;
use std::collections::HashMap;

/// Row ids of the process being written.
pub(super) struct ProcessRows {
    pub(super) guid: String,
    pub(super) pid: u32,
    pub(super) ppid: u32,
    pub(super) row_id: i64,
    pub(super) node_id: i64,
    pub(super) category_id: i64,
    /// Producer agent id → `rocpd_info_agent.id`.
    pub(super) agents: HashMap<u64, i64>,
    /// Producer code object id → `rocpd_info_code_object.id`.
    pub(super) code_objects: HashMap<u64, i64>,
    /// Producer kernel id → (`rocpd_info_kernel_symbol.id`, static shared bytes, local bytes,
    /// `rocpd_string.id` of its name: the dispatches' region name).
    pub(super) kernels: HashMap<u64, (i64, u32, u32, i64)>,
    /// (`rocpd_info_agent.id`, requested counter name) → `rocpd_info_pmc.id`: a row per agent
    /// and counter (rocpd's `pmc_info` view joins on the agent). A counter described before
    /// any agent is known has a row without agent (`None`), which the first agent takes.
    pub(super) counters: HashMap<(Option<i64>, String), i64>,
    /// The counters described so far, in the order they were (each new agent gets their rows).
    pub(super) described: Vec<CounterInfo>,
    /// Operating-system thread id → `rocpd_info_thread.id`.
    pub(super) threads: HashMap<u64, i64>,
    /// CUDA stream id → (`rocpd_info_queue.id`, `rocpd_info_stream.id`).
    pub(super) streams: HashMap<u64, (i64, i64)>,
    /// `rocpd_string.string` → `rocpd_string.id`.
    pub(super) strings: HashMap<String, i64>,
    /// (dispatch id, `rocpd_info_agent.id`) → the rows of dispatches seen lately, so that their
    /// later passes need no query; emptied past [`RECENT_DISPATCHES`] (the database has them).
    pub(super) recent: HashMap<(u64, i64), RecentDispatch>,
    /// Every dispatch id from this one up has no row of this process yet (ids grow as they
    /// are launched, so a new dispatch's first pass needs no query). The process's rows are all
    /// this writer's: its guid is unique in the file (`rocpd_info_process`).
    pub(super) fresh_dispatch_ids: u64,
    /// `rocpd_info_thread.id` → its marker track's `rocpd_track.id` (`db::markers`).
    pub(super) tracks: HashMap<i64, i64>,
    /// The process's CPU agent (`rocpd_info_agent.id`): the host side of copies and host
    /// allocations (`db::memory`), inserted the first time.
    pub(super) host_agent: Option<i64>,
    /// The run's kernel naming options (`-M`, `-T`): rocpd's `display_name` and a dispatch's
    /// region are the name they give, as rocprofv3's `formatted_kernel_name`.
    pub(super) mangled_kernels: bool,
    pub(super) truncate_kernels: bool,
    /// The blocks of passes and of replay costs being filled (`db::blocks`).
    pub(super) pass_block: BlockBuffer,
    pub(super) cost_block: BlockBuffer,
    /// The blocks of the traces being filled (`db::trace_blocks`).
    pub(super) trace_blocks: TraceBlocks,
}

/// How many dispatches [`ProcessRows::recent`] holds before it starts again: a replay unit's
/// passes arrive together, so a few thousand cover every unit in flight.
pub(super) const RECENT_DISPATCHES: usize = 4096;

/// A dispatch's rows, as its earlier passes left them.
#[derive(Clone)]
pub(super) struct RecentDispatch {
    /// `rocpd_kernel_dispatch.id`.
    pub(super) row: i64,
    /// `rocpd_event.id`.
    pub(super) event: i64,
    /// The pass the dispatch row carries (the lowest so far).
    pub(super) pass: Option<u32>,
    /// `rocpd_info_pmc.id` → the pass its `rocpd_pmc_event` value is of.
    pub(super) measured: HashMap<i64, Option<u32>>,
    /// What the dispatch row gives each pass (`db::blocks`).
    pub(super) fields: DispatchFields,
}

impl ProcessRows {
    /// Writes the blocks being filled (when the file closes, or before another process's rows).
    pub(super) fn flush_blocks(&mut self, db: &DbFile) -> Result<(), FormatError> {
        self.pass_block.flush(db, &self.guid)?;
        self.cost_block.flush(db, &self.guid)?;
        self.trace_blocks.flush(db, &self.guid)
    }

    /// Inserts the process's row (its node's and its category string's the first time) and
    /// starts its ids.
    pub(super) fn start(db: &DbFile, process: &ProcessInfo) -> Result<ProcessRows, FormatError> {
        let guid = guid_for(process);
        let conn = &db.conn;
        let path = &db.path;
        let err = |e| FormatError::sqlite(path, e);
        let node_id = node_row_id(db, &guid, &process.hostname)?;
        let extdata = process_extdata(process);
        let end = (process.end_ns != 0).then_some(to_sql(process.end_ns));
        // rocpd's views join every table's `pid` to this row's id: the operating system's pid
        // when no other process of the file has it already.
        let taken: bool = conn
            .query_row(
                &db.names
                    .sql("SELECT EXISTS (SELECT 1 FROM rocpd_info_process WHERE id = ?1)"),
                [process.pid],
                |row| row.get(0),
            )
            .map_err(err)?;
        conn.execute(
            &db.names.sql(r#"INSERT INTO rocpd_info_process (id, guid, nid, ppid, pid, init, fini, "start", "end", command, extdata)
               VALUES (?9, ?1, ?2, ?3, ?4, ?5, ?6, ?5, ?6, ?7, ?8)"#),
            params![
                guid,
                node_id,
                process.ppid,
                process.pid,
                to_sql(process.start_ns),
                end,
                process.command.join(" "),
                extdata,
                (!taken).then_some(process.pid)
            ],
        )
        .map_err(err)?;
        let row_id = conn.last_insert_rowid();
        set_cache_control(db, process.cache_control)?;
        conn.execute(
            &db.names
                .sql("INSERT OR IGNORE INTO rocpd_string (guid, string) VALUES (?1, ?2)"),
            params![guid, schema::CATEGORY_KERNEL_DISPATCH],
        )
        .map_err(err)?;
        let category_id: i64 = conn
            .query_row(
                &db.names
                    .sql("SELECT id FROM rocpd_string WHERE guid = ?1 AND string = ?2"),
                params![guid, schema::CATEGORY_KERNEL_DISPATCH],
                |row| row.get(0),
            )
            .map_err(err)?;
        conn.execute(
            &db.names
                .sql("INSERT INTO rocpd_metadata (tag, value) VALUES ('guid', ?1)"),
            [&guid],
        )
        .map_err(err)?;
        Ok(ProcessRows {
            guid,
            pid: process.pid,
            ppid: process.ppid,
            row_id,
            node_id,
            category_id,
            agents: HashMap::new(),
            code_objects: HashMap::new(),
            kernels: HashMap::new(),
            counters: HashMap::new(),
            described: Vec::new(),
            threads: HashMap::new(),
            streams: HashMap::new(),
            strings: HashMap::from([(schema::CATEGORY_KERNEL_DISPATCH.to_string(), category_id)]),
            recent: HashMap::new(),
            pass_block: BlockBuffer::new(blocks::PASSES),
            cost_block: BlockBuffer::new(blocks::COSTS),
            trace_blocks: TraceBlocks::new(),
            fresh_dispatch_ids: 0,
            tracks: HashMap::new(),
            host_agent: None,
            mangled_kernels: process.mangled_kernels,
            truncate_kernels: process.truncate_kernels,
        })
    }

    pub(super) fn end_process(&mut self, db: &DbFile, end_ns: u64) -> Result<(), FormatError> {
        let row_id = self.row_id;
        db.conn
            .execute(
                &db.names
                    .sql(r#"UPDATE rocpd_info_process SET fini = ?1, "end" = ?1 WHERE id = ?2"#),
                params![to_sql(end_ns), row_id],
            )
            .map_err(|e| db.err(e))?;
        Ok(())
    }

    pub(super) fn agent_row(&mut self, db: &DbFile, agent_id: u64) -> Result<i64, FormatError> {
        if let Some(id) = self.agents.get(&agent_id) {
            return Ok(*id);
        }
        let rows = &*self;
        db.conn
            .execute(
                &db.names.sql(r#"INSERT INTO rocpd_info_agent (guid, nid, pid, type, absolute_index, logical_index,
                   type_index, extdata) VALUES (?1, ?2, ?3, 'GPU', ?4, ?4, ?4, ?5)"#),
                params![rows.guid, rows.node_id, rows.row_id, to_sql(agent_id), PLACEHOLDER_EXTDATA],
            )
            .map_err(|e| db.err(e))?;
        let id = db.conn.last_insert_rowid();
        self.agents.insert(agent_id, id);
        self.counters_for_new_agent(db, id)?;
        Ok(id)
    }

    pub(super) fn kernel_row(
        &mut self,
        db: &DbFile,
        kernel_id: u64,
    ) -> Result<(i64, u32, u32, i64), FormatError> {
        if let Some(kernel) = self.kernels.get(&kernel_id) {
            return Ok(*kernel);
        }
        let rows = &*self;
        db.conn
            .execute(
                &db.names.sql(r#"INSERT INTO rocpd_info_kernel_symbol (guid, nid, pid, code_object_id, kernel_object,
                   group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count,
                   accum_vgpr_count, extdata) VALUES (?1, ?2, ?3, 0, ?4, 0, 0, 0, 0, 0, ?5)"#),
                params![rows.guid, rows.node_id, rows.row_id, to_sql(kernel_id), PLACEHOLDER_EXTDATA],
            )
            .map_err(|e| db.err(e))?;
        let row = db.conn.last_insert_rowid();
        let region = self.string_id(db, &format!("kernel {kernel_id}"))?;
        let kernel = (row, 0, 0, region);
        self.kernels.insert(kernel_id, kernel);
        Ok(kernel)
    }

    /// The counter's row on the agent (row `agent`), inserted the first time (a placeholder when
    /// the counter is not described yet).
    pub(super) fn counter_row(
        &mut self,
        db: &DbFile,
        agent: i64,
        name: &str,
    ) -> Result<i64, FormatError> {
        if let Some(id) = self.counters.get(&(Some(agent), name.to_string())) {
            return Ok(*id);
        }
        if let Some(id) = self.claim_agentless_row(db, agent, name)? {
            return Ok(id);
        }
        let info = self.described.iter().find(|c| c.name == name).cloned();
        self.insert_pmc_row(db, Some(agent), name, info.as_ref())
    }

    /// Gives a row written without agent (its counter was described before any agent was
    /// known) to `agent`; None when there is no such row.
    fn claim_agentless_row(
        &mut self,
        db: &DbFile,
        agent: i64,
        name: &str,
    ) -> Result<Option<i64>, FormatError> {
        let Some(id) = self.counters.remove(&(None, name.to_string())) else {
            return Ok(None);
        };
        db.conn
            .execute(
                &db.names
                    .sql("UPDATE rocpd_info_pmc SET agent_id = ?1 WHERE id = ?2"),
                params![agent, id],
            )
            .map_err(|e| db.err(e))?;
        self.counters.insert((Some(agent), name.to_string()), id);
        Ok(Some(id))
    }

    /// A new agent gets a row for every counter described so far.
    pub(super) fn counters_for_new_agent(
        &mut self,
        db: &DbFile,
        agent: i64,
    ) -> Result<(), FormatError> {
        for info in self.described.clone() {
            if !self
                .counters
                .contains_key(&(Some(agent), info.name.clone()))
                && self.claim_agentless_row(db, agent, &info.name)?.is_none()
            {
                self.insert_pmc_row(db, Some(agent), &info.name, Some(&info))?;
            }
        }
        Ok(())
    }

    /// Inserts a counter's row: described by `info`, else a placeholder.
    pub(super) fn insert_pmc_row(
        &mut self,
        db: &DbFile,
        agent: Option<i64>,
        name: &str,
        info: Option<&CounterInfo>,
    ) -> Result<i64, FormatError> {
        let rows = &*self;
        let metric = info.map_or(name, |i| i.metric.as_str());
        let (description, unit) = info.map_or(("", ""), |i| (&i.description[..], &i.unit[..]));
        let extdata = if info.is_some() {
            "{}"
        } else {
            PLACEHOLDER_EXTDATA
        };
        db.conn
            .execute(
                &db.names.sql(r#"INSERT INTO rocpd_info_pmc (guid, nid, pid, agent_id, target_arch, name, symbol,
                   description, component, units, value_type, block, expression, is_constant, is_derived, extdata)
                   VALUES (?1, ?2, ?3, ?4, 'GPU', ?5, ?6, ?7, 'kreplay', ?8, 'ABS', ?9, ?6, 0, 0, ?10)"#),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    agent,
                    name,
                    metric,
                    description,
                    unit,
                    metric_block(metric),
                    extdata
                ],
            )
            .map_err(|e| db.err(e))?;
        let id = db.conn.last_insert_rowid();
        self.counters.insert((agent, name.to_string()), id);
        Ok(id)
    }

    /// The thread's row (rocpd's views join `tid` columns to it): its id is the operating
    /// system's tid when no other thread of the file has it already.
    pub(super) fn thread_row(&mut self, db: &DbFile, tid: u64) -> Result<i64, FormatError> {
        if let Some(row) = self.threads.get(&tid) {
            return Ok(*row);
        }
        let rows = &*self;
        let err = |e| FormatError::sqlite(&db.path, e);
        let taken: bool = db
            .conn
            .query_row(
                &db.names
                    .sql("SELECT EXISTS (SELECT 1 FROM rocpd_info_thread WHERE id = ?1)"),
                [to_sql(tid)],
                |row| row.get(0),
            )
            .map_err(err)?;
        db.conn
            .execute(
                &db.names.sql("INSERT INTO rocpd_info_thread (id, guid, nid, ppid, pid, tid) VALUES (?6, ?1, ?2, ?3, ?4, ?5)"),
                params![rows.guid, rows.node_id, rows.ppid, rows.row_id, to_sql(tid), (!taken).then_some(to_sql(tid))],
            )
            .map_err(err)?;
        let row = db.conn.last_insert_rowid();
        self.threads.insert(tid, row);
        Ok(row)
    }

    /// The rows that stand for CUDA stream `stream` in rocpd's queue and stream tables
    /// (rocprofv3's queue and stream are both the stream here).
    pub(super) fn stream_rows(
        &mut self,
        db: &DbFile,
        stream: u64,
    ) -> Result<(i64, i64), FormatError> {
        if let Some(rows) = self.streams.get(&stream) {
            return Ok(*rows);
        }
        let rows = &*self;
        let name = format!("stream {stream}");
        // Bit for bit as an SQLite integer (JSON numbers beyond i64 would read back as reals).
        let extdata = serde_json::json!({ "stream_id": to_sql(stream) }).to_string();
        let mut ids = [0i64; 2];
        for (id, sql) in ids.iter_mut().zip([
            "INSERT INTO rocpd_info_queue (guid, nid, pid, name, extdata, cuda_stream) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            "INSERT INTO rocpd_info_stream (guid, nid, pid, name, extdata, cuda_stream) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        ]) {
            db.conn
                .execute(
                    &db.names.sql(sql),
                    params![rows.guid, rows.node_id, rows.row_id, name, extdata, to_sql(stream)],
                )
                .map_err(|e| FormatError::sqlite(&db.path, e))?;
            *id = db.conn.last_insert_rowid();
        }
        let found = (ids[0], ids[1]);
        self.streams.insert(stream, found);
        Ok(found)
    }

    /// The id of `text` in the process's strings.
    pub(super) fn string_id(&mut self, db: &DbFile, text: &str) -> Result<i64, FormatError> {
        if let Some(id) = self.strings.get(text) {
            return Ok(*id);
        }
        let guid = self.guid.clone();
        let err = |e| FormatError::sqlite(&db.path, e);
        db.conn
            .execute(
                &db.names
                    .sql("INSERT OR IGNORE INTO rocpd_string (guid, string) VALUES (?1, ?2)"),
                params![guid, text],
            )
            .map_err(err)?;
        let id: i64 = db
            .conn
            .query_row(
                &db.names
                    .sql("SELECT id FROM rocpd_string WHERE guid = ?1 AND string = ?2"),
                params![guid, text],
                |row| row.get(0),
            )
            .map_err(err)?;
        self.strings.insert(text.to_string(), id);
        Ok(id)
    }
}

/// The process row's `extdata`: its exact argv, cache control, launcher's rank and size, the
/// sections and naming options the outputs use.
pub(super) fn process_extdata(process: &ProcessInfo) -> String {
    let mut extdata = serde_json::json!({
        "argv": process.command,
        "cache_control": process.cache_control.as_str(),
    });
    for (key, value) in [("rank", &process.rank), ("size", &process.size)] {
        if let Some(value) = value {
            extdata[key] = serde_json::json!(value);
        }
    }
    if !process.sections.is_empty() {
        extdata["sections"] = serde_json::json!(process.sections);
    }
    if process.kernel_rename {
        extdata["kernel_rename"] = serde_json::json!(true);
    }
    for (flag, key) in [
        (process.mangled_kernels, "mangled_kernels"),
        (process.truncate_kernels, "truncate_kernels"),
    ] {
        if flag {
            extdata[key] = serde_json::json!(true);
        }
    }
    extdata.to_string()
}

/// The id of the host's `rocpd_info_node` row, inserted the first time.
fn node_row_id(db: &DbFile, guid: &str, hostname: &str) -> Result<i64, FormatError> {
    let err = |e| FormatError::sqlite(&db.path, e);
    // A stable 63-bit hash of the host name (rocpd's `hash` column must be unique per node).
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in hostname.as_bytes() {
        hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
    }
    let node_hash = (hash >> 1) as i64;
    db.conn
        .execute(
            &db.names.sql("INSERT OR IGNORE INTO rocpd_info_node (guid, hash, machine_id, hostname) VALUES (?1, ?2, ?3, ?3)"),
            params![guid, node_hash, hostname],
        )
        .map_err(err)?;
    db.conn
        .query_row(
            &db.names
                .sql("SELECT id FROM rocpd_info_node WHERE hash = ?1"),
            [node_hash],
            |row| row.get(0),
        )
        .map_err(err)
}

/// The run's cache control, as rocpd's tools read settings (one per file: the last
/// process's).
fn set_cache_control(db: &DbFile, control: CacheControl) -> Result<(), FormatError> {
    let conn = &db.conn;
    conn.execute(
        &db.names
            .sql("DELETE FROM rocpd_metadata WHERE tag = 'cache_control'"),
        [],
    )
    .and_then(|_| {
        conn.execute(
            &db.names
                .sql("INSERT INTO rocpd_metadata (tag, value) VALUES ('cache_control', ?1)"),
            [control.as_str()],
        )
    })
    .map_err(|e| FormatError::sqlite(&db.path, e))?;
    Ok(())
}
