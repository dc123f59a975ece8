//! The per-process rocpd database, written as data arrives.
//!
//! [`DbWriter`] is the [`RecordSink`] that producers send to: `send` only queues the record on a
//! channel, and a writer thread inserts queued records in batched transactions (a commit every
//! [`BATCH_RECORDS`] records or [`BATCH_INTERVAL`], whichever comes first). The file is in WAL
//! mode while it is written, so a crash of the process loses at most the batch in flight and the
//! database stays readable. `RowInserter` is the synchronous part, also used to write merged
//! databases.

use crate::error::FormatError;
use crate::records::*;
use crate::schema;
use crossbeam_channel::{Receiver, RecvTimeoutError, Sender};
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A batch is committed after this many records...
pub const BATCH_RECORDS: usize = 256;
/// ...or when its first record has waited this long.
pub const BATCH_INTERVAL: Duration = Duration::from_millis(100);

/// Records waiting for the writer thread beyond which `send` drops records instead of queueing
/// them (about 200 MB): the application must never block on us, nor run out of memory.
pub const MAX_QUEUED_RECORDS: usize = 1 << 20;

/// `extdata` of a row written before its description arrived (see `schema.rs`).
pub(crate) const PLACEHOLDER_EXTDATA: &str = r#"{"placeholder":true}"#;

/// The stable identity of a process in a database: derived from host, pid and start time, so that
/// the same process read twice is recognised, and two processes never share one.
pub(crate) fn guid_for(process: &ProcessInfo) -> String {
    // FNV-1a, twice with different offsets: stable across Rust versions, unlike `DefaultHasher`.
    fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
        bytes.iter().fold(seed, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }
    let key = format!(
        "{}\0{}\0{}",
        process.hostname, process.pid, process.start_ns
    );
    let high = fnv1a(0xcbf2_9ce4_8422_2325, key.as_bytes());
    let low = fnv1a(0x8422_2325_cbf2_9ce4, key.as_bytes());
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}

/// A database file's rocpd uuid, as its table names and its `rocpd_metadata` `uuid` row carry it:
/// `_` and 32 hex digits, new for every file (rocpd's readers strip it from the table names to find
/// rocpd's base names).
fn new_file_uuid(path: &Path) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let key = format!("{}\0{}\0{now}", path.display(), std::process::id());
    let hash = |seed: u64| {
        key.bytes().fold(seed, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    format!(
        "_{:016x}{:016x}",
        hash(0xcbf2_9ce4_8422_2325),
        hash(0x8422_2325_cbf2_9ce4)
    )
}

/// The writer's SQL on rocpd's base names, turned into the file's physical table names (each
/// `rocpd_*` table of [`schema::ROCPD_TABLES`] followed by the file's uuid). Translated once per
/// statement text.
struct TableNames {
    uuid: String,
    translated: std::cell::RefCell<HashMap<&'static str, std::sync::Arc<str>>>,
}

impl TableNames {
    fn new(uuid: String) -> Self {
        TableNames {
            uuid,
            translated: Default::default(),
        }
    }

    fn sql(&self, text: &'static str) -> std::sync::Arc<str> {
        self.translated
            .borrow_mut()
            .entry(text)
            .or_insert_with(|| physical_names(text, &self.uuid).into())
            .clone()
    }
}

/// `sql` with every rocpd table name followed by `uuid` (whole identifiers only).
fn physical_names(sql: &str, uuid: &str) -> String {
    let mut out = String::with_capacity(sql.len() + 64);
    let mut rest = sql;
    while let Some(at) = rest.find("rocpd_") {
        let before_ok = !rest[..at]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        out.push_str(&rest[..at]);
        let word_len = rest[at..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(rest.len() - at);
        let word = &rest[at..at + word_len];
        out.push_str(word);
        if before_ok && schema::ROCPD_TABLES.contains(&word) {
            out.push_str(uuid);
        }
        rest = &rest[at + word_len..];
    }
    out.push_str(rest);
    out
}

/// SQLite stores 64-bit signed integers; ids are kept bit for bit.
pub(crate) fn to_sql(value: u64) -> i64 {
    value as i64
}

/// The block of a metric as CUPTI names it (`sm__warps_launched.sum` is in block `sm`).
pub(crate) fn metric_block(metric: &str) -> &str {
    metric.split("__").next().unwrap_or(metric)
}

pub(crate) fn vendor_for_chip(chip: &str) -> &'static str {
    if chip == "SIM" {
        "kreplay software device"
    } else {
        "NVIDIA"
    }
}

/// How a new database is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Durability {
    /// Written while the application runs: every commit survives a crash of the process.
    Live,
    /// Written in one go from data that is safe elsewhere (a merged output): no journal, no sync.
    Output,
}

