//! Modules of the tool's own code (the L2 flush's kernels): loaded from PTX or a cubin, their
//! functions looked up and launched, the PTX linked ahead into code for the current device.

use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUfunction, CUstream};
use std::ffi::{c_void, CStr};

/// A module loaded in the context current when it was made; unloaded when dropped unless
/// [`Module::leave_to_context`] gave it to its context.
pub struct Module {
    driver: &'static Driver,
    raw: sys::CUmodule,
}

// SAFETY: a CUDA handle, valid on any thread of the process.
unsafe impl Send for Module {}

impl Module {
    /// Loads `image`, a NUL-terminated PTX text or a whole cubin, in the current context.
    ///
    /// # Safety
    /// `image` points at a whole PTX text (NUL-terminated) or cubin.
    pub unsafe fn load(driver: &'static Driver, image: *const c_void) -> Result<Module, CudaError> {
        let mut raw: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: as the caller promises; the driver writes the handle.
        unsafe { drv!(driver, cuModuleLoadData(&mut raw, image))? };
        Ok(Module { driver, raw })
    }

    /// The function `name` of the module.
    pub fn function(&self, name: &CStr) -> Result<Function, CudaError> {
        let mut raw: CUfunction = std::ptr::null_mut();
        // SAFETY: a loaded module; the driver writes the handle.
        unsafe {
            drv!(
                self.driver,
                cuModuleGetFunction(&mut raw, self.raw, name.as_ptr())
            )?
        };
        Ok(Function { raw })
    }

    /// Leaves the module loaded, to go with its context when that is destroyed.
    pub fn leave_to_context(self) {
        std::mem::forget(self);
    }
}

impl Drop for Module {
    fn drop(&mut self) {
        // SAFETY: loaded by `load`, unloaded once.
        let _ = unsafe { drv!(self.driver, cuModuleUnload(self.raw)) };
    }
}

/// A kernel of a [`Module`] (valid while its module is loaded).
#[derive(Debug, Clone, Copy)]
pub struct Function {
    raw: CUfunction,
}

// SAFETY: a CUDA handle, valid on any thread of the process.
unsafe impl Send for Function {}

/// A launch's shape: `blocks` × 1 × 1 blocks of `threads` × 1 × 1 threads, no dynamic shared
/// memory.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    pub blocks: u32,
    pub threads: u32,
}

impl Function {
    pub fn raw(self) -> CUfunction {
        self.raw
    }

    /// The blocks of `threads` threads (no dynamic shared memory) one SM holds at once.
    pub fn max_active_blocks_per_sm(self, d: &Driver, threads: u32) -> Result<i32, CudaError> {
        let mut per_sm = 0;
        // SAFETY: writes one integer.
        unsafe {
            drv!(
                d,
                cuOccupancyMaxActiveBlocksPerMultiprocessor(
                    &mut per_sm,
                    self.raw,
                    threads as i32,
                    0
                )
            )?
        };
        Ok(per_sm)
    }

    /// Launches the kernel on `stream` (of its module's context, current).
    ///
    /// # Safety
    /// `args` point at live values of the kernel's parameter types.
    pub unsafe fn launch(
        self,
        d: &Driver,
        shape: Shape,
        stream: CUstream,
        args: &mut [*mut c_void],
    ) -> Result<(), CudaError> {
        // SAFETY: as the caller promises.
        unsafe {
            drv!(
                d,
                cuLaunchKernel(
                    self.raw,
                    shape.blocks,
                    1,
                    1,
                    shape.threads,
                    1,
                    1,
                    0,
                    stream,
                    args.as_mut_ptr(),
                    std::ptr::null_mut()
                )
            )
        }
    }

    /// [`Self::launch`] as a cooperative launch: every block resident at once.
    ///
    /// # Safety
    /// As for [`Self::launch`]; the blocks fit the device at once.
    pub unsafe fn launch_cooperative(
        self,
        d: &Driver,
        shape: Shape,
        stream: CUstream,
        args: &mut [*mut c_void],
    ) -> Result<(), CudaError> {
        // SAFETY: as the caller promises.
        unsafe {
            drv!(
                d,
                cuLaunchCooperativeKernel(
                    self.raw,
                    shape.blocks,
                    1,
                    1,
                    shape.threads,
                    1,
                    1,
                    0,
                    stream,
                    args.as_mut_ptr(),
                )
            )
        }
    }
}

/// The code the driver makes of `ptx` (one NUL-terminated PTX input named `name`) for the
/// current context's device, copied out of the link.
pub fn link_ptx(d: &Driver, ptx: &CStr, name: &CStr) -> Result<Vec<u8>, CudaError> {
    let mut state: sys::CUlinkState = std::ptr::null_mut();
    // SAFETY: a link of one NUL-terminated PTX input in the current context; the code it
    // completes is the link's until destroyed, and copied out before.
    unsafe {
        drv!(
            d,
            cuLinkCreate_v2(0, std::ptr::null_mut(), std::ptr::null_mut(), &mut state)
        )?;
        let linked = drv!(
            d,
            cuLinkAddData_v2(
                state,
                sys::CUjitInputType_enum_CU_JIT_INPUT_PTX,
                ptx.as_ptr().cast_mut().cast(),
                ptx.to_bytes_with_nul().len(),
                name.as_ptr(),
                0,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
            )
        )
        .and_then(|()| {
            let mut image: *mut c_void = std::ptr::null_mut();
            let mut size = 0usize;
            drv!(d, cuLinkComplete(state, &mut image, &mut size))?;
            if image.is_null() || size == 0 {
                return Err(CudaError::Load(format!(
                    "the driver's link of {} made no code",
                    name.to_string_lossy()
                )));
            }
            Ok(std::slice::from_raw_parts(image.cast::<u8>(), size).to_vec())
        });
        let _ = drv!(d, cuLinkDestroy(state));
        linked
    }
}
