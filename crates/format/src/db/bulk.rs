//! A run that is the processes of stored databases as they were read, written as one database
//! by copying the files rather than re-inserting every record: one file whole (`kreplay convert
//! -f rocpd` of a run's output, `-f rocpd` of a one-process run) by the file system and renamed
//! (`db::bulk_file`; by SQLite, `INSERT INTO … SELECT` table by table, where a journal is beside
//! it), several appended one after another (`db::bulk_merge`: a run of several processes; its
//! large tables by pages, `db::btree`). The copy is the file as it was written, schema included (only its uuid is new,
//! where files are appended their ids moved past the earlier files', and `sqlite_sequence` lists
//! the tables in the order the copy filled them). It is taken only where that is the run, which
//! is checked first (anything else is written row by row, as before):
//! - every process is a stored one of the same file, in the file's order, the file has no other,
//!   and nothing was added to or changed in any since it was read (no record in memory), but for
//!   what the copy sets afterwards as the row-by-row writer writes it (the command line's
//!   additions: the sections and `--kernel-rename` in the process row, the counters'
//!   descriptions and units; its naming options `-M`/`-T`, which rename kernels and strings,
//!   make the run differ from the file);
//! - the file has this kreplay's schema and every agent, kernel and counter row is described;
//! - an untraced process's agents, kernels, code objects, counter rows and strings are in the
//!   file in the order the row-by-row writer gives them (not so when a dispatch came before the
//!   description of its kernel or agent: a placeholder row, or its string, came first). Its
//!   copy is then the row-by-row writer's file, row for row with the same ids.
//!
//! A traced process (markers, API calls, memory copies or allocations) is copied as recorded:
//! its trace rows share the event, string, thread, stream and agent ids (the CPU agent of
//! `db::memory`) with the dispatches' in the order the per-process writer met them, where the
//! row-by-row writer puts the dispatches' first and then each kind of trace in turn. Its copy
//! has the same rows as the row-by-row writer's, each referring to the same rows (what the views
//! and readers join), with ids in that other order; the order checks above would fail on it
//! (the strings of API functions and markers come among the kernels' and ranges') and guard
//! nothing a reader sees, so they are not asked. Both `-f rocpd` in the run and `kreplay
//! convert -f rocpd` of its output take the copy, so they agree, and convert of the output is
//! the output (issue 49: the row-by-row writer took 10-20 times longer on traced runs).

use super::file::{DbFile, Durability};
use super::pages::StoredProcess;
use super::process_rows::process_extdata;
use crate::error::FormatError;
use crate::naming::formatted_name;
use crate::run::{ProcessRun, RunData};
use crate::schema;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashSet;
use std::path::Path;

/// Writes `run` as a new database at `path` by copying its stored file's rows, when the run is
/// in the form this handles (see the module's notes): Ok(false) when it is not, leaving at `path`
/// a file the row-by-row writer replaces.
pub(super) fn copy_stored(run: &RunData, path: &Path) -> Result<bool, FormatError> {
    let Some(files) = unchanged_files(run) else {
        return Ok(false);
    };
    let mut db = DbFile::create(path, Durability::Output)?;
    let new = db.names.uuid().to_string();
    let whole = files.len() == 1;
    let mut merge = super::bulk_merge::Merge::default();
    for (stored, processes) in files {
        let Some(source) = stored.path.to_str() else {
            return Ok(false);
        };
        let old = match attached_uuid(&db.conn, source, stored) {
            Ok(Some(old)) if same_rows(&db.conn, processes, &old, &new).unwrap_or(false) => old,
            _ => return Ok(false),
        };
        if whole && super::bulk_file::can_copy(&stored.path, &old, &new) {
            db = copy_file(db, &stored.path, &old, &new)?;
        } else if whole {
            copy_rows(&db.conn, &old, &new).map_err(|e| db.err(e))?;
        } else if !super::bulk_merge::append_rows(
            &db.conn,
            processes,
            (&stored.path, &old, &new),
            &mut merge,
        )
        .map_err(|e| db.err(e))?
        {
            return Ok(false);
        }
        set_additions(&db.conn, processes, &new).map_err(|e| db.err(e))?;
    }
    let db = super::bulk_merge::append_paged(db, merge)?;
    let processes: Vec<&ProcessRun> = run.processes.iter().collect();
    super::record_counts::store_copied(&db.conn, &format!("rocpd_metadata{new}"), &processes)
        .map_err(|e| db.err(e))?;
    let DbFile { conn, path, .. } = db;
    conn.close()
        .map_err(|(_, e)| FormatError::sqlite(&path, e))?;
    Ok(true)
}

