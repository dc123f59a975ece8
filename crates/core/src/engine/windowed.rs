//! Window replay: a replay unit of up to K consecutive dispatches of one thread on one device.
//!
//! ```text
//! first member's launch_enter  take the exclusive window, drain, snapshot,
//!                              start_window_pass(group 0, K ranges)
//! every member                 its own launch runs under pass 0 (one range each); at its
//!                              launch_exit the backend retains a copy of the launch and the
//!                              window is *parked*: its owner returns to user code
//! close                        stop_window_pass -> pass-0 results, one per member; then per
//!                              further pass: restore, start_window_pass(group i, n), relaunch
//!                              every member in order, stop_window_pass (never a restore after
//!                              the last pass); records; release snapshot and window
//! ```
//!
//! The window closes when it holds K members; when a dispatch arrives that cannot join it
//! (another thread, another device, other pass groups, a launch that runs once); when any
//! other API call of any thread takes the fence ([`Engine::fence_with`]); and at
//! [`Engine::finish_with`]. The thread that meets a parked window adopts and closes it, so no
//! thread ever waits for a window owner that is in user code.
//!
//! A window whose first execution measures every group (nothing restored, nothing executed
//! again) stays open across its owner's calls that the backend passes to
//! [`Engine::fence_in_window`] (copies, memsets, allocations, module loads): no later pass could
//! undo or miss them. The device is drained before such a call and before the next member's
//! launch, so that no measured kernel overlaps the call's work; a window that measured fewer
//! or more kernels than it launched after spanning calls switches spanning off for the run.
//!
//! A member whose ticket is dropped without `launch_exit` (its launch did not execute) is left
//! out at the close: no record, no range expected from the backend, no relaunch.
//!
//! A dispatch joins only with the same pass groups as the window's first member (so every
//! member of a window gets exactly the passes per-dispatch replay would give it); a tool's
//! continue decision stops the whole window when it stops any member (the minimum over
//! members); [`PassCount::UntilStopped`] dispatches are replayed alone.
//!
//! Costs: the window's shared costs (drain, snapshot, restores, bytes staged and restored, the
//! wall time of each pass) are recorded on its first member's `ReplayCost`; the others carry 0
//! there (`pass_ns` zeros, same length), so sums over dispatches stay right.

use super::*;
use std::any::Any;
use std::sync::atomic::AtomicBool;
use std::thread::ThreadId;

/// What a window member's [`LaunchTicket`] carries; the dispatch itself is in the window.
pub(super) struct MemberTicket {
    pub(super) dispatch_id: u64,
    entered: Instant,
    /// Parks the window if the ticket is dropped without `launch_exit`, so that another thread
    /// can close it.
    parker: Option<Arc<crate::window::ReplayGate>>,
    /// Set when the ticket is dropped without `launch_exit`: the launch did not execute (the
    /// driver refused it), so the window leaves that member out (shared with its [`Member`]).
    abandoned: Arc<AtomicBool>,
}

impl Drop for MemberTicket {
    fn drop(&mut self) {
        if let Some(gate) = self.parker.take() {
            self.abandoned.store(true, Ordering::Release);
            gate.park_writer();
        }
    }
}

struct Member<L> {
    dispatch: Dispatch,
    /// The backend's retained copy; `None` until the member's launch_exit (or when the backend
    /// could not keep it, which ends the window without further passes).
    launch: Option<L>,
    /// Its ticket was dropped without `launch_exit`: it did not execute and is left out.
    abandoned: Arc<AtomicBool>,
}

impl<L> Member<L> {
    fn new(dispatch: Dispatch) -> Self {
        Member {
            dispatch,
            launch: None,
            abandoned: Arc::default(),
        }
    }
}

