//! `KREPLAY_DEBUG`: opt-in diagnostic lines on stderr (phase times of the tool's own work).
//! Off by default; when on, the lines are written from whichever thread reaches them.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// Turns diagnostic lines on or off: called once by whoever read the configuration (the
/// injected library's start with its `Switches::debug`, the CLI with its own).
pub fn enable(on: bool) {
    ENABLED.store(on, Ordering::Relaxed);
}

/// Whether diagnostic lines are on.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Writes `kreplay[debug]: {text}` to stderr when [`enabled`].
pub fn line(text: &str) {
    if enabled() {
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), "kreplay[debug]: {text}");
    }
}

/// Milliseconds, for diagnostic lines.
pub fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

/// Named laps of one piece of work, for a diagnostic line: `a 1.0, b 2.5` (milliseconds).
pub struct Laps {
    last: std::time::Instant,
    parts: Vec<(&'static str, Duration)>,
}

impl Laps {
    pub fn start() -> Self {
        Laps {
            last: std::time::Instant::now(),
            parts: Vec::new(),
        }
    }

    /// Ends the lap `name` now.
    pub fn lap(&mut self, name: &'static str) {
        let now = std::time::Instant::now();
        self.parts.push((name, now - self.last));
        self.last = now;
    }

    /// Total of every lap so far.
    pub fn total(&self) -> Duration {
        self.parts.iter().map(|(_, d)| *d).sum()
    }

    /// `name ms, name ms, ...`.
    pub fn summary(&self) -> String {
        self.parts
            .iter()
            .map(|(name, d)| format!("{name} {:.1}", ms(*d)))
            .collect::<Vec<_>>()
            .join(", ")
    }
}
