//! How many dispatch passes and replay costs each process of a database holds, and how many
//! records of each tracing kind: stored by the writer when it closes the file whole (a
//! `rocpd_metadata` row per process, tag [`TAG`], value
//! `{"guid":…,"passes":N,"costs":M,"traces":[markers,API calls,copies,allocations]}`), so that
//! opening the file reads a few rows rather than counting the two largest tables (on a cold
//! cache, reading every page of them: half a minute at 10^7 dispatches, issue 49). A file without
//! them (an older kreplay's, a process killed before it closed its file) is counted as before;
//! its traces' counts, which only say whether their blocks hold them all (`db::trace_blocks`),
//! are then unknown and the traces read from their rows.

use super::file::DbFile;
use super::pages::Layout;
use crate::error::FormatError;
use crate::run::ProcessRun;
use rusqlite::{params, Connection, OptionalExtension};
use std::path::Path;

/// The `rocpd_metadata` tag of a process's counts.
const TAG: &str = "kreplay_record_counts";

/// Dispatch passes and replay costs one process's rows hold.
pub(super) type Counts = (usize, usize);

/// Records of each tracing kind one process's rows hold, in [`crate::run::TraceKind::ALL`]'s order.
pub(super) type TraceCounts = [usize; 4];

/// A count row's value.
fn value(guid: &str, (passes, costs): Counts, traces: Option<TraceCounts>) -> String {
    let mut value = serde_json::json!({ "guid": guid, "passes": passes, "costs": costs });
    if let Some(traces) = traces {
        value["traces"] = serde_json::json!(traces);
    }
    value.to_string()
}

/// Stores `counts` (each process's, in the order the processes were written) in the file being
/// written, after its last rows.
pub(super) fn store(
    db: &DbFile,
    counts: &[(String, Counts, TraceCounts)],
) -> Result<(), FormatError> {
    let sql = db
        .names
        .sql("INSERT INTO rocpd_metadata (tag, value) VALUES (?1, ?2)");
    for (guid, counts, traces) in counts {
        db.conn
            .execute(&sql, params![TAG, value(guid, *counts, Some(*traces))])
            .map_err(|e| db.err(e))?;
    }
    Ok(())
}

/// Stores the counts of `processes` in the copy being written at `metadata` (its physical
/// `rocpd_metadata` table) unless the copy has them already (a file copied whole with them), as
/// the row-by-row writer would store them.
pub(super) fn store_copied(
    conn: &Connection,
    metadata: &str,
    processes: &[&ProcessRun],
) -> rusqlite::Result<()> {
    let present: Option<i64> = conn
        .query_row(
            &format!(r#"SELECT 1 FROM main."{metadata}" WHERE tag = ?1 LIMIT 1"#),
            [TAG],
            |r| r.get(0),
        )
        .optional()?;
    if present.is_some() {
        return Ok(());
    }
    let mut insert = conn.prepare(&format!(
        r#"INSERT INTO main."{metadata}" (tag, value) VALUES (?1, ?2)"#
    ))?;
    for process in processes {
        let counts = (process.dispatch_count(), process.cost_count());
        let traces = process.trace_counts();
        insert.execute(params![TAG, value(&process.guid(), counts, traces)])?;
    }
    Ok(())
}

/// The dispatch-pass table of `layout`.
fn pass_table(layout: Layout) -> &'static str {
    match layout {
        Layout::RowPerPass => "rocpd_kernel_dispatch",
        Layout::PassTables => "kreplay_dispatch_pass",
    }
}