pub(super) struct OpenWindow<S, L> {
    owner: ThreadId,
    device: DeviceId,
    capacity: usize,
    /// The counter group of each pass; every member has the same.
    groups: Vec<Option<usize>>,
    members: Vec<Member<L>>,
    /// Every member's launch was retained: further passes are possible.
    replayable: bool,
    /// `None` when the device has no tracked memory.
    snapshot: Option<S>,
    /// False when no snapshot was taken (one execution measures every group).
    restorable: bool,
    staging: Staging,
    bytes_tracked: u64,
    /// The inventory's generation when the snapshot was taken: a launch after any change (a
    /// module variable resolved at its kernel's first launch, say) cannot join, since the
    /// snapshot would not cover what changed.
    inventory_generation: u64,
    drain_ns: u64,
    snapshot_ns: u64,
    /// Pass 0's wall time: the members' launches, enter to exit, plus the final stop.
    pass0_ns: u64,
    hold: WindowHold,
    /// Calls of the owner the window stayed open across ([`Engine::fence_in_window`]).
    spanned: u64,
    /// A spanned call since the last member: drain before the next member's launch.
    drain_before_member: bool,
}

impl Engine {
    /// The window size for a replayed dispatch on `device`, `None` for per-dispatch replay.
    pub(super) fn window_capacity<B: ReplayBackend>(
        &self,
        backend: &mut B,
        device: DeviceId,
    ) -> Option<usize> {
        let configured = self.config.replay_window.dispatches() as usize;
        if configured <= 1 {
            return None;
        }
        // A launch made inside another API call of this thread (the runtime nesting driver
        // calls) is replayed alone: its window could not be parked while that call goes on.
        if self.gate.holds_fence() {
            return None;
        }
        let capacity = configured.min(backend.max_window(device));
        if capacity <= 1 {
            self.notices.once(
                "window-unsupported",
                "this device replays one dispatch at a time (no replay windows); each dispatch is replayed alone",
                self.sink.as_ref(),
                self.options.logger.as_ref(),
            );
            return None;
        }
        Some(capacity)
    }

    pub(super) fn window_is_open(&self) -> bool {
        lock(&self.open_window).is_some()
    }

    /// A replayed dispatch joins the open window of its thread, or closes whatever window is
    /// open and opens one of its own.
    pub(super) fn window_member_enter<B: ReplayBackend>(
        &self,
        backend: &mut B,
        dispatch: Dispatch,
        passes: u32,
        capacity: usize,
    ) -> LaunchTicket<B::Snapshot>
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        let view = dispatch.tool_view();
        let groups: Vec<Option<usize>> = (0..passes)
            .map(|pass| self.tool.pass_group(&view, pass))
            .collect();
        let me = std::thread::current().id();
        loop {
            let mut open = lock(&self.open_window);
            let joinable = open
                .as_ref()
                .and_then(|w| w.downcast_ref::<OpenWindow<B::Snapshot, B::Launch>>())
                .is_some_and(|w| {
                    w.owner == me
                        && w.device == dispatch.info.device
                        && w.groups == groups
                        && w.replayable
                        && w.members.len() < w.capacity
                        // Without a restore, what changed needs no snapshot.
                        && (!w.restorable
                            || w.inventory_generation == self.inventory.generation())
                        && self.gate.is_parked()
                });
            let mut drain_failed = false;
            if joinable {
                let Some(window) = open
                    .as_mut()
                    .and_then(|w| w.downcast_mut::<OpenWindow<B::Snapshot, B::Launch>>())
                else {
                    break;
                };
                // After a call the window stayed open across: its work ends before this kernel.
                if window.drain_before_member {
                    match backend.drain(window.device, self.config.drain_timeout()) {
                        Ok(()) => window.drain_before_member = false,
                        Err(error) => {
                            self.backend_notice("drain", &error);
                            drain_failed = true;
                        }
                    }
                }
                if !drain_failed {
                    window.hold.adopt();
                    self.tool.on_pass_start(&dispatch.tool_view(), 0);
                    let member = Member::new(dispatch);
                    let ticket = self.member_ticket(&member);
                    window.members.push(member);
                    return ticket;
                }
            }
            let parked = open.is_some() && self.gate.is_parked();
            let reason = open
                .as_ref()
                .and_then(|w| w.downcast_ref::<OpenWindow<B::Snapshot, B::Launch>>())
                .map_or("a launch that cannot join", |w| {
                    if drain_failed {
                        "a drain that failed"
                    } else if w.owner != me {
                        "another thread's launch"
                    } else if w.device != dispatch.info.device {
                        "a launch on another device"
                    } else if w.inventory_generation != self.inventory.generation() {
                        "a change of the allocations"
                    } else {
                        "a launch with other counter groups"
                    }
                });
            drop(open);
            if !parked {
                break;
            }
            // A window this dispatch cannot join: finish it first (on this thread).
            self.close_parked_window(backend, reason);
        }