/// The stored files `run`'s processes were read from, each with its processes (a run of
/// consecutive ones), when every process was read from one and is unchanged since, with nothing
/// in memory that the file lacks; None otherwise, or when a file comes back after another.
fn unchanged_files(run: &RunData) -> Option<Vec<(&StoredProcess, &[ProcessRun])>> {
    let mut files: Vec<(&StoredProcess, &[ProcessRun])> = Vec::new();
    let mut first = 0;
    for (index, process) in run.processes.iter().enumerate() {
        let stored = process
            .stored
            .as_ref()?
            .0
            .as_any()?
            .downcast_ref::<StoredProcess>()?;
        if !unchanged(process, stored) {
            return None;
        }
        let same_file = |f: &StoredProcess| std::sync::Arc::ptr_eq(&f.conn, &stored.conn);
        if files.last().is_some_and(|(file, _)| same_file(file)) {
            let last = files.len() - 1;
            files[last].1 = &run.processes[first..=index];
        } else if files.iter().any(|(file, _)| same_file(file)) {
            return None;
        } else {
            first = index;
            files.push((stored, &run.processes[index..=index]));
        }
    }
    (!files.is_empty()).then_some(files)
}

fn unchanged(process: &ProcessRun, stored: &StoredProcess) -> bool {
    stored.layout.is_current()
        && stored.only_described
        && process.dispatches.is_empty()
        && process.costs.is_empty()
        && process.guid() == stored.guid
        && stored.fingerprint == Some(process.fingerprint())
        && process.markers.is_empty()
        && process.api_calls.is_empty()
        && process.copies.is_empty()
        && process.allocations.is_empty()
}

/// Attaches the stored file as `src` and returns its uuid, when it is still the file the run
/// was read from (its uuid, new for every file, is the one the run's connection reads).
fn attached_uuid(
    conn: &Connection,
    source: &str,
    stored: &StoredProcess,
) -> rusqlite::Result<Option<String>> {
    let uuid_sql = "SELECT value FROM rocpd_metadata WHERE tag = 'uuid'";
    let read: Option<String> = {
        let stored_conn = stored
            .conn
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        stored_conn
            .query_row(uuid_sql, [], |r| r.get(0))
            .optional()?
    };
    conn.execute("ATTACH DATABASE ?1 AS src", [source])?;
    let attached: Option<String> = conn
        .query_row(&uuid_sql.replace("FROM ", "FROM src."), [], |r| r.get(0))
        .optional()?;
    Ok(attached.filter(|a| read.as_ref() == Some(a) && super::bulk_file::is_uuid(a)))
}

