//! The current context, made so for a scope: the tool's work on a context (a replay unit closed
//! on another application thread, a drain, a set-up) pushes it and pops it when done.

use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext, CUdevice};

/// Makes `ctx` current on this thread for the guard's life when it is not already (a replay
/// unit may be closed, and its executions run, on another application thread).
pub struct ContextGuard {
    driver: &'static Driver,
    pushed: bool,
}

impl ContextGuard {
    pub fn make_current(
        driver: &'static Driver,
        ctx: CUcontext,
    ) -> Result<ContextGuard, CudaError> {
        let mut current: CUcontext = std::ptr::null_mut();
        // SAFETY: reads and (if needed) pushes a live context handle.
        unsafe {
            drv!(driver, cuCtxGetCurrent(&mut current))?;
            if current == ctx || ctx.is_null() {
                return Ok(ContextGuard {
                    driver,
                    pushed: false,
                });
            }
            drv!(driver, cuCtxPushCurrent_v2(ctx))?;
        }
        Ok(ContextGuard {
            driver,
            pushed: true,
        })
    }
}

impl Drop for ContextGuard {
    fn drop(&mut self) {
        if self.pushed {
            let mut popped: CUcontext = std::ptr::null_mut();
            // SAFETY: pops the context this guard pushed.
            let _ = unsafe { drv!(self.driver, cuCtxPopCurrent_v2(&mut popped)) };
        }
    }
}

/// A context of the tool's own, destroyed when dropped with everything made in it.
pub struct OwnedContext {
    driver: &'static Driver,
    raw: CUcontext,
}

// SAFETY: a CUDA handle, valid on any thread of the process.
unsafe impl Send for OwnedContext {}

impl OwnedContext {
    /// A new context on `device`, current on this thread until [`Self::pop`].
    pub fn create(driver: &'static Driver, device: CUdevice) -> Result<Self, CudaError> {
        let mut raw: CUcontext = std::ptr::null_mut();
        let mut params = sys::CUctxCreateParams::default();
        // SAFETY: creates a context and makes it current on this thread.
        unsafe { drv!(driver, cuCtxCreate_v4(&mut raw, &mut params, 0, device))? };
        Ok(OwnedContext { driver, raw })
    }

    /// Pops the context made current by [`Self::create`] off this thread.
    pub fn pop(&self) {
        let mut popped: CUcontext = std::ptr::null_mut();
        // SAFETY: pops the current context.
        let _ = unsafe { drv!(self.driver, cuCtxPopCurrent_v2(&mut popped)) };
    }

    pub fn raw(&self) -> CUcontext {
        self.raw
    }
}

impl Drop for OwnedContext {
    fn drop(&mut self) {
        // SAFETY: made by `create`, destroyed once; what was made in it goes with it.
        let _ = unsafe { drv!(self.driver, cuCtxDestroy_v2(self.raw)) };
    }
}
