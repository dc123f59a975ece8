//! A launch's two halves: what the engine decides before the application's own launch (run
//! once, decline, or join or open a replay unit) and what it does after.

use super::*;
use crate::engine::sys::{current_tid, lock};
use crate::engine::tickets::{passthrough, Dispatch, TicketKind};
use crate::lifecycle::InsideTool;

impl<K: Backend> Engine<K> {
    /// Before the application's own launch. See the module documentation.
    pub fn launch_enter<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        info: &DispatchInfo,
    ) -> LaunchTicket {
        // First: a signal from here on waits until the launch's exit (`lifecycle`), when its
        // window is parked and the finish can close it.
        let inside = InsideTool::enter();
        let mut ticket = self.decide_launch(backend, info);
        ticket.inside = Some(inside);
        ticket
    }

    fn decide_launch<B: DeviceOf<K>>(&self, backend: &mut B, info: &DispatchInfo) -> LaunchTicket {
        if info.kind == LaunchKind::StreamCapture {
            // Captured launches do not execute: nothing to measure or replay. Say so once
            // when the policy would have replayed it. The backend is not asked anything: device
            // calls during a capture could invalidate it.
            let probe = Dispatch {
                info: info.clone(),
                dispatch_id: 0,
                device_dispatch_index: 0,
                collectable_groups: self.config.groups.len() as u32,
                tid: 0,
                ranges: Vec::new(),
            };
            if wants_replay(self.policy.pass_count(&probe.policy_view())) {
                self.decline_notice(ReplayOutcome::DeclinedStreamCapture);
            }
            return passthrough(self.fence_for(
                backend,
                "a stream-captured launch",
                launch_scope(info),
            ));
        }

        // Every launch that executes takes an id, collected or not: ids keep the application's
        // order.
        let dispatch_id = self.last_dispatch_id.fetch_add(1, Ordering::Relaxed) + 1;
        if !self.regions.collecting() {
            // Outside the selected regions nothing is collected, as rocprofv3 pauses every
            // service there: no record, not even a kernel-trace row.
            return passthrough(self.fence_for(
                backend,
                "a launch outside the selected regions",
                launch_scope(info),
            ));
        }
        let tid = current_tid();
        let ranges = self.markers.stack(tid);
        let name = self.kernel_name(info);
        // The NVTX filters first: the iteration range counts only dispatches they keep.
        let in_ranges = self
            .selector
            .nvtx()
            .is_none_or(|filter| self.markers.admits(tid, filter));
        if !(in_ranges && self.selector.select(&name)) {
            let dispatch = Dispatch {
                info: info.clone(),
                dispatch_id,
                device_dispatch_index: 0,
                collectable_groups: 0,
                tid,
                ranges,
            };
            return self.once(backend, dispatch, ReplayOutcome::Filtered, None, 0);
        }

        let device_dispatch_index = {
            let mut counts = lock(&self.device_dispatches);
            let count = counts.entry(info.device).or_insert(0);
            *count += 1;
            *count - 1
        };
        let collectable_groups = self.collectable_groups(backend, info.device);
        let dispatch = Dispatch {
            info: info.clone(),
            dispatch_id,
            device_dispatch_index,
            collectable_groups,
            tid,
            ranges,
        };
        let view = dispatch.policy_view();
        if info.kind == LaunchKind::Graph {
            return self.graph_launch(backend, dispatch);
        }
        let total = match self.policy.pass_count(&view) {
            PassCount::Passes(1) if self.spans_executions(backend, &view) => Some(1),
            PassCount::OptOut | PassCount::Passes(0) | PassCount::Passes(1) => {
                let group = self.policy.pass_group(&view, 0);
                return self.once(backend, dispatch, ReplayOutcome::SinglePass, group, 0);
            }
            PassCount::Passes(n) => Some(n),
            PassCount::UntilStopped if !self.policy.has_continue_decision() => {
                self.notices.once(
                    "until-stopped-without-continue",
                    "a replay policy asked for passes until stopped but makes no continue decision; such dispatches are not replayed and run once",
                    self.sink.as_ref(),
                    self.options.logger.as_ref(),
                );
                let group = self.policy.pass_group(&view, 0);
                return self.once(backend, dispatch, ReplayOutcome::DeclinedError, group, 0);
            }
            PassCount::UntilStopped => None,
        };

        let declined = match info.kind {
            LaunchKind::MultiDevice => Some(ReplayOutcome::DeclinedMultiDevice),
            LaunchKind::DevicePrintf => Some(ReplayOutcome::DeclinedDevicePrintf),
            LaunchKind::DeviceHeap => Some(ReplayOutcome::DeclinedDeviceHeap),
            LaunchKind::Collective => Some(ReplayOutcome::DeclinedCollective),
            LaunchKind::PageableHost => Some(ReplayOutcome::DeclinedPageableHost),
            LaunchKind::PeerMemory => Some(ReplayOutcome::DeclinedPeerMemory),
            // (A graph launch was decided above.)
            LaunchKind::Kernel | LaunchKind::StreamCapture | LaunchKind::Graph => None,
        };
        if let Some(outcome) = declined {
            self.decline_notice(outcome);
            let group = self.policy.pass_group(&view, 0);
            return self.once(backend, dispatch, outcome, group, 0);
        }
        self.unit_member_enter(backend, dispatch, total)
    }

    /// A graph launch that reaches the engine runs whole (a backend runs a graph's nodes as
    /// launches and calls of their own where it can: the CUDA backend's interception, the
    /// reference device's runtime), and a graph launch is never measured or replayed as one
    /// dispatch: CUPTI's range profiler fails its range and every range after it. One that would
    /// be measured or replayed runs once with timestamps only, said once; any other runs once
    /// the ordinary way (timestamps with --kernel-trace, else nothing).
    fn graph_launch<B: DeviceOf<K>>(&self, backend: &mut B, dispatch: Dispatch) -> LaunchTicket {
        let view = dispatch.policy_view();
        let measured = self.policy.pass_group(&view, 0).is_some()
            || wants_replay(self.policy.pass_count(&view));
        if !measured {
            return self.once(backend, dispatch, ReplayOutcome::SinglePass, None, 0);
        }
        self.notice(
            "graph-unmeasured",
            "a graph launch that runs whole is neither replayed nor measured; it runs once with timestamps only (a graph launch cannot be measured as one dispatch: graphs run node by node unless KREPLAY_GRAPH_NODES=0, or a warning said why one runs whole)",
        );
        self.once(
            backend,
            dispatch,
            ReplayOutcome::DeclinedGraphLaunch,
            None,
            0,
        )
    }

    /// After the application's own launch. See the module documentation.
    pub fn launch_exit<B: DeviceOf<K>>(
        &self,
        backend: &mut B,
        ticket: LaunchTicket,
        launch: &K::Launch,
    ) {
        // `_inside` drops last: a deferred signal is delivered once the window is parked.
        let LaunchTicket {
            kind,
            inside: _inside,
        } = ticket;
        match kind {
            TicketKind::Passthrough { .. } => {}
            TicketKind::Member(member) => self.unit_member_exit(backend, member, launch),
            TicketKind::Once(once) => self.finish_once(backend, once),
        }
    }

    /// The application's launch did not execute (the driver refused it): nothing is measured,
    /// recorded or replayed for it, and the window it held is released.
    pub fn launch_failed<B: DeviceOf<K>>(&self, backend: &mut B, ticket: LaunchTicket) {
        let LaunchTicket {
            kind,
            inside: _inside,
        } = ticket;
        match kind {
            TicketKind::Passthrough { .. } => {}
            TicketKind::Once(once) => {
                let device = once.dispatch.info.device;
                if let Some(tag) = once.traced {
                    backend.trace_abandoned(device, tag);
                }
                if once.measuring {
                    backend.launch_abandoned(device);
                    backend.abandon_unit(device);
                }
                // Nothing ran: what the unit saw (a flush, a clock reading) is no one's.
                let _ = backend.take_unit_conditions(device);
            }
            TicketKind::Member(member) => {
                let lane = self.lane(member.device);
                if lock(&lane.open_unit).is_some() {
                    backend.launch_abandoned(member.device);
                }
                // Dropped without its exit: the unit leaves it out.
                drop(member);
                // A unit that cannot take another member ends now, on the thread that opened it.
                if self.unit_is_full(&lane) {
                    self.close_parked_unit(backend, &lane, "a launch that failed");
                }
            }
        }
    }

    /// Whether a dispatch's one pass needs several executions (its group's metrics need several
    /// hardware passes): it is replayed, not run once.
    fn spans_executions<B: DeviceOf<K>>(&self, backend: &mut B, view: &PolicyDispatch<'_>) -> bool {
        self.config.mode == crate::config::InProcessMode::KernelReplay
            && self
                .policy
                .pass_group(view, 0)
                .is_some_and(|g| backend.executions_of_group(view.info.device, g) > 1)
    }

    fn collectable_groups<B: DeviceOf<K>>(&self, backend: &mut B, device: DeviceId) -> u32 {
        let configured = self.config.groups.len();
        backend
            .collectable_groups(device, configured)
            .min(configured) as u32
    }

    fn kernel_name(&self, info: &DispatchInfo) -> Arc<str> {
        let names = self.kernel_names.read().unwrap_or_else(|e| e.into_inner());
        names
            .get(&info.kernel_id)
            .cloned()
            .unwrap_or_else(|| info.kernel_name.clone())
    }
}

fn wants_replay(count: PassCount) -> bool {
    matches!(count, PassCount::UntilStopped) || matches!(count, PassCount::Passes(n) if n > 1)
}

/// The devices a launch may touch: an ordinary kernel's own device; every device for the
/// launches that run once, which may reach other devices (a kernel reaching another device's
/// memory, a multi-device or collective launch, a graph run whole, a printf or device-heap
/// kernel, whose parameters are not checked for other devices' addresses).
pub(super) fn launch_scope(info: &DispatchInfo) -> DeviceScope {
    match info.kind {
        LaunchKind::Kernel | LaunchKind::StreamCapture => DeviceScope::One(info.device),
        LaunchKind::PeerMemory
        | LaunchKind::Graph
        | LaunchKind::MultiDevice
        | LaunchKind::Collective
        | LaunchKind::DevicePrintf
        | LaunchKind::DeviceHeap
        | LaunchKind::PageableHost => DeviceScope::All,
    }
}
