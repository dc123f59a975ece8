//! The parameter blocks of allocations and frees: the range an allocation made (read at its
//! EXIT, once it succeeded: the output pointers are written then) and what a free releases (at
//! its ENTER, while the address is still valid).

use kreplay_cupti_sys as sys;
use std::ffi::c_void;

/// An allocation API, read at its EXIT callback.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllocApi {
    /// `cuMemAlloc_v2`: `cuMemAlloc_v2_params {dptr, bytesize}`.
    Alloc,
    /// `cuMemAllocPitch_v2`: size is `*pPitch * Height`.
    Pitch,
    /// `cuMemAllocAsync` (`_ptsz`): `{dptr, bytesize, hStream}`.
    Async,
    /// `cuMemAllocFromPoolAsync` (`_ptsz`): `{dptr, bytesize, pool, hStream}`.
    FromPool,
    /// `cuMemAllocManaged`: `{dptr, bytesize, flags}`.
    Managed,
    /// `cuMemHostAlloc`: `{pp, bytesize, Flags}`.
    HostAlloc,
    /// `cuMemAllocHost_v2`: `{pp, bytesize}`.
    AllocHost,
    /// `cuMemHostRegister_v2`: `{p, bytesize, Flags}`.
    HostRegister,
    /// `cuMemSetAccess`: `{ptr, size, desc, count}`: mapped virtual memory becomes accessible
    /// (tracked from here, not from `cuMemMap`: before it, copying the range would fault).
    Map,
}

/// A free API, read at its ENTER callback (the address is still valid then).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreeApi {
    /// `cuMemFree_v2`: `{dptr}`.
    Free,
    /// `cuMemFreeAsync` (`_ptsz`): `{dptr, hStream}`.
    FreeAsync,
    /// `cuMemFreeHost`: `{p}`.
    FreeHost,
    /// `cuMemHostUnregister`: `{p}`.
    HostUnregister,
    /// `cuMemUnmap`: `{ptr, size}`.
    Unmap,
}

/// What a free releases.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freed {
    /// The allocation that begins at this address.
    Base(u64),
    /// Every tracked range within `bytes` from `base` (`cuMemUnmap`).
    Range { base: u64, bytes: u64 },
}

/// The base address and size `api` allocated.
///
/// # Safety
/// `params` is the non-NULL parameter block of `api`'s call (as `generated_cuda_meta.h`
/// declares it), at the EXIT callback of a call that succeeded.
pub unsafe fn allocated(api: AllocApi, params: *const c_void) -> (u64, u64) {
    let p = params;
    // SAFETY: each API's parameter block, as generated_cuda_meta.h declares it; output
    // pointers were written by the successful call (the caller's contract).
    unsafe {
        match api {
            AllocApi::Alloc => {
                let p = &*(p as *const sys::cuMemAlloc_v2_params);
                (*p.dptr, p.bytesize as u64)
            }
            AllocApi::Pitch => {
                let p = &*(p as *const sys::cuMemAllocPitch_v2_params);
                (*p.dptr, (*p.pPitch * p.Height) as u64)
            }
            AllocApi::Async | AllocApi::FromPool => {
                let p = &*(p as *const sys::cuMemAllocAsync_params);
                (*p.dptr, p.bytesize as u64)
            }
            AllocApi::Managed => {
                let p = &*(p as *const sys::cuMemAllocManaged_params);
                (*p.dptr, p.bytesize as u64)
            }
            AllocApi::HostAlloc => {
                let p = &*(p as *const sys::cuMemHostAlloc_params);
                (*p.pp as u64, p.bytesize as u64)
            }
            AllocApi::AllocHost => {
                let p = &*(p as *const sys::cuMemAllocHost_v2_params);
                (*p.pp as u64, p.bytesize as u64)
            }
            AllocApi::HostRegister => {
                let p = &*(p as *const sys::cuMemHostRegister_v2_params);
                (p.p as u64, p.bytesize as u64)
            }
            AllocApi::Map => {
                let p = &*(p as *const sys::cuMemSetAccess_params);
                (p.ptr, p.size as u64)
            }
        }
    }
}

/// What `api` releases.
///
/// # Safety
/// `params` is the non-NULL parameter block of `api`'s call, inside its callback.
pub unsafe fn freed(api: FreeApi, params: *const c_void) -> Freed {
    let p = params;
    // SAFETY: each API's parameter block, valid during the callback (the caller's contract).
    unsafe {
        match api {
            FreeApi::Free => Freed::Base((*(p as *const sys::cuMemFree_v2_params)).dptr),
            FreeApi::FreeAsync => Freed::Base((*(p as *const sys::cuMemFreeAsync_params)).dptr),
            FreeApi::FreeHost => Freed::Base((*(p as *const sys::cuMemFreeHost_params)).p as u64),
            FreeApi::HostUnregister => {
                Freed::Base((*(p as *const sys::cuMemHostUnregister_params)).p as u64)
            }
            FreeApi::Unmap => {
                let unmap = &*(p as *const sys::cuMemUnmap_params);
                Freed::Range {
                    base: unmap.ptr,
                    bytes: unmap.size as u64,
                }
            }
        }
    }
}

