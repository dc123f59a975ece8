//! The one error type of the format crate.

use std::path::PathBuf;

/// Why reading or writing a kreplay file failed. Every message names the file and what to do.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    #[error("cannot use database {path}: {source}")]
    Sqlite {
        path: PathBuf,
        #[source]
        source: rusqlite::Error,
    },
    #[error("{path} is not a kreplay database (no table {table}); pass a file written by kreplay")]
    NotKreplayDatabase { path: PathBuf, table: &'static str },
    #[error("database {path} is damaged: {detail}")]
    Corrupt { path: PathBuf, detail: String },
    #[error("cannot write {path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read {path}: {detail}")]
    Json { path: PathBuf, detail: String },
    #[error("unknown output format {0:?}; use one or several of: rocpd csv json pftrace")]
    UnknownFormat(String),
    #[error("the database writer thread for {path} stopped: {detail}")]
    WriterStopped { path: PathBuf, detail: String },
}

impl FormatError {
    pub(crate) fn sqlite(path: &std::path::Path, source: rusqlite::Error) -> Self {
        FormatError::Sqlite {
            path: path.to_path_buf(),
            source,
        }
    }

    pub(crate) fn io(path: &std::path::Path, source: std::io::Error) -> Self {
        FormatError::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
