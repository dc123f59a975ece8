//! The current context, made so for a scope: the tool's work on a context (a replay unit closed
//! on another application thread, a drain, a set-up) pushes it and pops it when done.

use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::CUcontext;

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