/// Opens `path` for writing a new database: an existing file (and its WAL) is replaced, because a
/// reused file name (a recycled pid) must not mix two runs.
pub(crate) fn create_database(
    path: &Path,
    durability: Durability,
) -> Result<(Connection, String), FormatError> {
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).map_err(|e| FormatError::io(parent, e))?;
    }
    for suffix in ["", "-wal", "-shm", "-journal"] {
        let mut name = path.as_os_str().to_owned();
        name.push(suffix);
        let file = PathBuf::from(name);
        match std::fs::remove_file(&file) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(FormatError::io(&file, e)),
        }
    }
    let conn = Connection::open(path).map_err(|e| FormatError::sqlite(path, e))?;
    // A reader (`kreplay convert` on a live run) may briefly hold a lock; wait rather than fail.
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(|e| FormatError::sqlite(path, e))?;
    let pragmas = match durability {
        // WAL: readers see every committed batch while the writer runs, and a crashed writer
        // leaves a database that the next reader recovers. NORMAL sync: a process crash loses
        // nothing committed; only an OS crash could lose the last batches, fine for a profile.
        Durability::Live => "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;",
        // The inputs stay until the output is complete; a failed write is simply redone.
        Durability::Output => "PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF;",
    };
    conn.execute_batch(pragmas)
        .map_err(|e| FormatError::sqlite(path, e))?;
    let uuid = new_file_uuid(path);
    let schema = schema::CREATE_SCHEMA.replace("{U}", &uuid);
    conn.execute_batch(&format!("BEGIN; {schema} COMMIT;"))
        .map_err(|e| FormatError::sqlite(path, e))?;
    conn.execute(
        &physical_names(
            "INSERT INTO rocpd_metadata (tag, value) VALUES ('schema_version', ?1), ('kreplay_schema_version', ?2), ('uuid', ?3), ('cache_control', ?4), ('clock_control', ?5)",
            &uuid,
        ),
        params![
            schema::ROCPD_SCHEMA_VERSION,
            schema::KREPLAY_SCHEMA_VERSION,
            uuid,
            CACHE_CONTROL,
            CLOCK_CONTROL
        ],
    )
    .map_err(|e| FormatError::sqlite(path, e))?;
    Ok((conn, uuid))
}

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
        let node_hash = {
            // A stable 63-bit hash of the host name (rocpd's `hash` column must be unique per node).
            let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
            for byte in process.hostname.as_bytes() {
                hash = (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3);
            }
            (hash >> 1) as i64
        };
        conn.execute(
            &self.names.sql("INSERT OR IGNORE INTO rocpd_info_node (guid, hash, machine_id, hostname) VALUES (?1, ?2, ?3, ?3)"),
            params![guid, node_hash, process.hostname],
        )
        .map_err(err)?;
        let node_id: i64 = conn
            .query_row(
                &self
                    .names
                    .sql("SELECT id FROM rocpd_info_node WHERE hash = ?1"),
                [node_hash],
                |row| row.get(0),
            )
            .map_err(err)?;
        let mut extdata = serde_json::json!({ "argv": process.command });
        for (key, value) in [("rank", &process.rank), ("size", &process.size)] {
            if let Some(value) = value {
                extdata[key] = serde_json::json!(value);
            }
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
                   pass_ns, restore_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14)"#,
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
                    to_sql(cost.restore_ns)
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

enum WriterMessage {
    Record(Record),
    /// Commit what is pending, then answer.
    Flush(Sender<()>),
    Finish,
}

/// The per-process database written as data arrives; the [`RecordSink`] of a profiled process.
///
/// `send` never blocks on I/O: it queues the record for the writer thread. `flush` waits until
/// everything sent before it is committed. Dropping the writer without [`DbWriter::finish`]
/// still commits everything queued (and waits for it); `finish` also reports errors.
pub struct DbWriter {
    sender: Sender<WriterMessage>,
    /// Taken by whoever stops the writer first (`finish`, `close` or drop).
    thread: Mutex<Option<JoinHandle<Result<(), FormatError>>>>,
    queue_limit: usize,
    /// Records refused because the queue was full; reported as a warning when the writer stops.
    dropped: Arc<AtomicU64>,
    path: PathBuf,
    /// The process that created the writer. Its thread does not exist in a child forked
    /// without exec, where flushing and stopping do nothing (the parent owns the file).
    owner: u32,
}

