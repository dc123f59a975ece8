//! One stored file's rows appended to a database merged from several (`db::bulk`): each table's
//! rows copied by SQLite with their ids moved past the rows already there, and every column that
//! refers to another table's rows moved with that table (`extdata` is copied as it is: kreplay
//! keeps no row id there, an argument's `{}`). An untraced file then has
//! the ids the row-by-row writer gives when it writes the files' processes one after another; a
//! traced file's rows keep the order they were recorded in (as `db::bulk` copies one file), the
//! trace tables' references moved like the dispatches'. Taken only where that holds (else the
//! caller writes the run row by row): the file's ids are 1, 2, ... in each table, and its process
//! and thread rows have their pid and tid as id (so the `pid` and `tid` columns of every table,
//! the traces' too, keep theirs) and no earlier file has them.

use super::bulk::column;
use crate::run::ProcessRun;
use crate::schema;
use rusqlite::{params, Connection};
use std::collections::HashMap;

/// The tables a file's rows are appended to with moved ids, each with its columns that hold a
/// row id of another table (named by its base name). `nid`, `pid` and `tid` are handled apart.
const MOVED: &[(&str, &[(&str, &str)])] = &[
    ("rocpd_string", &[]),
    ("rocpd_info_agent", &[]),
    ("rocpd_info_pmc", &[("agent_id", "rocpd_info_agent")]),
    (
        "rocpd_info_kernel_symbol",
        &[("code_object_id", "rocpd_info_code_object")],
    ),
    ("rocpd_event", &[("category_id", "rocpd_string")]),
    (
        "rocpd_pmc_event",
        &[("event_id", "rocpd_event"), ("pmc_id", "rocpd_info_pmc")],
    ),
    (
        "rocpd_kernel_dispatch",
        &[
            ("agent_id", "rocpd_info_agent"),
            ("kernel_id", "rocpd_info_kernel_symbol"),
            ("queue_id", "rocpd_info_queue"),
            ("stream_id", "rocpd_info_stream"),
            ("region_name_id", "rocpd_string"),
            ("event_id", "rocpd_event"),
        ],
    ),
    ("rocpd_info_queue", &[]),
    ("rocpd_info_stream", &[]),
    (
        "rocpd_info_code_object",
        &[("agent_id", "rocpd_info_agent")],
    ),
    ("kreplay_replay_cost", &[]),
    (
        "kreplay_dispatch_pass",
        &[("dispatch_row", "rocpd_kernel_dispatch")],
    ),
    (
        "kreplay_pass_pmc",
        &[
            ("pass_id", "kreplay_dispatch_pass"),
            ("pmc_id", "rocpd_info_pmc"),
        ],
    ),
    ("kreplay_warning", &[]),
    // The traces (`db::markers`, `db::api`, `db::memory`).
    ("rocpd_track", &[("name_id", "rocpd_string")]),
    ("rocpd_arg", &[("event_id", "rocpd_event")]),
    (
        "rocpd_region",
        &[("name_id", "rocpd_string"), ("event_id", "rocpd_event")],
    ),
    (
        "rocpd_sample",
        &[("track_id", "rocpd_track"), ("event_id", "rocpd_event")],
    ),
    (
        "rocpd_memory_copy",
        &[
            ("name_id", "rocpd_string"),
            ("dst_agent_id", "rocpd_info_agent"),
            ("src_agent_id", "rocpd_info_agent"),
            ("queue_id", "rocpd_info_queue"),
            ("stream_id", "rocpd_info_stream"),
            ("region_name_id", "rocpd_string"),
            ("event_id", "rocpd_event"),
        ],
    ),
    (
        "rocpd_memory_allocate",
        &[
            ("agent_id", "rocpd_info_agent"),
            ("queue_id", "rocpd_info_queue"),
            ("stream_id", "rocpd_info_stream"),
            ("event_id", "rocpd_event"),
        ],
    ),
];

/// The tables whose rows keep their ids: a process's is its pid, a thread's its tid.
const KEPT: &[(&str, &str)] = &[("rocpd_info_process", "pid"), ("rocpd_info_thread", "tid")];

