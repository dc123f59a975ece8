//! What the engine tells the user: warnings as `Warning` records and stderr lines, each kind
//! once per process, through a [`Logger`] that the CLI (or a test) can silence.

use kreplay_format::{Record, RecordSink, Warning};
use std::collections::HashSet;
use std::sync::Mutex;

/// Where the engine's warning lines go (no trailing newline). Fatal messages are not logged
/// here: the abort action prints them, so that a silenced logger cannot hide why a run ended.
pub trait Logger: Send + Sync {
    fn warn(&self, line: &str);
}

/// The default logger: lines to stderr, warnings silenced below `warning` level.
#[derive(Debug, Clone, Copy)]
pub struct StderrLogger {
    warnings: bool,
}

impl StderrLogger {
    /// `level` is rocprofv3's: `fatal`, `error`, `warning`, `info`, `trace`.
    pub fn for_level(level: &str) -> Self {
        let quiet = matches!(
            level.trim().to_ascii_lowercase().as_str(),
            "fatal" | "error"
        );
        StderrLogger { warnings: !quiet }
    }
}

impl Logger for StderrLogger {
    fn warn(&self, line: &str) {
        if self.warnings {
            // Called on application threads: a closed stderr must not panic (eprintln! would).
            use std::io::Write;
            let _ = writeln!(std::io::stderr(), "{line}");
        }
    }
}

/// Discards every line (records are still sent).
#[derive(Debug, Clone, Copy, Default)]
pub struct SilentLogger;

impl Logger for SilentLogger {
    fn warn(&self, _line: &str) {}
}

/// Once-per-process bookkeeping of warnings.
#[derive(Default)]
pub(crate) struct Notices {
    given: Mutex<HashSet<String>>,
}

impl Notices {
    /// Sends `message` (a Warning record and a `kreplay: ` line) unless `key` was already used.
    /// Returns whether it was sent.
    pub(crate) fn once(
        &self,
        key: &str,
        message: &str,
        sink: &dyn RecordSink,
        logger: &dyn Logger,
    ) -> bool {
        let first = self
            .given
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.to_string());
        if first {
            sink.send(Record::Warning(Warning {
                message: message.to_string(),
            }));
            logger.warn(&format!("kreplay: {message}"));
        }
        first
    }
}
