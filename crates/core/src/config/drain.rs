//! The drain deadline: how long the last records may take to be written, and its variable.

/// Environment variable overriding [`ToolConfig::drain_timeout_ms`], in seconds (may be fractional).
///
/// [`ToolConfig::drain_timeout_ms`]: crate::config::ToolConfig::drain_timeout_ms
pub const ENV_DRAIN_TIMEOUT: &str = "KREPLAY_DRAIN_TIMEOUT";
/// Default drain deadline.
pub const DEFAULT_DRAIN_TIMEOUT_MS: u64 = 60_000;

/// [`ENV_DRAIN_TIMEOUT`]'s value as seconds: a finite number above 0.
pub fn drain_timeout_seconds(value: &str) -> Option<f64> {
    value
        .trim()
        .parse()
        .ok()
        .filter(|s: &f64| is_drain_timeout(*s))
}

/// Whether `seconds` is a drain deadline: a finite number above 0 (the flag and the variable).
pub fn is_drain_timeout(seconds: f64) -> bool {
    seconds.is_finite() && seconds > 0.0
}

/// A drain deadline in seconds as [`ToolConfig::drain_timeout_ms`] (rounded up).
///
/// [`ToolConfig::drain_timeout_ms`]: crate::config::ToolConfig::drain_timeout_ms
pub fn drain_timeout_ms(seconds: f64) -> u64 {
    (seconds * 1000.0).ceil() as u64
}
