//! Reading kreplay's databases back into [`RunData`](crate::run::RunData): every process of
//! every file, with its records, in the order written.

use super::file::{has_column, has_table, PLACEHOLDER_EXTDATA};
use crate::error::FormatError;
use crate::records::*;
use crate::run::{ProcessRun, RunData};
use crate::schema;
use rusqlite::{Connection, OpenFlags, OptionalExtension};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Reads and merges kreplay databases. Every process of every file is kept, in file order; a
/// process found twice (the same file given twice) is kept once.
pub fn read_databases(paths: &[PathBuf]) -> Result<RunData, FormatError> {
    let mut run = RunData::default();
    let mut seen = HashSet::new();
    for path in paths {
        for process in read_database(path)? {
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
    let conn = Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_WRITE)
        .or_else(|_| Connection::open_with_flags(path, OpenFlags::SQLITE_OPEN_READ_ONLY))
        .map_err(|e| FormatError::sqlite(path, e))?;
    conn.busy_timeout(std::time::Duration::from_secs(10))
        .map_err(|e| FormatError::sqlite(path, e))?;
    Ok(conn)
}

/// Reads every process of one database.
pub fn read_database(path: &Path) -> Result<Vec<ProcessRun>, FormatError> {
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
    let mut processes = Vec::with_capacity(heads.len());
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
        processes.push(read_process(&conn, path, layout, &guid, process)?);
    }
    Ok(processes)
}

fn is_placeholder(extdata: &Option<String>) -> bool {
    extdata.as_deref() == Some(PLACEHOLDER_EXTDATA)
}

fn json_field<T: serde::de::DeserializeOwned>(extdata: &Option<String>, key: &str) -> Option<T> {
    let value: serde_json::Value = serde_json::from_str(extdata.as_deref()?).ok()?;
    serde_json::from_value(value.get(key)?.clone()).ok()
}

/// Where a file keeps its dispatch passes.
#[derive(Clone, Copy)]
enum Layout {
    /// Version 3: one `rocpd_kernel_dispatch` row per pass, its values on the pass's event.
    RowPerPass,
    /// Version 4: one row per dispatch; the passes in `kreplay_dispatch_pass`, their values in
    /// `kreplay_pass_pmc`.
    PassTables,
}

impl Layout {
    fn of_version(conn: &Connection, path: &Path, version: &str) -> Result<Layout, FormatError> {
        if version == "3" {
            return Ok(Layout::RowPerPass);
        }
        for table in ["kreplay_dispatch_pass", "kreplay_pass_pmc"] {
            if !has_table(conn, table).map_err(|e| FormatError::sqlite(path, e))? {
                return Err(FormatError::NotKreplayDatabase {
                    path: path.to_path_buf(),
                    table,
                });
            }
        }
        Ok(Layout::PassTables)
    }

    /// Counter values: (pass key, counter row, value), the key being what [`Self::passes`]
    /// returns last.
    fn values_sql(self) -> &'static str {
        match self {
            Layout::RowPerPass => {
                "SELECT event_id, pmc_id, value FROM rocpd_pmc_event WHERE guid = ?1 ORDER BY id"
            }
            Layout::PassTables => {
                "SELECT pass_id, pmc_id, value FROM kreplay_pass_pmc WHERE guid = ?1 ORDER BY id"
            }
        }
    }

    /// Every pass with the columns [`ProcessReader::dispatches`] reads, in the order written.
    fn passes_sql(self) -> &'static str {
        match self {
            Layout::RowPerPass => {
                r#"SELECT K.dispatch_id, K.replay_pass, E.correlation_id, K.agent_id,
                   ST.cuda_stream, P.pid, T.tid,
                   K.kernel_id, K.grid_size_x, K.grid_size_y, K.grid_size_z, K.workgroup_size_x,
                   K.workgroup_size_y, K.workgroup_size_z, K.extdata, K."start", K."end", K.event_id
                   FROM rocpd_kernel_dispatch K LEFT JOIN rocpd_event E ON E.id = K.event_id
                   LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id
                   LEFT JOIN rocpd_info_process P ON P.id = K.pid
                   LEFT JOIN rocpd_info_thread T ON T.id = K.tid
                   WHERE K.guid = ?1 ORDER BY K.id"#
            }
            Layout::PassTables => {
                r#"SELECT K.dispatch_id, DP.replay_pass, E.correlation_id, K.agent_id,
                   ST.cuda_stream, P.pid, T.tid,
                   K.kernel_id, K.grid_size_x, K.grid_size_y, K.grid_size_z, K.workgroup_size_x,
                   K.workgroup_size_y, K.workgroup_size_z, K.extdata, DP."start", DP."end", DP.id
                   FROM kreplay_dispatch_pass DP JOIN rocpd_kernel_dispatch K ON K.id = DP.dispatch_row
                   LEFT JOIN rocpd_event E ON E.id = K.event_id
                   LEFT JOIN rocpd_info_stream ST ON ST.id = K.stream_id
                   LEFT JOIN rocpd_info_process P ON P.id = K.pid
                   LEFT JOIN rocpd_info_thread T ON T.id = K.tid
                   WHERE DP.guid = ?1 ORDER BY DP.id"#
            }
        }
    }
}

