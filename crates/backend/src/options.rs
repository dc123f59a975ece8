//! How the backend uses the counters of a run: the ranges they are set up for, whether
//! dispatches measure single groups, the L2 flush, the diagnostic switches.

use crate::flush::ApplicationContextFlusher;
use kreplay_counters::profiler::MAX_RANGES;
use kreplay_format::CacheControl;

/// How the backend uses the counters of a run.
#[derive(Debug, Clone)]
pub struct CounterOptions {
    /// The ranges the counters are set up for: a unit's launches, each with the ranges of the
    /// flush before it in the application's context ([`CounterOptions::for_window`]).
    pub max_ranges: usize,
    /// Dispatches measure single groups in turn (rotation, application replay): reprogramming
    /// the counters for a group alone is expected. Off (kernel replay), a dispatch that runs
    /// once while a schedule of several passes is programmed keeps timestamps only.
    pub single_group_schedules: bool,
    /// `--cache-control`: `All` flushes L2 before every measured launch.
    pub cache_control: CacheControl,
    /// The diagnostic switches (batched copies, packing, the profiler's sequence and set-up).
    pub switches: kreplay_core::config::Switches,
}

impl CounterOptions {
    /// The options of a run whose replay window holds `window` dispatches (1 for per-dispatch
    /// replay): ranges for each launch and, under `--cache-control all` with the flush in the
    /// application's context, for its flush, at most [`MAX_RANGES`] (a window then holds
    /// fewer dispatches than asked for where they would need more).
    pub fn for_window(
        window: usize,
        single_group_schedules: bool,
        cache_control: CacheControl,
        switches: kreplay_core::config::Switches,
    ) -> CounterOptions {
        let flush = if cache_control == CacheControl::All {
            ApplicationContextFlusher::RANGES
        } else {
            0
        };
        CounterOptions {
            max_ranges: window.max(1).saturating_mul(1 + flush).min(MAX_RANGES),
            single_group_schedules,
            cache_control,
            switches,
        }
    }

    /// The ranges of its profiler the flush before each measured launch makes in the
    /// application's context (0 without `--cache-control all`, and where the ranges set up
    /// cannot hold them beside one launch's).
    pub(crate) fn flush_ranges_per_launch(&self) -> usize {
        let flush = ApplicationContextFlusher::RANGES;
        if self.cache_control == CacheControl::All && self.max_ranges > flush {
            flush
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_hold_each_launch_and_its_flush_in_the_application_context() {
        use kreplay_core::config::Switches;
        let ranges = |window, cache| {
            CounterOptions::for_window(window, false, cache, Switches::default()).max_ranges
        };
        // The default window (auto, 64 dispatches) keeps its dispatches beside their flushes.
        assert_eq!(ranges(64, CacheControl::All), 128);
        assert_eq!(ranges(1, CacheControl::All), 2);
        // No flush, no ranges for it.
        assert_eq!(ranges(64, CacheControl::None), 64);
        // Never more than the profiler holds.
        assert_eq!(ranges(100, CacheControl::All), MAX_RANGES);
        assert_eq!(ranges(500, CacheControl::None), MAX_RANGES);
        assert_eq!(ranges(0, CacheControl::None), 1);
    }
}
