//! Reading kreplay's databases back into [`RunData`](crate::run::RunData): every process of
//! every file, with its records, in the order written.

use super::file::{has_table, json_field, PLACEHOLDER_EXTDATA};
use super::pages::{self, Blocks, Layout, StoredProcess};
use crate::error::FormatError;
use crate::records::*;
use crate::run::{ProcessRun, RunData, Source};
use crate::schema;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Reads and merges kreplay databases into memory. Every process of every file is kept, in file
/// order; a process found twice (the same file given twice) is kept once.
pub fn read_databases(paths: &[PathBuf]) -> Result<RunData, FormatError> {
    let mut run = open_databases(paths)?;
    run.processes = run
        .processes
        .into_iter()
        .map(ProcessRun::loaded)
        .collect::<Result<_, _>>()?;
    Ok(run)
}

/// [`read_databases`], leaving every process's dispatches and costs in its file, read a page at
/// a time by the writers ([`ProcessRun::each_dispatch`]): what a run of any length is written
/// from in bounded memory.
pub fn open_databases(paths: &[PathBuf]) -> Result<RunData, FormatError> {
    let mut run = RunData::default();
    let mut seen = HashSet::new();
    for path in paths {
        for process in open_database(path)? {
            if seen.insert(process.guid()) {
                run.processes.push(process);
            }
        }
    }
    Ok(run)
}

