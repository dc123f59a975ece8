//! A rocpd database file being written: created (or replaced) with its schema, its physical
//! table names (rocpd's base names followed by the file's uuid), and the small helpers the writer
//! and the reader share.

use crate::error::FormatError;
use crate::records::CLOCK_CONTROL;
use crate::schema;
use rusqlite::{params, Connection, OptionalExtension};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// `extdata` of a row written before its description arrived (see `schema.rs`).
pub(crate) const PLACEHOLDER_EXTDATA: &str = r#"{"placeholder":true}"#;

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
pub(crate) struct TableNames {
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

    /// The file's uuid (`_` and 32 hex digits), which its rocpd table names end with.
    pub(crate) fn uuid(&self) -> &str {
        &self.uuid
    }

    pub(crate) fn sql(&self, text: &'static str) -> std::sync::Arc<str> {
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

/// An open database file being written, with its physical table names.
pub(crate) struct DbFile {
    pub(crate) conn: Connection,
    /// The file's physical table names (see [`TableNames`]).
    pub(crate) names: TableNames,
    pub(crate) path: PathBuf,
}

impl DbFile {
    /// Creates (or replaces) the database at `path` ([`create_database`]).
    pub(crate) fn create(path: &Path, durability: Durability) -> Result<DbFile, FormatError> {
        let (conn, uuid) = create_database(path, durability)?;
        Ok(DbFile {
            conn,
            names: TableNames::new(uuid),
            path: path.to_path_buf(),
        })
    }

    pub(crate) fn err(&self, e: rusqlite::Error) -> FormatError {
        FormatError::sqlite(&self.path, e)
    }
}

/// SQLite stores 64-bit signed integers; ids are kept bit for bit.
pub(crate) fn to_sql(value: u64) -> i64 {
    value as i64
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
    // The writer's statements stay prepared (rusqlite keeps 16 by default: fewer than a file's
    // tables use), and a page cache of 16 MiB keeps the tables' last pages between batches.
    // The writer inserts every row's parents itself (placeholders first), so foreign keys (on in
    // rusqlite's SQLite) are not checked: a lookup per reference, a third of an insert's time.
    conn.set_prepared_statement_cache_capacity(128);
    conn.execute_batch("PRAGMA cache_size = -16384; PRAGMA foreign_keys = OFF;")
        .map_err(|e| FormatError::sqlite(path, e))?;
    let uuid = new_file_uuid(path);
    let schema = schema::CREATE_SCHEMA.replace("{U}", &uuid);
    let views = crate::views::CREATE_VIEWS;
    conn.execute_batch(&format!("BEGIN; {schema} {views} COMMIT;"))
        .map_err(|e| FormatError::sqlite(path, e))?;
    conn.execute(
        &physical_names(
            "INSERT INTO rocpd_metadata (tag, value) VALUES ('schema_version', ?1), ('kreplay_schema_version', ?2), ('uuid', ?3), ('clock_control', ?4)",
            &uuid,
        ),
        params![
            schema::ROCPD_SCHEMA_VERSION,
            schema::KREPLAY_SCHEMA_VERSION,
            uuid,
            CLOCK_CONTROL
        ],
    )
    .map_err(|e| FormatError::sqlite(path, e))?;
    Ok((conn, uuid))
}

/// Opens the output database at `path` again, to go on writing it as [`create_database`] set
/// it up (journal in memory, no sync, foreign keys not checked).
pub(crate) fn reopen(path: &Path) -> Result<Connection, FormatError> {
    let conn = Connection::open(path).map_err(|e| FormatError::sqlite(path, e))?;
    conn.execute_batch(
        "PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF; PRAGMA foreign_keys = OFF;",
    )
    .map_err(|e| FormatError::sqlite(path, e))?;
    Ok(conn)
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

/// Whether `table` has `column` (a column added by a later kreplay is missing in older files).
pub(crate) fn has_column(conn: &Connection, table: &str, column: &str) -> rusqlite::Result<bool> {
    conn.query_row(
        "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2",
        [table, column],
        |_| Ok(()),
    )
    .optional()
    .map(|found| found.is_some())
}

/// A field of a row's `extdata` JSON, if it is there and of that type.
pub(super) fn json_field<T: serde::de::DeserializeOwned>(
    extdata: &Option<String>,
    key: &str,
) -> Option<T> {
    let value: serde_json::Value = serde_json::from_str(extdata.as_deref()?).ok()?;
    serde_json::from_value(value.get(key)?.clone()).ok()
}
