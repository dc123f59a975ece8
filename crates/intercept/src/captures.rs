//! Whether a stream capture may be under way in the process. Every capture begins with a
//! `cuStreamBeginCapture*` call and ends with `cuStreamEndCapture` (a stream that joins one
//! through an event does so while it is open), so while none is open a launch needs no
//! `cuStreamIsCapturing` query: a driver call, and a CUPTI callback, saved on every launch.
//! Counted conservatively: a capture that may not have ended is still counted open, which
//! only costs the query.

use crate::classify::{is_capture_begin, is_capture_end};
use kreplay_cuda::callback::driver::DriverData;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `CUDA_ERROR_STREAM_CAPTURE_INVALIDATED`: the capture ended, without a graph.
const CAPTURE_INVALIDATED: u32 = 901;

static OPEN: AtomicUsize = AtomicUsize::new(0);

/// At a driver call's EXIT: a capture begun or ended.
pub(crate) fn on_exit(cbid: u32, data: &DriverData) {
    if is_capture_begin(cbid) && data.succeeded() {
        OPEN.fetch_add(1, Ordering::SeqCst);
    } else if is_capture_end(cbid) && matches!(data.result(), Some(0) | Some(CAPTURE_INVALIDATED)) {
        let _ = OPEN.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    }
}

/// Whether a capture may be open (then each launch asks the driver about its stream).
pub(crate) fn may_be_open() -> bool {
    OPEN.load(Ordering::SeqCst) > 0
}
