//! The parameter blocks of the driver's copies, decoded for the memory-copy trace: each side
//! (host memory, device memory, either by unified addressing, or a peer context's memory), the
//! bytes and the stream, by the call's name (its per-thread suffix dropped). 3-D copies and
//! copies to or from arrays alone are not listed.

use super::calls::base_name;
use kreplay_cupti_sys as sys;
use std::ffi::c_void;

/// One side of a copy, as its parameters name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyEnd {
    /// Host memory at this address (pageable or pinned).
    Host(u64),
    /// Device memory at this address.
    Device(u64),
    /// Unified addressing: host or device memory, by the address (`cuMemcpy`, `CU_MEMORYTYPE_UNIFIED`).
    Unified(u64),
    /// Device memory of the context `context` (`cuMemcpyPeer`).
    Peer {
        context: sys::CUcontext,
        address: u64,
    },
    /// A CUDA array (a 2-D copy's side).
    Array,
}

/// What a copy's parameter block says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CopyParams {
    pub src: CopyEnd,
    pub dst: CopyEnd,
    pub bytes: u64,
    /// The stream of an asynchronous copy (`None`: a synchronous one).
    pub stream: Option<sys::CUstream>,
}

/// A 2-D copy's side from its descriptor's fields.
fn side_2d(memory: sys::CUmemorytype, host: u64, device: u64) -> CopyEnd {
    match memory {
        sys::CUmemorytype_enum_CU_MEMORYTYPE_HOST => CopyEnd::Host(host),
        sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE => CopyEnd::Device(device),
        sys::CUmemorytype_enum_CU_MEMORYTYPE_UNIFIED => CopyEnd::Unified(device),
        _ => CopyEnd::Array,
    }
}

/// The copy the call `name` (CUPTI's `functionName`, per-thread suffix or not) makes; `None`
/// for a call that is no copy listed here, or a NULL block or descriptor.
///
/// # Safety
/// `params` is NULL or the parameter block of the call named (as `generated_cuda_meta.h`
/// declares it), inside its callback.
pub unsafe fn copy_params(name: &str, params: *const c_void) -> Option<CopyParams> {
    if params.is_null() {
        return None;
    }
    let p = params;
    let copy = |src, dst, bytes: usize, stream| CopyParams {
        src,
        dst,
        bytes: bytes as u64,
        stream,
    };
    // SAFETY: each call's parameter block (the caller's contract).
    unsafe {
        Some(match base_name(name) {
            "cuMemcpyHtoD_v2" => {
                let p = &*(p as *const sys::cuMemcpyHtoD_v2_params);
                let src = CopyEnd::Host(p.srcHost as u64);
                copy(src, CopyEnd::Device(p.dstDevice), p.ByteCount, None)
            }
            "cuMemcpyHtoDAsync_v2" => {
                let p = &*(p as *const sys::cuMemcpyHtoDAsync_v2_params);
                let src = CopyEnd::Host(p.srcHost as u64);
                copy(
                    src,
                    CopyEnd::Device(p.dstDevice),
                    p.ByteCount,
                    Some(p.hStream),
                )
            }
            "cuMemcpyDtoH_v2" => {
                let p = &*(p as *const sys::cuMemcpyDtoH_v2_params);
                let dst = CopyEnd::Host(p.dstHost as u64);
                copy(CopyEnd::Device(p.srcDevice), dst, p.ByteCount, None)
            }
            "cuMemcpyDtoHAsync_v2" => {
                let p = &*(p as *const sys::cuMemcpyDtoHAsync_v2_params);
                let dst = CopyEnd::Host(p.dstHost as u64);
                copy(
                    CopyEnd::Device(p.srcDevice),
                    dst,
                    p.ByteCount,
                    Some(p.hStream),
                )
            }
            "cuMemcpyDtoD_v2" => {
                let p = &*(p as *const sys::cuMemcpyDtoD_v2_params);
                let (src, dst) = (CopyEnd::Device(p.srcDevice), CopyEnd::Device(p.dstDevice));
                copy(src, dst, p.ByteCount, None)
            }
            "cuMemcpyDtoDAsync_v2" => {
                let p = &*(p as *const sys::cuMemcpyDtoDAsync_v2_params);
                let (src, dst) = (CopyEnd::Device(p.srcDevice), CopyEnd::Device(p.dstDevice));
                copy(src, dst, p.ByteCount, Some(p.hStream))
            }
            "cuMemcpy" => {
                let p = &*(p as *const sys::cuMemcpy_params);
                let (src, dst) = (CopyEnd::Unified(p.src), CopyEnd::Unified(p.dst));
                copy(src, dst, p.ByteCount, None)
            }
            "cuMemcpyAsync" => {
                let p = &*(p as *const sys::cuMemcpyAsync_params);
                let (src, dst) = (CopyEnd::Unified(p.src), CopyEnd::Unified(p.dst));
                copy(src, dst, p.ByteCount, Some(p.hStream))
            }
            "cuMemcpyPeer" => {
                let p = &*(p as *const sys::cuMemcpyPeer_params);
                let src = CopyEnd::Peer {
                    context: p.srcContext,
                    address: p.srcDevice,
                };
                let dst = CopyEnd::Peer {
                    context: p.dstContext,
                    address: p.dstDevice,
                };
                copy(src, dst, p.ByteCount, None)
            }
            "cuMemcpyPeerAsync" => {
                let p = &*(p as *const sys::cuMemcpyPeerAsync_params);
                let src = CopyEnd::Peer {
                    context: p.srcContext,
                    address: p.srcDevice,
                };
                let dst = CopyEnd::Peer {
                    context: p.dstContext,
                    address: p.dstDevice,
                };
                copy(src, dst, p.ByteCount, Some(p.hStream))
            }
            "cuMemcpy2D_v2" | "cuMemcpy2DUnaligned_v2" | "cuMemcpy2DAsync_v2" => {
                // The synchronous forms' blocks begin as the asynchronous one's (`pCopy`).
                let descriptor = (*(p as *const sys::cuMemcpy2D_v2_params)).pCopy.as_ref()?;
                let stream = (base_name(name) == "cuMemcpy2DAsync_v2")
                    .then(|| (*(p as *const sys::cuMemcpy2DAsync_v2_params)).hStream);
                let d = descriptor;
                let src = side_2d(d.srcMemoryType, d.srcHost as u64, d.srcDevice);
                let dst = side_2d(d.dstMemoryType, d.dstHost as u64, d.dstDevice);
                copy(src, dst, d.WidthInBytes * d.Height, stream)
            }
            _ => return None,
        })
    }
}

