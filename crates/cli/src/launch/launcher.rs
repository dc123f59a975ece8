//! What every run of one `kreplay` invocation shares, and what a run leaves behind.

use crate::plan::SummaryOutput;
use crate::summary::Observed;
use kreplay_format::run::Watcher;
use kreplay_format::RunData;
use std::path::PathBuf;

/// What every run of one `kreplay` invocation shares.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The application and its arguments.
    pub app: Vec<String>,
    pub launch_time: String,
    pub drain_timeout_s: Option<f64>,
    /// `--host-staging-max` (None: the default).
    pub host_staging_max: Option<u64>,
    /// How long to wait, after the application ended, for processes it started ([`crate::env::child_wait`]).
    pub child_wait: std::time::Duration,
}

/// What a run left behind.
#[derive(Debug)]
pub struct RunResult {
    /// The application's exit status (1 when a signal ended it).
    pub app_exit_code: i32,
    /// The signal that ended the application, in words ("signal 15 (SIGTERM)"), if one did.
    pub app_ended_by: Option<String>,
    /// A signal that stops a program ended the application (Ctrl-C, a kill): the plan's
    /// remaining runs are not started, as where a signal reached kreplay (`stop_asked`).
    pub interrupted: bool,
    /// kreplay's: the application's, or 1 when it succeeded but its outputs could not be
    /// written.
    pub exit_code: i32,
    pub files: Vec<PathBuf>,
    /// Everything the run recorded (None when nothing was recorded).
    pub data: Option<RunData>,
    /// What the summary needs of `data`'s records, gathered as the files were written.
    pub observed: Option<Watcher<Observed>>,
    /// rocprofv3's summary tables for stderr and for stdout (`-S`, `-D`, `--summary-groups`),
    /// one text per output destination.
    pub summaries: Vec<(SummaryOutput, SummaryText)>,
}

/// A summary for a stream, printed after the run's lines: a short text, or tables in an
/// anonymous file (a row per name: a run may name millions of ranges).
#[derive(Debug)]
pub enum SummaryText {
    Text(String),
    File(std::fs::File),
}

impl SummaryText {
    /// Writes the summary to `out`.
    pub fn write_to(&self, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        use std::io::Seek as _;
        match self {
            SummaryText::Text(text) => out.write_all(text.as_bytes()),
            SummaryText::File(file) => {
                let mut file = file;
                file.rewind()?;
                std::io::copy(&mut file, out).map(drop)
            }
        }
    }
}

/// Records in `data` (what a producer sent), for the progress line.
pub fn record_count(data: &RunData) -> usize {
    data.processes
        .iter()
        .map(|p| {
            1 + p.agents.len()
                + p.kernels.len()
                + p.counters.len()
                + p.dispatch_count()
                + p.cost_count()
                + p.warnings.len()
        })
        .sum()
}