/// A table's name in a file of uuid `uuid`.
fn physical(table: &str, uuid: &str) -> String {
    match schema::ROCPD_TABLES.contains(&table) {
        true => format!("{table}{uuid}"),
        false => table.to_string(),
    }
}

/// Appends the rows of the file attached as `src` (uuid `old`; its processes `processes`) to the
/// database (uuid `new`) and detaches it: Ok(false), nothing appended, when the file is not in
/// the form this handles.
pub(super) fn append_rows(
    conn: &Connection,
    processes: &[ProcessRun],
    old: &str,
    new: &str,
) -> rusqlite::Result<bool> {
    let count = |sql: String| conn.query_row(&sql, [], |r| r.get::<_, i64>(0));
    for (table, id) in KEPT {
        let (src, main) = (physical(table, old), physical(table, new));
        let moved = count(format!(
            r#"SELECT COUNT(*) FROM src."{src}" WHERE id != {id}"#
        ))?;
        let taken = count(format!(
            r#"SELECT COUNT(*) FROM main."{main}" WHERE id IN (SELECT id FROM src."{src}")"#
        ))?;
        if moved != 0 || taken != 0 {
            return Ok(false);
        }
    }
    let mut offsets: HashMap<&str, i64> = HashMap::new();
    // The tables the file has rows in: an insert of none would still give the table a counter.
    let mut filled: Vec<&str> = Vec::new();
    let tables = MOVED
        .iter()
        .map(|(t, _)| *t)
        .chain(KEPT.iter().map(|(t, _)| *t));
    for table in tables {
        if count(format!(
            r#"SELECT COUNT(*) FROM src."{}""#,
            physical(table, old)
        ))? != 0
        {
            filled.push(table);
        }
    }
    for (table, _) in MOVED {
        let src = physical(table, old);
        // Ids 1, 2, ..., and SQLite's counter at the last (an ignored insert moves it on).
        let dense = count(format!(
            r#"SELECT COUNT(*) = COALESCE(MAX(id), 0) AND COUNT(*) = COALESCE(
               (SELECT seq FROM src.sqlite_sequence WHERE name = '{src}'), 0) FROM src."{src}""#
        ))?;
        if dense != 1 {
            return Ok(false);
        }
        let main = physical(table, new);
        let next: i64 = conn.query_row(
            "SELECT COALESCE((SELECT seq FROM main.sqlite_sequence WHERE name = ?1), 0)",
            [&main],
            |r| r.get(0),
        )?;
        offsets.insert(table, next);
    }
    conn.execute_batch("BEGIN")?;
    let nodes = append_nodes(conn, old, new)?;
    let mut sql = String::new();
    for (table, _) in KEPT.iter().filter(|(t, _)| filled.contains(t)) {
        sql.push_str(&insert_sql(
            conn,
            table,
            old,
            new,
            &nodes,
            None,
            &[],
            &offsets,
        )?);
    }
    for (table, references) in MOVED.iter().filter(|(t, _)| filled.contains(t)) {
        sql.push_str(&insert_sql(
            conn,
            table,
            old,
            new,
            &nodes,
            Some(offsets[table]),
            references,
            &offsets,
        )?);
    }
    sql.push_str(&blocks_sql(conn, &offsets)?);
    conn.execute_batch(&sql)?;
    let metadata = physical("rocpd_metadata", new);
    for process in processes {
        conn.execute(
            &format!(r#"DELETE FROM main."{metadata}" WHERE tag = 'cache_control'"#),
            [],
        )?;
        conn.execute(
            &format!(r#"INSERT INTO main."{metadata}" (tag, value) VALUES ('cache_control', ?1), ('guid', ?2)"#),
            params![process.process.cache_control.as_str(), process.guid()],
        )?;
    }
    conn.execute_batch("COMMIT; DETACH DATABASE src;")?;
    Ok(true)
}

/// `INSERT INTO main.kreplay_record_block SELECT ... FROM src.kreplay_record_block` (`db::blocks`):
/// each block's rows moved with their table (passes or costs by its kind), the counter rows it
/// names with `rocpd_info_pmc` (its `pmc_base`); nothing where the file has no blocks.
fn blocks_sql(conn: &Connection, offsets: &HashMap<&str, i64>) -> rusqlite::Result<String> {
    let has_blocks: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('kreplay_record_block', 'src') WHERE name = 'pmc_base'",
        [],
        |r| r.get(0),
    )?;
    if !has_blocks {
        return Ok(String::new());
    }
    let moved = |column: &str| {
        format!(
            "{column} + CASE kind WHEN {} THEN {} ELSE {} END",
            super::blocks::PASSES,
            offsets["kreplay_dispatch_pass"],
            offsets["kreplay_replay_cost"]
        )
    };
    Ok(format!(
        r#"INSERT INTO main.kreplay_record_block (guid, kind, first_row, last_row, "count", pmc_base, data)
           SELECT guid, kind, {}, {}, "count", pmc_base + {}, data
           FROM src.kreplay_record_block WHERE kind IN ({}, {}) ORDER BY id;"#,
        moved("first_row"),
        moved("last_row"),
        offsets["rocpd_info_pmc"],
        super::blocks::PASSES,
        super::blocks::COSTS
    ))
}

