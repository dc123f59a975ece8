//! Counter set-up begun at context creation, on a thread of the tool's own: CUPTI's profiler
//! initialisation, the device's counter-availability image (≈ 130 ms on an H200), the group
//! checks and configuration images, and the first configuration programmed into the hardware
//! ([`RangeProfiler::warm_up`]). The application's first dispatch with counters on that context
//! takes the result (waiting for it if needed), so the set-up overlaps what the application does
//! in between (allocations, copies, module loads, library handles). `KREPLAY_EARLY_SETUP=0`
//! leaves it to the first dispatch.
//!
//! The context-creation callback runs while the driver holds locks of its own, so starting a
//! set-up must never wait for a lock that a thread inside CUDA or CUPTI may hold (the backend's
//! is held across `cuptiRangeProfilerStop`, which takes a driver lock): [`CounterSetup`] keeps
//! its set-ups behind a lock of its own, held only to file or take one, never across CUDA calls
//! or a join.
//!
//! Three moments must not meet a set-up still running (each ended an application on the H200,
//! CUDA 13.0, 2026-12-01, `bench/probes/setup_at_exit.sh`):
//! - the process's exit: CUPTI and nvperf create static state at their first use, on the
//!   set-up thread, so its destructors are registered after kreplay's exit handler and run
//!   before it, under the set-up (SIGSEGV in `libnvperf_host.so`). [`wait_at_exit`] is
//!   registered after the profiler's initialisation (on the application's thread at its first
//!   driver call after `cuInit`, before any context: [`CounterSetup::initialize_profiler`]; a
//!   set-up thread does it should that fail) and after each step of a set-up, so the exit
//!   waits for a set-up before the destructors of finished steps run; a set-up that sees the exit begun stops at its next step. An exit that begins
//!   in the middle of a step (a third of short runs that measured nothing, 2026-12-02) waits
//!   earlier, in a thread-local destructor of the exiting thread, which `exit()` runs before
//!   any exit handler ([`guard_thread_exit`], taken by every thread that calls the driver);
//! - a stream capture: a capture begun while the set-up ran was invalidated
//!   (`cudaStreamEndCapture`: "operation failed due to a previous error during capture"), so
//!   beginning one waits for the set-up of the current context first
//!   ([`CounterSetup::finish`]; another context's set-up is not waited for);
//! - the context's destruction ([`CounterSetup::abandon`]: it waits inside the driver's
//!   resource callback, bounded, since the set-up may need a lock the driver holds there).

use crate::profiler::RangeProfiler;
use crate::MetricGroups;
use kreplay_core::config::Switches;
use kreplay_cuda::error::CudaError;
use kreplay_cuda::guard::ToolScope;
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A context's set-up: under way, or finished before its first dispatch took it.
enum SetUp<T> {
    Running(Preparation<T>),
    Ready(Box<T>),
}

/// A set-up on a thread of its own.
struct Preparation<T> {
    /// The process that started the thread (a child forked meanwhile has no such thread: it
    /// must not wait for it).
    pid: u32,
    thread: std::thread::JoinHandle<T>,
    /// Set when the context is being destroyed: the thread stops at its next step.
    cancelled: Arc<AtomicBool>,
}

/// The set-ups under way or finished, by context, and what each moment does with them. Generic
/// over the set-up's result so that it is tested without CUDA. Its lock is held only to file,
/// take or put back one, never across a join.
struct SetUps<T> {
    by_context: Mutex<HashMap<usize, SetUp<T>>>,
    /// The result of a set-up whose thread panicked.
    panicked: fn() -> T,
}

