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

mod inserter;
mod read;
pub use read::{read_database, read_databases};

pub(crate) use inserter::RowInserter;

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
    /// writer thread, which runs `on_thread_start` first. Errors (a folder that cannot be
    /// created, a file that cannot be opened) are reported here, on the caller's thread.
    ///
    /// `on_thread_start` is how the process that owns the writer prepares a thread of its own:
    /// the injected library passes `kreplay_core::last_words::block_signals`, so that its signal
    /// handling never runs on the thread it waits for; this crate handles no signals.
    pub fn create(path: &Path, on_thread_start: fn()) -> Result<DbWriter, FormatError> {
        Self::create_with_queue_limit(path, MAX_QUEUED_RECORDS, on_thread_start)
    }

    fn create_with_queue_limit(
        path: &Path,
        queue_limit: usize,
        on_thread_start: fn(),
    ) -> Result<DbWriter, FormatError> {
        let inserter = RowInserter::create(path, Durability::Live)?;
        let (sender, receiver) = crossbeam_channel::unbounded();
        let dropped = Arc::new(AtomicU64::new(0));
        let dropped_seen_by_writer = Arc::clone(&dropped);
        let thread = std::thread::Builder::new()
            .name("kreplay-db-writer".to_string())
            .spawn(move || {
                on_thread_start();
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
        // The trait has no way to return the error, and this runs as the process ends: say it
        // (a closed stderr is ignored: `eprintln!` would panic).
        if let Err(e) = self.stop() {
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "kreplay: {e}");
        }
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

#[cfg(test)]
mod tests;