impl DbWriter {
    /// Creates (or replaces) the database at `path`, creating parent folders, and starts the
    /// writer thread. Errors (a folder that cannot be created, a file that cannot be opened)
    /// are reported here, on the caller's thread.
    pub fn create(path: &Path) -> Result<DbWriter, FormatError> {
        Self::create_with_queue_limit(path, MAX_QUEUED_RECORDS)
    }

    fn create_with_queue_limit(path: &Path, queue_limit: usize) -> Result<DbWriter, FormatError> {
        let inserter = RowInserter::create(path, Durability::Live)?;
        let (sender, receiver) = crossbeam_channel::unbounded();
        let dropped = Arc::new(AtomicU64::new(0));
        let dropped_seen_by_writer = Arc::clone(&dropped);
        let thread = std::thread::Builder::new()
            .name("kreplay-db-writer".to_string())
            .spawn(move || {
                block_signals();
                write_loop(inserter, receiver, queue_limit, &dropped_seen_by_writer)
            })
            .map_err(|e| FormatError::io(path, e))?;
        Ok(DbWriter {
            sender,
            queue_limit,
            dropped,
            thread: Mutex::new(Some(thread)),
            path: path.to_path_buf(),
            owner: std::process::id(),
        })
    }

    /// Whether this is the process that created the writer (not a child forked from it).
    fn in_owner(&self) -> bool {
        std::process::id() == self.owner
    }

    /// The database file being written.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Commits everything sent, closes the file and reports the first error the writer met.
    pub fn finish(self) -> Result<(), FormatError> {
        self.stop()
    }

    /// Stops the writer thread (once) and returns what it reported; later calls return Ok.
    fn stop(&self) -> Result<(), FormatError> {
        if !self.in_owner() {
            return Ok(());
        }
        // A poisoned lock only means another stop panicked; the handle inside is still valid.
        let thread = self
            .thread
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .take();
        let Some(thread) = thread else {
            return Ok(());
        };
        // A send error means the thread already ended; join() reports why.
        let _ = self.sender.send(WriterMessage::Finish);
        match thread.join() {
            Ok(result) => result,
            Err(_) => Err(FormatError::WriterStopped {
                path: self.path.clone(),
                detail: "the writer thread panicked".to_string(),
            }),
        }
    }
}