/// The stream of a stream-ordered allocation (`None` for the other APIs).
///
/// # Safety
/// As [`allocated`]'s.
pub unsafe fn allocation_stream(api: AllocApi, params: *const c_void) -> Option<sys::CUstream> {
    // SAFETY: each API's parameter block (the caller's contract).
    unsafe {
        match api {
            AllocApi::Async => Some((*(params as *const sys::cuMemAllocAsync_params)).hStream),
            AllocApi::FromPool => {
                Some((*(params as *const sys::cuMemAllocFromPoolAsync_params)).hStream)
            }
            _ => None,
        }
    }
}

/// The stream of a stream-ordered free (`None` for the other APIs).
///
/// # Safety
/// As [`freed`]'s.
pub unsafe fn free_stream(api: FreeApi, params: *const c_void) -> Option<sys::CUstream> {
    // SAFETY: the API's parameter block (the caller's contract).
    unsafe {
        (api == FreeApi::FreeAsync)
            .then(|| (*(params as *const sys::cuMemFreeAsync_params)).hStream)
    }
}

/// The range `cuMemMap` maps: its address and size.
///
/// # Safety
/// `params` is the non-NULL parameter block of a `cuMemMap` call, inside its callback.
pub unsafe fn mapped(params: *const c_void) -> (u64, u64) {
    // SAFETY: cuMemMap's parameter block (the caller's contract).
    let p = unsafe { &*(params as *const sys::cuMemMap_params) };
    (p.ptr, p.size as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allocations_and_frees_read_their_blocks() {
        let mut dptr: sys::CUdeviceptr = 0x7000;
        let alloc = sys::cuMemAlloc_v2_params {
            dptr: &mut dptr,
            bytesize: 256,
        };
        let mut pitch: usize = 512;
        let pitched = sys::cuMemAllocPitch_v2_params {
            dptr: &mut dptr,
            pPitch: &mut pitch,
            WidthInBytes: 500,
            Height: 3,
            ElementSizeBytes: 4,
        };
        let free = sys::cuMemFree_v2_params { dptr: 0x9000 };
        let unmap = sys::cuMemUnmap_params {
            ptr: 0xa000,
            size: 64,
        };
        let p = |v: &dyn std::any::Any| v as *const dyn std::any::Any as *const c_void;
        // SAFETY: each block is the named API's.
        unsafe {
            assert_eq!(allocated(AllocApi::Alloc, p(&alloc)), (0x7000, 256));
            assert_eq!(allocated(AllocApi::Pitch, p(&pitched)), (0x7000, 1536));
            assert_eq!(freed(FreeApi::Free, p(&free)), Freed::Base(0x9000));
            assert_eq!(allocation_stream(AllocApi::Alloc, p(&alloc)), None);
            assert_eq!(free_stream(FreeApi::Free, p(&free)), None);
            assert_eq!(
                freed(FreeApi::Unmap, p(&unmap)),
                Freed::Range {
                    base: 0xa000,
                    bytes: 64
                }
            );
        }
    }

    #[test]
    fn stream_ordered_calls_name_their_stream_and_a_map_its_range() {
        let stream = 0x5000 as sys::CUstream;
        let mut dptr: sys::CUdeviceptr = 0x7000;
        let from_pool = sys::cuMemAllocFromPoolAsync_params {
            dptr: &mut dptr,
            bytesize: 64,
            pool: std::ptr::null_mut(),
            hStream: stream,
        };
        let free = sys::cuMemFreeAsync_params {
            dptr: 0x7000,
            hStream: stream,
        };
        let map = sys::cuMemMap_params {
            ptr: 0xa000,
            size: 1 << 21,
            offset: 0,
            handle: 0,
            flags: 0,
        };
        let p = |v: &dyn std::any::Any| v as *const dyn std::any::Any as *const c_void;
        // SAFETY: each block is the named API's.
        unsafe {
            assert_eq!(
                allocation_stream(AllocApi::FromPool, p(&from_pool)),
                Some(stream)
            );
            assert_eq!(allocated(AllocApi::FromPool, p(&from_pool)), (0x7000, 64));
            assert_eq!(free_stream(FreeApi::FreeAsync, p(&free)), Some(stream));
            assert_eq!(mapped(p(&map)), (0xa000, 1 << 21));
        }
    }
}