impl<T> SetUps<T> {
    fn new(panicked: fn() -> T) -> Self {
        SetUps {
            by_context: Mutex::new(HashMap::new()),
            panicked,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, SetUp<T>>> {
        self.by_context.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The set-up's result, or `None` when the thread belongs to another process (its handle
    /// is forgotten: that thread does not exist here).
    fn join(&self, preparation: Preparation<T>) -> Option<T> {
        if preparation.pid != std::process::id() {
            std::mem::forget(preparation);
            return None;
        }
        Some(
            preparation
                .thread
                .join()
                .unwrap_or_else(|_| (self.panicked)()),
        )
    }

    /// The set-up of `key`, waited for if it still runs; gone from here.
    fn take(&self, key: usize) -> Option<T> {
        match self.lock().remove(&key)? {
            SetUp::Ready(result) => Some(*result),
            SetUp::Running(preparation) => self.join(preparation),
        }
    }

    /// Waits for the set-up of `key` if it still runs and keeps its result for [`Self::take`];
    /// whether there was one to wait for. The set-up stays filed while it is waited for, so a
    /// first dispatch on another thread takes it (and waits) meanwhile, and a destroyed
    /// context's set-up is not filed again.
    fn finish(&self, key: usize) -> bool {
        loop {
            let mut by_context = self.lock();
            let finished = match by_context.get(&key) {
                Some(SetUp::Running(preparation)) if preparation.pid == std::process::id() => {
                    preparation.thread.is_finished()
                }
                _ => return false,
            };
            if finished {
                let Some(SetUp::Running(preparation)) = by_context.remove(&key) else {
                    return false;
                };
                // The thread has ended: the join does not wait.
                if let Some(result) = self.join(preparation) {
                    by_context.insert(key, SetUp::Ready(Box::new(result)));
                }
                return true;
            }
            drop(by_context);
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// Tells the set-up of `key` to stop and waits for it up to `wait`; forgets it and what it
    /// made without dropping that (one still running keeps its result for ever: it is never
    /// joined or detached). `Some(stopped in time)` when one of this process ran.
    fn abandon(&self, key: usize, wait: Duration) -> Option<bool> {
        let preparation = match self.lock().remove(&key)? {
            SetUp::Running(preparation) => preparation,
            SetUp::Ready(result) => {
                std::mem::forget(result);
                return None;
            }
        };
        if preparation.pid != std::process::id() {
            std::mem::forget(preparation);
            return None;
        }
        preparation.cancelled.store(true, Ordering::Release);
        Some(forget_after(preparation, wait))
    }

    /// Tells every set-up to stop (the process ends) and waits up to `wait` in all for this
    /// process's still running; forgets them all and what they made without dropping that.
    fn finish_all(&self, wait: Duration) {
        EXITING.store(true, Ordering::Release);
        let all: Vec<SetUp<T>> = self.lock().drain().map(|(_, p)| p).collect();
        let deadline = Instant::now() + wait;
        for setup in all {
            match setup {
                SetUp::Running(preparation) if preparation.pid == std::process::id() => {
                    forget_after(
                        preparation,
                        deadline.saturating_duration_since(Instant::now()),
                    );
                }
                SetUp::Running(preparation) => std::mem::forget(preparation),
                SetUp::Ready(result) => std::mem::forget(result),
            }
        }
    }
}

/// Waits up to `wait` for the set-up's thread to end, then forgets it and its result without
/// dropping either; whether it ended in time.
fn forget_after<T>(preparation: Preparation<T>, wait: Duration) -> bool {
    let began = Instant::now();
    while !preparation.thread.is_finished() && began.elapsed() < wait {
        std::thread::sleep(Duration::from_millis(1));
    }
    let finished = preparation.thread.is_finished();
    if finished {
        std::mem::forget(preparation.thread.join());
    } else {
        std::mem::forget(preparation);
    }
    finished
}

/// How long a context's destruction waits for its set-up to stop (a set-up left running would
/// make CUPTI calls on a context that is gone). Bounded, since the destroying thread may hold
/// a driver lock the set-up waits for.
const DESTROY_WAIT: Duration = Duration::from_secs(2);

/// Set-up threads still running, for [`wait_at_exit`]: the process that counted them in the
/// high 32 bits (a child forked meanwhile has none of those threads), their number in the low.
/// An atomic, not a lock: a child forked while another thread held a lock would never get it.
static RUNNING: AtomicU64 = AtomicU64::new(0);
/// The process's exit has begun: a set-up stops at its next step.
static EXITING: AtomicBool = AtomicBool::new(false);
/// How long the exit waits for a set-up (one that needs a lock the exiting thread holds would
/// never finish).
const EXIT_WAIT: Duration = Duration::from_secs(10);

/// Set-up threads of this process still running.
fn running_here() -> u64 {
    let running = RUNNING.load(Ordering::Acquire);
    if running >> 32 == u64::from(std::process::id()) {
        running & u64::from(u32::MAX)
    } else {
        0
    }
}

/// An exit handler, registered by each set-up thread after each of its steps (so after the
/// destructors of what the step initialised): waits up to [`EXIT_WAIT`] until no set-up of
/// this process runs.
extern "C" fn wait_at_exit() {
    EXITING.store(true, Ordering::Release);
    wait_for_setups();
}

/// Waits up to [`EXIT_WAIT`] until no set-up of this process runs.
fn wait_for_setups() {
    let began = Instant::now();
    while running_here() > 0 && began.elapsed() < EXIT_WAIT {
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Held by every application thread that calls the driver ([`guard_thread_exit`]): when the
/// thread ends, it waits for the set-ups still running. `exit()` runs the calling thread's
/// thread-local destructors before any exit handler (glibc's `__run_exit_handlers`), so an
/// application that exits while a set-up is in the middle of a step waits here, before the
/// destructors CUPTI and nvperf registered during that step run under the set-up (10 of 30
/// runs that measured nothing ended with SIGSEGV in `libnvperf_host.so` at exit, H200,
/// 2026-12-02, `bench/probes/setup_at_exit.sh`). A thread that merely ends waits the same
/// (bounded, and only while a set-up runs); the set-up is not told to stop, since the process
/// may go on.
struct ExitGuard;

impl Drop for ExitGuard {
    fn drop(&mut self) {
        if running_here() > 0 {
            wait_for_setups();
        }
    }
}

thread_local! {
    static EXIT_GUARD: ExitGuard = const { ExitGuard };
}

/// Makes the calling thread wait, when it ends (also by calling `exit`), for the set-ups still
/// running (see [`ExitGuard`]). Cheap after the first call on a thread.
pub fn guard_thread_exit() {
    // A thread being torn down has no thread-locals left: nothing to guard.
    let _ = EXIT_GUARD.try_with(|_| ());
}

/// Counts a set-up thread as running until dropped.
struct RunningSetUp;

impl RunningSetUp {
    fn start() -> RunningSetUp {
        let pid = u64::from(std::process::id());
        let _ = RUNNING.fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
            Some(if running >> 32 == pid {
                running + 1
            } else {
                (pid << 32) | 1
            })
        });
        RunningSetUp
    }
}

impl Drop for RunningSetUp {
    fn drop(&mut self) {
        let pid = u64::from(std::process::id());
        let _ = RUNNING.fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
            (running >> 32 == pid && running & u64::from(u32::MAX) > 0).then(|| running - 1)
        });
    }
}

/// After a step of a set-up: the exit waits for the set-up before anything the step set up is
/// torn down (see the module documentation).
fn exit_waits_for_setup() {
    kreplay_core::lifecycle::at_exit(wait_at_exit);
}

/// The backend's own work a set-up thread does after the counters (see [`CounterSetup::new`]).
#[derive(Clone, Copy)]
pub struct AheadWork {
    /// What it does, for the diagnostic line (`flush module compiled`).
    pub what: &'static str,
    pub work: fn(&'static Driver) -> Result<(), CudaError>,
}

/// What a set-up needs, and the set-ups under way by context. Cheap to clone (one `Arc`): the
/// backend and the context-creation callback share one.
#[derive(Clone)]
pub struct CounterSetup {
    shared: Arc<Shared>,
}

struct Shared {
    driver: &'static Driver,
    cupti: &'static Cupti,
    groups: MetricGroups,
    /// The groups programmed ahead ([`RangeProfiler::warm_up`]).
    warm: Vec<Option<usize>>,
    max_ranges: usize,
    switches: Switches,
    /// Work the set-up thread does for the backend after the counters, so that the first
    /// dispatch need not (the L2 flush's module, compiled ahead when the flush runs in the
    /// application's context with the GPC-caches code).
    ahead: Option<AheadWork>,
    setups: SetUps<Result<RangeProfiler, CudaError>>,
}

impl CounterSetup {
    pub fn new(
        driver: &'static Driver,
        cupti: &'static Cupti,
        groups: MetricGroups,
        warm: Vec<Option<usize>>,
        max_ranges: usize,
        switches: Switches,
        ahead: Option<AheadWork>,
    ) -> Self {
        CounterSetup {
            shared: Arc::new(Shared {
                driver,
                cupti,
                groups,
                warm,
                max_ranges,
                switches,
                ahead,
                setups: SetUps::new(|| {
                    Err(CudaError::Load("the counter set-up thread panicked".into()))
                }),
            }),
        }
    }

    /// CUPTI's profiler initialisation, tried once per process on an application thread at its
    /// first driver call's ENTER callback after `cuInit` (inside `cuInit`, where the injection
    /// runs, it failed with CUPTI error 999 on the H200): before the first context, so before
    /// any set-up thread, and [`wait_at_exit`] is registered right after it, so the exit waits
    /// for set-ups before what it initialised is torn down. ≈ 12 ms on an H200, on the
    /// application's thread. Should it fail, it is left to the set-up, as without this.
    pub fn initialize_profiler(&self) {
        // The first thread to get here tries; others go on without waiting for it.
        // Called at every driver call: a read, and a write only the first time.
        static TRIED: AtomicBool = AtomicBool::new(false);
        if TRIED.load(Ordering::Relaxed) || TRIED.swap(true, Ordering::AcqRel) {
            return;
        }
        if crate::profiler::try_initialize_profiler(self.shared.cupti) {
            exit_waits_for_setup();
        }
    }

    /// Starts setting the counters up for a context the application just created. Never
    /// blocks: safe in the context-creation callback.
    pub fn prepare(&self, ctx: CUcontext) {
        if ctx.is_null() || !self.shared.switches.early_setup {
            return;
        }
        let mut by_context = self.shared.setups.lock();
        if by_context.contains_key(&(ctx as usize)) {
            return;
        }
        let shared = self.shared.clone();
        let context = ctx as usize;
        let cancelled = Arc::new(AtomicBool::new(false));
        let stop = cancelled.clone();
        let stopped = move || stop.load(Ordering::Acquire) || EXITING.load(Ordering::Acquire);
        let running = RunningSetUp::start();
        let spawned = std::thread::Builder::new()
            .name("kreplay-setup".into())
            .spawn(move || {
                let _running = running;
                kreplay_core::lifecycle::block_signals();
                // A thread of the tool's: every CUDA call it makes is the tool's own, also
                // those a library makes on its behalf.
                let _thread = ToolScope::enter();
                let ctx = context as CUcontext;
                let _current = kreplay_cuda::ContextGuard::make_current(shared.driver, ctx)?;
                let mut device: sys::CUdevice = 0;
                // SAFETY: the context pushed above is current on this thread.
                unsafe { kreplay_cuda::drv!(shared.driver, cuCtxGetDevice(&mut device))? };
                let gone = || {
                    CudaError::Load("the set-up stopped: its context or the process ends".into())
                };
                if stopped() {
                    return Err(gone());
                }
                let initialised = crate::profiler::initialize_profiler(shared.cupti);
                exit_waits_for_setup();
                initialised?;
                let profiler = RangeProfiler::new(
                    shared.cupti,
                    ctx,
                    device,
                    device as usize,
                    &shared.groups,
                    shared.max_ranges,
                    &shared.switches,
                );
                exit_waits_for_setup();
                let mut profiler = profiler?;
                if stopped() {
                    // Not dropped: disabling it would be CUPTI calls on a context going away.
                    std::mem::forget(profiler);
                    return Err(gone());
                }
                let warmed = profiler.warm_up(&shared.warm);
                exit_waits_for_setup();
                if stopped() {
                    // As above: a stop during the warm-up leaves nothing to drop either.
                    std::mem::forget(profiler);
                    return Err(gone());
                }
                if let Err(e) = warmed {
                    // The first dispatch programs the counters itself, as without set-up.
                    kreplay_cuda::debug::line(&format!("counters not programmed ahead: {e}"));
                }
                if let (Some(ahead), false) = (shared.ahead, stopped()) {
                    let began = Instant::now();
                    // Without it, the first dispatch does this work on the application's thread.
                    match (ahead.work)(shared.driver) {
                        Ok(()) => kreplay_cuda::debug::line(&format!(
                            "{} ahead in {:.1} ms",
                            ahead.what,
                            kreplay_cuda::debug::ms(began.elapsed())
                        )),
                        Err(e) => kreplay_cuda::debug::line(&format!(
                            "{} not done ahead: {e}",
                            ahead.what
                        )),
                    }
                }
                Ok(profiler)
            });
        // Without a thread the first dispatch sets the counters up itself.
        if let Ok(thread) = spawned {
            let pid = std::process::id();
            by_context.insert(
                context,
                SetUp::Running(Preparation {
                    pid,
                    thread,
                    cancelled,
                }),
            );
        }
    }

    /// Waits for the set-up started for `ctx`, if any (`None` also when it belongs to the
    /// process this one was forked from).
    pub fn take(&self, ctx: CUcontext) -> Option<Result<RangeProfiler, CudaError>> {
        let began = Instant::now();
        let result = self.shared.setups.take(ctx as usize)?;
        kreplay_cuda::debug::line(&format!(
            "waited {:.1} ms for the counter set-up begun at context creation",
            kreplay_cuda::debug::ms(began.elapsed())
        ));
        Some(result)
    }

    /// Stops the set-up of a context being destroyed: it is told to stop at its next step and
    /// waited for up to [`DESTROY_WAIT`] (not joined outright: the caller may hold driver locks
    /// the set-up needs). What it made is not dropped (no CUPTI calls on a dying context).
    pub fn abandon(&self, ctx: CUcontext) {
        let began = Instant::now();
        if let Some(stopped) = self.shared.setups.abandon(ctx as usize, DESTROY_WAIT) {
            kreplay_cuda::debug::line(&format!(
                "context destroyed during its counter set-up: waited {:.1} ms, {}",
                kreplay_cuda::debug::ms(began.elapsed()),
                if stopped {
                    "set-up stopped"
                } else {
                    "set-up still running"
                }
            ));
        }
    }

    /// Waits for every set-up still running (before the process ends), so that no set-up
    /// thread makes CUPTI calls while the process tears CUDA down. The profilers they made are
    /// not dropped: that would disable them, CUPTI calls in an exit handler (disabling the
    /// profiler at exit ended an application with SIGSEGV before, `catalog::identity_cache`).
    pub fn finish_all(&self) {
        self.shared.setups.finish_all(EXIT_WAIT);
    }

    /// Waits for the set-up of `ctx` to finish, keeping its result for the context's first
    /// dispatch: a stream capture begins on it (see the module documentation). Called at the
    /// capture's ENTER callback, where the driver holds no lock of its own.
    pub fn finish(&self, ctx: CUcontext) {
        let began = Instant::now();
        if self.shared.setups.finish(ctx as usize) {
            kreplay_cuda::debug::line(&format!(
                "a stream capture waited {:.1} ms for the counter set-up",
                kreplay_cuda::debug::ms(began.elapsed())
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A set-up of `key` that gives `value` once `go` is set (or at once when it is `None`),
    /// or stops early with 0 when told to.
    fn file(setups: &SetUps<u32>, key: usize, value: u32, go: Option<Arc<AtomicBool>>) {
        let cancelled = Arc::new(AtomicBool::new(false));
        let stop = cancelled.clone();
        let thread = std::thread::spawn(move || loop {
            if stop.load(Ordering::Acquire) {
                return 0;
            }
            if go.as_ref().is_none_or(|g| g.load(Ordering::Acquire)) {
                return value;
            }
            std::thread::sleep(Duration::from_millis(1));
        });
        let pid = std::process::id();
        let preparation = Preparation {
            pid,
            thread,
            cancelled,
        };
        setups.lock().insert(key, SetUp::Running(preparation));
    }

    #[test]
    fn a_capture_keeps_the_set_up_for_the_first_dispatch_however_often_it_begins() {
        let setups = SetUps::new(|| u32::MAX);
        file(&setups, 1, 7, None);
        assert!(setups.finish(1), "waited for the running set-up");
        assert!(!setups.finish(1), "a second capture finds it finished");
        assert!(!setups.finish(2), "no set-up for another context");
        assert_eq!(setups.take(1), Some(7), "kept for the first dispatch");
        assert_eq!(setups.take(1), None, "taken once");
    }

    #[test]
    fn a_dispatch_waits_for_a_running_set_up_and_a_panic_is_its_error() {
        let setups = SetUps::new(|| u32::MAX);
        let go = Arc::new(AtomicBool::new(false));
        file(&setups, 1, 5, Some(go.clone()));
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            go.store(true, Ordering::Release);
        });
        assert_eq!(setups.take(1), Some(5));
        release.join().unwrap();
        let thread = std::thread::spawn(|| -> u32 { panic!("set-up failed") });
        let pid = std::process::id();
        let cancelled = Arc::new(AtomicBool::new(false));
        setups.lock().insert(
            2,
            SetUp::Running(Preparation {
                pid,
                thread,
                cancelled,
            }),
        );
        assert_eq!(setups.take(2), Some(u32::MAX));
    }

    #[test]
    fn a_destroyed_context_stops_its_set_up_and_forgets_what_it_kept() {
        let setups = SetUps::new(|| u32::MAX);
        // Never told to go: only the stop ends it.
        file(&setups, 1, 9, Some(Arc::new(AtomicBool::new(false))));
        assert_eq!(setups.abandon(1, Duration::from_secs(5)), Some(true));
        assert_eq!(setups.take(1), None);
        file(&setups, 2, 3, None);
        assert!(setups.finish(2));
        assert_eq!(
            setups.abandon(2, Duration::from_secs(5)),
            None,
            "nothing ran any more"
        );
        assert_eq!(
            setups.take(2),
            None,
            "what it kept is gone with the context"
        );
        // One filed by the process this one was forked from is not waited for.
        let thread = std::thread::spawn(|| 4);
        let cancelled = Arc::new(AtomicBool::new(false));
        let pid = std::process::id().wrapping_add(1);
        setups.lock().insert(
            3,
            SetUp::Running(Preparation {
                pid,
                thread,
                cancelled,
            }),
        );
        assert_eq!(setups.take(3), None);
    }

    /// The tests that set [`EXITING`] run one at a time.
    static EXIT_TESTS: Mutex<()> = Mutex::new(());

    #[test]
    fn a_first_dispatch_during_a_capture_s_wait_takes_the_set_up() {
        let setups = Arc::new(SetUps::new(|| u32::MAX));
        let go = Arc::new(AtomicBool::new(false));
        file(&setups, 1, 6, Some(go.clone()));
        let capture = {
            let setups = setups.clone();
            std::thread::spawn(move || setups.finish(1))
        };
        std::thread::sleep(Duration::from_millis(10));
        let release = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(20));
            go.store(true, Ordering::Release);
        });
        assert_eq!(
            setups.take(1),
            Some(6),
            "still filed while the capture waits"
        );
        release.join().unwrap();
        assert!(!capture.join().unwrap(), "the capture finds it taken");
        assert!(setups.lock().is_empty(), "not filed again");
    }

    #[test]
    fn the_process_end_waits_for_running_set_ups_a_bounded_time() {
        let _one = EXIT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let setups = SetUps::new(|| u32::MAX);
        let go = Arc::new(AtomicBool::new(false));
        file(&setups, 1, 1, Some(go.clone()));
        file(&setups, 2, 2, None);
        assert!(setups.finish(2));
        let released = Arc::new(AtomicBool::new(false));
        let release = {
            let released = released.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(20));
                released.store(true, Ordering::Release);
                go.store(true, Ordering::Release);
            })
        };
        setups.finish_all(Duration::from_secs(5));
        assert!(
            released.load(Ordering::Acquire),
            "returned before the set-up ended"
        );
        release.join().unwrap();
        assert!(setups.lock().is_empty());
        // One that never ends is left behind after the bound, not waited for.
        file(&setups, 3, 3, Some(Arc::new(AtomicBool::new(false))));
        let began = Instant::now();
        setups.finish_all(Duration::from_millis(30));
        assert!(began.elapsed() < Duration::from_secs(2));
        assert!(setups.lock().is_empty());
        EXITING.store(false, Ordering::Release);
    }

