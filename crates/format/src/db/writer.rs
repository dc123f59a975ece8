//! The per-process rocpd database, written as data arrives.
//!
//! [`DbWriter`] is the [`RecordSink`] that producers send to: `send` only queues the record on a
//! channel, and a writer thread inserts queued records in batched transactions (a commit when the
//! batch's first record has waited [`BATCH_INTERVAL`], or at [`BATCH_RECORDS`] records, whichever
//! comes first: a busy queue makes large batches, a quiet one commits within the interval). Past
//! [`BACKLOG_AT`] queued records the writer thread moves what arrives to its backlog on disk and
//! inserts from it when the queue is quiet (`backlog.rs`): nothing is dropped unless the thread
//! cannot even append there. The file is in WAL mode while it is written, so a process killed
//! without last words loses at most the batch in flight (and what waited in the queue or the
//! backlog, which the CLI counts) and the database stays readable; a crashing thread first waits
//! for what was sent to be committed ([`records_sent`], [`records_settled`]). `RowInserter` is the synchronous part, also used to write merged
//! databases.
//!
//! The writer thread never blocks on the channel: it parks for [`IDLE_NAP`] when the queue is
//! empty and looks again. A receiver blocked on the channel would have every `send` wake it, a
//! system call on the application's thread per record whenever the writer keeps up; a parked
//! writer is woken only by what waits for it (`flush`, `commit_within`, the finish).

