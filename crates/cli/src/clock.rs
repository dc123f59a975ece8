//! When kreplay started, for the phase times `KREPLAY_LOG=debug` prints.

/// When kreplay started (set first thing in `main`).
static STARTED: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();

/// Milliseconds since kreplay started.
pub fn since_start_ms() -> f64 {
    STARTED
        .get_or_init(std::time::Instant::now)
        .elapsed()
        .as_secs_f64()
        * 1e3
}

/// Notes the start; called first thing in `main`.
pub fn start() {
    STARTED.get_or_init(std::time::Instant::now);
}
