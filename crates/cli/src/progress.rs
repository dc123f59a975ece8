//! A live progress line on stderr for the long parts of a run: while the application runs
//! (kreplay sees only its exit, so the line shows the seconds elapsed) and while the outputs are
//! read and written (then the file being written, and how far: records done of its total, rate
//! and time left). It appears only after a delay, so short runs print nothing extra, and only
//! when stderr is a terminal (never in pipes, files or tests); `KREPLAY_PROGRESS=0` turns it off.
//! The application shares the terminal: a line it prints while the spinner shows may end up
//! next to the spinner's text.

use indicatif::{HumanCount, ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use kreplay_format::WriteProgress;
use std::io::IsTerminal;
use std::path::Path;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::Mutex;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long the application runs before its line appears.
pub const APP_DELAY: Duration = Duration::from_secs(2);
/// How long reading and writing the outputs takes before its line appears.
pub const WRITE_DELAY: Duration = Duration::from_secs(1);

struct Shown {
    bar: ProgressBar,
    stop: Sender<()>,
    thread: JoinHandle<()>,
}

/// One progress line; cleared by [`Progress::finish`] (or when dropped).
pub struct Progress {
    shown: Mutex<Option<Shown>>,
}

fn enabled() -> bool {
    !crate::env::progress_off() && std::io::stderr().is_terminal()
}

/// The line's look: a spinner, the message, the seconds since the phase began.
fn style() -> ProgressStyle {
    ProgressStyle::with_template("{spinner} kreplay: {msg} ({seconds})")
        .unwrap_or_else(|_| ProgressStyle::default_spinner())
        .with_key(
            "seconds",
            |state: &ProgressState, out: &mut dyn std::fmt::Write| {
                let _ = write!(out, "{:.0} s", state.elapsed().as_secs_f64().floor());
            },
        )
}

/// The line while a file is written: a bar of its records, their rate, the time left.
fn file_style() -> ProgressStyle {
    ProgressStyle::with_template(
        "{spinner} kreplay: {msg} [{bar:24}] {human_pos}/{human_len} records ({rate}, {eta} left)",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar())
    .with_key(
        "rate",
        |state: &ProgressState, out: &mut dyn std::fmt::Write| {
            let _ = write!(out, "{}/s", HumanCount(state.per_sec() as u64));
        },
    )
    .progress_chars("=> ")
}

impl WriteProgress for Progress {
    fn begin(&self, path: &Path, records: u64) {
        if let Some(shown) = self.lock().as_ref() {
            let name = path.file_name().unwrap_or(path.as_os_str());
            // Name, position, then length: a line drawn between two of these still reads true.
            shown.bar.set_style(file_style());
            shown
                .bar
                .set_message(format!("writing {}", name.to_string_lossy()));
            shown.bar.reset();
            shown.bar.set_length(records);
        }
    }

    fn advance(&self, steps: u64) {
        if let Some(shown) = self.lock().as_ref() {
            shown.bar.inc(steps);
        }
    }
}

impl Progress {
    /// A line saying `message`, shown once `delay` has passed (if stderr is a terminal).
    pub fn start(message: impl Into<String>, delay: Duration) -> Progress {
        if !enabled() {
            return Progress {
                shown: Mutex::new(None),
            };
        }
        let began = Instant::now();
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::hidden())
            .with_style(style())
            .with_message(message.into());
        let (stop, stopped) = mpsc::channel::<()>();
        let shown = bar.clone();
        let thread = std::thread::spawn(move || {
            if let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(delay) {
                let shown = shown.with_elapsed(began.elapsed());
                shown.set_draw_target(ProgressDrawTarget::stderr());
                shown.enable_steady_tick(Duration::from_millis(120));
                let _ = stopped.recv();
            }
        });
        Progress {
            shown: Mutex::new(Some(Shown { bar, stop, thread })),
        }
    }

    /// Changes what the line says.
    pub fn set_message(&self, message: impl Into<String>) {
        if let Some(shown) = self.lock().as_ref() {
            shown.bar.set_message(message.into());
        }
    }

    /// Clears the line (if it showed) before anything else is printed; idempotent.
    pub fn finish(&self) {
        if let Some(shown) = self.lock().take() {
            let _ = shown.stop.send(());
            let _ = shown.thread.join();
            shown.bar.finish_and_clear();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Shown>> {
        self.shown.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_terminal_nothing_shows_and_finishing_twice_is_harmless() {
        // `cargo test` captures stderr; when it is a terminal the line is still cleared.
        let progress = Progress::start("the application is running", Duration::from_millis(1));
        progress.set_message("writing outputs: 3 records");
        progress.begin(Path::new("/tmp/x_results.json"), 3);
        progress.advance(2);
        progress.finish();
        progress.finish();
        // Not a terminal under `cargo test` (stderr is captured or a pipe): no line was made.
        if !std::io::stderr().is_terminal() {
            assert!(
                progress.shown.lock().unwrap().is_none(),
                "no progress line without a terminal"
            );
        }
    }
}