/// How many passes and costs the process `guid` of `conn` holds: its stored counts where the
/// file has them and they still describe it, counted otherwise; and its records of each tracing
/// kind where the file stores them and they still describe it. `alone`: it is the file's only
/// process (every row is its own).
pub(super) fn count(
    conn: &Connection,
    path: &Path,
    layout: Layout,
    guid: &str,
    alone: bool,
) -> Result<(Counts, Option<TraceCounts>), FormatError> {
    let err = |e| FormatError::sqlite(path, e);
    if let Some(counts) = stored(conn, layout, guid).map_err(err)? {
        return Ok(counts);
    }
    let count = |table: &str| -> Result<usize, FormatError> {
        let rows: rusqlite::Result<i64> = match alone {
            // SQLite counts the table's pages without reading the rows (a quarter of the time).
            true => conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |row| {
                row.get(0)
            }),
            false => conn.query_row(
                &format!("SELECT COUNT(*) FROM {table} WHERE guid = ?1"),
                [guid],
                |row| row.get(0),
            ),
        };
        rows.map(|n| n as usize).map_err(err)
    };
    Ok((
        (count(pass_table(layout))?, count("kreplay_replay_cost")?),
        None,
    ))
}

/// The stored counts of `guid`, when the file has a count row for each of its processes and
/// they add up to the tables' last row ids: the writer's rows have ids 1, 2, … with none
/// removed, so rows added since (or a count row that lies) make them differ. None otherwise;
/// the traces' counts likewise (the markers' and API calls' rows are those of `rocpd_region` and
/// `rocpd_sample`, the copies' and allocations' those of their tables).
fn stored(
    conn: &Connection,
    layout: Layout,
    guid: &str,
) -> rusqlite::Result<Option<(Counts, Option<TraceCounts>)>> {
    if !layout.is_current() {
        return Ok(None);
    }
    let mut statement = conn.prepare("SELECT value FROM rocpd_metadata WHERE tag = ?1")?;
    let values = statement
        .query_map([TAG], |r| r.get::<_, String>(0))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    if values.is_empty() {
        return Ok(None);
    }
    let mut rows = Vec::with_capacity(values.len());
    for text in &values {
        let parsed = serde_json::from_str::<serde_json::Value>(text).ok();
        let field = |key| parsed.as_ref()?.get(key)?.as_u64();
        let guid = parsed.as_ref().and_then(|v| v.get("guid")?.as_str());
        let traces = parsed
            .as_ref()
            .and_then(|v| serde_json::from_value::<TraceCounts>(v.get("traces")?.clone()).ok());
        match (guid, field("passes"), field("costs")) {
            (Some(g), Some(p), Some(c)) => rows.push((g.to_string(), p, c, traces)),
            _ => return Ok(None),
        }
    }
    let processes: i64 =
        conn.query_row("SELECT COUNT(*) FROM rocpd_info_process", [], |r| r.get(0))?;
    let last = |table: &str| -> rusqlite::Result<u64> {
        conn.query_row(
            &format!("SELECT COALESCE(MAX(id), 0) FROM {table}"),
            [],
            |r| r.get::<_, i64>(0),
        )
        .map(|id| id as u64)
    };
    let (passes, costs) = rows
        .iter()
        .fold((0u64, 0u64), |(p, c), row| (p + row.1, c + row.2));
    let whole = rows.len() as i64 == processes
        && passes == last(pass_table(layout))?
        && costs == last("kreplay_replay_cost")?;
    let traces_whole = match rows.iter().map(|row| row.3).collect::<Option<Vec<_>>>() {
        Some(traces) => {
            let sum = |kinds: &[usize]| -> u64 {
                traces
                    .iter()
                    .map(|t| kinds.iter().map(|k| t[*k] as u64).sum::<u64>())
                    .sum()
            };
            sum(&[0, 1]) == last("rocpd_region")? + last("rocpd_sample")?
                && sum(&[2]) == last("rocpd_memory_copy")?
                && sum(&[3]) == last("rocpd_memory_allocate")?
        }
        None => false,
    };
    Ok(rows
        .into_iter()
        .find(|row| whole && row.0 == guid)
        .map(|(_, p, c, traces)| ((p as usize, c as usize), traces.filter(|_| traces_whole))))
}
