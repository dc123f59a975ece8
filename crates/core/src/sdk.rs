//! The SDK for replay policies: what a policy decides per dispatch, mirroring rocprofiler-sdk's
//! experimental kernel-replay service (`kernel_replay.h`) in Rust.
//!
//! | rocprofiler-sdk                          | kreplay                                          |
//! |------------------------------------------|--------------------------------------------------|
//! | `replay_pass_count` NULL                 | [`PassCount::OptOut`]: runs once, no snapshot    |
//! | `replay_pass_count` returns 1            | [`PassCount::Passes`]`(1)`: the ordinary path    |
//! | returns N>1                              | `Passes(N)`: up to N passes                      |
//! | returns 0 with `replay_continue`         | [`PassCount::UntilStopped`]                      |
//! | returns 0 without `replay_continue`      | `UntilStopped` while [`ReplayPolicy::has_continue_decision`] is false: rejected with a warning, run once |
//! | `replay_continue`                        | [`ReplayPolicy::continue_after`]: may stop early, never extend; not consulted after the final pass |
//! | `replay_start_context`/`_stop_context`   | [`ReplayPolicy::on_pass_start`] / [`ReplayPolicy::on_pass_stop`] |
//!
//! Pass 0 is the application's own launch. Memory is restored before every pass but the
//! first, and before the execution without counters that times a planned unit's records
//! (docs/kernel-replay.md, "Timestamps"), never after the last execution, so the application
//! sees what one execution from the same start produced. One dispatch id covers every pass. Per-pass callbacks run only when a dispatch is
//! replayed (two passes or more), as rocprofiler-sdk's PASS callbacks do.
//!
//! kreplay's own behaviour is [`CounterGroupsPolicy`]: pass i collects counter group i.

use crate::backend::{DispatchInfo, PassResult};
use crate::config::{InProcessMode, ToolConfig};

/// How many times a dispatch executes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PassCount {
    /// Not replayed: runs once, no snapshot, no per-pass callbacks.
    OptOut,
    /// `Passes(0)` and `Passes(1)` are the ordinary path; `Passes(n)` replays up to `n` passes.
    Passes(u32),
    /// Replays until [`ReplayPolicy::continue_after`] returns false.
    UntilStopped,
}

/// What a policy sees of a dispatch.
#[derive(Debug, Clone, Copy)]
pub struct PolicyDispatch<'a> {
    pub info: &'a DispatchInfo,
    /// Reserved before the first pass, the same for every pass.
    pub dispatch_id: u64,
    /// 0-based position of this dispatch among the profiled dispatches of its device (the
    /// clock of counter-group rotation).
    pub device_dispatch_index: u64,
    /// Counter groups the device can collect: the configured groups, or fewer when the
    /// backend says so.
    pub collectable_groups: u32,
}

/// A replay policy. One instance serves every application thread, hence `Send + Sync`; state
/// that spans the passes of one dispatch is keyed on `dispatch_id`.
pub trait ReplayPolicy: Send + Sync {
    /// Asked once per profiled dispatch, before it runs.
    fn pass_count(&self, dispatch: &PolicyDispatch<'_>) -> PassCount;

    /// The counter group the device collects during `pass` (an index into the configuration's
    /// groups), or `None` for timestamps only.
    fn pass_group(&self, dispatch: &PolicyDispatch<'_>, pass: u32) -> Option<usize>;

    /// Whether [`ReplayPolicy::continue_after`] is meaningful (rocprofiler-sdk: `replay_continue`
    /// is set). Required for [`PassCount::UntilStopped`].
    fn has_continue_decision(&self) -> bool {
        false
    }

    /// After pass `pass` (0-based) when another may follow: true to run the next pass. Cannot
    /// extend a `Passes(n)` dispatch; `total` is `None` for `UntilStopped`.
    fn continue_after(&self, dispatch: &PolicyDispatch<'_>, pass: u32, total: Option<u32>) -> bool {
        let _ = (dispatch, pass, total);
        true
    }

    /// Before the device executes pass `pass` of a replayed dispatch: start other services.
    fn on_pass_start(&self, dispatch: &PolicyDispatch<'_>, pass: u32) {
        let _ = (dispatch, pass);
    }

    /// After pass `pass` of a replayed dispatch completed, with what the device measured.
    fn on_pass_stop(&self, dispatch: &PolicyDispatch<'_>, pass: u32, result: &PassResult) {
        let _ = (dispatch, pass, result);
    }
}

/// kreplay's own policy: counter groups from the configuration.
///
/// - Kernel replay: as many passes as the device can collect groups, pass i = group i.
/// - Rotation: one pass; group `(device_dispatch_index / interval) % groups`.
/// - Single (application replay gives each process one group): group 0.
/// - No groups: timestamps only (kernel trace).
#[derive(Debug, Clone)]
pub struct CounterGroupsPolicy {
    groups: usize,
    mode: InProcessMode,
}

impl CounterGroupsPolicy {
    pub fn new(config: &ToolConfig) -> Self {
        CounterGroupsPolicy {
            groups: config.groups.len(),
            mode: config.mode,
        }
    }

    fn usable_groups(&self, dispatch: &PolicyDispatch<'_>) -> usize {
        self.groups.min(dispatch.collectable_groups as usize)
    }
}

impl ReplayPolicy for CounterGroupsPolicy {
    fn pass_count(&self, dispatch: &PolicyDispatch<'_>) -> PassCount {
        match self.mode {
            InProcessMode::KernelReplay => {
                PassCount::Passes(self.usable_groups(dispatch).max(1) as u32)
            }
            InProcessMode::Single | InProcessMode::Rotation { .. } => PassCount::Passes(1),
        }
    }

    fn pass_group(&self, dispatch: &PolicyDispatch<'_>, pass: u32) -> Option<usize> {
        let groups = self.usable_groups(dispatch);
        if groups == 0 {
            return None;
        }
        match self.mode {
            InProcessMode::KernelReplay => ((pass as usize) < groups).then_some(pass as usize),
            InProcessMode::Single => Some(0),
            InProcessMode::Rotation { interval } => {
                let slot = dispatch.device_dispatch_index / interval.max(1);
                Some((slot % groups as u64) as usize)
            }
        }
    }
}

#[cfg(test)]
mod tests;
