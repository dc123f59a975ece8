//! [`RowInserter`]: records into rocpd rows, one process after another, synchronously (the
//! writer thread's part, also used to write merged databases).

use super::*;

/// Row ids of the process being written.
struct ProcessRows {
    guid: String,
    pid: u32,
    ppid: u32,
    row_id: i64,
    node_id: i64,
    category_id: i64,
    /// Producer agent id → `rocpd_info_agent.id`.
    agents: HashMap<u64, i64>,
    /// Producer kernel id → (`rocpd_info_kernel_symbol.id`, static shared bytes, local bytes,
    /// `rocpd_string.id` of its name: the dispatches' region name).
    kernels: HashMap<u64, (i64, u32, u32, i64)>,
    /// Requested counter name → `rocpd_info_pmc.id`.
    counters: HashMap<String, i64>,
    /// Operating-system thread id → `rocpd_info_thread.id`.
    threads: HashMap<u64, i64>,
    /// CUDA stream id → (`rocpd_info_queue.id`, `rocpd_info_stream.id`).
    streams: HashMap<u64, (i64, i64)>,
    /// `rocpd_string.string` → `rocpd_string.id`.
    strings: HashMap<String, i64>,
}

/// Inserts records into an open database, one process after another, synchronously.
pub(crate) struct RowInserter {
    durability: Durability,
    conn: Connection,
    /// The file's physical table names (see [`TableNames`]).
    names: TableNames,
    path: PathBuf,
    current: Option<ProcessRows>,
    /// Records that arrived before the first `Process` record (they need its guid).
    early: Vec<Record>,
    in_transaction: bool,
}

impl RowInserter {
    pub(crate) fn create(path: &Path, durability: Durability) -> Result<RowInserter, FormatError> {
        let (conn, uuid) = create_database(path, durability)?;
        Ok(RowInserter {
            durability,
            conn,
            names: TableNames::new(uuid),
            path: path.to_path_buf(),
            current: None,
            early: Vec::new(),
            in_transaction: false,
        })
    }

    fn err(&self, e: rusqlite::Error) -> FormatError {
        FormatError::sqlite(&self.path, e)
    }

    pub(crate) fn begin(&mut self) -> Result<(), FormatError> {
        if !self.in_transaction {
            self.conn.execute_batch("BEGIN").map_err(|e| self.err(e))?;
            self.in_transaction = true;
        }
        Ok(())
    }

    pub(crate) fn commit(&mut self) -> Result<(), FormatError> {
        if self.in_transaction {
            self.in_transaction = false;
            self.conn.execute_batch("COMMIT").map_err(|e| self.err(e))?;
        }
        Ok(())
    }

    /// Writes what is still held back, commits, and turns the file into a single self-contained
    /// file (rollback journal instead of WAL) so that it can be copied and read anywhere.
    pub(crate) fn close(mut self) -> Result<(), FormatError> {
        if self.current.is_none() && !self.early.is_empty() {
            // No `Process` record ever came: keep the data under a process made of what we know.
            let process = crate::run::unnamed_process(&self.early);
            self.begin()?;
            self.insert(Record::Process(process))?;
        }
        self.commit()?;
        if self.durability == Durability::Live {
            self.conn
                .execute_batch("PRAGMA journal_mode = DELETE;")
                .map_err(|e| self.err(e))?;
        }
        self.conn
            .close()
            .map_err(|(_, e)| FormatError::sqlite(&self.path, e))
    }

