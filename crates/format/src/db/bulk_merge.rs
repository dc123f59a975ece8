//! One stored file's rows appended to a database merged from several (`db::bulk`): each table's
//! rows copied with their ids moved past the rows already there, and every column that refers to
//! another table's rows moved with that table (`extdata` is copied as it is: kreplay keeps no row
//! id there, an argument's `{}`): the small tables by SQLite (`INSERT … SELECT`) as each file
//! comes, the large ones ([`PAGED`]: a dispatch's events, passes, counters and costs, the
//! traces) of every file at the end at the level of SQLite's pages (`db::btree`), by SQL where
//! that declines them. An untraced file then has the ids the row-by-row writer gives when it
//! writes the files' processes one after another; a traced file's rows keep the order they were
//! recorded in (as `db::bulk` copies one file), the trace tables' references moved like the
//! dispatches'. Taken only where that holds (else the caller writes the run row by row): the
//! file's ids are 1, 2, ... in each table, and its process and thread rows have their pid and
//! tid as id (so the `pid` and `tid` columns of every table, the traces' too, keep theirs) and
//! no earlier file has them.

use super::btree;
use super::bulk::column;
use super::file::DbFile;
use crate::error::FormatError;
use crate::run::ProcessRun;
use crate::schema;
use rusqlite::{params, Connection};
use std::collections::HashMap;
use std::path::Path;

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

/// The tables a run has millions of rows in, which a merge appends by pages (`db::btree`).
const PAGED: &[&str] = &[
    "rocpd_event",
    "rocpd_pmc_event",
    "rocpd_kernel_dispatch",
    "kreplay_replay_cost",
    "kreplay_dispatch_pass",
    "kreplay_pass_pmc",
    "rocpd_arg",
    "rocpd_region",
    "rocpd_sample",
    "rocpd_memory_copy",
    "rocpd_memory_allocate",
];

/// Several files being appended to a database: each moved table's rows so far (the next
/// file's id offset), and the [`PAGED`] tables' rows of each file, appended at the end.
#[derive(Default)]
pub(super) struct Merge {
    offsets: HashMap<&'static str, i64>,
    paged: Vec<Paged>,
}

/// A file's rows of a [`PAGED`] table: what `db::btree` needs, and the SQL that inserts them
/// where it cannot (with the file attached as `src`).
struct Paged {
    table: &'static str,
    part: btree::Part,
    sql: String,
}