fn read_process(
    conn: &Connection,
    path: &Path,
    layout: Layout,
    guid: &str,
    process: ProcessInfo,
) -> Result<ProcessRun, FormatError> {
    let reader = ProcessReader {
        conn,
        path,
        layout,
        guid,
    };
    let mut run = ProcessRun::new(process);
    let agent_ids = reader.agents(&mut run)?;
    let kernel_ids = reader.kernels(&mut run)?;
    super::read_code_objects::read_code_objects(conn, path, guid, &agent_ids, &mut run)?;
    let counter_names = reader.counters(&mut run)?;
    let values = reader.values(&counter_names)?;
    reader.dispatches(&mut run, &agent_ids, &kernel_ids, values)?;
    reader.costs(&mut run)?;
    reader.warnings(&mut run)?;
    run.markers = super::read_markers::markers(conn, path, guid)?;
    run.api_calls = super::read_api::api_calls(conn, path, guid)?;
    run.copies = super::read_memory::copies(conn, path, guid)?;
    run.allocations = super::read_memory::allocations(conn, path, guid)?;
    Ok(run)
}

/// One process's rows of one database (`guid`), table by table.
struct ProcessReader<'a> {
    conn: &'a Connection,
    path: &'a Path,
    layout: Layout,
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
                demangled_name: row
                    .get::<_, Option<String>>(3)
                    .map_err(err)?
                    .unwrap_or_default(),
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
    fn counters(&self, run: &mut ProcessRun) -> Result<HashMap<i64, String>, FormatError> {
        let (err, _) = self.errors();
        let mut counter_names: HashMap<i64, String> = HashMap::new();
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
            counter_names.insert(row_id, name.clone());
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

    /// Counter values by pass (its event, or its `kreplay_dispatch_pass` row), in the order
    /// they were written.
    fn values(
        &self,
        counter_names: &HashMap<i64, String>,
    ) -> Result<HashMap<i64, Vec<CounterSample>>, FormatError> {
        let (err, corrupt) = self.errors();
        let mut values: HashMap<i64, Vec<CounterSample>> = HashMap::new();
        let mut statement = self.conn.prepare(self.layout.values_sql()).map_err(err)?;
        let mut rows = statement.query([self.guid]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let event_id: Option<i64> = row.get(0).map_err(err)?;
            let pmc_id: i64 = row.get(1).map_err(err)?;
            let value: Option<f64> = row.get(2).map_err(err)?;
            let name = counter_names.get(&pmc_id).ok_or_else(|| {
                corrupt(format!(
                    "rocpd_pmc_event refers to unknown counter row {pmc_id}"
                ))
            })?;
            if let Some(event_id) = event_id {
                values.entry(event_id).or_default().push(CounterSample {
                    name: name.clone(),
                    // SQLite stores NaN as NULL; we never write NULL otherwise.
                    value: value.unwrap_or(f64::NAN),
                });
            }
        }
        drop(rows);

        Ok(values)
    }

    /// The dispatch passes, each with its counter values.
    fn dispatches(
        &self,
        run: &mut ProcessRun,
        agent_ids: &HashMap<i64, u64>,
        kernel_ids: &HashMap<i64, u64>,
        mut values: HashMap<i64, Vec<CounterSample>>,
    ) -> Result<(), FormatError> {
        let (err, corrupt) = self.errors();
        let mut statement = self.conn.prepare(self.layout.passes_sql()).map_err(err)?;
        let mut rows = statement.query([self.guid]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let int = |index| -> Result<i64, FormatError> {
                Ok(row.get::<_, Option<i64>>(index).map_err(err)?.unwrap_or(0))
            };
            let agent_row = int(3)?;
            let kernel_row = int(7)?;
            let block = [int(11)? as u32, int(12)? as u32, int(13)? as u32];
            // The database counts the grid in work-items; the record counts blocks.
            let grid_threads = [int(8)? as u64, int(9)? as u64, int(10)? as u64];
            let mut grid = [0u32; 3];
            for axis in 0..3 {
                grid[axis] = match block[axis] {
                    0 => 0,
                    threads_per_block => (grid_threads[axis] / u64::from(threads_per_block)) as u32,
                };
            }
            let extdata: Option<String> = row.get(14).map_err(err)?;
            let event_id: Option<i64> = row.get(17).map_err(err)?;
            run.dispatches.push(DispatchRecord {
                dispatch_id: int(0)? as u64,
                replay_pass: row.get::<_, Option<u32>>(1).map_err(err)?,
                correlation_id: int(2)? as u64,
                agent_id: *agent_ids.get(&agent_row).ok_or_else(|| {
                    corrupt(format!(
                        "a dispatch refers to unknown agent row {agent_row}"
                    ))
                })?,
                stream_id: row
                    .get::<_, Option<i64>>(4)
                    .map_err(err)?
                    .ok_or_else(|| corrupt("a dispatch refers to an unknown stream row".into()))?
                    as u64,
                // The dispatch's process is the process being read.
                pid: run.process.pid,
                tid: row
                    .get::<_, Option<i64>>(6)
                    .map_err(err)?
                    .ok_or_else(|| corrupt("a dispatch refers to an unknown thread row".into()))?
                    as u64,
                kernel_id: *kernel_ids.get(&kernel_row).ok_or_else(|| {
                    corrupt(format!(
                        "a dispatch refers to unknown kernel row {kernel_row}"
                    ))
                })?,
                grid,
                block,
                dynamic_shared_bytes: json_field(&extdata, "dynamic_shared_bytes").unwrap_or(0),
                start_ns: int(15)? as u64,
                end_ns: int(16)? as u64,
                counters: event_id
                    .and_then(|id| values.remove(&id))
                    .unwrap_or_default(),
                ranges: json_field(&extdata, "ranges").unwrap_or_default(),
            });
        }
        drop(rows);

        Ok(())
    }

    /// kreplay's replay cost rows.
    fn costs(&self, run: &mut ProcessRun) -> Result<(), FormatError> {
        let (err, corrupt) = self.errors();
        // Databases written before the timing execution's column existed read as 0 there.
        let timing =
            if has_column(self.conn, "kreplay_replay_cost", "timing_execution_ns").map_err(err)? {
                "timing_execution_ns"
            } else {
                "0"
            };
        let mut statement = self
            .conn
            .prepare(&format!(
                r#"SELECT dispatch_id, agent_id, outcome, passes, bytes_tracked, bytes_snapshotted,
                   bytes_restored, staging, drain_ns, snapshot_ns, pass_ns, restore_ns, cache,
                   sm_clock_min_mhz, sm_clock_max_mhz, memory_clock_min_mhz, memory_clock_max_mhz,
                   {timing}
                   FROM kreplay_replay_cost WHERE guid = ?1 ORDER BY id"#
            ))
            .map_err(err)?;
        let mut rows = statement.query([self.guid]).map_err(err)?;
        while let Some(row) = rows.next().map_err(err)? {
            let int = |index| -> Result<u64, FormatError> {
                Ok(row.get::<_, i64>(index).map_err(err)? as u64)
            };
            let outcome_text: String = row.get(2).map_err(err)?;
            let outcome = parse_name(&outcome_text)
                .ok_or_else(|| corrupt(format!("unknown replay outcome {outcome_text:?}")))?;
            let staging_text: String = row.get(7).map_err(err)?;
            let staging = parse_name(&staging_text)
                .ok_or_else(|| corrupt(format!("unknown staging {staging_text:?}")))?;
            let cache_text: String = row.get(12).map_err(err)?;
            let cache = parse_name(&cache_text)
                .ok_or_else(|| corrupt(format!("unknown cache state {cache_text:?}")))?;
            let mhz = |index| -> Result<u32, FormatError> { row.get(index).map_err(err) };
            let pass_ns_text: String = row.get(10).map_err(err)?;
            let pass_ns = serde_json::from_str(&pass_ns_text).map_err(|e| {
                corrupt(format!(
                    "pass_ns {pass_ns_text:?} is not a list of integers: {e}"
                ))
            })?;
            run.costs.push(ReplayCost {
                dispatch_id: int(0)?,
                agent_id: int(1)?,
                outcome,
                passes: row.get(3).map_err(err)?,
                bytes_tracked: int(4)?,
                bytes_snapshotted: int(5)?,
                bytes_restored: int(6)?,
                staging,
                drain_ns: int(8)?,
                snapshot_ns: int(9)?,
                pass_ns,
                restore_ns: int(11)?,
                timing_execution_ns: int(17)?,
                cache,
                sm_clock_mhz: [mhz(13)?, mhz(14)?],
                memory_clock_mhz: [mhz(15)?, mhz(16)?],
            });
        }
        drop(rows);

        Ok(())
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

/// A unit enum from the name the writers give it (`ReplayOutcome::as_str`, `Staging::as_str`,
/// which are the serde names), so every variant parses without a second list of them.
fn parse_name<T: serde::de::DeserializeOwned>(text: &str) -> Option<T> {
    serde_json::from_value(serde_json::Value::String(text.to_string())).ok()
}
