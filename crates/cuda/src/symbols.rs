//! Where a launched kernel's code lives and what is in it: the context's function for a
//! context-independent `CUkernel`, the library or module that holds a kernel, its `__device__`
//! and `__constant__` variables by name, and a function's name.
//!
//! A launch handle is a `CUfunction` or a `CUkernel` (the runtime launches the latter, with
//! library loading); the driver refuses one of the other kind with an error code, which is how
//! the calls below tell them apart.

use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUdeviceptr, CUfunction};
use std::ffi::CStr;

/// The current context's `CUfunction` for `handle` when it is a `CUkernel` (for a
/// `CUfunction` handle, the driver's error; lazy loading loads the module here).
pub fn kernel_function(d: &Driver, handle: CUfunction) -> Result<CUfunction, CudaError> {
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: writes one handle; a `CUfunction` handle is refused with an error code, leaving
    // `function` NULL.
    unsafe {
        drv!(
            d,
            cuKernelGetFunction(&mut function, handle as sys::CUkernel)
        )?
    };
    Ok(function)
}

/// The library of a `CUkernel`, or the module of a `CUfunction`: what is unloaded as one, and
/// where its variables are looked up.
#[derive(Debug, Clone, Copy)]
pub struct CodeOwner {
    library: sys::CUlibrary,
    module: sys::CUmodule,
    of_library: bool,
}

/// The owner of launch handle `f`'s code, with its module loaded in the current context. For
/// a `CUkernel`, `cuKernelGetFunction` makes sure of the load (lazy loading); for a
/// `CUfunction`, `cuFuncLoad`. Either load fires its MODULE_LOADED callback on this thread
/// before the call returns. `None`: neither a library kernel nor a module function.
pub fn code_owner(d: &Driver, f: CUfunction) -> Option<CodeOwner> {
    let mut library: sys::CUlibrary = std::ptr::null_mut();
    let mut module: sys::CUmodule = std::ptr::null_mut();
    // SAFETY: handle queries; an `f` of the other kind is refused with an error code.
    unsafe {
        if drv!(d, cuKernelGetLibrary(&mut library, f as sys::CUkernel)).is_ok() {
            let mut function: CUfunction = std::ptr::null_mut();
            let _ = drv!(d, cuKernelGetFunction(&mut function, f as sys::CUkernel));
            Some(CodeOwner {
                library,
                module,
                of_library: true,
            })
        } else {
            let _ = drv!(d, cuFuncLoad(f));
            drv!(d, cuFuncGetModule(&mut module, f))
                .ok()
                .map(|()| CodeOwner {
                    library,
                    module,
                    of_library: false,
                })
        }
    }
}

impl CodeOwner {
    /// The library's or module's handle, as its unload names it.
    pub fn handle(&self) -> usize {
        if self.of_library {
            self.library as usize
        } else {
            self.module as usize
        }
    }

    /// The address and size of the variable `name` in the current context: `cuLibraryGetGlobal`
    /// for a library, `cuModuleGetGlobal` for a module.
    pub fn global(&self, d: &Driver, name: &CStr) -> Result<(CUdeviceptr, usize), CudaError> {
        let (mut address, mut bytes): (CUdeviceptr, usize) = (0, 0);
        // SAFETY: looks a name up in a live library or module; writes an address and a size.
        unsafe {
            if self.library.is_null() {
                drv!(
                    d,
                    cuModuleGetGlobal_v2(&mut address, &mut bytes, self.module, name.as_ptr())
                )?
            } else {
                drv!(
                    d,
                    cuLibraryGetGlobal(&mut address, &mut bytes, self.library, name.as_ptr())
                )?
            }
        };
        Ok((address, bytes))
    }
}

/// `f`'s name as the driver keeps it (mangled for C++ kernels; empty if it has none).
pub fn function_name(d: &Driver, f: CUfunction) -> Result<String, CudaError> {
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the driver writes a pointer to the function's name, owned by the driver.
    unsafe { drv!(d, cuFuncGetName(&mut name, f))? };
    // SAFETY: the driver's own string for the function.
    Ok(unsafe { crate::error::c_text(name) }.unwrap_or_default())
}
