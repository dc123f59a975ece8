//! One stored file copied whole as a new database (`db::bulk`'s whole-file case): its bytes
//! copied as an output's are written ([`crate::files::copy_file`]), then its names given the new
//! file's uuid in SQLite's schema table, one statement. SQLite's `INSERT … SELECT` of every table
//! wrote the same rows at 0.26 GB/s (2.7 s for the 10^6-dispatch database); the copy goes at the
//! disk's speed. The copy keeps the stored file's page layout and free pages; its rows, schema
//! and `sqlite_sequence` are those of the row copy.
//!
//! Taken only where the stored file is complete on its own: no write-ahead log or rollback
//! journal beside it (a run whose writer was killed leaves its last commits in its WAL, which
//! only SQLite's reading applies); otherwise the caller copies the rows.

use crate::error::FormatError;
use rusqlite::Connection;
use std::path::Path;

/// Whether the database at `source` can be copied as a file: no journal beside it, and both
/// uuids are uuids (nothing else in the schema can contain one).
pub(super) fn can_copy(source: &Path, old: &str, new: &str) -> bool {
    !has_journal(source) && is_uuid(old) && is_uuid(new)
}

/// Copies the database at `source` (uuid `old`; [`can_copy`]) over `path` and renames its
/// tables, indexes and views to the uuid `new`, returning the open connection (journal in
/// memory, no sync, as a new output file's).
pub(super) fn copy_whole(
    source: &Path,
    path: &Path,
    old: &str,
    new: &str,
) -> Result<Connection, FormatError> {
    crate::files::copy_file(source, path).map_err(|e| FormatError::io(path, e))?;
    let conn = Connection::open(path).map_err(|e| FormatError::sqlite(path, e))?;
    rename(&conn, old, new).map_err(|e| FormatError::sqlite(path, e))?;
    Ok(conn)
}

/// Whether a write-ahead log or rollback journal with content is beside the database.
pub(super) fn has_journal(source: &Path) -> bool {
    ["-wal", "-journal"].iter().any(|suffix| {
        let mut name = source.as_os_str().to_owned();
        name.push(suffix);
        std::fs::metadata(name).is_ok_and(|m| m.len() > 0)
    })
}

/// A file's uuid as kreplay makes it: `_` and 32 hex digits, which cannot match anything in
/// the schema's SQL but itself.
pub(super) fn is_uuid(uuid: &str) -> bool {
    uuid.len() == 33 && uuid.starts_with('_') && uuid[1..].bytes().all(|b| b.is_ascii_hexdigit())
}

/// Gives every name in the schema (tables, their automatic and declared indexes, views and the
/// SQL of each) and in `sqlite_sequence` the uuid `new` instead of `old`, and the metadata's uuid
/// row: the names the new file's writer would have made.
fn rename(conn: &Connection, old: &str, new: &str) -> rusqlite::Result<()> {
    conn.execute_batch("PRAGMA journal_mode = MEMORY; PRAGMA synchronous = OFF;")?;
    let replace = |column: &str| format!("{column} = replace({column}, '{old}', '{new}')");
    conn.execute_batch(&format!(
        r#"BEGIN;
           PRAGMA writable_schema = ON;
           UPDATE sqlite_master SET {}, {}, {} WHERE instr(name, '{old}') OR instr(tbl_name, '{old}') OR instr(sql, '{old}');
           PRAGMA writable_schema = RESET;
           UPDATE sqlite_sequence SET {};
           UPDATE "rocpd_metadata{new}" SET value = '{new}' WHERE tag = 'uuid';
           COMMIT;"#,
        replace("name"),
        replace("tbl_name"),
        replace("sql"),
        replace("name"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_with_a_journal_beside_it_or_a_name_that_is_no_uuid_is_not_copied() {
        let dir = tempfile::tempdir().unwrap();
        let db = dir.path().join("p.db");
        std::fs::write(&db, b"").unwrap();
        let (old, new) = (
            format!("_{}", "a".repeat(32)),
            format!("_{}", "0".repeat(32)),
        );
        assert!(can_copy(&db, &old, &new));
        // An empty log (a reader's) holds nothing; one with content holds the last commits.
        std::fs::write(dir.path().join("p.db-wal"), b"").unwrap();
        assert!(can_copy(&db, &old, &new));
        std::fs::write(dir.path().join("p.db-wal"), b"frames").unwrap();
        assert!(!can_copy(&db, &old, &new));
        std::fs::remove_file(dir.path().join("p.db-wal")).unwrap();
        std::fs::write(dir.path().join("p.db-journal"), b"pages").unwrap();
        assert!(!can_copy(&db, &old, &new));
        std::fs::remove_file(dir.path().join("p.db-journal")).unwrap();
        assert!(!can_copy(&db, "_short", &new));
        assert!(!can_copy(&db, &old, &format!("_{}", "g".repeat(32))));
    }
}