/// Inserts the file's nodes the database lacks, as the row-by-row writer does (an insert, ignored
/// when the host has its row, for each process: each moves SQLite's counter on), and returns
/// `CASE nid ... END`, which gives a row of the file its node's id in the database.
fn append_nodes(conn: &Connection, old: &str, new: &str) -> rusqlite::Result<String> {
    let (src, main) = (
        physical("rocpd_info_node", old),
        physical("rocpd_info_node", new),
    );
    let columns = r#""guid", "hash", "machine_id", "system_name", "hostname", "release", "version", "hardware_name", "domain_name""#;
    let processes: Vec<i64> = column(
        conn,
        &format!(
            r#"SELECT nid FROM src."{}" ORDER BY id"#,
            physical("rocpd_info_process", old)
        ),
        [],
    )?;
    for nid in processes {
        conn.execute(
            &format!(
                r#"INSERT OR IGNORE INTO main."{main}" ({columns}) SELECT {columns} FROM src."{src}" WHERE id = ?1"#
            ),
            [nid],
        )?;
    }
    let mut statement = conn.prepare(&format!(
        r#"SELECT S.id, M.id FROM src."{src}" S JOIN main."{main}" M ON M.hash = S.hash"#
    ))?;
    let pairs = statement
        .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))?
        .collect::<rusqlite::Result<Vec<_>>>()?;
    let mut case = String::from("CASE nid");
    for (from, to) in pairs {
        case.push_str(&format!(" WHEN {from} THEN {to}"));
    }
    case.push_str(" END");
    Ok(case)
}

/// `INSERT INTO main.table SELECT ... FROM src.table`: its ids moved by `offset` (kept when
/// None), `nid` given by `nodes`, each of `references` moved with its table (0 stays 0: none).
#[allow(clippy::too_many_arguments)]
fn insert_sql(
    conn: &Connection,
    table: &str,
    old: &str,
    new: &str,
    nodes: &str,
    offset: Option<i64>,
    references: &[(&str, &str)],
    offsets: &HashMap<&str, i64>,
) -> rusqlite::Result<String> {
    let src = physical(table, old);
    let names: Vec<String> = column(
        conn,
        "SELECT name FROM pragma_table_info(?1, 'src') ORDER BY cid",
        [&src],
    )?;
    let values: Vec<String> = names
        .iter()
        .map(|name| {
            let quoted = format!(r#""{name}""#);
            match (name.as_str(), offset) {
                ("id", Some(offset)) => format!("id + {offset}"),
                ("nid", _) => nodes.to_string(),
                _ => match references.iter().find(|(column, _)| column == name) {
                    Some((_, to)) => format!(
                        "CASE WHEN {quoted} = 0 THEN 0 ELSE {quoted} + {} END",
                        offsets[to]
                    ),
                    None => quoted,
                },
            }
        })
        .collect();
    let columns: Vec<String> = names.iter().map(|n| format!(r#""{n}""#)).collect();
    Ok(format!(
        r#"INSERT INTO main."{}" ({}) SELECT {} FROM src."{src}" ORDER BY id;"#,
        physical(table, new),
        columns.join(", "),
        values.join(", ")
    ))
}
