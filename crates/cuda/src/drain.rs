//! Waiting for all of a context's work with a deadline. `cuCtxSynchronize` cannot be given one, so
//! it runs on a thread of the tool's own (one per context) and the caller waits for its answer at
//! most until the deadline (a device that never drains is then reported, and the worker is left
//! waiting). This needs no list of the application's streams: the tool keeps none, because stream
//! creation and destruction callbacks run while the driver holds locks that the tool's own counter
//! calls wait for (a lock taken there deadlocked two application threads).

use crate::error::CudaError;
use crate::guard::ToolScope;
use crate::ContextGuard;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::CUcontext;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One context to synchronise, and where to say how it went; skipped when its caller gave up
/// before the worker reached it (the context may be gone by then).
struct Job {
    ctx: usize,
    done: mpsc::SyncSender<Result<(), CudaError>>,
    cancelled: Arc<AtomicBool>,
}

/// Each context's worker queue and the process that started it (a forked child starts its
/// own): a drain of one device never queues behind another device's `cuCtxSynchronize`.
static WORKERS: Mutex<BTreeMap<usize, Worker>> = Mutex::new(BTreeMap::new());

/// A drain worker's queue and the process that started it.
struct Worker {
    pid: u32,
    queue: mpsc::Sender<Job>,
}

/// How a drain ended.
pub enum Drained {
    Done,
    /// The context still had work when the deadline passed.
    TimedOut,
}

/// Waits for every stream of `ctx` (the application's, other libraries', the tool's) to be
/// idle, at most `deadline`. A worker thread started for it runs `tool_thread` first (the
/// lifecycle's signal blocking: the tool's threads leave signals to the application's).
pub fn synchronize_within(
    driver: &'static Driver,
    ctx: CUcontext,
    deadline: Duration,
    tool_thread: fn(),
) -> Result<Drained, CudaError> {
    let (done, answer) = mpsc::sync_channel(1);
    let cancelled = Arc::new(AtomicBool::new(false));
    let job = Job {
        ctx: ctx as usize,
        done,
        cancelled: cancelled.clone(),
    };
    let sent = match worker(driver, job.ctx, tool_thread) {
        Some(queue) => queue.send(job).map_err(|e| e.0),
        None => Err(job),
    };
    if sent.is_err() {
        // No worker thread: wait here, without a deadline.
        return synchronize(driver, ctx).map(|()| Drained::Done);
    }
    match answer.recv_timeout(deadline) {
        Ok(result) => result.map(|()| Drained::Done),
        Err(mpsc::RecvTimeoutError::Timeout) => {
            // The worker may stay in cuCtxSynchronize for good: later drains of the context
            // get a worker of their own instead of queueing behind it.
            cancelled.store(true, Ordering::SeqCst);
            forget_context(ctx);
            Ok(Drained::TimedOut)
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Err(CudaError::Load("the tool's drain thread ended".into()))
        }
    }
}

/// `cuCtxSynchronize` of `ctx`, made current on this thread for the call.
fn synchronize(driver: &'static Driver, ctx: CUcontext) -> Result<(), CudaError> {
    let _current = ContextGuard::make_current(driver, ctx)?;
    // SAFETY: synchronises the context made current above.
    unsafe { crate::drv!(driver, cuCtxSynchronize()) }
}

/// Lets `ctx`'s worker end (the context is being destroyed, or its worker is left waiting): its
/// queue is dropped, so it ends after the job it may be running. The map's lock is never held
/// across a synchronisation, so this is safe inside the driver's resource callback.
pub fn forget_context(ctx: CUcontext) {
    WORKERS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .remove(&(ctx as usize));
}

/// The queue of `ctx`'s worker, started at the context's first drain in this process (and
/// again after its worker was left waiting on a device that did not finish).
fn worker(driver: &'static Driver, ctx: usize, tool_thread: fn()) -> Option<mpsc::Sender<Job>> {
    let mut workers = WORKERS.lock().unwrap_or_else(|e| e.into_inner());
    let pid = std::process::id();
    if let Some(worker) = workers.get(&ctx).filter(|w| w.pid == pid) {
        return Some(worker.queue.clone());
    }
    let (queue, jobs) = mpsc::channel::<Job>();
    std::thread::Builder::new()
        .name("kreplay-drain".into())
        .spawn(move || {
            tool_thread();
            // A thread of the tool's: every CUDA call it makes is the tool's own.
            let _thread = ToolScope::enter();
            for job in jobs {
                if job.cancelled.load(Ordering::SeqCst) {
                    continue;
                }
                let result = synchronize(driver, job.ctx as CUcontext);
                // The caller may have stopped waiting (its deadline passed).
                let _ = job.done.send(result);
            }
        })
        .ok()?;
    workers.insert(
        ctx,
        Worker {
            pid,
            queue: queue.clone(),
        },
    );
    Some(queue)
}