/// Whether the call `name` runs on the per-thread default stream when its stream is NULL.
pub fn per_thread_stream(name: &str) -> bool {
    name.ends_with("_ptsz") || name.ends_with("_ptds")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<T>(value: &T) -> *const c_void {
        value as *const T as *const c_void
    }

    #[test]
    fn each_copy_names_its_sides_bytes_and_stream() {
        let host = [0u8; 8];
        let stream = 0x5000 as sys::CUstream;
        let htod = sys::cuMemcpyHtoDAsync_v2_params {
            dstDevice: 0x7000,
            srcHost: host.as_ptr() as *const c_void,
            ByteCount: 64,
            hStream: stream,
        };
        // SAFETY: each block is the named call's.
        let decoded = unsafe { copy_params("cuMemcpyHtoDAsync_v2_ptsz", block(&htod)) }.unwrap();
        assert_eq!(decoded.src, CopyEnd::Host(host.as_ptr() as u64));
        assert_eq!(decoded.dst, CopyEnd::Device(0x7000));
        assert_eq!((decoded.bytes, decoded.stream), (64, Some(stream)));

        let dtoh = sys::cuMemcpyDtoH_v2_params {
            dstHost: host.as_ptr() as *mut c_void,
            srcDevice: 0x9000,
            ByteCount: 8,
        };
        let decoded = unsafe { copy_params("cuMemcpyDtoH_v2", block(&dtoh)) }.unwrap();
        assert_eq!(
            (decoded.src, decoded.stream),
            (CopyEnd::Device(0x9000), None)
        );

        let unified = sys::cuMemcpyAsync_params {
            dst: 0x10,
            src: 0x20,
            ByteCount: 4,
            hStream: stream,
        };
        let decoded = unsafe { copy_params("cuMemcpyAsync", block(&unified)) }.unwrap();
        assert_eq!(
            (decoded.src, decoded.dst),
            (CopyEnd::Unified(0x20), CopyEnd::Unified(0x10))
        );

        let context = 0xc0 as sys::CUcontext;
        let peer = sys::cuMemcpyPeer_params {
            dstDevice: 0x1000,
            dstContext: context,
            srcDevice: 0x2000,
            srcContext: context,
            ByteCount: 32,
        };
        let decoded = unsafe { copy_params("cuMemcpyPeer", block(&peer)) }.unwrap();
        assert_eq!(
            decoded.src,
            CopyEnd::Peer {
                context,
                address: 0x2000
            }
        );
        assert_eq!(decoded.bytes, 32);

        let descriptor = sys::CUDA_MEMCPY2D {
            srcMemoryType: sys::CUmemorytype_enum_CU_MEMORYTYPE_HOST,
            srcHost: host.as_ptr() as *const c_void,
            dstMemoryType: sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE,
            dstDevice: 0x3000,
            WidthInBytes: 16,
            Height: 3,
            ..Default::default()
        };
        let two_d = sys::cuMemcpy2DAsync_v2_params {
            pCopy: &descriptor,
            hStream: stream,
        };
        let decoded = unsafe { copy_params("cuMemcpy2DAsync_v2", block(&two_d)) }.unwrap();
        assert_eq!(decoded.dst, CopyEnd::Device(0x3000));
        assert_eq!((decoded.bytes, decoded.stream), (48, Some(stream)));
        let sync = sys::cuMemcpy2D_v2_params { pCopy: &descriptor };
        let decoded = unsafe { copy_params("cuMemcpy2D_v2", block(&sync)) }.unwrap();
        assert_eq!(decoded.stream, None);

        // Not a copy, a NULL block.
        assert!(unsafe { copy_params("cuMemsetD8_v2", block(&htod)) }.is_none());
        assert!(unsafe { copy_params("cuMemcpy", std::ptr::null()) }.is_none());
        assert!(per_thread_stream("cuMemcpyAsync_ptsz") && !per_thread_stream("cuMemcpyAsync"));
    }
}
