//! `KREPLAY_DEBUG`: opt-in diagnostic lines on stderr (phase times of the tool's own work).
//! Off by default; when on, the lines are written from whichever thread reaches them.

use kreplay_core::config::Switches;
use std::sync::OnceLock;
use std::time::Duration;

static ENABLED: OnceLock<bool> = OnceLock::new();

/// Whether diagnostic lines are on: [`Switches::debug`], read once from the environment as the
/// tool's configuration reads it (the same in the application and in the CLI's catalog).
pub fn enabled() -> bool {
    *ENABLED.get_or_init(|| Switches::from_lookup(|name| std::env::var(name).ok()).debug)
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