fn open_for_reading(path: &Path) -> Result<Connection, FormatError> {
    if !path.is_file() {
        return Err(FormatError::io(
            path,
            std::io::Error::new(std::io::ErrorKind::NotFound, "no such database file"),
        ));
    }
    // Read-write without create: a database left in WAL mode by a crashed writer needs its WAL
    // replayed, which needs write access; fall back to read-only for files we may not write.
    // No SQLite mutex: the connection is used by one thread at a time (behind the stored
    // process's own lock), and a mutex per column read costs a tenth of the reading.
    let open = |mode| Connection::open_with_flags(path, mode | OpenFlags::SQLITE_OPEN_NO_MUTEX);
    let conn = open(OpenFlags::SQLITE_OPEN_READ_WRITE)
        .or_else(|_| open(OpenFlags::SQLITE_OPEN_READ_ONLY))
        .map_err(|e| FormatError::sqlite(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| FormatError::sqlite(path, e))?;
    // The pages' statements are run again with new bounds: without the query planner's
    // stability guarantee, SQLite compiles them again for every page (issue 49).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map_err(|e| FormatError::sqlite(path, e))?;
    Ok(conn)
}

/// Reads every process of one database into memory.
pub fn read_database(path: &Path) -> Result<Vec<ProcessRun>, FormatError> {
    open_database(path)?
        .into_iter()
        .map(ProcessRun::loaded)
        .collect()
}

/// Every process of one database, its dispatches and costs left in the file.
pub fn open_database(path: &Path) -> Result<Vec<ProcessRun>, FormatError> {
    let conn = open_for_reading(path)?;
    let err = |e| FormatError::sqlite(path, e);
    for table in schema::REQUIRED_TABLES {
        if !has_table(&conn, table).map_err(err)? {
            return Err(FormatError::NotKreplayDatabase {
                path: path.to_path_buf(),
                table,
            });
        }
    }
    let version: Option<String> = conn
        .query_row(
            "SELECT value FROM rocpd_metadata WHERE tag = 'kreplay_schema_version'",
            [],
            |row| row.get(0),
        )
        .optional()
        .map_err(err)?;
    let layout = match version.as_deref() {
        Some(v) if schema::READABLE_SCHEMA_VERSIONS.contains(&v) => {
            Layout::of_version(&conn, path, v)?
        }
        _ => {
            return Err(FormatError::Corrupt {
                path: path.to_path_buf(),
                detail: format!(
                    "kreplay schema version {} (this kreplay reads {}); convert it with the kreplay that wrote it",
                    version.as_deref().unwrap_or("missing"),
                    schema::READABLE_SCHEMA_VERSIONS.join(" and ")
                ),
            });
        }
    };
    let mut statement = conn
        .prepare(
            r#"SELECT P.guid, P.pid, P.ppid, COALESCE(N.hostname, ''), P."start", P."end", P.command, P.extdata
               FROM rocpd_info_process P LEFT JOIN rocpd_info_node N ON N.id = P.nid ORDER BY P.id"#,
        )
        .map_err(err)?;
    let heads = statement
        .query_map([], |row| {
            let guid: String = row.get(0)?;
            let command: Option<String> = row.get(6)?;
            let extdata: Option<String> = row.get(7)?;
            let start: Option<i64> = row.get(4)?;
            let end: Option<i64> = row.get(5)?;
            Ok((
                guid,
                row.get::<_, u32>(1)?,
                row.get::<_, Option<u32>>(2)?.unwrap_or(0),
                row.get::<_, String>(3)?,
                start.unwrap_or(0) as u64,
                end.unwrap_or(0) as u64,
                command.unwrap_or_default(),
                extdata.unwrap_or_default(),
            ))
        })
        .map_err(err)?
        .collect::<Result<Vec<_>, _>>()
        .map_err(err)?;
    drop(statement);
    let shared = Arc::new(Mutex::new(conn));
    let mut processes = Vec::with_capacity(heads.len());
    let alone = heads.len() == 1;
    // A file's only process reads its records on several threads at once, each on a connection
    // of its own (`run::ranges`), opened now so that they read the file as `conn` does (one
    // that failed to open leaves its thread's ranges to another connection).
    let mut spares: Vec<Mutex<Connection>> = match alone {
        true => (1..crate::run::READERS)
            .filter_map(|_| open_for_reading(path).ok().map(Mutex::new))
            .collect(),
        false => Vec::new(),
    };
    for (guid, pid, ppid, hostname, start_ns, end_ns, command, extdata) in heads {
        let argv = serde_json::from_str::<serde_json::Value>(&extdata)
            .ok()
            .and_then(|v| serde_json::from_value::<Vec<String>>(v.get("argv")?.clone()).ok())
            .unwrap_or_else(|| command.split_whitespace().map(str::to_string).collect());
        let launcher = |key: &str| -> Option<String> {
            serde_json::from_str::<serde_json::Value>(&extdata)
                .ok()?
                .get(key)?
                .as_str()
                .map(str::to_string)
        };
        let process = ProcessInfo {
            pid,
            ppid,
            hostname,
            command: argv,
            start_ns,
            end_ns,
            rank: launcher("rank"),
            size: launcher("size"),
            cache_control: launcher("cache_control")
                .and_then(|text| CacheControl::parse(&text))
                .unwrap_or_default(),
            sections: serde_json::from_str::<serde_json::Value>(&extdata)
                .ok()
                .and_then(|v| serde_json::from_value(v.get("sections")?.clone()).ok())
                .unwrap_or_default(),
            kernel_rename: serde_json::from_str::<serde_json::Value>(&extdata)
                .ok()
                .and_then(|v| v.get("kernel_rename")?.as_bool())
                .unwrap_or(false),
            mangled_kernels: extdata.contains(r#""mangled_kernels":true"#),
            truncate_kernels: extdata.contains(r#""truncate_kernels":true"#),
        };
        let files = Files {
            conn: &shared,
            spares: std::mem::take(&mut spares),
            path,
            layout,
        };
        processes.push(open_process(files, &guid, process, alone)?);
    }
    Ok(processes)
}

fn is_placeholder(extdata: &Option<String>) -> bool {
    extdata.as_deref() == Some(PLACEHOLDER_EXTDATA)
}

/// A database's connections, where it is, and how it keeps its passes.
struct Files<'a> {
    conn: &'a Arc<Mutex<Connection>>,
    spares: Vec<Mutex<Connection>>,
    path: &'a Path,
    layout: Layout,
}

/// One process: what describes it read now, its dispatches, costs and tracing records left
/// stored. `alone`: it is the file's only process.
fn open_process(
    files: Files<'_>,
    guid: &str,
    process: ProcessInfo,
    alone: bool,
) -> Result<ProcessRun, FormatError> {
    let Files {
        conn,
        spares,
        path,
        layout,
    } = files;
    let pid = process.pid;
    let mut run = ProcessRun::new(process);
    let (agent_ids, kernel_ids, counter_names, (counts, blocks), (stream_ids, thread_ids)) = {
        let conn = conn.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let reader = ProcessReader {
            conn: &conn,
            path,
            guid,
        };
        let agent_ids = reader.agents(&mut run)?;
        let kernel_ids = reader.kernels(&mut run)?;
        super::read_code_objects::read_code_objects(&conn, path, guid, &agent_ids, &mut run)?;
        let counter_names = reader.counters(&mut run)?;
        reader.warnings(&mut run)?;
        let (counts, traces) = super::record_counts::count(&conn, path, layout, guid, alone)?;
        let in_blocks = match layout.is_current() {
            true => super::read_blocks::block_counts(&conn, guid)
                .map_err(|e| FormatError::sqlite(path, e))?,
            false => None,
        };
        // Each kind is read from its blocks where they hold every one of its records.
        let blocks = in_blocks.map_or(Blocks::default(), |held| Blocks {
            passes: held[0] == counts.0,
            costs: held[1] == counts.1,
            traces: std::array::from_fn(|kind| {
                traces.is_some_and(|traces| traces[kind] == held[2 + kind])
            }),
        });
        let counts = (counts, traces);
        let ids = (
            pages::id_map(&conn, path, pages::STREAMS_SQL)?,
            pages::id_map(&conn, path, pages::THREADS_SQL)?,
        );
        (agent_ids, kernel_ids, counter_names, (counts, blocks), ids)
    };
    let only_described = agent_ids
        .values()
        .all(|id| run.agents.iter().any(|a| a.agent_id == *id))
        && kernel_ids.values().all(|id| run.kernel(*id).is_some())
        && counter_names
            .values()
            .all(|name| run.counters.iter().any(|c| *name == c.name));
    // Its tracing records stay in the file too, read a page at a time (`db::trace_source`).
    let fingerprint = Some(run.fingerprint());
    run.stored = Some(Source(Arc::new(StoredProcess {
        conn: Arc::clone(conn),
        spares,
        path: path.to_path_buf(),
        layout,
        guid: guid.to_string(),
        pid,
        agent_ids: agent_ids.into_iter().collect(),
        kernel_ids: kernel_ids.into_iter().collect(),
        counter_names: counter_names.into_iter().collect(),
        stream_ids: stream_ids.into_iter().collect(),
        thread_ids: thread_ids.into_iter().collect(),
        counts,
        blocks,
        alone,
        only_described,
        fingerprint,
        has_traced: Default::default(),
    })));
    Ok(run)
}

/// One process's rows of one database (`guid`), table by table.
struct ProcessReader<'a> {
    conn: &'a Connection,
    path: &'a Path,
    guid: &'a str,
}

impl ProcessReader<'_> {
    /// The errors of reading this file: SQLite's, and rows that do not fit together.
    fn errors(
        &self,
    ) -> (
        impl Fn(rusqlite::Error) -> FormatError + Copy + '_,
        impl Fn(String) -> FormatError + Copy + '_,
    ) {
        (
            |e| FormatError::sqlite(self.path, e),
            |detail| FormatError::Corrupt {
                path: self.path.to_path_buf(),
                detail,
            },
        )
    }

    /// The process's agents; returns row id → producer agent id.
    fn agents(&self, run: &mut ProcessRun) -> Result<HashMap<i64, u64>, FormatError> {
        let (err, _) = self.errors();
        let mut agent_ids: HashMap<i64, u64> = HashMap::new();
        let mut statement = self.conn
            .prepare(
                // The CPU agent (the host side of copies, `db::memory`) is no device.
                "SELECT id, absolute_index, name, product_name, extdata FROM rocpd_info_agent WHERE guid = ?1 AND type = 'GPU' ORDER BY id",
            )
            .map_err(err)?;
        let mut rows = statement.query([self.guid]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let row_id: i64 = row.get(0).map_err(err)?;
            let agent_id = row.get::<_, Option<i64>>(1).map_err(err)?.unwrap_or(0) as u64;
            let extdata: Option<String> = row.get(4).map_err(err)?;
            agent_ids.insert(row_id, agent_id);
            if is_placeholder(&extdata) {
                continue;
            }
            run.agents.push(AgentInfo {
                agent_id,
                name: row
                    .get::<_, Option<String>>(3)
                    .map_err(err)?
                    .unwrap_or_default(),
                chip: row
                    .get::<_, Option<String>>(2)
                    .map_err(err)?
                    .unwrap_or_default(),
                sm_count: json_field(&extdata, "sm_count").unwrap_or(0),
                global_memory_bytes: json_field(&extdata, "global_memory_bytes").unwrap_or(0),
                pci_location: json_field(&extdata, "pci_location").unwrap_or_default(),
                max_threads_per_sm: json_field(&extdata, "max_threads_per_sm").unwrap_or(0),
                shared_memory_per_sm_bytes: json_field(&extdata, "shared_memory_per_sm_bytes")
                    .unwrap_or(0),
            });
        }
        drop(rows);

        Ok(agent_ids)
    }

    /// The process's kernel symbols; returns row id → producer kernel id.
    fn kernels(&self, run: &mut ProcessRun) -> Result<HashMap<i64, u64>, FormatError> {
        let (err, _) = self.errors();
        let mut kernel_ids: HashMap<i64, u64> = HashMap::new();
        let mut statement = self.conn
            .prepare(
                r#"SELECT id, kernel_object, kernel_name, display_name, arch_vgpr_count, group_segment_size,
                   private_segment_size, kernarg_segment_size, extdata
                   FROM rocpd_info_kernel_symbol WHERE guid = ?1 ORDER BY id"#,
            )
            .map_err(err)?;
        let mut rows = statement.query([self.guid]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let row_id: i64 = row.get(0).map_err(err)?;
            let kernel_id = row.get::<_, Option<i64>>(1).map_err(err)?.unwrap_or(0) as u64;
            let extdata: Option<String> = row.get(8).map_err(err)?;
            kernel_ids.insert(row_id, kernel_id);
            if is_placeholder(&extdata) {
                continue;
            }
            let number = |index| -> Result<u32, FormatError> {
                Ok(row.get::<_, Option<u32>>(index).map_err(err)?.unwrap_or(0))
            };
            run.kernels.push(KernelSymbol {
                kernel_id,
                code_object_id: 0,
                mangled_name: row
                    .get::<_, Option<String>>(2)
                    .map_err(err)?
                    .unwrap_or_default(),
                // `display_name` is the name the run's naming options gave (`-M`, `-T`); the
                // demangled one is in `extdata` (files written before: `display_name`).
                demangled_name: match demangled_in(extdata.as_deref()) {
                    Some(name) => name,
                    None => row
                        .get::<_, Option<String>>(3)
                        .map_err(err)?
                        .unwrap_or_default(),
                },
                registers: number(4)?,
                static_shared_bytes: number(5)?,
                local_bytes: number(6)?,
                param_bytes: number(7)?,
            });
        }
        drop(rows);

        Ok(kernel_ids)
    }

    /// The process's counters; returns row id → requested name.
    fn counters(&self, run: &mut ProcessRun) -> Result<HashMap<i64, CounterName>, FormatError> {
        let (err, _) = self.errors();
        let mut counter_names: HashMap<i64, CounterName> = HashMap::new();
        let mut statement = self.conn
            .prepare(
                "SELECT id, name, symbol, description, units, extdata FROM rocpd_info_pmc WHERE guid = ?1 ORDER BY id",
            )
            .map_err(err)?;
        let mut rows = statement.query([self.guid]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let row_id: i64 = row.get(0).map_err(err)?;
            let name: String = row.get(1).map_err(err)?;
            let extdata: Option<String> = row.get(5).map_err(err)?;
            counter_names.insert(row_id, CounterName::from(name.as_str()));
            // One row per agent and counter: the run lists each counter once.
            if is_placeholder(&extdata) || run.counters.iter().any(|c| c.name == name) {
                continue;
            }
            run.counters.push(CounterInfo {
                name,
                metric: row.get(2).map_err(err)?,
                description: row
                    .get::<_, Option<String>>(3)
                    .map_err(err)?
                    .unwrap_or_default(),
                unit: row
                    .get::<_, Option<String>>(4)
                    .map_err(err)?
                    .unwrap_or_default(),
            });
        }
        drop(rows);

        Ok(counter_names)
    }

    fn warnings(&self, run: &mut ProcessRun) -> Result<(), FormatError> {
        let (err, _) = self.errors();
        let mut statement = self
            .conn
            .prepare("SELECT message FROM kreplay_warning WHERE guid = ?1 ORDER BY id")
            .map_err(err)?;
        run.warnings = statement
            .query_map([self.guid], |row| {
                Ok(Warning {
                    message: row.get(0)?,
                })
            })
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        Ok(())
    }
}

/// The demangled name a kernel symbol's `extdata` keeps (`demangled_kernel_name`).
fn demangled_in(extdata: Option<&str>) -> Option<String> {
    let value: serde_json::Value = serde_json::from_str(extdata?).ok()?;
    Some(value.get("demangled_kernel_name")?.as_str()?.to_string())
}
