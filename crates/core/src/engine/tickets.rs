//! What the engine hands a backend between the two halves of a launch or a call: the launch's
//! ticket (a unit member's, or one that runs once), the call's guard with its fences, and the
//! dispatch they carry.

use crate::backend::{DeviceId, DispatchInfo};
use crate::gate::{GateFence, ReplayGate};
use crate::lifecycle::InsideTool;
use crate::sdk::PolicyDispatch;
use kreplay_format::ReplayOutcome;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// What [`Engine::launch_enter`](crate::Engine::launch_enter) decided, handed back to [`Engine::launch_exit`](crate::Engine::launch_exit). A backend
/// drops a ticket without `launch_exit` when the launch did not execute (the driver refused
/// it): that releases the window and records nothing for the dispatch.
#[must_use = "pass the ticket to Engine::launch_exit after the application's launch"]
pub struct LaunchTicket {
    pub(super) kind: TicketKind,
    /// The launch's span inside the tool (set by `launch_enter`): a signal waits for its end.
    pub(super) inside: Option<InsideTool>,
}

pub(super) enum TicketKind {
    /// Nothing to record; the engine does not touch the device.
    Passthrough { _fence: FenceGuard },
    /// Runs once (ordinary path, opt-out, declined).
    Once(OnceTicket),
    /// A member of the open replay unit (which holds the dispatch); execution 0 is running.
    Member(MemberTicket),
}

pub(super) struct OnceTicket {
    pub(super) dispatch: Dispatch,
    /// The execution was started; `launch_exit` must stop it.
    pub(super) measuring: bool,
    /// Timed without waiting, as this tag (see `traced`); `measuring` is false.
    pub(super) traced: Option<u64>,
    pub(super) outcome: ReplayOutcome,
    pub(super) bytes_tracked: u64,
    pub(super) started: Instant,
    pub(super) _fence: FenceGuard,
}

/// One dispatch as the engine carries it from enter to exit.
pub(super) struct Dispatch {
    pub(super) info: DispatchInfo,
    pub(super) dispatch_id: u64,
    pub(super) device_dispatch_index: u64,
    pub(super) collectable_groups: u32,
    pub(super) tid: u64,
    /// The launching thread's marker range stack at launch (empty without `--marker-trace`).
    pub(super) ranges: Vec<String>,
}

impl Dispatch {
    pub(super) fn policy_view(&self) -> PolicyDispatch<'_> {
        PolicyDispatch {
            info: &self.info,
            dispatch_id: self.dispatch_id,
            device_dispatch_index: self.device_dispatch_index,
            collectable_groups: self.collectable_groups,
        }
    }
}

impl LaunchTicket {
    /// The dispatch id, `None` when the launch is not recorded.
    pub fn dispatch_id(&self) -> Option<u64> {
        match &self.kind {
            TicketKind::Passthrough { .. } => None,
            TicketKind::Once(t) => Some(t.dispatch.dispatch_id),
            TicketKind::Member(t) => Some(t.dispatch_id),
        }
    }

    /// Whether the launch is part of a replay unit (the backend must keep what
    /// [`crate::backend::Relaunch::relaunch`] needs until `launch_exit`).
    pub fn will_replay(&self) -> bool {
        matches!(self.kind, TicketKind::Member(_))
    }
}

/// What [`Engine::enter_call`](crate::Engine::enter_call) holds for [`Engine::exit_call`](crate::Engine::exit_call): the fence, and the device
/// memory the call writes when the open unit stays open across it (captured at its exit).
#[must_use = "pass the guard to Engine::exit_call when the call returns"]
pub struct CallGuard {
    pub(super) fence: FenceGuard,
    pub(super) capture: Option<PendingWrite>,
    /// The call's span inside the tool: a signal waits for its end.
    pub(super) inside: InsideTool,
}

/// Device memory a call writes, captured at its exit for the open unit's later executions.
#[derive(Debug, Clone, Copy)]
pub(super) struct PendingWrite {
    pub(super) device: DeviceId,
    pub(super) base: u64,
    pub(super) bytes: u64,
}

impl CallGuard {
    /// Ends the call without [`Engine::exit_call`](crate::Engine::exit_call) (a call that waits and must not hold the
    /// fence while it blocks): only for calls that write no device memory.
    pub fn into_fence(self) -> FenceGuard {
        self.fence
    }
}

pub(super) fn passthrough(fence: FenceGuard) -> LaunchTicket {
    LaunchTicket {
        kind: TicketKind::Passthrough { _fence: fence },
        inside: None,
    }
}

/// What a unit member's [`LaunchTicket`] carries; the dispatch itself is in the unit.
pub(super) struct MemberTicket {
    pub(super) dispatch_id: u64,
    /// The device whose lane holds the unit.
    pub(super) device: DeviceId,
    pub(super) entered: Instant,
    /// Parks the unit if the ticket is dropped without `launch_exit`, so that another thread
    /// can close it.
    pub(super) parker: Option<Arc<ReplayGate>>,
    /// Set when the ticket is dropped without `launch_exit`: the launch did not execute, so
    /// the unit leaves that member out (shared with its [`Member`]).
    pub(super) abandoned: Arc<AtomicBool>,
}

impl Drop for MemberTicket {
    fn drop(&mut self) {
        if let Some(gate) = self.parker.take() {
            self.abandoned.store(true, Ordering::Release);
            gate.park_writer();
        }
    }
}

/// What an application call holds while it runs: a fence on the replay gate of every device it
/// may touch. Dropping it (on any thread) lets a replay waiting on those devices start.
#[derive(Debug)]
#[must_use = "the fence only holds while the guard lives"]
pub struct FenceGuard {
    pub(super) _fences: Vec<GateFence>,
}

impl FenceGuard {
    /// The fence of one device's gate.
    pub(super) fn of(fence: GateFence) -> Self {
        FenceGuard {
            _fences: vec![fence],
        }
    }
}
