//! Collection between the application's profiler start and stop calls (`cudaProfilerStart` /
//! `cudaProfilerStop`, i.e. the driver's `cuProfilerStart` / `cuProfilerStop`; the reference
//! device's `SimRuntime::profiler_start` / `profiler_stop`): rocprofv3's `--selected-regions`
//! (collection starts paused; `roctxProfilerResume(0)` / `roctxProfilerPause(0)` there) and
//! Nsight Compute's `--profile-from-start off`. The calls act on the whole process.
//!
//! Without reference counting a stop ends collection whatever number of starts came before (a
//! start while collecting, a stop while paused, do nothing); with it
//! (`--selected-regions-ref-count`) collection goes on until every start has had its stop.

use crate::config::SelectedRegions;
use std::sync::Mutex;

/// The process's collection switch. Without selected regions it is always on and the calls do
/// nothing.
#[derive(Debug)]
pub struct RegionGate {
    mode: Option<SelectedRegions>,
    /// Starts not yet stopped (0 or 1 without reference counting).
    open: Mutex<u64>,
}

impl RegionGate {
    pub fn new(mode: Option<SelectedRegions>) -> RegionGate {
        let open = u64::from(mode.is_some_and(|m| m.from_start));
        RegionGate {
            mode,
            open: Mutex::new(open),
        }
    }

    /// Whether the calls matter (selected regions asked for).
    pub fn active(&self) -> bool {
        self.mode.is_some()
    }

    fn open(&self) -> std::sync::MutexGuard<'_, u64> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether a launch now is collected.
    pub fn collecting(&self) -> bool {
        self.mode.is_none() || *self.open() > 0
    }

    /// The application's profiler start (`start`) or stop call.
    pub fn control(&self, start: bool) {
        let Some(mode) = self.mode else {
            return;
        };
        let mut open = self.open();
        *open = match (start, mode.ref_count) {
            (true, true) => open.saturating_add(1),
            (true, false) => 1,
            (false, true) => open.saturating_sub(1),
            (false, false) => 0,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(from_start: bool, ref_count: bool) -> RegionGate {
        RegionGate::new(Some(SelectedRegions {
            from_start,
            ref_count,
        }))
    }

    #[test]
    fn without_selected_regions_everything_is_collected_and_the_calls_do_nothing() {
        let gate = RegionGate::new(None);
        assert!(gate.collecting() && !gate.active());
        gate.control(false);
        assert!(gate.collecting());
    }

    #[test]
    fn selected_regions_start_paused_and_a_stop_ends_any_number_of_starts() {
        let gate = gate(false, false);
        assert!(!gate.collecting());
        gate.control(true);
        assert!(gate.collecting());
        gate.control(true);
        gate.control(false);
        assert!(!gate.collecting(), "no reference counting");
        gate.control(false);
        assert!(!gate.collecting());
        gate.control(true);
        assert!(gate.collecting());
    }

    #[test]
    fn with_reference_counting_nested_pairs_keep_collecting_until_the_outer_stop() {
        let gate = gate(false, true);
        gate.control(true);
        gate.control(true);
        gate.control(false);
        assert!(gate.collecting(), "the outer start is not stopped yet");
        gate.control(false);
        assert!(!gate.collecting());
        gate.control(false);
        gate.control(true);
        assert!(gate.collecting(), "stops below zero are ignored");
    }

    #[test]
    fn profile_from_start_on_collects_until_a_stop() {
        let gate = gate(true, false);
        assert!(gate.collecting());
        gate.control(false);
        assert!(!gate.collecting());
        gate.control(true);
        assert!(gate.collecting());
    }
}
