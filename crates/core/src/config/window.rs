//! Kernel replay's unit: how many consecutive dispatches one snapshot covers.

use serde::{Deserialize, Serialize};

/// How many consecutive dispatches kernel replay snapshots, then re-runs once per counter group.
///
/// On NVIDIA GPUs a pass costs mostly the counter reprogramming (reference nvidia-cupti.md §10),
/// paid once per group per *replay unit*; a window of K dispatches pays it once per K.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayWindow {
    /// One dispatch per unit (`--replay-window 1`, the default).
    #[default]
    Dispatch,
    /// Up to K consecutive replayable dispatches per unit (`--replay-window K`).
    Count(u32),
    /// [`DEFAULT_AUTO_REPLAY_WINDOW`] dispatches, capped by what the device supports.
    Auto,
}

/// The window size of [`ReplayWindow::Auto`]: long enough that the per-group reprogramming is
/// spread thin, short enough that a window's pass-0 records are not held back for long.
pub const DEFAULT_AUTO_REPLAY_WINDOW: u32 = 64;

impl ReplayWindow {
    /// The configured dispatches per window (1 for per-dispatch replay).
    pub fn dispatches(self) -> u32 {
        match self {
            ReplayWindow::Dispatch => 1,
            ReplayWindow::Count(k) => k.max(1),
            ReplayWindow::Auto => DEFAULT_AUTO_REPLAY_WINDOW,
        }
    }

    /// Parses the CLI / input-file spelling: a positive count or `auto`.
    pub fn parse(text: &str) -> Result<ReplayWindow, String> {
        let text = text.trim();
        if text.eq_ignore_ascii_case("auto") {
            return Ok(ReplayWindow::Auto);
        }
        match text.parse::<u32>() {
            Ok(1) => Ok(ReplayWindow::Dispatch),
            Ok(k) if k > 1 => Ok(ReplayWindow::Count(k)),
            _ => Err(format!(
                "replay window {text:?} is not a positive number of dispatches or `auto`; use e.g. 8 or auto"
            )),
        }
    }
}
