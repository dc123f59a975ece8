//! The set-ups under way or finished, by context ([`SetUps`]), and what each moment (a first
//! dispatch, a stream capture, a context's destruction, the process's end) does with them.
//! Generic over the set-up's result, so it is tested without CUDA.

use super::exit::EXITING;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A context's set-up: under way, or finished before its first dispatch took it.
pub(super) enum SetUp<T> {
    Running(Preparation<T>),
    Ready(Box<T>),
}

/// A set-up on a thread of its own.
pub(super) struct Preparation<T> {
    /// The process that started the thread (a child forked meanwhile has no such thread: it
    /// must not wait for it).
    pub(super) pid: u32,
    pub(super) thread: std::thread::JoinHandle<T>,
    /// Set when the context is being destroyed: the thread stops at its next step.
    pub(super) cancelled: Arc<AtomicBool>,
}

/// The set-ups under way or finished, by context, and what each moment does with them. Generic
/// over the set-up's result so that it is tested without CUDA. Its lock is held only to file,
/// take or put back one, never across a join.
pub(super) struct SetUps<T> {
    by_context: Mutex<HashMap<usize, SetUp<T>>>,
    /// The result of a set-up whose thread panicked.
    panicked: fn() -> T,
}

impl<T> SetUps<T> {
    pub(super) fn new(panicked: fn() -> T) -> Self {
        SetUps {
            by_context: Mutex::new(HashMap::new()),
            panicked,
        }
    }

    pub(super) fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<usize, SetUp<T>>> {
        self.by_context.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The set-up's result, or `None` when the thread belongs to another process (its handle
    /// is forgotten: that thread does not exist here).
    pub(super) fn join(&self, preparation: Preparation<T>) -> Option<T> {
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
    pub(super) fn take(&self, key: usize) -> Option<T> {
        match self.lock().remove(&key)? {
            SetUp::Ready(result) => Some(*result),
            SetUp::Running(preparation) => self.join(preparation),
        }
    }

    /// Waits for the set-up of `key` if it still runs and keeps its result for [`Self::take`];
    /// whether there was one to wait for. The set-up stays filed while it is waited for, so a
    /// first dispatch on another thread takes it (and waits) meanwhile, and a destroyed
    /// context's set-up is not filed again.
    pub(super) fn finish(&self, key: usize) -> bool {
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
    pub(super) fn abandon(&self, key: usize, wait: Duration) -> Option<bool> {
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
    pub(super) fn finish_all(&self, wait: Duration) {
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
pub(super) fn forget_after<T>(preparation: Preparation<T>, wait: Duration) -> bool {
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