impl Drop for DbWriter {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

impl RecordSink for DbWriter {
    fn send(&self, record: Record) {
        // Unbounded channel: never blocks. If the writer thread is gone, the record is dropped;
        // `finish` reports why the thread ended.
        if self.sender.len() >= self.queue_limit {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let _ = self.sender.send(WriterMessage::Record(record));
    }

    fn flush(&self) {
        if !self.in_owner() {
            return;
        }
        let (done, wait) = crossbeam_channel::bounded(1);
        if self.sender.send(WriterMessage::Flush(done)).is_ok() {
            // Err means the thread ended (its sender was dropped): nothing more to wait for.
            let _ = wait.recv();
        }
    }

    fn close(&self) {
        // The trait has no way to return the error, and this runs as the process ends: say it.
        if let Err(e) = self.stop() {
            eprintln!("kreplay: {e}");
        }
    }
}

/// Blocks every signal on the calling thread, for the tool's own threads (this writer, the
/// last-words thread, the counter set-up, the drain worker): a handler of the process (the
/// tool's last words on SIGTERM, say) must not run on a thread its work waits for. Synchronous
/// faults still end the process. Here because this is the lowest crate with a thread of its own;
/// `kreplay_core::last_words` re-exports it.
pub fn block_signals() {
    // SAFETY: a full signal set applied to this thread only.
    unsafe {
        let mut all: libc::sigset_t = std::mem::zeroed();
        libc::sigfillset(&mut all);
        libc::pthread_sigmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
    }
}

/// The writer thread: batches records into transactions until `Finish` or until every sender is
/// gone. Keeps going after a failed insert (one bad record must not lose the rest) and returns the
/// first error.
fn write_loop(
    mut inserter: RowInserter,
    receiver: Receiver<WriterMessage>,
    queue_limit: usize,
    dropped: &AtomicU64,
) -> Result<(), FormatError> {
    let mut first_error: Option<FormatError> = None;
    let mut keep = |result: Result<(), FormatError>| {
        if let Err(e) = result {
            first_error.get_or_insert(e);
        }
    };
    let mut batch: Option<(Instant, usize)> = None;
    loop {
        let message = match batch {
            Some((started, _)) => match receiver.recv_deadline(started + BATCH_INTERVAL) {
                Ok(message) => Some(message),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => Some(WriterMessage::Finish),
            },
            None => Some(receiver.recv().unwrap_or(WriterMessage::Finish)),
        };
        match message {
            None => {
                batch = None;
                keep(inserter.commit());
            }
            Some(WriterMessage::Record(record)) => {
                if batch.is_none() {
                    keep(inserter.begin());
                    batch = Some((Instant::now(), 0));
                }
                keep(inserter.insert(record));
                if let Some((_, count)) = batch.as_mut() {
                    *count += 1;
                    if *count >= BATCH_RECORDS {
                        batch = None;
                        keep(inserter.commit());
                    }
                }
            }
            Some(WriterMessage::Flush(done)) => {
                batch = None;
                keep(inserter.commit());
                let _ = done.send(());
            }
            Some(WriterMessage::Finish) => {
                let dropped = dropped.load(Ordering::Relaxed);
                if dropped > 0 {
                    keep(inserter.begin());
                    keep(inserter.insert(Record::Warning(Warning {
                        message: format!(
                            "{dropped} records were dropped because the database writer fell more than {queue_limit} records behind; profile fewer dispatches (--kernel-include-regex, --kernel-iteration-range)"
                        ),
                    })));
                }
                keep(inserter.close());
                break;
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Whether `table` exists in the database.
pub(crate) fn has_table(conn: &Connection, table: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT 1 FROM sqlite_master WHERE type IN ('table', 'view') AND name = ?1",
        [table],
        |_| Ok(()),
    )
    .optional()
    .map(|found| found.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::run::{read_database, read_databases, RunData};
    use crate::testdata::*;
    use std::collections::HashSet;

    fn write_through_writer(path: &Path, records: &[Record]) {
        let writer = DbWriter::create(path).unwrap();
        for record in records {
            writer.send(record.clone());
        }
        writer.finish().unwrap();
    }

    #[test]
    fn a_recorded_run_reads_back_equal() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.db");
        let records = recorded_run(4242);
        write_through_writer(&path, &records);
        let read = read_databases(std::slice::from_ref(&path)).unwrap();
        assert_eq!(read, RunData::from_records(records));
        // finish() leaves one self-contained file: no WAL beside it.
        assert!(!dir.path().join("run.db-wal").exists());
    }

    #[test]
    fn close_through_a_shared_sink_leaves_a_single_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let records = recorded_run(12);
        let sink: std::sync::Arc<dyn RecordSink> =
            std::sync::Arc::new(DbWriter::create(&path).unwrap());
        for record in &records {
            sink.send(record.clone());
        }
        sink.close();
        assert!(
            !dir.path().join("shared.db-wal").exists(),
            "closed: no WAL left"
        );
        sink.send(records[7].clone()); // after close: dropped, no panic
        sink.flush(); // after close: returns at once
        sink.close();
        assert_eq!(
            read_databases(std::slice::from_ref(&path)).unwrap(),
            RunData::from_records(records)
        );
    }

    #[test]
    fn a_child_forked_without_exec_neither_waits_for_nor_stops_the_writer() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("forked.db");
        let records = recorded_run(77);
        let sink: std::sync::Arc<dyn RecordSink> =
            std::sync::Arc::new(DbWriter::create(&path).unwrap());
        sink.send(records[0].clone());
        // SAFETY: the child only calls the writer's methods and _exit.
        let child = unsafe { libc::fork() };
        assert!(child >= 0, "fork failed");
        if child == 0 {
            // No writer thread here: waiting for it would block forever.
            sink.flush();
            sink.close();
            // SAFETY: ends the forked child without running the parent's exit handlers.
            unsafe { libc::_exit(0) };
        }
        let began = Instant::now();
        let mut status = 0;
        loop {
            // SAFETY: waits for our own child without blocking.
            let done = unsafe { libc::waitpid(child, &mut status, libc::WNOHANG) };
            if done == child {
                break;
            }
            if began.elapsed() > Duration::from_secs(5) {
                // SAFETY: our own child.
                unsafe { libc::kill(child, libc::SIGKILL) };
                panic!("the forked child blocked in the writer");
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
        // The parent's writer is untouched by the child.
        for record in &records[1..] {
            sink.send(record.clone());
        }
        sink.close();
        assert_eq!(
            read_databases(std::slice::from_ref(&path)).unwrap(),
            RunData::from_records(records)
        );
    }

    #[test]
    fn a_writer_that_falls_behind_drops_records_and_says_so() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("behind.db");
        let writer = DbWriter::create_with_queue_limit(&path, 4).unwrap();
        // Another connection holds the write lock: the writer thread stalls on its first insert.
        let blocker = Connection::open(&path).unwrap();
        blocker.execute_batch("BEGIN IMMEDIATE").unwrap();
        let records = recorded_run(3);
        writer.send(records[0].clone());
        std::thread::sleep(Duration::from_millis(50));
        let sending = Instant::now();
        for _ in 0..100 {
            writer.send(records[7].clone());
        }
        assert!(
            sending.elapsed() < Duration::from_secs(1),
            "send() must not wait for the writer"
        );
        blocker.execute_batch("COMMIT").unwrap();
        drop(blocker);
        writer.finish().unwrap();
        let read = read_databases(&[path]).unwrap();
        let process = &read.processes[0];
        let dropped = 100 - process.dispatches.len();
        assert!(dropped >= 95, "only {dropped} dropped with room for 4");
        assert_eq!(process.warnings.len(), 1);
        let message = &process.warnings[0].message;
        assert!(
            message.starts_with(&format!("{dropped} records were dropped")),
            "{message}"
        );
    }

    #[test]
    fn three_passes_are_three_dispatch_rows_with_one_dispatch_id() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.db");
        write_through_writer(&path, &recorded_run(1));
        let conn = Connection::open(&path).unwrap();
        let mut statement = conn
            .prepare("SELECT id, replay_pass, event_id FROM rocpd_kernel_dispatch WHERE dispatch_id = 1 ORDER BY id")
            .unwrap();
        let rows: Vec<(i64, Option<u32>, i64)> = statement
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(
            rows.iter().map(|r| r.1).collect::<Vec<_>>(),
            vec![Some(0), Some(1), Some(2)]
        );
        let ids: HashSet<i64> = rows.iter().map(|r| r.0).collect();
        let events: HashSet<i64> = rows.iter().map(|r| r.2).collect();
        assert_eq!(
            (ids.len(), events.len()),
            (3, 3),
            "one surrogate id and one event per pass"
        );
        let untraced: Option<u32> = conn
            .query_row(
                "SELECT replay_pass FROM rocpd_kernel_dispatch WHERE dispatch_id = 3",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(
            untraced, None,
            "a dispatch without replay has a NULL replay_pass"
        );
    }

    #[test]
    fn counters_collection_view_keeps_each_pass_apart() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("run.db");
        write_through_writer(&path, &recorded_run(1));
        let conn = Connection::open(&path).unwrap();
        let mut statement = conn
            .prepare(
                "SELECT replay_pass, value, kernel_name, agent_id, grid_size, lds_block_size FROM counters_collection
                 WHERE dispatch_id = 1 AND counter_name = 'SQ_WAVES' ORDER BY replay_pass",
            )
            .unwrap();
        let rows: Vec<(u32, f64, String, i64, i64, i64)> = statement
            .query_map([], |r| {
                Ok((
                    r.get(0)?,
                    r.get(1)?,
                    r.get(2)?,
                    r.get(3)?,
                    r.get(4)?,
                    r.get(5)?,
                ))
            })
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let passes: Vec<(u32, f64)> = rows.iter().map(|r| (r.0, r.1)).collect();
        assert_eq!(
            passes,
            vec![(0, 512.0), (1, 513.0), (2, 514.0)],
            "not summed (1539)"
        );
        assert_eq!(rows[0].2, "saxpy(float*, float*, float)");
        assert_eq!(rows[0].3, 0);
        assert_eq!(rows[0].4, 1024 * 256 * 2, "grid counted in work-items");
        assert_eq!(rows[0].5, 1024 + 512, "static + dynamic shared memory");
        let total: i64 = conn
            .query_row("SELECT COUNT(*) FROM counters_collection", [], |r| r.get(0))
            .unwrap();
        assert_eq!(total, 6, "one row per (pass, counter)");
        let kernels: i64 = conn
            .query_row(
                "SELECT COUNT(*) FROM kernels WHERE dispatch_id = 1",
                [],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(kernels, 3);
    }

    #[test]
    fn a_writer_that_never_finished_leaves_a_readable_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("crash.db");
        let records = recorded_run(77);
        let writer = DbWriter::create(&path).unwrap();
        for record in &records[..8] {
            writer.send(record.clone());
        }
        writer.flush();
        // A crash: the writer is neither finished nor dropped; its thread and open file remain.
        std::mem::forget(writer);
        let read = read_databases(&[path]).unwrap();
        let mut expected = RunData::from_records(records[..8].to_vec());
        assert_eq!(read.processes.len(), 1);
        assert_eq!(
            read.processes[0].dispatches,
            expected.processes[0].dispatches
        );
        expected.processes[0].process.end_ns = 0;
        assert_eq!(read, expected);
    }

    /// The child half of the next test: writes, flushes, then dies without any cleanup.
    #[test]
    #[ignore = "run as a child process by a_process_that_aborts_after_flush_leaves_a_readable_database"]
    fn abort_after_flush_child() {
        let Ok(path) = std::env::var("KREPLAY_FORMAT_ABORT_DB") else {
            panic!("only run as a child process of the abort test");
        };
        let records = recorded_run(66);
        let writer = DbWriter::create(Path::new(&path)).unwrap();
        for record in &records[..8] {
            writer.send(record.clone());
        }
        writer.flush();
        for record in &records[8..] {
            writer.send(record.clone());
        }
        std::process::abort();
    }

    #[test]
    fn a_process_that_aborts_after_flush_leaves_a_readable_database() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("abort.db");
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--ignored", "--exact", "db::tests::abort_after_flush_child"])
            .env("KREPLAY_FORMAT_ABORT_DB", &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert!(!status.success(), "the child must have aborted");
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        assert!(
            Path::new(&wal).exists(),
            "a crashed writer leaves its WAL behind"
        );
        let read = read_databases(&[path]).unwrap();
        let flushed = RunData::from_records(recorded_run(66)[..8].to_vec());
        let process = &read.processes[0];
        // Everything flushed is there; what came after may or may not have been committed.
        assert_eq!(process.process, flushed.processes[0].process);
        assert_eq!(process.agents, flushed.processes[0].agents);
        assert_eq!(process.kernels, flushed.processes[0].kernels);
        assert_eq!(process.counters, flushed.processes[0].counters);
        assert_eq!(process.dispatches[0], flushed.processes[0].dispatches[0]);
    }

    /// Measures the writer: `cargo test -p kreplay-format --release -- --ignored write_throughput --nocapture`.
    #[test]
    #[ignore = "a measurement, not a check"]
    fn write_throughput() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("speed.db");
        let head = recorded_run(1);
        let writer = DbWriter::create(&path).unwrap();
        for record in &head[..7] {
            writer.send(record.clone());
        }
        let passes = 100_000u64;
        let started = Instant::now();
        for i in 0..passes {
            let counters = vec![
                sample("SQ_WAVES", i as f64),
                sample("SQ_INSTS_VALU", 2.0 * i as f64),
            ];
            writer.send(Record::Dispatch(dispatch(
                1,
                i / 4,
                Some((i % 4) as u32),
                counters,
            )));
        }
        let queued = started.elapsed();
        writer.finish().unwrap();
        let written = started.elapsed();
        println!(
            "{passes} dispatch passes with 2 counters: send {:.0} ns each on the caller, {:.0} passes/s written, {} bytes",
            queued.as_nanos() as f64 / passes as f64,
            passes as f64 / written.as_secs_f64(),
            std::fs::metadata(&path).unwrap().len()
        );
    }

    #[test]
    fn batches_are_committed_within_the_interval_without_a_flush() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("timed.db");
        let records = recorded_run(5);
        let writer = DbWriter::create(&path).unwrap();
        for record in &records[..8] {
            writer.send(record.clone());
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut seen = 0;
        while Instant::now() < deadline {
            std::thread::sleep(BATCH_INTERVAL / 2);
            seen = read_database(&path)
                .ok()
                .and_then(|p| p.first().map(|p| p.dispatches.len()))
                .unwrap_or(0);
            if seen == 1 {
                break;
            }
        }
        assert_eq!(seen, 1, "the first batch was not committed on time");
        writer.finish().unwrap();
    }

    #[test]
    fn records_before_their_descriptions_still_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("late.db");
        let mut records = recorded_run(9);
        // The dispatches (and a warning) come before the process, agent, kernels and counters.
        let described: Vec<Record> = records.drain(..7).collect();
        let mut reordered: Vec<Record> = records[..3].to_vec();
        reordered.extend(described);
        reordered.extend(records[3..].iter().cloned());
        write_through_writer(&path, &reordered);
        let read = read_databases(&[path]).unwrap();
        let expected = RunData::from_records(recorded_run(9));
        assert_eq!(read, expected);
    }