        let group0 = groups.first().copied().flatten();
        let prepared = match self.prepare_replay(
            backend,
            dispatch,
            group0,
            Some(&groups),
            "another thread's launch",
        ) {
            Ok(prepared) => prepared,
            Err(ticket) => return *ticket,
        };
        let dispatch = prepared.dispatch;
        let device = dispatch.info.device;
        let started = Instant::now();
        self.tool.on_pass_start(&dispatch.tool_view(), 0);
        backend.replay_starts(device);
        if let Err(error) = backend.start_window_pass(device, group0, capacity) {
            release_snapshot(backend, prepared.snapshot);
            drop(prepared.window);
            self.backend_notice("start_window_pass", &error);
            return self.once_unmeasured(
                backend,
                dispatch,
                group0,
                prepared.bytes_tracked,
                started,
            );
        }
        let member = Member::new(dispatch);
        let ticket = self.member_ticket(&member);
        let window = OpenWindow::<B::Snapshot, B::Launch> {
            owner: me,
            device,
            capacity,
            groups,
            members: vec![member],
            replayable: true,
            snapshot: prepared.snapshot,
            restorable: prepared.restorable,
            staging: prepared.staging,
            bytes_tracked: prepared.bytes_tracked,
            inventory_generation: prepared.inventory_generation,
            drain_ns: prepared.drain_ns,
            snapshot_ns: prepared.snapshot_ns,
            pass0_ns: 0,
            hold: prepared.window,
            spanned: 0,
            drain_before_member: false,
        };
        *lock(&self.open_window) = Some(Box::new(window));
        ticket
    }

    fn member_ticket<S, L>(&self, member: &Member<L>) -> LaunchTicket<S> {
        LaunchTicket {
            kind: TicketKind::Window(MemberTicket {
                dispatch_id: member.dispatch.dispatch_id,
                entered: Instant::now(),
                parker: Some(self.gate.clone()),
                abandoned: member.abandoned.clone(),
            }),
        }
    }

    /// After a member's own launch: keep a copy of it, then park the window (or close it when
    /// full, or when the launch could not be kept).
    pub(super) fn window_member_exit<B: ReplayBackend>(
        &self,
        backend: &mut B,
        mut ticket: MemberTicket,
        launch: &B::Launch,
    ) where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        ticket.parker = None;
        let mut open = lock(&self.open_window);
        let Some(boxed) = open.take() else {
            return;
        };
        let mut window = match boxed.downcast::<OpenWindow<B::Snapshot, B::Launch>>() {
            Ok(window) => window,
            Err(other) => {
                *open = Some(other);
                drop(open);
                self.foreign_window_notice();
                return;
            }
        };
        window.pass0_ns += elapsed_ns(ticket.entered);
        let retained = backend.retain_launch(launch);
        if let Some(member) = window.members.last_mut() {
            match retained {
                Ok(copy) => member.launch = Some(copy),
                Err(error) => {
                    self.backend_notice("retain_launch", &error);
                    window.replayable = false;
                }
            }
        }
        if window.members.len() >= window.capacity || !window.replayable {
            drop(open);
            let reason = if window.replayable {
                "full"
            } else {
                "a launch that could not be kept"
            };
            self.run_window(backend, *window, reason);
            return;
        }
        window.hold.park();
        *open = Some(window);
    }

    /// The fence of a call the caller's parked window stays open across, if it may: see
    /// [`Engine::fence_in_window`]. `None`: the call takes the ordinary fence (which closes
    /// the window).
    pub(super) fn stay_in_window<B: ReplayBackend>(&self, backend: &mut B) -> Option<FenceGuard>
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        if !self.window_spans.load(Ordering::Relaxed) {
            return None;
        }
        let me = std::thread::current().id();
        let device = {
            let open = lock(&self.open_window);
            let window = open
                .as_ref()?
                .downcast_ref::<OpenWindow<B::Snapshot, B::Launch>>()?;
            if window.owner != me || window.restorable || !window.replayable {
                return None;
            }
            window.device
        };
        // Counted as a reader from here: should another thread close the window meanwhile, no
        // replay starts while the call runs.
        let fence = self.gate.fence_in_parked_window()?;
        // The members launched so far finish before the call's work starts.
        if let Err(error) = backend.drain(device, self.config.drain_timeout()) {
            self.backend_notice("drain", &error);
            return None;
        }
        let mut open = lock(&self.open_window);
        if let Some(window) = open
            .as_mut()
            .and_then(|w| w.downcast_mut::<OpenWindow<B::Snapshot, B::Launch>>())
            .filter(|w| w.owner == me)
        {
            window.spanned += 1;
            window.drain_before_member = true;
        }
        drop(open);
        Some(fence)
    }

    /// Adopts and closes the parked window, if there is one. Returns whether it closed one.
    pub(super) fn close_parked_window<B: ReplayBackend>(
        &self,
        backend: &mut B,
        reason: &str,
    ) -> bool
    where
        B::Launch: Send + 'static,
        B::Snapshot: Send + 'static,
    {
        let window = {
            let mut open = lock(&self.open_window);
            if open.is_none() || !self.gate.is_parked() {
                return false;
            }
            let Some(boxed) = open.take() else {
                return false;
            };
            match boxed.downcast::<OpenWindow<B::Snapshot, B::Launch>>() {
                Ok(window) => {
                    window.hold.adopt();
                    window
                }
                Err(_foreign) => {
                    // Opened through another backend type: it cannot be closed from here.
                    // Dropping it frees the window; its members ran once and keep their
                    // memory (no restore happened), only their records are lost.
                    drop(open);
                    self.foreign_window_notice();
                    return true;
                }
            }
        };
        self.run_window(backend, *window, reason);
        true
    }

    fn foreign_window_notice(&self) {
        self.notices.once(
            "window-foreign-backend",
            "a replay window was opened through another backend type and could not be closed; its dispatches ran once and their records are lost",
            self.sink.as_ref(),
            self.options.logger.as_ref(),
        );
    }

    /// Closes a window: pass-0 results, the further passes, records and costs.
    fn run_window<B: ReplayBackend>(
        &self,
        backend: &mut B,
        window: OpenWindow<B::Snapshot, B::Launch>,
        reason: &str,
    ) {
        let OpenWindow {
            device,
            groups,
            members,
            replayable,
            snapshot,
            restorable,
            staging,
            bytes_tracked,
            drain_ns,
            snapshot_ns,
            mut pass0_ns,
            hold,
            spanned,
            ..
        } = window;
        // Launches that did not execute: no record, nothing to measure or replay (as a dropped
        // ticket of a dispatch replayed alone).
        let members: Vec<Member<B::Launch>> = members
            .into_iter()
            .filter(|m| !m.abandoned.load(Ordering::Acquire))
            .collect();
        let n = members.len();
        lock(&self.window_stats).record(n, reason, spanned);
        let mut outcome = ReplayOutcome::Replayed;
        let mut pass_ns = Vec::new();
        let mut bytes_restored = 0;
        let mut restore_ns = 0;

        let stop_started = Instant::now();
        let group0 = groups.first().copied().flatten();
        let pass0 = backend.stop_window_pass(device, group0, n);
        pass0_ns += elapsed_ns(stop_started);
        pass_ns.push(pass0_ns);
        let mut measured = match pass0 {
            Ok(results) if results.len() == n => {
                self.send_window_pass(&members, 0, results);
                true
            }
            Ok(results) => {
                self.window_counters_notice(&format!(
                    "pass 0 measured {} of {n} dispatches",
                    results.len()
                ));
                false
            }
            Err(error) => {
                self.backend_notice("stop_window_pass", &error);
                false
            }
        };
        if !measured && spanned > 0 && self.window_spans.swap(false, Ordering::Relaxed) {
            self.notices.once(
                "window-spans-off",
                &format!("a replay window that stayed open across {spanned} other CUDA call(s) did not measure its kernels; windows now close at every call for the rest of the run ({ENV_WINDOW_SPANS}=0 does so from the start)"),
                self.sink.as_ref(),
                self.options.logger.as_ref(),
            );
        }
        // A member whose launch was not kept (the backend could not copy it) cannot run again:
        // no restore may undo what the window did. A window left empty has nothing to replay.
        if !replayable || n == 0 || members.iter().any(|m| m.launch.is_none()) {
            measured = false;
        }
        if !measured {
            outcome = ReplayOutcome::DeclinedError;
        }

        let total = groups.len() as u32;
        let mut pass: u32 = 1;
        while measured && pass < total {
            if self.tool.has_continue_decision()
                && !members.iter().all(|m| {
                    self.tool
                        .continue_after(&m.dispatch.tool_view(), pass - 1, Some(total))
                })
            {
                outcome = ReplayOutcome::StoppedEarly;
                break;
            }
            // A group the backend already collected with an earlier pass's (packed) group:
            // recorded from its held results, nothing restored or re-executed.
            let held = groups[pass as usize].and_then(|g| backend.held_results(device, g, n));
            if let Some(results) = held.filter(|r| r.len() == n) {
                for member in &members {
                    self.tool.on_pass_start(&member.dispatch.tool_view(), pass);
                }
                self.send_window_pass(&members, pass, results);
                pass += 1;
                continue;
            }
            if !restorable {
                self.lost_pass_notice(pass);
                outcome = ReplayOutcome::DeclinedError;
                break;
            }
            let restore_started = Instant::now();
            match restore_snapshot(backend, &snapshot) {
                Ok(bytes) => bytes_restored += bytes,
                Err(error) => {
                    self.fatal(&format!(
                        "restoring device {device} memory before pass {pass} of the replay window of dispatches {} failed ({error}); the application's memory can no longer be trusted",
                        describe_members(&members)
                    ));
                    outcome = ReplayOutcome::DeclinedError;
                    break;
                }
            }
            restore_ns += elapsed_ns(restore_started);
            let pass_started = Instant::now();
            let result =
                self.run_window_pass(backend, device, &members, groups[pass as usize], pass);
            pass_ns.push(elapsed_ns(pass_started));
            match result {
                Ok(()) => pass += 1,
                Err(PassFailure::Counters(message)) => {
                    self.window_counters_notice(&message);
                    outcome = ReplayOutcome::DeclinedError;
                    break;
                }
                Err(PassFailure::Fatal(message)) => {
                    self.fatal(&message);
                    outcome = ReplayOutcome::DeclinedError;
                    break;
                }
            }
        }

        release_snapshot(backend, snapshot);
        drop(hold);
        let passes = pass_ns.len() as u32;
        for (index, member) in members.iter().enumerate() {
            let first = index == 0;
            let shared = |value: u64| if first { value } else { 0 };
            self.sink.send(Record::ReplayCost(ReplayCost {
                dispatch_id: member.dispatch.dispatch_id,
                agent_id: u64::from(device),
                outcome,
                passes,
                bytes_tracked,
                bytes_snapshotted: if restorable { shared(bytes_tracked) } else { 0 },
                bytes_restored: shared(bytes_restored),
                staging,
                drain_ns: shared(drain_ns),
                snapshot_ns: shared(snapshot_ns),
                pass_ns: pass_ns.iter().map(|ns| shared(*ns)).collect(),
                restore_ns: shared(restore_ns),
            }));
        }
    }

    /// One further pass over the window: every member relaunched in order under `group`.
    fn run_window_pass<B: ReplayBackend>(
        &self,
        backend: &mut B,
        device: DeviceId,
        members: &[Member<B::Launch>],
        group: Option<usize>,
        pass: u32,
    ) -> Result<(), PassFailure> {
        let n = members.len();
        let started = backend.start_window_pass(device, group, n);
        for member in members {
            self.tool.on_pass_start(&member.dispatch.tool_view(), pass);
            let relaunched = match &member.launch {
                Some(launch) => backend.relaunch(launch),
                None => Err(BackendError::Failed("the launch was not kept".to_string())),
            };
            if let Err(error) = relaunched {
                return Err(PassFailure::Fatal(format!(
                    "re-executing kernel {:?} for pass {pass} of dispatch {} (replay window of dispatches {}) failed after memory was restored ({error}); the application's memory can no longer be trusted",
                    member.dispatch.info.kernel_name,
                    member.dispatch.dispatch_id,
                    describe_members(members)
                )));
            }
        }
        if let Err(error) = started {
            // Every kernel ran (memory is right) but unmeasured.
            return Err(PassFailure::Counters(format!("start_window_pass: {error}")));
        }
        match backend.stop_window_pass(device, group, n) {
            Ok(results) if results.len() == n => {
                self.send_window_pass(members, pass, results);
                Ok(())
            }
            Ok(results) => Err(PassFailure::Counters(format!(
                "pass {pass} measured {} of {n} dispatches",
                results.len()
            ))),
            Err(error) => Err(PassFailure::Counters(format!("stop_window_pass: {error}"))),
        }
    }

    fn send_window_pass<L>(&self, members: &[Member<L>], pass: u32, results: Vec<PassResult>) {
        for (member, result) in members.iter().zip(results) {
            self.tool
                .on_pass_stop(&member.dispatch.tool_view(), pass, &result);
            self.send_dispatch(&member.dispatch, Some(pass), result);
        }
    }

    fn window_counters_notice(&self, message: &str) {
        self.notices.once(
            "window-pass-counters",
            &format!("a replay window lost its counters and its replay stopped ({message}); the application's memory is what the last pass produced"),
            self.sink.as_ref(),
            self.options.logger.as_ref(),
        );
    }
}

