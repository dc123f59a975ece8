//! Streams' process-unique ids, as the driver gives them (`cuStreamGetId`), kept per thread so
//! that a launch asks the driver once per stream rather than every time (a driver call and a
//! CUPTI callback saved on every launch). A stream's destruction drops every thread's ids: its
//! handle may be a new stream's afterwards. Keyed by context too: the default streams' handles
//! are the same in every context (and the per-thread stream's id is its thread's, as the cache).

use kreplay_cuda::{CUcontext, CUstream, Driver};
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

/// Bumped at every stream's destruction.
static GENERATION: AtomicU64 = AtomicU64::new(0);

/// A thread's ids, by context and stream handle, as of a generation.
#[derive(Default)]
struct Ids {
    generation: u64,
    by_stream: HashMap<(usize, usize), u64>,
}

thread_local! {
    static IDS: RefCell<Ids> = RefCell::default();
}

/// The id of `stream` in `ctx`.
pub(crate) fn stream_id(driver: &Driver, ctx: CUcontext, stream: CUstream) -> u64 {
    let generation = GENERATION.load(Ordering::Acquire);
    let key = (ctx as usize, stream as usize);
    IDS.try_with(|ids| {
        let mut ids = ids.borrow_mut();
        if ids.generation != generation {
            ids.by_stream.clear();
            ids.generation = generation;
        }
        *ids.by_stream
            .entry(key)
            .or_insert_with(|| kreplay_cuda::query::stream_id(driver, stream))
    })
    .unwrap_or_else(|_| kreplay_cuda::query::stream_id(driver, stream))
}

/// A stream is being destroyed (its resource callback: no lock, no driver call).
pub(crate) fn stream_destroying() {
    GENERATION.fetch_add(1, Ordering::Release);
}
