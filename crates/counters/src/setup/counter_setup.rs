//! [`CounterSetup`]: what a context's counter set-up needs, and its moments: the profiler's
//! initialisation at the first driver call, a set-up started at context creation on a thread of
//! its own, taken by the first dispatch, finished before a stream capture, abandoned at the
//! context's destruction, waited for at the process's end.

use super::exit::{exit_waits_for_setup, RunningSetUp, EXITING, EXIT_WAIT};
use super::setups::{Preparation, SetUp, SetUps};
use crate::profiler::RangeProfiler;
use crate::MetricGroups;
use kreplay_core::config::Switches;
use kreplay_cuda::cupti::{CUcontext, Cupti, Driver};
use kreplay_cuda::error::CudaError;
use kreplay_cuda::guard::ToolScope;
use kreplay_cuda::lock;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How long a context's destruction waits for its set-up to stop (a set-up left running would
/// make CUPTI calls on a context that is gone). Bounded, since the destroying thread may hold
/// a driver lock the set-up waits for.
const DESTROY_WAIT: Duration = Duration::from_secs(2);

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
    /// Contexts that unloaded a module or library while their set-up was filed: the profiler
    /// it made lets go of its enabled configuration when taken
    /// ([`RangeProfiler::before_module_unload`]).
    unloaded: Mutex<HashSet<usize>>,
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
                unloaded: Mutex::new(HashSet::new()),
            }),
        }
    }

    /// CUPTI's profiler initialisation, tried once per process on an application thread at its
    /// first driver call's ENTER callback after `cuInit` (inside `cuInit`, where the injection
    /// runs, it failed with CUPTI error 999 on the H200): before the first context, so before
    /// any set-up thread, and `wait_at_exit` is registered right after it, so the exit waits
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
                let device = kreplay_cuda::cupti::profiler_device::current_device(shared.driver)?;
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
        let mut result = self.shared.setups.take(ctx as usize)?;
        if lock(&self.shared.unloaded).remove(&(ctx as usize)) {
            if let Ok(profiler) = result.as_mut() {
                profiler.before_module_unload();
            }
        }
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
        lock(&self.shared.unloaded).remove(&(ctx as usize));
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

    /// A module or library of `ctx` is about to be unloaded: the profiler its set-up makes (or
    /// made) lets go of its enabled configuration when the first dispatch takes it (see
    /// [`RangeProfiler::before_module_unload`]), which programs the counters again. Neither
    /// waits for the set-up nor calls CUPTI.
    pub fn before_module_unload(&self, ctx: CUcontext) {
        let key = ctx as usize;
        if self.shared.setups.lock().contains_key(&key) {
            lock(&self.shared.unloaded).insert(key);
        }
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