/// How windows ended, for the line [`Engine::finish`] prints: what cuts windows short.
#[derive(Debug, Default)]
pub(super) struct WindowStats {
    windows: u64,
    dispatches: u64,
    /// Calls windows stayed open across.
    spanned: u64,
    closed_by: std::collections::BTreeMap<String, u64>,
}

impl WindowStats {
    fn record(&mut self, members: usize, reason: &str, spanned: u64) {
        self.windows += 1;
        self.dispatches += members as u64;
        self.spanned += spanned;
        *self.closed_by.entry(reason.to_string()).or_default() += 1;
    }

    /// `replay windows closed by: cuMemcpyDtoH_v2 40, full 2; 84 dispatches in 42 windows`
    /// (most frequent first, so that a cut-off tail loses the least useful part).
    pub(super) fn line(&self) -> Option<String> {
        if self.windows == 0 {
            return None;
        }
        let mut reasons: Vec<(&String, &u64)> = self.closed_by.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let reasons: Vec<String> = reasons.iter().map(|(r, n)| format!("{r} {n}")).collect();
        let spanned = if self.spanned > 0 {
            format!(
                "; windows stayed open across {} other call(s)",
                self.spanned
            )
        } else {
            String::new()
        };
        Some(format!(
            "kreplay: replay windows closed by: {}; {} dispatches in {} windows ({:.1} per window){spanned}",
            reasons.join(", "),
            self.dispatches,
            self.windows,
            self.dispatches as f64 / self.windows as f64
        ))
    }
}

impl Engine {
    pub(super) fn window_summary(&self) -> Option<String> {
        lock(&self.window_stats).line()
    }
}

/// `first..last` dispatch ids of a window, for messages.
fn describe_members<L>(members: &[Member<L>]) -> String {
    match (members.first(), members.last()) {
        (Some(first), Some(last)) if members.len() > 1 => format!(
            "{}..{}",
            first.dispatch.dispatch_id, last.dispatch.dispatch_id
        ),
        (Some(only), _) => only.dispatch.dispatch_id.to_string(),
        _ => "(none)".to_string(),
    }
}

#[allow(dead_code)]
fn _assert_window_is_send() {
    fn check<T: Send + Any>() {}
    check::<OpenWindow<u64, ()>>();
}