/// Whether the attached file's rows are those the row-by-row writer would make of `processes`:
/// the same schema, exactly those processes in order, and each process's order-dependent rows in
/// the writer's order.
fn same_rows(
    conn: &Connection,
    processes: &[ProcessRun],
    old: &str,
    new: &str,
) -> rusqlite::Result<bool> {
    if schema_of(conn, "src", old, new)? != schema_of(conn, "main", new, new)? {
        return Ok(false);
    }
    let guids: Vec<String> = column(
        conn,
        &format!(r#"SELECT guid FROM src."rocpd_info_process{old}" ORDER BY id"#),
        [],
    )?;
    if guids != processes.iter().map(|p| p.guid()).collect::<Vec<_>>() {
        return Ok(false);
    }
    for process in processes {
        // A traced process's rows are in the order recorded (see the module's notes).
        if !process.has_traces() && !in_writer_order(conn, process, old)? {
            return Ok(false);
        }
    }
    Ok(true)
}

/// The schema's entries (type, name, SQL), `from` turned into `to` in names and SQL, sorted.
fn schema_of(
    conn: &Connection,
    db: &str,
    from: &str,
    to: &str,
) -> rusqlite::Result<Vec<(String, String, Option<String>)>> {
    let mut statement = conn.prepare(&format!("SELECT type, name, sql FROM {db}.sqlite_master"))?;
    let mut entries = statement
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?.replace(from, to),
                r.get::<_, Option<String>>(2)?
                    .map(|sql| sql.replace(from, to)),
            ))
        })?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    entries.sort();
    Ok(entries)
}

/// The first column of `sql`'s rows.
pub(super) fn column<T: rusqlite::types::FromSql>(
    conn: &Connection,
    sql: &str,
    params: impl rusqlite::Params,
) -> rusqlite::Result<Vec<T>> {
    let mut statement = conn.prepare(sql)?;
    let rows = statement.query_map(params, |r| r.get(0))?;
    rows.collect()
}

