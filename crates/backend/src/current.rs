//! The dispatch in progress (its context, device and stream) and the default streams' handles.

use kreplay_cuda::{CUcontext, CUdevice, CUstream};

/// `CU_STREAM_PER_THREAD`: the per-thread default stream's handle (`cuda.h` defines it as 0x2).
pub const STREAM_PER_THREAD: CUstream = 0x2 as CUstream;
/// `CU_STREAM_LEGACY`: the legacy default stream's explicit handle.
pub const STREAM_LEGACY: CUstream = 0x1 as CUstream;

/// The stream a launch really used: stream 0 of a `_ptsz` launch is the per-thread default stream.
pub fn resolve_stream(stream: CUstream, per_thread: bool) -> CUstream {
    if stream.is_null() && per_thread {
        STREAM_PER_THREAD
    } else {
        stream
    }
}

/// The dispatch in progress: its context, device and stream (from
/// [`CudaBackend::begin_dispatch`](crate::CudaBackend::begin_dispatch)).
#[derive(Debug, Clone, Copy)]
pub struct CurrentDispatch {
    pub(crate) ctx: CUcontext,
    /// The device's ordinal (0 in a run without counters, which never asks).
    pub(crate) cu_device: CUdevice,
    pub(crate) stream: CUstream,
    /// Not a launch (another API call closing a replay window): no stream of its own.
    pub(crate) passive: bool,
    /// The launch call's correlation id, where CUPTI records its kernel's execution.
    pub(crate) correlation: Option<u32>,
}

// SAFETY: CUDA handles, valid on any thread of the process.
unsafe impl Send for CurrentDispatch {}

impl CurrentDispatch {
    /// A dispatch the backend must not touch the device for (a launch being stream-captured:
    /// the engine passes it through, and tool calls could invalidate the capture).
    pub fn passive(ctx: CUcontext, stream: CUstream) -> Self {
        CurrentDispatch {
            ctx,
            cu_device: 0,
            stream,
            passive: true,
            correlation: None,
        }
    }

    /// Whether this dispatch is one the backend must not touch the device for.
    pub fn is_passive(&self) -> bool {
        self.passive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_thread_launches_on_stream_zero_use_the_per_thread_stream() {
        assert_eq!(
            resolve_stream(std::ptr::null_mut(), true),
            STREAM_PER_THREAD
        );
        assert!(resolve_stream(std::ptr::null_mut(), false).is_null());
        let s = 0x1234 as CUstream;
        assert_eq!(resolve_stream(s, true), s);
    }
}