    #[test]
    fn merging_two_process_databases_keeps_both() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("a.db");
        let second = dir.path().join("b.db");
        write_through_writer(&first, &recorded_run(100));
        write_through_writer(&second, &recorded_run(200));
        let merged = read_databases(&[first.clone(), second.clone(), first.clone()]).unwrap();
        let mut expected = RunData::from_records(recorded_run(100));
        expected
            .processes
            .extend(RunData::from_records(recorded_run(200)).processes);
        assert_eq!(merged, expected, "both processes, the repeated file once");
        assert_ne!(merged.processes[0].guid(), merged.processes[1].guid());

        // The merged database holds both processes and reads back equal.
        let out = dir.path().join("merged.db");
        crate::output::write_rocpd(&merged, &out).unwrap();
        assert_eq!(
            read_databases(std::slice::from_ref(&out)).unwrap(),
            expected
        );
        let conn = Connection::open(&out).unwrap();
        let pids: Vec<u32> = conn
            .prepare("SELECT DISTINCT pid FROM counters_collection ORDER BY pid")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(pids, vec![100, 200]);
    }

    #[test]
    fn records_without_a_process_record_are_kept() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("headless.db");
        let records: Vec<Record> = recorded_run(21).into_iter().skip(1).collect();
        write_through_writer(&path, &records);
        let read = read_databases(&[path]).unwrap();
        assert_eq!(read, RunData::from_records(records));
        assert_eq!(
            read.processes[0].process.pid, 21,
            "the pid of the dispatches"
        );
    }

    /// Opens `paths` the way rocpd's importer does: attach each file, read its `uuid` from
    /// `rocpd_metadata`, find its `rocpd_*` tables by that uuid and make a temporary view of each
    /// base name over the attached files' un-suffixed names.
    fn open_like_rocpd(paths: &[&Path]) -> Connection {
        let conn = Connection::open_in_memory().unwrap();
        let mut bases: HashMap<String, Vec<String>> = HashMap::new();
        for (i, path) in paths.iter().enumerate() {
            conn.execute(
                &format!("ATTACH DATABASE '{}' AS db{i}", path.display()),
                [],
            )
            .unwrap();
            let uuid: String = conn
                .query_row(
                    &format!("SELECT value FROM db{i}.rocpd_metadata WHERE tag = 'uuid'"),
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            let mut statement = conn
                .prepare(&format!("SELECT name FROM db{i}.sqlite_master WHERE type = 'table' AND name LIKE 'rocpd_%'"))
                .unwrap();
            let tables: Vec<String> = statement
                .query_map([], |r| r.get(0))
                .unwrap()
                .map(Result::unwrap)
                .collect();
            for table in tables.iter().filter(|t| t.contains(&uuid)) {
                let base = table.replace(&uuid, "");
                bases
                    .entry(base.clone())
                    .or_default()
                    .push(format!("SELECT * FROM db{i}.{base}"));
            }
        }
        for (base, selects) in &bases {
            conn.execute(
                &format!(
                    "CREATE TEMPORARY VIEW {base} AS {}",
                    selects.join(" UNION ALL ")
                ),
                [],
            )
            .unwrap();
        }
        conn
    }

    #[test]
    fn rocpds_importer_finds_every_table_and_its_views_joins_reach_every_row() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.db"), dir.path().join("b.db"));
        write_through_writer(&a, &recorded_run(11));
        write_through_writer(&b, &recorded_run(12));
        let conn = open_like_rocpd(&[&a, &b]);
        let count = |sql: &str| -> i64 { conn.query_row(sql, [], |r| r.get(0)).unwrap() };
        for table in schema::ROCPD_TABLES {
            count(&format!("SELECT COUNT(*) FROM {table}"));
        }
        let dispatches = count("SELECT COUNT(*) FROM rocpd_kernel_dispatch");
        let values = count("SELECT COUNT(*) FROM rocpd_pmc_event");
        assert!(dispatches > 0 && values > 0);
        // The joins of rocpd's `kernels` view: agent, event, region name, kernel symbol, queue
        // (its process), thread; each dispatch row is reached once.
        assert_eq!(
            count(
                "SELECT COUNT(*) FROM rocpd_kernel_dispatch K
                 JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
                 JOIN rocpd_event E ON E.id = K.event_id AND E.guid = K.guid
                 JOIN rocpd_string R ON R.id = K.region_name_id AND R.guid = K.guid
                 JOIN rocpd_info_kernel_symbol S ON S.id = K.kernel_id AND S.guid = K.guid
                 LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id AND ST.guid = K.guid
                 LEFT JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
                 JOIN rocpd_info_process P ON P.id = Q.pid AND P.guid = Q.guid
                 JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid
                 WHERE R.string = S.display_name AND ST.id IS NOT NULL"
            ),
            dispatches
        );
        // Those of its `counters_collection` and `pmc_events`: every value reaches its dispatch,
        // process and thread.
        assert_eq!(
            count(
                "SELECT COUNT(*) FROM rocpd_pmc_event PMC_E
                 JOIN rocpd_info_pmc PMC_I ON PMC_I.id = PMC_E.pmc_id AND PMC_I.guid = PMC_E.guid
                 JOIN rocpd_event E ON E.id = PMC_E.event_id AND E.guid = PMC_E.guid
                 JOIN rocpd_kernel_dispatch K ON K.event_id = PMC_E.event_id AND K.guid = PMC_E.guid
                 JOIN rocpd_info_agent A ON A.id = K.agent_id AND A.guid = K.guid
                 JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
                 JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid"
            ),
            values
        );
        // Operating-system ids read as such, and the stream behind the queue row.
        let (pid, tid, stream): (i64, i64, i64) = conn
            .query_row(
                "SELECT P.pid, T.tid, JSON_EXTRACT(Q.extdata, '$.stream_id') FROM rocpd_kernel_dispatch K
                 JOIN rocpd_info_process P ON P.id = K.pid AND P.guid = K.guid
                 JOIN rocpd_info_thread T ON T.id = K.tid AND T.guid = K.guid
                 JOIN rocpd_info_queue Q ON Q.id = K.queue_id AND Q.guid = K.guid
                 WHERE P.pid = 11 LIMIT 1",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .unwrap();
        assert_eq!((pid, tid, stream), (11, 12, 7));
        // The process and thread rows' ids are the operating system's.
        assert_eq!(
            count("SELECT COUNT(*) FROM rocpd_info_process WHERE id = pid"),
            2
        );
    }

    #[test]
    fn a_database_of_another_schema_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("future.db");
        write_through_writer(&path, &recorded_run(1));
        let conn = Connection::open(&path).unwrap();
        let uuid: String = conn
            .query_row(
                "SELECT value FROM rocpd_metadata WHERE tag = 'uuid'",
                [],
                |r| r.get(0),
            )
            .unwrap();
        conn.execute(
            &format!(
                "UPDATE rocpd_metadata{uuid} SET value = '99' WHERE tag = 'kreplay_schema_version'"
            ),
            [],
        )
        .unwrap();
        drop(conn);
        let error = read_databases(&[path]).unwrap_err().to_string();
        assert!(
            error.contains("future.db") && error.contains("version 99"),
            "{error}"
        );
    }

    #[test]
    fn a_second_process_in_one_writer_gets_its_own_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("two.db");
        let mut records = recorded_run(1);
        records.extend(recorded_run(2));
        write_through_writer(&path, &records);
        assert_eq!(
            read_databases(&[path]).unwrap(),
            RunData::from_records(records)
        );
    }

    #[test]
    fn create_replaces_an_old_file_and_makes_folders() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("host/1234/run.db");
        write_through_writer(&path, &recorded_run(1));
        write_through_writer(&path, &recorded_run(2));
        let read = read_databases(&[path]).unwrap();
        assert_eq!(read.processes.len(), 1);
        assert_eq!(read.processes[0].process.pid, 2);
    }

    #[test]
    fn bad_inputs_get_errors_that_name_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.db");
        let error = read_databases(&[missing]).unwrap_err().to_string();
        assert!(
            error.contains("missing.db") && error.contains("no such"),
            "{error}"
        );

        let other = dir.path().join("other.db");
        Connection::open(&other)
            .unwrap()
            .execute_batch("CREATE TABLE t (x INTEGER);")
            .unwrap();
        let error = read_databases(&[other]).unwrap_err().to_string();
        assert!(
            error.contains("other.db") && error.contains("not a kreplay database"),
            "{error}"
        );

        let text = dir.path().join("text.db");
        std::fs::write(
            &text,
            "not sqlite at all, just some text that is long enough",
        )
        .unwrap();
        let error = read_databases(&[text]).unwrap_err().to_string();
        assert!(error.contains("text.db"), "{error}");

        let blocked = dir.path().join("file");
        std::fs::write(&blocked, "").unwrap();
        let error = DbWriter::create(&blocked.join("run.db"))
            .err()
            .unwrap()
            .to_string();
        assert!(error.contains("file"), "{error}");
    }

    #[test]
    fn guids_are_stable_and_distinct() {
        assert_eq!(guid_for(&process(1)), guid_for(&process(1)));
        assert_ne!(guid_for(&process(1)), guid_for(&process(2)));
        assert_eq!(guid_for(&process(1)).len(), 36);
    }
}
