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

use crate::backend::MetricGroups;
use crate::error::CudaError;
use crate::guard::ToolScope;
use crate::profiler::RangeProfiler;
use kreplay_core::config::Switches;
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A range profiler set up on a thread of its own, and the process that started the thread
/// (a child forked meanwhile has no such thread: it must not wait for it).
type Preparation = (
    u32,
    std::thread::JoinHandle<Result<RangeProfiler, CudaError>>,
);

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
    preparing: Mutex<HashMap<usize, Preparation>>,
}

impl CounterSetup {
    pub(crate) fn new(
        driver: &'static Driver,
        cupti: &'static Cupti,
        groups: MetricGroups,
        warm: Vec<Option<usize>>,
        max_ranges: usize,
        switches: Switches,
    ) -> Self {
        CounterSetup {
            shared: Arc::new(Shared {
                driver,
                cupti,
                groups,
                warm,
                max_ranges,
                switches,
                preparing: Mutex::new(HashMap::new()),
            }),
        }
    }

    fn preparing(&self) -> std::sync::MutexGuard<'_, HashMap<usize, Preparation>> {
        self.shared
            .preparing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
    }

    /// Starts setting the counters up for a context the application just created. Never
    /// blocks: safe in the context-creation callback.
    pub fn prepare(&self, ctx: CUcontext) {
        if ctx.is_null() || !self.shared.switches.early_setup {
            return;
        }
        let mut preparing = self.preparing();
        if preparing.contains_key(&(ctx as usize)) {
            return;
        }
        let shared = self.shared.clone();
        let context = ctx as usize;
        let spawned = std::thread::Builder::new()
            .name("kreplay-setup".into())
            .spawn(move || {
                kreplay_core::last_words::block_signals();
                // Its CUDA calls are the tool's own (the callbacks ignore them).
                let _scope = ToolScope::enter();
                let ctx = context as CUcontext;
                let _current = crate::backend::ContextGuard::make_current(shared.driver, ctx)?;
                let mut device: sys::CUdevice = 0;
                // SAFETY: the context pushed above is current on this thread.
                unsafe { crate::drv!(shared.driver, cuCtxGetDevice(&mut device))? };
                let mut profiler = RangeProfiler::new(
                    shared.cupti,
                    ctx,
                    device,
                    device as usize,
                    &shared.groups,
                    shared.max_ranges,
                    &shared.switches,
                )?;
                if let Err(e) = profiler.warm_up(&shared.warm) {
                    // The first dispatch programs the counters itself, as without set-up.
                    crate::debug::line(&format!("counters not programmed ahead: {e}"));
                }
                Ok(profiler)
            });
        // Without a thread the first dispatch sets the counters up itself.
        if let Ok(handle) = spawned {
            preparing.insert(context, (std::process::id(), handle));
        }
    }

    /// Waits for the set-up started for `ctx`, if any (`None` also when it belongs to the
    /// process this one was forked from).
    pub(crate) fn take(&self, ctx: CUcontext) -> Option<Result<RangeProfiler, CudaError>> {
        let preparation = self.preparing().remove(&(ctx as usize))?;
        let began = std::time::Instant::now();
        let result = join(preparation)?;
        crate::debug::line(&format!(
            "waited {:.1} ms for the counter set-up begun at context creation",
            crate::debug::ms(began.elapsed())
        ));
        Some(result)
    }

    /// Forgets the set-up of a context being destroyed without waiting for it (the caller may
    /// hold driver locks the set-up needs): a finished one is joined, a running one left to end
    /// on its own, its result dropped with it.
    pub(crate) fn abandon(&self, ctx: CUcontext) {
        let Some((pid, handle)) = self.preparing().remove(&(ctx as usize)) else {
            return;
        };
        if pid == std::process::id() && handle.is_finished() {
            drop(handle.join());
        }
    }

    /// Waits for every set-up still running (before the process or its contexts end).
    pub fn finish_all(&self) {
        let all: Vec<Preparation> = self.preparing().drain().map(|(_, p)| p).collect();
        for preparation in all {
            join(preparation);
        }
    }
}

/// The set-up's result, or `None` when the thread belongs to another process (see
/// [`Preparation`]).
fn join((pid, handle): Preparation) -> Option<Result<RangeProfiler, CudaError>> {
    if pid != std::process::id() {
        return None;
    }
    Some(
        handle
            .join()
            .unwrap_or_else(|_| Err(CudaError::Load("the counter set-up thread panicked".into()))),
    )
}