    /// Inserts one record. Must be called inside [`Self::begin`]/[`Self::commit`].
    pub(crate) fn insert(&mut self, record: Record) -> Result<(), FormatError> {
        match record {
            Record::Process(process) => {
                self.start_process(&process)?;
                for early in std::mem::take(&mut self.early) {
                    self.insert(early)?;
                }
                Ok(())
            }
            other if self.current.is_none() => {
                self.early.push(other);
                Ok(())
            }
            Record::Agent(agent) => self.insert_agent(&agent),
            Record::KernelSymbol(symbol) => self.insert_kernel(&symbol),
            Record::Counter(counter) => self.insert_counter(&counter),
            Record::Dispatch(dispatch) => self.insert_dispatch(&dispatch),
            Record::ReplayCost(cost) => self.insert_cost(&cost),
            Record::Warning(warning) => self.insert_warning(&warning),
            Record::ProcessEnd { end_ns } => self.end_process(end_ns),
        }
    }

    fn start_process(&mut self, process: &ProcessInfo) -> Result<(), FormatError> {
        let guid = guid_for(process);
        let conn = &self.conn;
        let path = &self.path;
        let err = |e| FormatError::sqlite(path, e);
        let node_id = self.node_id(&guid, &process.hostname)?;
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
        let extdata = extdata.to_string();
        let end = (process.end_ns != 0).then_some(to_sql(process.end_ns));
        // rocpd's views join every table's `pid` to this row's id: the operating system's pid
        // when no other process of the file has it already.
        let taken: bool = conn
            .query_row(
                &self
                    .names
                    .sql("SELECT EXISTS (SELECT 1 FROM rocpd_info_process WHERE id = ?1)"),
                [process.pid],
                |row| row.get(0),
            )
            .map_err(err)?;
        conn.execute(
            &self.names.sql(r#"INSERT INTO rocpd_info_process (id, guid, nid, ppid, pid, init, fini, "start", "end", command, extdata)
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
        self.set_cache_control(process.cache_control)?;
        conn.execute(
            &self
                .names
                .sql("INSERT OR IGNORE INTO rocpd_string (guid, string) VALUES (?1, ?2)"),
            params![guid, schema::CATEGORY_KERNEL_DISPATCH],
        )
        .map_err(err)?;
        let category_id: i64 = conn
            .query_row(
                &self
                    .names
                    .sql("SELECT id FROM rocpd_string WHERE guid = ?1 AND string = ?2"),
                params![guid, schema::CATEGORY_KERNEL_DISPATCH],
                |row| row.get(0),
            )
            .map_err(err)?;
        conn.execute(
            &self
                .names
                .sql("INSERT INTO rocpd_metadata (tag, value) VALUES ('guid', ?1)"),
            [&guid],
        )
        .map_err(err)?;
        self.current = Some(ProcessRows {
            guid,
            pid: process.pid,
            ppid: process.ppid,
            row_id,
            node_id,
            category_id,
            agents: HashMap::new(),
            kernels: HashMap::new(),
            counters: HashMap::new(),
            threads: HashMap::new(),
            streams: HashMap::new(),
            strings: HashMap::from([(schema::CATEGORY_KERNEL_DISPATCH.to_string(), category_id)]),
        });
        Ok(())
    }

    /// The id of the host's `rocpd_info_node` row, inserted the first time.
    fn node_id(&self, guid: &str, hostname: &str) -> Result<i64, FormatError> {
        let err = |e| FormatError::sqlite(&self.path, e);
        // A stable 63-bit hash of the host name (rocpd's `hash` column must be unique per node).
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in hostname.as_bytes() {
            hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
        let node_hash = (hash >> 1) as i64;
        self.conn
            .execute(
                &self.names.sql("INSERT OR IGNORE INTO rocpd_info_node (guid, hash, machine_id, hostname) VALUES (?1, ?2, ?3, ?3)"),
                params![guid, node_hash, hostname],
            )
            .map_err(err)?;
        self.conn
            .query_row(
                &self
                    .names
                    .sql("SELECT id FROM rocpd_info_node WHERE hash = ?1"),
                [node_hash],
                |row| row.get(0),
            )
            .map_err(err)
    }

    /// The run's cache control, as rocpd's tools read settings (one per file: the last
    /// process's).
    fn set_cache_control(&self, control: CacheControl) -> Result<(), FormatError> {
        let conn = &self.conn;
        conn.execute(
            &self
                .names
                .sql("DELETE FROM rocpd_metadata WHERE tag = 'cache_control'"),
            [],
        )
        .and_then(|_| {
            conn.execute(
                &self
                    .names
                    .sql("INSERT INTO rocpd_metadata (tag, value) VALUES ('cache_control', ?1)"),
                [control.as_str()],
            )
        })
        .map_err(|e| FormatError::sqlite(&self.path, e))?;
        Ok(())
    }

    fn rows(&self) -> &ProcessRows {
        self.current
            .as_ref()
            .expect("insert() holds records back until a process exists")
    }

    fn end_process(&mut self, end_ns: u64) -> Result<(), FormatError> {
        let row_id = self.rows().row_id;
        self.conn
            .execute(
                &self
                    .names
                    .sql(r#"UPDATE rocpd_info_process SET fini = ?1, "end" = ?1 WHERE id = ?2"#),
                params![to_sql(end_ns), row_id],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn insert_agent(&mut self, agent: &AgentInfo) -> Result<(), FormatError> {
        let existing = self.rows().agents.get(&agent.agent_id).copied();
        let rows = self.rows();
        let extdata = serde_json::json!({
            "sm_count": agent.sm_count,
            "global_memory_bytes": agent.global_memory_bytes,
            "pci_location": agent.pci_location,
            "max_threads_per_sm": agent.max_threads_per_sm,
            "shared_memory_per_sm_bytes": agent.shared_memory_per_sm_bytes,
        })
        .to_string();
        let index = to_sql(agent.agent_id);
        let vendor = vendor_for_chip(&agent.chip);
        let result = match existing {
            Some(id) => self.conn.execute(
                &self.names.sql(r#"UPDATE rocpd_info_agent SET absolute_index = ?1, logical_index = ?1, type_index = ?1,
                   name = ?2, model_name = ?4, vendor_name = ?3, product_name = ?4, user_name = ?4,
                   extdata = ?5 WHERE id = ?6"#),
                params![index, agent.chip, vendor, agent.name, extdata, id],
            ),
            None => self.conn.execute(
                &self.names.sql(r#"INSERT INTO rocpd_info_agent (guid, nid, pid, type, absolute_index, logical_index,
                   type_index, name, model_name, vendor_name, product_name, user_name, extdata)
                   VALUES (?1, ?2, ?3, 'GPU', ?4, ?4, ?4, ?5, ?7, ?6, ?7, ?7, ?8)"#),
                params![rows.guid, rows.node_id, rows.row_id, index, agent.chip, vendor, agent.name, extdata],
            ),
        };
        result.map_err(|e| self.err(e))?;
        if existing.is_none() {
            let id = self.conn.last_insert_rowid();
            self.current_mut().agents.insert(agent.agent_id, id);
        }
        Ok(())
    }

    fn current_mut(&mut self) -> &mut ProcessRows {
        self.current
            .as_mut()
            .expect("insert() holds records back until a process exists")
    }

    fn agent_row(&mut self, agent_id: u64) -> Result<i64, FormatError> {
        if let Some(id) = self.rows().agents.get(&agent_id) {
            return Ok(*id);
        }
        let rows = self.rows();
        self.conn
            .execute(
                &self.names.sql(r#"INSERT INTO rocpd_info_agent (guid, nid, pid, type, absolute_index, logical_index,
                   type_index, extdata) VALUES (?1, ?2, ?3, 'GPU', ?4, ?4, ?4, ?5)"#),
                params![rows.guid, rows.node_id, rows.row_id, to_sql(agent_id), PLACEHOLDER_EXTDATA],
            )
            .map_err(|e| self.err(e))?;
        let id = self.conn.last_insert_rowid();
        self.current_mut().agents.insert(agent_id, id);
        Ok(id)
    }

    fn insert_kernel(&mut self, symbol: &KernelSymbol) -> Result<(), FormatError> {
        let existing = self.rows().kernels.get(&symbol.kernel_id).map(|k| k.0);
        let rows = self.rows();
        let result = match existing {
            Some(id) => self.conn.execute(
                &self.names.sql(r#"UPDATE rocpd_info_kernel_symbol SET kernel_name = ?1, display_name = ?2,
                   kernarg_segment_size = ?3, group_segment_size = ?4, private_segment_size = ?5,
                   arch_vgpr_count = ?6, extdata = '{}' WHERE id = ?7"#),
                params![
                    symbol.mangled_name,
                    symbol.demangled_name,
                    symbol.param_bytes,
                    symbol.static_shared_bytes,
                    symbol.local_bytes,
                    symbol.registers,
                    id
                ],
            ),
            None => self.conn.execute(
                &self.names.sql(r#"INSERT INTO rocpd_info_kernel_symbol (guid, nid, pid, code_object_id, kernel_name,
                   display_name, kernel_object, kernarg_segment_size, group_segment_size,
                   private_segment_size, sgpr_count, arch_vgpr_count, accum_vgpr_count)
                   VALUES (?1, ?2, ?3, 0, ?4, ?5, ?6, ?7, ?8, ?9, 0, ?10, 0)"#),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    symbol.mangled_name,
                    symbol.demangled_name,
                    to_sql(symbol.kernel_id),
                    symbol.param_bytes,
                    symbol.static_shared_bytes,
                    symbol.local_bytes,
                    symbol.registers
                ],
            ),
        };
        result.map_err(|e| self.err(e))?;
        let id = existing.unwrap_or_else(|| self.conn.last_insert_rowid());
        let region = self.string_id(&symbol.demangled_name)?;
        self.current_mut().kernels.insert(
            symbol.kernel_id,
            (id, symbol.static_shared_bytes, symbol.local_bytes, region),
        );
        Ok(())
    }

    fn kernel_row(&mut self, kernel_id: u64) -> Result<(i64, u32, u32, i64), FormatError> {
        if let Some(kernel) = self.rows().kernels.get(&kernel_id) {
            return Ok(*kernel);
        }
        let rows = self.rows();
        self.conn
            .execute(
                &self.names.sql(r#"INSERT INTO rocpd_info_kernel_symbol (guid, nid, pid, code_object_id, kernel_object,
                   group_segment_size, private_segment_size, sgpr_count, arch_vgpr_count,
                   accum_vgpr_count, extdata) VALUES (?1, ?2, ?3, 0, ?4, 0, 0, 0, 0, 0, ?5)"#),
                params![rows.guid, rows.node_id, rows.row_id, to_sql(kernel_id), PLACEHOLDER_EXTDATA],
            )
            .map_err(|e| self.err(e))?;
        let row = self.conn.last_insert_rowid();
        let region = self.string_id(&format!("kernel {kernel_id}"))?;
        let kernel = (row, 0, 0, region);
        self.current_mut().kernels.insert(kernel_id, kernel);
        Ok(kernel)
    }

    fn insert_counter(&mut self, counter: &CounterInfo) -> Result<(), FormatError> {
        let existing = self.rows().counters.get(&counter.name).copied();
        let rows = self.rows();
        let block = metric_block(&counter.metric);
        let result = match existing {
            Some(id) => self.conn.execute(
                &self.names.sql(r#"UPDATE rocpd_info_pmc SET symbol = ?1, description = ?2, units = ?3, block = ?4,
                   expression = ?1, extdata = '{}' WHERE id = ?5"#),
                params![counter.metric, counter.description, counter.unit, block, id],
            ),
            None => self.conn.execute(
                &self.names.sql(r#"INSERT INTO rocpd_info_pmc (guid, nid, pid, target_arch, name, symbol, description,
                   component, units, value_type, block, expression, is_constant, is_derived)
                   VALUES (?1, ?2, ?3, 'GPU', ?4, ?5, ?6, 'kreplay', ?7, 'ABS', ?8, ?5, 0, 0)"#),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    counter.name,
                    counter.metric,
                    counter.description,
                    counter.unit,
                    block
                ],
            ),
        };
        result.map_err(|e| self.err(e))?;
        if existing.is_none() {
            let id = self.conn.last_insert_rowid();
            self.current_mut().counters.insert(counter.name.clone(), id);
        }
        Ok(())
    }

    fn counter_row(&mut self, name: &str) -> Result<i64, FormatError> {
        if let Some(id) = self.rows().counters.get(name) {
            return Ok(*id);
        }
        let rows = self.rows();
        self.conn
            .execute(
                &self.names.sql(r#"INSERT INTO rocpd_info_pmc (guid, nid, pid, target_arch, name, symbol, component,
                   value_type, block, expression, is_constant, is_derived, extdata)
                   VALUES (?1, ?2, ?3, 'GPU', ?4, ?4, 'kreplay', 'ABS', ?5, ?4, 0, 0, ?6)"#),
                params![
                    rows.guid,
                    rows.node_id,
                    rows.row_id,
                    name,
                    metric_block(name),
                    PLACEHOLDER_EXTDATA
                ],
            )
            .map_err(|e| self.err(e))?;
        let id = self.conn.last_insert_rowid();
        self.current_mut().counters.insert(name.to_string(), id);
        Ok(id)
    }

    /// The thread's row (rocpd's views join `tid` columns to it): its id is the operating
    /// system's tid when no other thread of the file has it already.
    fn thread_row(&mut self, tid: u64) -> Result<i64, FormatError> {
        if let Some(row) = self.rows().threads.get(&tid) {
            return Ok(*row);
        }
        let rows = self.rows();
        let err = |e| FormatError::sqlite(&self.path, e);
        let taken: bool = self
            .conn
            .query_row(
                &self
                    .names
                    .sql("SELECT EXISTS (SELECT 1 FROM rocpd_info_thread WHERE id = ?1)"),
                [to_sql(tid)],
                |row| row.get(0),
            )
            .map_err(err)?;
        self.conn
            .execute(
                &self.names.sql("INSERT INTO rocpd_info_thread (id, guid, nid, ppid, pid, tid) VALUES (?6, ?1, ?2, ?3, ?4, ?5)"),
                params![rows.guid, rows.node_id, rows.ppid, rows.row_id, to_sql(tid), (!taken).then_some(to_sql(tid))],
            )
            .map_err(err)?;
        let row = self.conn.last_insert_rowid();
        self.current_mut().threads.insert(tid, row);
        Ok(row)
    }

    /// The rows that stand for CUDA stream `stream` in rocpd's queue and stream tables
    /// (rocprofv3's queue and stream are both the stream here).
    fn stream_rows(&mut self, stream: u64) -> Result<(i64, i64), FormatError> {
        if let Some(rows) = self.rows().streams.get(&stream) {
            return Ok(*rows);
        }
        let rows = self.rows();
        let name = format!("stream {stream}");
        // Bit for bit as an SQLite integer (JSON numbers beyond i64 would read back as reals).
        let extdata = serde_json::json!({ "stream_id": to_sql(stream) }).to_string();
        let mut ids = [0i64; 2];
        for (id, sql) in ids.iter_mut().zip([
            "INSERT INTO rocpd_info_queue (guid, nid, pid, name, extdata, cuda_stream) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            "INSERT INTO rocpd_info_stream (guid, nid, pid, name, extdata, cuda_stream) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        ]) {
            self.conn
                .execute(
                    &self.names.sql(sql),
                    params![rows.guid, rows.node_id, rows.row_id, name, extdata, to_sql(stream)],
                )
                .map_err(|e| FormatError::sqlite(&self.path, e))?;
            *id = self.conn.last_insert_rowid();
        }
        let found = (ids[0], ids[1]);
        self.current_mut().streams.insert(stream, found);
        Ok(found)
    }

    /// The id of `text` in the process's strings.
    fn string_id(&mut self, text: &str) -> Result<i64, FormatError> {
        if let Some(id) = self.rows().strings.get(text) {
            return Ok(*id);
        }
        let guid = self.rows().guid.clone();
        let err = |e| FormatError::sqlite(&self.path, e);
        self.conn
            .execute(
                &self
                    .names
                    .sql("INSERT OR IGNORE INTO rocpd_string (guid, string) VALUES (?1, ?2)"),
                params![guid, text],
            )
            .map_err(err)?;
        let id: i64 = self
            .conn
            .query_row(
                &self
                    .names
                    .sql("SELECT id FROM rocpd_string WHERE guid = ?1 AND string = ?2"),
                params![guid, text],
                |row| row.get(0),
            )
            .map_err(err)?;
        self.current_mut().strings.insert(text.to_string(), id);
        Ok(id)
    }

    fn insert_dispatch(&mut self, dispatch: &DispatchRecord) -> Result<(), FormatError> {
        let thread_row = self.thread_row(dispatch.tid)?;
        let (queue_row, stream_row) = self.stream_rows(dispatch.stream_id)?;
        let agent_row = self.agent_row(dispatch.agent_id)?;
        let (kernel_row, static_shared, local_bytes, region) =
            self.kernel_row(dispatch.kernel_id)?;
        let mut counter_rows = Vec::with_capacity(dispatch.counters.len());
        for sample in &dispatch.counters {
            counter_rows.push((self.counter_row(&sample.name)?, sample.value));
        }
        let rows = self.rows();
        let (guid, node_id, category_id, process_row) = (
            rows.guid.clone(),
            rows.node_id,
            rows.category_id,
            rows.row_id,
        );
        let err = |e| FormatError::sqlite(&self.path, e);
        let mut insert_event = self
            .conn
            .prepare_cached(
                &self.names.sql("INSERT INTO rocpd_event (guid, category_id, stack_id, correlation_id) VALUES (?1, ?2, ?3, ?3)"),
            )
            .map_err(err)?;
        insert_event
            .execute(params![guid, category_id, to_sql(dispatch.correlation_id)])
            .map_err(err)?;
        let event_id = self.conn.last_insert_rowid();
        // rocpd's grid size counts work-items (threads), as rocprofv3's Grid_Size does.
        let threads =
            |axis: usize| u64::from(dispatch.grid[axis]) * u64::from(dispatch.block[axis]);
        let extdata = serde_json::json!({ "dynamic_shared_bytes": dispatch.dynamic_shared_bytes })
            .to_string();
        let mut insert_dispatch = self
            .conn
            .prepare_cached(&self.names.sql(
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
        let mut insert_value = self
            .conn
            .prepare_cached(
                &self.names.sql("INSERT INTO rocpd_pmc_event (guid, event_id, pmc_id, value) VALUES (?1, ?2, ?3, ?4)"),
            )
            .map_err(err)?;
        for (pmc_id, value) in counter_rows {
            insert_value
                .execute(params![guid, event_id, pmc_id, value])
                .map_err(err)?;
        }
        Ok(())
    }

    fn insert_cost(&mut self, cost: &ReplayCost) -> Result<(), FormatError> {
        let rows = self.rows();
        let pass_ns = serde_json::to_string(&cost.pass_ns).expect("a list of integers serializes");
        self.conn
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
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    fn insert_warning(&mut self, warning: &Warning) -> Result<(), FormatError> {
        let rows = self.rows();
        self.conn
            .execute(
                "INSERT INTO kreplay_warning (guid, pid, message) VALUES (?1, ?2, ?3)",
                params![rows.guid, rows.pid, warning.message],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }
}