    // One test for the process-wide counter of running set-up threads.
    #[test]
    fn the_exit_waits_for_running_set_ups_of_this_process_only() {
        let _one = EXIT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        // A set-up that ends 50 ms from now: the exit handler returns once it has.
        let running = RunningSetUp::start();
        assert_eq!(running_here(), 1);
        let ends = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(running);
        });
        let began = Instant::now();
        wait_at_exit();
        let waited = began.elapsed();
        ends.join().unwrap();
        let exiting = EXITING.swap(false, Ordering::AcqRel);
        assert!(waited >= Duration::from_millis(40), "{waited:?}");
        assert!(waited < EXIT_WAIT, "{waited:?}");
        assert!(exiting, "set-ups stop at their next step");
        assert_eq!(running_here(), 0);
        // Counted by the process this one was forked from: nothing to wait for.
        let parent = u64::from(std::process::id().wrapping_add(1));
        RUNNING.store((parent << 32) | 1, Ordering::Release);
        assert_eq!(running_here(), 0);
        let began = Instant::now();
        wait_at_exit();
        EXITING.store(false, Ordering::Release);
        assert!(began.elapsed() < Duration::from_secs(1));
        // A set-up started in this process counts afresh, and its end is not lost.
        let again = RunningSetUp::start();
        assert_eq!(running_here(), 1);
        drop(again);
        assert_eq!(running_here(), 0);
    }

    #[test]
    fn a_thread_that_called_the_driver_waits_at_its_end_for_running_set_ups() {
        let _one = EXIT_TESTS.lock().unwrap_or_else(|e| e.into_inner());
        let running = RunningSetUp::start();
        let (guarded, guarded_rx) = std::sync::mpsc::channel();
        let thread = std::thread::spawn(move || {
            guard_thread_exit();
            guarded.send(()).unwrap();
            // Ends here: its thread-local guard waits for the set-up.
        });
        guarded_rx.recv().unwrap();
        // The set-up ends 50 ms from now; the thread's end (its join) waits for it.
        let began = Instant::now();
        let ends = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(50));
            drop(running);
        });
        thread.join().unwrap();
        let waited = began.elapsed();
        ends.join().unwrap();
        assert!(waited >= Duration::from_millis(40), "{waited:?}");
        assert!(
            !EXITING.load(Ordering::Acquire),
            "a thread's end stops no set-up"
        );
        // With none running, a guarded thread ends at once.
        std::thread::spawn(guard_thread_exit).join().unwrap();
    }
}