/// Appends the rows of the file at `source`, attached as `src` (uuid `old`; its processes
/// `processes`), to the database (uuid `new`) and detaches it; the rows of its [`PAGED`]
/// tables are left to [`append_paged`]. Ok(false), nothing appended, when the file is not in
/// the form this handles.
pub(super) fn append_rows(
    conn: &Connection,
    processes: &[ProcessRun],
    (source, old, new): (&Path, &str, &str),
    merge: &mut Merge,
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
    // Each table's rows in the file: an insert of none would still give the table a counter.
    let mut rows: HashMap<&str, i64> = HashMap::new();
    let tables = MOVED
        .iter()
        .map(|(t, _)| *t)
        .chain(KEPT.iter().map(|(t, _)| *t));
    for table in tables {
        let n = count(format!(
            r#"SELECT COUNT(*) FROM src."{}""#,
            physical(table, old)
        ))?;
        rows.insert(table, n);
    }
    let filled = |table: &str| rows[table] != 0;
    for (table, _) in MOVED {
        let src = physical(table, old);
        // Ids 1, 2, ..., and SQLite's counter at the last (an ignored insert moves it on).
        // Asked apart: `COUNT(*)` alone counts a b-tree's cells page by page, without a step
        // per row.
        let last = count(format!(r#"SELECT COALESCE(MAX(id), 0) FROM src."{src}""#))?;
        let counter = count(format!(
            "SELECT COALESCE((SELECT seq FROM src.sqlite_sequence WHERE name = '{src}'), 0)"
        ))?;
        if last != rows[table] || counter != rows[table] {
            return Ok(false);
        }
    }
    let offsets: HashMap<&str, i64> = MOVED
        .iter()
        .map(|(t, _)| (*t, merge.offsets.get(t).copied().unwrap_or(0)))
        .collect();
    conn.execute_batch("BEGIN")?;
    let nodes = append_nodes(conn, old, new)?;
    let mut sql = String::new();
    for (table, _) in KEPT.iter().filter(|(t, _)| filled(t)) {
        sql.push_str(&insert_sql(
            conn,
            table,
            (old, new),
            &nodes,
            None,
            &[],
            &offsets,
        )?);
    }
    for (table, references) in MOVED.iter().filter(|(t, _)| filled(t)) {
        let insert = insert_sql(
            conn,
            table,
            (old, new),
            &nodes,
            Some(offsets[table]),
            references,
            &offsets,
        )?;
        match PAGED.iter().find(|paged| *paged == table) {
            // Pages are read from the file itself: not where commits are in a journal beside it
            // (a run whose writer was killed), which only SQLite's reading applies.
            Some(&paged) if !super::bulk_file::has_journal(source) => merge.paged.push(Paged {
                table: paged,
                part: part(
                    conn,
                    (source, old, new),
                    table,
                    rows[table],
                    &nodes,
                    references,
                    &offsets,
                )?,
                sql: insert,
            }),
            _ => sql.push_str(&insert),
        }
    }
    sql.push_str(&blocks_sql(conn, &offsets)?);
    conn.execute_batch(&sql)?;
    for (table, _) in MOVED {
        *merge.offsets.entry(table).or_insert(0) += rows[table];
    }
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

/// What `db::btree` needs of the attached file's rows of `table` (`rows` of them, moved by
/// `offsets`, `nid` by `nodes`, each of `references` with its table).
fn part(
    conn: &Connection,
    (source, old, new): (&Path, &str, &str),
    table: &str,
    rows: i64,
    nodes: &[(i64, i64)],
    references: &[(&str, &str)],
    offsets: &HashMap<&str, i64>,
) -> rusqlite::Result<btree::Part> {
    let src = physical(table, old);
    let names: Vec<String> = column(
        conn,
        "SELECT name FROM pragma_table_info(?1, 'src') ORDER BY cid",
        [&src],
    )?;
    let nodes: std::sync::Arc<[(i64, i64)]> = nodes.into();
    let moves = names
        .iter()
        .map(|name| match name.as_str() {
            "nid" => btree::Move::Map(std::sync::Arc::clone(&nodes)),
            name => match references.iter().find(|(column, _)| *column == name) {
                Some((_, to)) if offsets[to] != 0 => btree::Move::Add(offsets[to]),
                _ => btree::Move::Keep,
            },
        })
        .collect();
    let mut index_roots = Vec::new();
    for index in indexes(conn, &physical(table, new))? {
        index_roots.push(root_page(conn, "src", &index.replace(new, old))?);
    }
    Ok(btree::Part {
        path: source.to_path_buf(),
        root: root_page(conn, "src", &src)?,
        index_roots,
        rows,
        id_offset: offsets[table],
        moves,
    })
}

/// The root page of the table or index `name` of the database `db` (`main` or `src`).
fn root_page(conn: &Connection, db: &str, name: &str) -> rusqlite::Result<u32> {
    conn.query_row(
        &format!("SELECT rootpage FROM {db}.sqlite_master WHERE name = ?1"),
        [name],
        |r| r.get(0),
    )
}

/// The indexes of the database's table `table`, by name.
fn indexes(conn: &Connection, table: &str) -> rusqlite::Result<Vec<String>> {
    column(
        conn,
        "SELECT name FROM main.sqlite_master WHERE type = 'index' AND tbl_name = ?1 ORDER BY name",
        [table],
    )
}

/// Appends the [`PAGED`] tables' rows of every file appended (`db::btree`), else, where that
/// declines them, inserts them with SQL; then sets their AUTOINCREMENT counters.
pub(super) fn append_paged(db: DbFile, merge: Merge) -> Result<DbFile, FormatError> {
    if merge.paged.is_empty() {
        return Ok(db);
    }
    let new = db.names.uuid().to_string();
    let tables = paged_tables(&db.conn, &merge, &new).map_err(|e| db.err(e))?;
    let DbFile { conn, names, path } = db;
    conn.close()
        .map_err(|(_, e)| FormatError::sqlite(&path, e))?;
    let length = std::fs::metadata(&path)
        .map_err(|e| FormatError::io(&path, e))?
        .len();
    let written = btree::append(&path, &tables);
    if written.is_err() {
        // Back to the file SQLite left (the pages are appended, the roots written last).
        let file = std::fs::OpenOptions::new().write(true).open(&path);
        file.and_then(|f| f.set_len(length))
            .map_err(|e| FormatError::io(&path, e))?;
    }
    let conn = super::file::reopen(&path)?;
    let db = DbFile { conn, names, path };
    let sql = match written {
        Ok(()) => counters(&merge, &new),
        Err(_) => inserts(&merge),
    };
    db.conn.execute_batch(&sql).map_err(|e| db.err(e))?;
    Ok(db)
}

/// `db::btree`'s tables: each [`PAGED`] table with rows, its root page and its indexes' in the
/// database, and each file's rows of it.
fn paged_tables(
    conn: &Connection,
    merge: &Merge,
    new: &str,
) -> rusqlite::Result<Vec<btree::Table>> {
    let mut tables = Vec::new();
    for &table in PAGED {
        let parts: Vec<&Paged> = merge.paged.iter().filter(|p| p.table == table).collect();
        if parts.is_empty() {
            continue;
        }
        let name = physical(table, new);
        let mut indexes = Vec::new();
        for index in self::indexes(conn, &name)? {
            // The table column of each key column (the rowid, which follows them, is not one).
            let columns: Vec<i64> = column(
                conn,
                "SELECT cid FROM pragma_index_xinfo(?1, 'main') WHERE key ORDER BY seqno",
                [&index],
            )?;
            let columns = columns
                .into_iter()
                .map(|c| usize::try_from(c).unwrap_or(usize::MAX))
                .collect();
            indexes.push((root_page(conn, "main", &index)?, columns));
        }
        tables.push(btree::Table {
            root: root_page(conn, "main", &name)?,
            indexes,
            parts: parts.into_iter().map(|p| p.part.clone()).collect(),
        });
    }
    Ok(tables)
}

/// The AUTOINCREMENT counters of the tables written by pages: each at its last id.
fn counters(merge: &Merge, new: &str) -> String {
    let mut sql = String::from("BEGIN;");
    for &table in PAGED {
        if merge.paged.iter().any(|p| p.table == table) {
            sql.push_str(&format!(
                "INSERT INTO main.sqlite_sequence (name, seq) VALUES ('{}', {});",
                physical(table, new),
                merge.offsets[table]
            ));
        }
    }
    sql.push_str("COMMIT;");
    sql
}

/// The SQL that inserts every file's rows of the [`PAGED`] tables, each file attached in turn.
fn inserts(merge: &Merge) -> String {
    let mut sql = String::new();
    let mut files = merge.paged.iter().peekable();
    while let Some(first) = files.next() {
        let path = first.part.path.to_string_lossy().replace('\'', "''");
        sql.push_str(&format!(
            "ATTACH DATABASE '{path}' AS src; BEGIN; {}",
            first.sql
        ));
        while let Some(same) = files.next_if(|p| p.part.path == first.part.path) {
            sql.push_str(&same.sql);
        }
        sql.push_str("COMMIT; DETACH DATABASE src;");
    }
    sql
}

/// `INSERT INTO main.kreplay_record_block SELECT ... FROM src.kreplay_record_block` (`db::blocks`,
/// `db::trace_blocks`): each block's rows moved with their table (passes or costs by its kind,
/// the traces' with their events), the counter rows it names with `rocpd_info_pmc` (its
/// `pmc_base`); nothing where the file has no blocks. Read in id order (`+kind`: not by the
/// `(kind, last_row)` index, which would sort every block's bytes, 0.37 s against 0.06 s for a
/// 2.5M-dispatch file's 187 MB of blocks).
fn blocks_sql(conn: &Connection, offsets: &HashMap<&str, i64>) -> rusqlite::Result<String> {
    let has_blocks: bool = conn.query_row(
        "SELECT count(*) > 0 FROM pragma_table_info('kreplay_record_block', 'src') WHERE name = 'pmc_base'",
        [],
        |r| r.get(0),
    )?;
    if !has_blocks {
        return Ok(String::new());
    }
    let (passes, costs) = (super::blocks::PASSES, super::blocks::COSTS);
    let moved = |column: &str| {
        format!(
            "{column} + CASE kind WHEN {passes} THEN {} WHEN {costs} THEN {} ELSE {} END",
            offsets["kreplay_dispatch_pass"],
            offsets["kreplay_replay_cost"],
            offsets["rocpd_event"]
        )
    };
    let kinds: Vec<String> = [passes, costs]
        .into_iter()
        .chain(crate::run::TraceKind::ALL.map(super::trace_blocks::block_kind))
        .map(|kind| kind.to_string())
        .collect();
    Ok(format!(
        r#"INSERT INTO main.kreplay_record_block (guid, kind, first_row, last_row, "count", pmc_base, data)
           SELECT guid, kind, {}, {}, "count", pmc_base + CASE WHEN kind IN ({passes}, {costs}) THEN {} ELSE 0 END, data
           FROM src.kreplay_record_block WHERE +kind IN ({}) ORDER BY id;"#,
        moved("first_row"),
        moved("last_row"),
        offsets["rocpd_info_pmc"],
        kinds.join(", ")
    ))
}

/// Inserts the file's nodes the database lacks, as the row-by-row writer does (an insert, ignored
/// when the host has its row, for each process: each moves SQLite's counter on), and returns
/// each of the file's node ids with its node's id in the database.
fn append_nodes(conn: &Connection, old: &str, new: &str) -> rusqlite::Result<Vec<(i64, i64)>> {
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
    Ok(pairs)
}

/// `INSERT INTO main.table SELECT ... FROM src.table`: its ids moved by `offset` (kept when
/// None), `nid` given by `nodes` (the file's node id, the database's), each of `references`
/// moved with its table (0 stays 0: none).
fn insert_sql(
    conn: &Connection,
    table: &str,
    (old, new): (&str, &str),
    nodes: &[(i64, i64)],
    offset: Option<i64>,
    references: &[(&str, &str)],
    offsets: &HashMap<&str, i64>,
) -> rusqlite::Result<String> {
    let src = physical(table, old);
    let mut case = String::from("CASE nid");
    for (from, to) in nodes {
        case.push_str(&format!(" WHEN {from} THEN {to}"));
    }
    case.push_str(" END");
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
                ("nid", _) => case.clone(),
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