use super::backlog::Backlog;
use super::file::Durability;
use super::inserter::RowInserter;
use crate::error::FormatError;
use crate::records::{Record, RecordSink, Warning};
use crossbeam_channel::{Receiver, Sender, TryRecvError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{JoinHandle, Thread};
use std::time::{Duration, Instant};

/// A batch is committed after this many records (the most a transaction holds; a busy queue
/// reaches it in tens of milliseconds)...
pub const BATCH_RECORDS: usize = 16_384;
/// ...or when its first record has waited this long, whether or not more records keep coming:
/// what a process killed without last words (SIGKILL, a crash) loses of what it sent. At most
/// 100 commits a second, each without a sync (WAL, `synchronous = NORMAL`): a cost the writer
/// thread does not notice.
pub const BATCH_INTERVAL: Duration = Duration::from_millis(10);

/// How long the writer thread parks when its queue is empty before it looks again (records wait
/// at most this long before their insert begins; a flush wakes it at once).
const IDLE_NAP: Duration = Duration::from_millis(2);

/// Records waiting for the writer thread beyond which `send` drops records instead of queueing
/// them (about 200 MB): the application must never block on us, nor run out of memory. Reached
/// only when the writer thread cannot even move records to its backlog (a stalled disk).
pub const MAX_QUEUED_RECORDS: usize = 1 << 20;

/// Records sent to this process's writers, and those settled: committed, or given up (a full
/// queue, a writer gone). A process that crashes waits, on its faulting thread, for what it sent
/// before the fault ([`records_sent`], [`records_settled`]); the writer thread runs on meanwhile.
static SENT: AtomicU64 = AtomicU64::new(0);
static SETTLED: AtomicU64 = AtomicU64::new(0);

/// How many records this process's writers have been sent so far. Async-signal-safe (one atomic
/// load).
pub fn records_sent() -> u64 {
    SENT.load(Ordering::SeqCst)
}

/// Whether the first `sent` records this process's writers were sent are settled: committed
/// (records are committed in the order sent) or given up. Async-signal-safe (one atomic load).
pub fn records_settled(sent: u64) -> bool {
    SETTLED.load(Ordering::SeqCst) >= sent
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
/// everything sent before it is committed; `commit_within` waits for that at most a given time. Dropping the writer without [`DbWriter::finish`]
/// still commits everything queued (and waits for it); `finish` also reports errors.
pub struct DbWriter {
    sender: Sender<WriterMessage>,
    /// Taken by whoever stops the writer first (`finish`, `close` or drop).
    thread: Mutex<Option<JoinHandle<Result<(), FormatError>>>>,
    /// The writer thread, unparked for the messages that someone waits for.
    writer: Thread,
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
    /// the injected library passes `kreplay_core::lifecycle::block_signals`, so that its signal
    /// handling never runs on the thread it waits for; this crate handles no signals.
    pub fn create(path: &Path, on_thread_start: fn()) -> Result<DbWriter, FormatError> {
        Self::create_with_limits(path, MAX_QUEUED_RECORDS, BACKLOG_AT, on_thread_start)
    }

    /// [`DbWriter::create`] with the queue's limits given (tests make them small).
    pub(super) fn create_with_limits(
        path: &Path,
        queue_limit: usize,
        backlog_at: usize,
        on_thread_start: fn(),
    ) -> Result<DbWriter, FormatError> {
        let inserter = RowInserter::create(path, Durability::Live)?;
        let (sender, receiver) = crossbeam_channel::unbounded();
        let dropped = Arc::new(AtomicU64::new(0));
        let dropped_seen_by_writer = Arc::clone(&dropped);
        let db_path = path.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("kreplay-db-writer".to_string())
            .spawn(move || {
                on_thread_start();
                let limits = (queue_limit, backlog_at);
                write_loop(
                    inserter,
                    receiver,
                    limits,
                    &dropped_seen_by_writer,
                    &db_path,
                )
            })
            .map_err(|e| FormatError::io(path, e))?;
        Ok(DbWriter {
            writer: thread.thread().clone(),
            sender,
            queue_limit,
            dropped,
            thread: Mutex::new(Some(thread)),
            path: path.to_path_buf(),
            owner: std::process::id(),
        })
    }

    /// Sends a message someone waits for, waking the writer thread for it.
    fn send_awaited(&self, message: WriterMessage) -> bool {
        let sent = self.sender.send(message).is_ok();
        self.writer.unpark();
        sent
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
        let _ = self.send_awaited(WriterMessage::Finish);
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
        SENT.fetch_add(1, Ordering::SeqCst);
        if self.sender.len() >= self.queue_limit {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            SETTLED.fetch_add(1, Ordering::SeqCst);
            return;
        }
        if self.sender.send(WriterMessage::Record(record)).is_err() {
            SETTLED.fetch_add(1, Ordering::SeqCst);
        }
    }

    fn flush(&self) {
        if !self.in_owner() {
            return;
        }
        let (done, wait) = crossbeam_channel::bounded(1);
        if self.send_awaited(WriterMessage::Flush(done)) {
            // Err means the thread ended (its sender was dropped): nothing more to wait for.
            let _ = wait.recv();
        }
    }

    fn commit_within(&self, wait: Duration) {
        if !self.in_owner() {
            return;
        }
        let (done, committed) = crossbeam_channel::bounded(1);
        if self.send_awaited(WriterMessage::Flush(done)) {
            // A timeout leaves the commit to the writer thread (its answer then finds no one:
            // the channel holds one, so it never blocks).
            let _ = committed.recv_timeout(wait);
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

/// Queue length at which the writer thread moves what arrives to its backlog on disk rather than
/// insert it (see `backlog.rs`); it inserts from the backlog whenever the queue is empty. About
/// 50 MB of records: a burst stays in memory (the backlog's encoding halves the writer's
/// throughput), a writer that keeps falling behind goes to disk instead of dropping records.
pub const BACKLOG_AT: usize = 1 << 18;
/// Records inserted from the backlog before the queue is looked at again.
const BACKLOG_CHUNK: usize = 256;

/// The writer thread's transactions: a batch begins with its first record and is committed at
/// [`BATCH_RECORDS`] records or once its first has waited [`BATCH_INTERVAL`]. Keeps going after
/// a failed insert (one bad record must not lose the rest) and keeps the first error.
struct Batches {
    inserter: RowInserter,
    open: Option<(Instant, usize)>,
    first_error: Option<FormatError>,
}

impl Batches {
    fn keep(&mut self, result: Result<(), FormatError>) {
        if let Err(e) = result {
            self.first_error.get_or_insert(e);
        }
    }

    fn insert(&mut self, record: Record) {
        if self.open.is_none() {
            let begun = self.inserter.begin();
            self.keep(begun);
            self.open = Some((Instant::now(), 0));
        }
        let inserted = self.inserter.insert(record);
        self.keep(inserted);
        if let Some((started, count)) = self.open.as_mut() {
            *count += 1;
            if *count >= BATCH_RECORDS || started.elapsed() >= BATCH_INTERVAL {
                self.commit();
            }
        }
    }

    fn commit(&mut self) {
        let records = self.open.take().map_or(0, |(_, count)| count);
        let committed = self.inserter.commit();
        self.keep(committed);
        // A failed commit is settled too: nothing more will come of those records.
        SETTLED.fetch_add(records as u64, Ordering::SeqCst);
    }

    /// When the open batch is due.
    fn deadline(&self) -> Option<Instant> {
        self.open.map(|(started, _)| started + BATCH_INTERVAL)
    }
}

/// The next message, parking while the queue is empty; `None` when `deadline` came first.
fn next_message(
    receiver: &Receiver<WriterMessage>,
    deadline: Option<Instant>,
) -> Option<WriterMessage> {
    loop {
        match receiver.try_recv() {
            Ok(message) => return Some(message),
            Err(TryRecvError::Disconnected) => return Some(WriterMessage::Finish),
            Err(TryRecvError::Empty) => {}
        }
        let nap = match deadline {
            Some(due) => match due.checked_duration_since(Instant::now()) {
                Some(left) if !left.is_zero() => left.min(IDLE_NAP),
                _ => return None,
            },
            None => IDLE_NAP,
        };
        std::thread::park_timeout(nap);
    }
}

/// The writer thread: batches records into transactions until `Finish` or until every sender is
/// gone, moving records to its backlog on disk while its queue is long. Returns the first error.
fn write_loop(
    inserter: RowInserter,
    receiver: Receiver<WriterMessage>,
    (queue_limit, backlog_at): (usize, usize),
    dropped: &AtomicU64,
    path: &Path,
) -> Result<(), FormatError> {
    let mut batches = Batches {
        inserter,
        open: None,
        first_error: None,
    };
    let mut backlog = Backlog::new(path);
    let mut backlog_error = false;
    let mut chunk = Vec::with_capacity(BACKLOG_CHUNK);
    // Inserts up to `most` records from the backlog, oldest first.
    let mut drain = |batches: &mut Batches, backlog: &mut Backlog, most: usize| {
        chunk.clear();
        if let Err(e) = backlog.pop(most, &mut chunk) {
            batches.keep(Err(FormatError::io(path, e)));
        }
        for record in chunk.drain(..) {
            batches.insert(record);
        }
    };
    loop {
        let message = if backlog.holds_records() {
            match receiver.try_recv() {
                Ok(message) => Some(message),
                Err(TryRecvError::Disconnected) => Some(WriterMessage::Finish),
                // A quiet queue: time to insert what waits on disk.
                Err(TryRecvError::Empty) => {
                    drain(&mut batches, &mut backlog, BACKLOG_CHUNK);
                    continue;
                }
            }
        } else {
            next_message(&receiver, batches.deadline())
        };
        match message {
            None => batches.commit(),
            Some(WriterMessage::Record(record)) => {
                let to_backlog =
                    !backlog_error && (backlog.holds_records() || receiver.len() >= backlog_at);
                if !to_backlog {
                    batches.insert(record);
                    continue;
                }
                if let Err(e) = backlog.push(&record) {
                    // The disk refuses the backlog: insert as the records come, however slowly.
                    backlog_error = true;
                    batches.keep(Err(FormatError::io(path, e)));
                    drain(&mut batches, &mut backlog, usize::MAX);
                    batches.insert(record);
                }
                // What was moved to the backlog goes to the operating system as often as a batch
                // is committed; a batch open meanwhile is committed when due.
                if batches.deadline().is_some_and(|due| Instant::now() >= due) {
                    batches.commit();
                    if let Err(e) = backlog.flush() {
                        batches.keep(Err(FormatError::io(path, e)));
                    }
                }
            }
            Some(WriterMessage::Flush(done)) => {
                drain(&mut batches, &mut backlog, usize::MAX);
                batches.commit();
                let _ = done.send(());
            }
            Some(WriterMessage::Finish) => {
                drain(&mut batches, &mut backlog, usize::MAX);
                let dropped = dropped.load(Ordering::Relaxed);
                if dropped > 0 {
                    batches.insert(Record::Warning(Warning {
                        message: format!(
                            "{dropped} records were dropped because the database writer fell more than {queue_limit} records behind; profile fewer dispatches (--kernel-include-regex, --kernel-iteration-range)"
                        ),
                    }));
                }
                let Batches {
                    inserter,
                    first_error,
                    ..
                } = batches;
                let closed = inserter.close();
                return match (first_error, closed) {
                    (Some(e), _) | (None, Err(e)) => Err(e),
                    (None, Ok(())) => Ok(()),
                };
            }
        }
    }
}