/// Whether the process's agents, kernels, code objects, counter rows and strings are in the
/// file as the row-by-row writer orders them: its descriptions first, in the run's order (each
/// counter a row per agent), then what the dispatches name (threads and streams, which both
/// writers add in the dispatches' order). Asked of untraced processes only (module notes).
fn in_writer_order(conn: &Connection, process: &ProcessRun, old: &str) -> rusqlite::Result<bool> {
    let guid = process.guid();
    let agents: Vec<Option<i64>> = column(
        conn,
        &format!(
            r#"SELECT absolute_index FROM src."rocpd_info_agent{old}" WHERE guid = ?1 ORDER BY id"#
        ),
        [&guid],
    )?;
    let kernels: Vec<Option<i64>> = column(
        conn,
        &format!(
            r#"SELECT kernel_object FROM src."rocpd_info_kernel_symbol{old}" WHERE guid = ?1 ORDER BY id"#
        ),
        [&guid],
    )?;
    let code_objects: Vec<i64> = column(
        conn,
        &format!(r#"SELECT id FROM src."rocpd_info_code_object{old}" WHERE guid = ?1"#),
        [&guid],
    )?;
    let strings: Vec<String> = column(
        conn,
        &format!(r#"SELECT string FROM src."rocpd_string{old}" WHERE guid = ?1 ORDER BY id"#),
        [&guid],
    )?;
    let mut statement = conn.prepare(&format!(
        r#"SELECT A.absolute_index, P.name FROM src."rocpd_info_pmc{old}" P
           LEFT JOIN src."rocpd_info_agent{old}" A ON A.id = P.agent_id
           WHERE P.guid = ?1 ORDER BY P.id"#
    ))?;
    let counter_rows = statement
        .query_map([&guid], |r| Ok((r.get::<_, Option<i64>>(0)?, r.get(1)?)))?
        .collect::<rusqlite::Result<Vec<(Option<i64>, String)>>>()?;
    let id = |value: u64| Some(value as i64);
    let mut expected_strings = vec![schema::CATEGORY_KERNEL_DISPATCH.to_string()];
    let mut seen: HashSet<&str> = HashSet::from([schema::CATEGORY_KERNEL_DISPATCH]);
    let (mangled, truncate) = (
        process.process.mangled_kernels,
        process.process.truncate_kernels,
    );
    for kernel in &process.kernels {
        let name = formatted_name(mangled, truncate, kernel);
        if seen.insert(name) {
            expected_strings.push(name.to_string());
        }
    }
    let expected_counter_rows: Vec<(Option<i64>, String)> = process
        .counters
        .iter()
        .flat_map(|counter| {
            let agents: Vec<Option<i64>> = match process.agents.is_empty() {
                true => vec![None],
                false => process.agents.iter().map(|a| id(a.agent_id)).collect(),
            };
            agents.into_iter().map(|a| (a, counter.name.clone()))
        })
        .collect();
    Ok(agents
        == process
            .agents
            .iter()
            .map(|a| id(a.agent_id))
            .collect::<Vec<_>>()
        && kernels
            == process
                .kernels
                .iter()
                .map(|k| id(k.kernel_id))
                .collect::<Vec<_>>()
        && code_objects.len() == process.code_objects.len()
        && strings == expected_strings
        && counter_rows == expected_counter_rows)
}

/// Gives the copied rows what the run holds beyond its file where a copy can carry it (what the
/// command line adds), as the row-by-row writer writes it: each process row's `extdata` (the
/// sections, `--kernel-rename`) and its counters' descriptions and units.
fn set_additions(conn: &Connection, processes: &[ProcessRun], new: &str) -> rusqlite::Result<()> {
    let mut process_row = conn.prepare(&format!(
        r#"UPDATE main."rocpd_info_process{new}" SET extdata = ?1 WHERE guid = ?2"#
    ))?;
    let mut counter_rows = conn.prepare(&format!(
        r#"UPDATE main."rocpd_info_pmc{new}" SET description = ?1, units = ?2 WHERE guid = ?3 AND name = ?4"#
    ))?;
    for process in processes {
        let guid = process.guid();
        process_row.execute(params![process_extdata(&process.process), guid])?;
        for counter in &process.counters {
            counter_rows.execute(params![
                counter.description,
                counter.unit,
                guid,
                counter.name
            ])?;
        }
    }
    Ok(())
}

/// The new database `db` (uuid `new`, the stored file attached) replaced by a copy of the
/// stored file at `source` (uuid `old`) renamed to `new` (`db::bulk_file`).
fn copy_file(db: DbFile, source: &Path, old: &str, new: &str) -> Result<DbFile, FormatError> {
    let DbFile { conn, names, path } = db;
    conn.execute_batch("DETACH DATABASE src")
        .and_then(|()| conn.close().map_err(|(_, e)| e))
        .map_err(|e| FormatError::sqlite(&path, e))?;
    let conn = super::bulk_file::copy_whole(source, &path, old, new)?;
    Ok(DbFile { conn, names, path })
}

/// Copies every table of the attached file into the new one (whose rows are only its own
/// `rocpd_metadata`), with SQLite's AUTOINCREMENT counters, and gives the copy the new file's
/// uuid.
fn copy_rows(conn: &Connection, old: &str, new: &str) -> rusqlite::Result<()> {
    // A table the stored file lacks (an older kreplay's: no record blocks) stays empty.
    let tables: Vec<String> = column(
        conn,
        "SELECT name FROM main.sqlite_master WHERE type = 'table' AND name != ?1
         AND replace(name, ?2, ?3) IN (SELECT name FROM src.sqlite_master WHERE type = 'table')
         ORDER BY name",
        ["sqlite_sequence", new, old],
    )?;
    let mut sql = String::from("BEGIN;");
    for table in &tables {
        let source = table.replace(new, old);
        sql.push_str(&format!(
            r#"DELETE FROM main."{table}"; INSERT INTO main."{table}" SELECT * FROM src."{source}";"#
        ));
    }
    sql.push_str(&format!(
        r#"DELETE FROM main.sqlite_sequence;
           INSERT INTO main.sqlite_sequence (name, seq) SELECT replace(name, '{old}', '{new}'), seq FROM src.sqlite_sequence;
           UPDATE main."rocpd_metadata{new}" SET value = '{new}' WHERE tag = 'uuid';
           COMMIT; DETACH DATABASE src;"#
    ));
    conn.execute_batch(&sql)
}
