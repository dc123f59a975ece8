//! The parameter blocks of the driver calls that copy to or from device memory, set it, free it
//! or unload code, decoded by the call's name (without its per-thread suffix) or id: what the
//! interception needs to tell what a call writes and which addresses it names.

use kreplay_cupti_sys as sys;
use std::ffi::c_void;

/// What a copy's, memset's or free's parameter block says.
#[derive(Debug, Clone, Copy)]
pub enum CallParams {
    /// `cuMemcpyHtoD(Async)_v2`.
    CopyToDevice { dst: u64, bytes: u64 },
    /// `cuMemcpyDtoD(Async)_v2`.
    CopyOnDevice { dst: u64, src: u64, bytes: u64 },
    /// `cuMemcpy(Async)`: unified addressing, either side may be host memory.
    CopyUnified { dst: u64, src: u64, bytes: u64 },
    /// `cuMemcpyDtoH(Async)_v2`.
    CopyToHost { src: u64 },
    /// `cuMemsetD8/D16/D32(_v2, Async)`: `bytes` from `dst`.
    Memset { dst: u64, bytes: u64 },
    /// `cuMemsetD2D8/D2D16/D2D32(_v2, Async)`: `height` rows of `width_bytes`, `pitch` apart.
    Memset2D {
        dst: u64,
        pitch: usize,
        width_bytes: usize,
        height: usize,
    },
    /// `cuMemcpy2D(Async, Unaligned)_v2`: its copy descriptor (`None` when NULL).
    Copy2D(Option<sys::CUDA_MEMCPY2D>),
    /// `cuMemFree_v2`, `cuMemFreeAsync`, `cuMemUnmap`: the address released.
    Free { address: u64 },
}

/// The parameters of the call `base_name` (its name without `_ptsz`/`_ptds`); `None` for a
/// call not listed above or a NULL block.
///
/// # Safety
/// `params` is NULL or the parameter block of the call named (as `generated_cuda_meta.h`
/// declares it), inside its callback.
pub unsafe fn call_params(base_name: &str, params: *const c_void) -> Option<CallParams> {
    if params.is_null() {
        return None;
    }
    let p = params;
    // SAFETY: each call's parameter block (the caller's contract).
    let decoded = unsafe {
        match base_name {
            "cuMemcpyHtoD_v2" | "cuMemcpyHtoDAsync_v2" => {
                let p = &*(p as *const sys::cuMemcpyHtoD_v2_params);
                CallParams::CopyToDevice {
                    dst: p.dstDevice,
                    bytes: p.ByteCount as u64,
                }
            }
            "cuMemcpyDtoD_v2" | "cuMemcpyDtoDAsync_v2" => {
                let p = &*(p as *const sys::cuMemcpyDtoD_v2_params);
                CallParams::CopyOnDevice {
                    dst: p.dstDevice,
                    src: p.srcDevice,
                    bytes: p.ByteCount as u64,
                }
            }
            "cuMemcpy" | "cuMemcpyAsync" => {
                let p = &*(p as *const sys::cuMemcpy_params);
                CallParams::CopyUnified {
                    dst: p.dst,
                    src: p.src,
                    bytes: p.ByteCount as u64,
                }
            }
            "cuMemcpyDtoH_v2" | "cuMemcpyDtoHAsync_v2" => CallParams::CopyToHost {
                src: (*(p as *const sys::cuMemcpyDtoH_v2_params)).srcDevice,
            },
            "cuMemsetD8_v2" | "cuMemsetD8Async" => {
                let p = &*(p as *const sys::cuMemsetD8_v2_params);
                CallParams::Memset {
                    dst: p.dstDevice,
                    bytes: p.N as u64,
                }
            }
            "cuMemsetD16_v2" | "cuMemsetD16Async" => {
                let p = &*(p as *const sys::cuMemsetD16_v2_params);
                CallParams::Memset {
                    dst: p.dstDevice,
                    bytes: (p.N * 2) as u64,
                }
            }
            "cuMemsetD32_v2" | "cuMemsetD32Async" => {
                let p = &*(p as *const sys::cuMemsetD32_v2_params);
                CallParams::Memset {
                    dst: p.dstDevice,
                    bytes: (p.N * 4) as u64,
                }
            }
            "cuMemsetD2D8_v2" | "cuMemsetD2D8Async" => {
                let p = &*(p as *const sys::cuMemsetD2D8_v2_params);
                CallParams::Memset2D {
                    dst: p.dstDevice,
                    pitch: p.dstPitch,
                    width_bytes: p.Width,
                    height: p.Height,
                }
            }
            "cuMemsetD2D16_v2" | "cuMemsetD2D16Async" => {
                let p = &*(p as *const sys::cuMemsetD2D16_v2_params);
                CallParams::Memset2D {
                    dst: p.dstDevice,
                    pitch: p.dstPitch,
                    width_bytes: p.Width * 2,
                    height: p.Height,
                }
            }
            "cuMemsetD2D32_v2" | "cuMemsetD2D32Async" => {
                let p = &*(p as *const sys::cuMemsetD2D32_v2_params);
                CallParams::Memset2D {
                    dst: p.dstDevice,
                    pitch: p.dstPitch,
                    width_bytes: p.Width * 4,
                    height: p.Height,
                }
            }
            "cuMemcpy2D_v2" | "cuMemcpy2DAsync_v2" | "cuMemcpy2DUnaligned_v2" => {
                let p = &*(p as *const sys::cuMemcpy2D_v2_params);
                CallParams::Copy2D(p.pCopy.as_ref().copied())
            }
            "cuMemFree_v2" => CallParams::Free {
                address: (*(p as *const sys::cuMemFree_v2_params)).dptr,
            },
            "cuMemFreeAsync" => CallParams::Free {
                address: (*(p as *const sys::cuMemFreeAsync_params)).dptr,
            },
            "cuMemUnmap" => CallParams::Free {
                address: (*(p as *const sys::cuMemUnmap_params)).ptr,
            },
            _ => return None,
        }
    };
    Some(decoded)
}

/// The module or library handle `cuModuleUnload` / `cuLibraryUnload` (`cbid`) is about to
/// unload; `None` for every other call.
///
/// # Safety
/// `params` is NULL or the parameter block of the call `cbid`, at its ENTER callback.
pub unsafe fn unloaded_module(cbid: u32, params: *const std::ffi::c_void) -> Option<usize> {
    if params.is_null() {
        return None;
    }
    // SAFETY: each API's parameter block (the caller's contract).
    let owner = unsafe {
        match cbid {
            sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuModuleUnload => {
                (*(params as *const sys::cuModuleUnload_params)).hmod as usize
            }
            sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload => {
                (*(params as *const sys::cuLibraryUnload_params)).library as usize
            }
            _ => return None,
        }
    };
    Some(owner)
}
