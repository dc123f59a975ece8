//! The parameter blocks of the driver calls that copy to or from device memory, set it, free it
//! or unload code, decoded by the call's name (its per-thread suffix dropped) or id: what the
//! interception needs to tell what a call writes and which addresses it names.

use super::ids::DriverCall;
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
    Copy2D(Option<Copy2D>),
    /// `cuMemFree_v2`, `cuMemFreeAsync`, `cuMemUnmap`: the address released.
    Free { address: u64 },
}

/// What kind of memory one side of a copy is (`CUmemorytype`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemoryType {
    Host,
    Device,
    Array,
    /// Unified addressing: host or device memory, by the address.
    Unified,
    /// A value CUDA does not define.
    Other(u32),
}

impl MemoryType {
    /// The type a `CUmemorytype` field holds.
    pub fn from_raw(raw: u32) -> MemoryType {
        match raw {
            sys::CUmemorytype_enum_CU_MEMORYTYPE_HOST => MemoryType::Host,
            sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE => MemoryType::Device,
            sys::CUmemorytype_enum_CU_MEMORYTYPE_ARRAY => MemoryType::Array,
            sys::CUmemorytype_enum_CU_MEMORYTYPE_UNIFIED => MemoryType::Unified,
            other => MemoryType::Other(other),
        }
    }

    /// Memory named by a device address (device memory, or unified addressing).
    pub fn by_address(self) -> bool {
        matches!(self, MemoryType::Device | MemoryType::Unified)
    }
}

/// One side of a 2-D copy: its memory's type, device address, and where the copy begins in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Side2D {
    pub memory: MemoryType,
    pub device: u64,
    pub x_bytes: usize,
    pub y: usize,
    pub pitch: usize,
}

impl Side2D {
    /// The device address of the copy's first byte on this side.
    pub fn first_byte(&self) -> u64 {
        self.device + (self.y * self.pitch + self.x_bytes) as u64
    }
}

/// A 2-D copy's descriptor (`CUDA_MEMCPY2D`): `height` rows of `width_bytes`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Copy2D {
    pub src: Side2D,
    pub dst: Side2D,
    pub width_bytes: usize,
    pub height: usize,
}

impl Copy2D {
    fn of(c: &sys::CUDA_MEMCPY2D) -> Copy2D {
        Copy2D {
            src: Side2D {
                memory: MemoryType::from_raw(c.srcMemoryType),
                device: c.srcDevice,
                x_bytes: c.srcXInBytes,
                y: c.srcY,
                pitch: c.srcPitch,
            },
            dst: Side2D {
                memory: MemoryType::from_raw(c.dstMemoryType),
                device: c.dstDevice,
                x_bytes: c.dstXInBytes,
                y: c.dstY,
                pitch: c.dstPitch,
            },
            width_bytes: c.WidthInBytes,
            height: c.Height,
        }
    }
}

/// The name without the per-thread-stream suffix (`_ptsz`, `_ptds`): the same parameters.
pub fn base_name(name: &str) -> &str {
    name.strip_suffix("_ptsz")
        .or_else(|| name.strip_suffix("_ptds"))
        .unwrap_or(name)
}

/// The parameters of the call `name` (CUPTI's `functionName`, per-thread suffix or not);
/// `None` for a call not listed above or a NULL block.
///
/// # Safety
/// `params` is NULL or the parameter block of the call named (as `generated_cuda_meta.h`
/// declares it), inside its callback.
pub unsafe fn call_params(name: &str, params: *const c_void) -> Option<CallParams> {
    if params.is_null() {
        return None;
    }
    let p = params;
    // SAFETY: each call's parameter block (the caller's contract).
    let decoded = unsafe {
        match base_name(name) {
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
                CallParams::Copy2D(p.pCopy.as_ref().map(Copy2D::of))
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
        match DriverCall(cbid) {
            DriverCall::cuModuleUnload => {
                (*(params as *const sys::cuModuleUnload_params)).hmod as usize
            }
            DriverCall::cuLibraryUnload => {
                (*(params as *const sys::cuLibraryUnload_params)).library as usize
            }
            _ => return None,
        }
    };
    Some(owner)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block<T>(v: &T) -> *const c_void {
        v as *const T as *const c_void
    }

    #[test]
    fn module_and_library_unloads_name_their_handle_and_other_calls_none() {
        let module = sys::cuModuleUnload_params {
            hmod: 0x1230 as sys::CUmodule,
        };
        let library = sys::cuLibraryUnload_params {
            library: 0x4560 as sys::CUlibrary,
        };
        // SAFETY: each block is the named call's, or NULL.
        let at = |p: *const c_void, call: DriverCall| unsafe { unloaded_module(call.0, p) };
        assert_eq!(at(block(&module), DriverCall::cuModuleUnload), Some(0x1230));
        assert_eq!(
            at(block(&library), DriverCall::cuLibraryUnload),
            Some(0x4560)
        );
        assert_eq!(at(block(&module), DriverCall::cuMemFree_v2), None);
        assert_eq!(at(std::ptr::null(), DriverCall::cuModuleUnload), None);
    }

    #[test]
    fn copies_memsets_and_frees_read_their_blocks_under_either_suffix() {
        let dtoh = sys::cuMemcpyDtoH_v2_params {
            dstHost: std::ptr::null_mut(),
            srcDevice: 0x1000,
            ByteCount: 8,
        };
        let dtod = sys::cuMemcpyDtoD_v2_params {
            dstDevice: 0x2000,
            srcDevice: 0x3000,
            ByteCount: 8,
        };
        let htod = sys::cuMemcpyHtoDAsync_v2_params {
            dstDevice: 0x7000,
            srcHost: std::ptr::null(),
            ByteCount: 96,
            hStream: std::ptr::null_mut(),
        };
        let unified = sys::cuMemcpyAsync_params {
            dst: 0x1234,
            src: 0x10,
            ByteCount: 4,
            hStream: std::ptr::null_mut(),
        };
        let memset = sys::cuMemsetD32Async_params {
            dstDevice: 0x9000,
            ui: 7,
            N: 10,
            hStream: std::ptr::null_mut(),
        };
        let free = sys::cuMemFree_v2_params { dptr: 0x5000 };
        let unmap = sys::cuMemUnmap_params {
            ptr: 0x6000,
            size: 64,
        };
        let copy = sys::CUDA_MEMCPY2D {
            srcMemoryType: sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE,
            srcDevice: 0x8000,
            srcXInBytes: 4,
            srcY: 2,
            srcPitch: 256,
            dstMemoryType: sys::CUmemorytype_enum_CU_MEMORYTYPE_HOST,
            WidthInBytes: 100,
            Height: 3,
            ..Default::default()
        };
        let copy_2d = sys::cuMemcpy2D_v2_params { pCopy: &copy };
        // SAFETY: each block is the named call's, or NULL.
        let at = |name: &str, p: *const c_void| unsafe { call_params(name, p) };
        assert!(matches!(
            at("cuMemcpyDtoHAsync_v2_ptsz", block(&dtoh)),
            Some(CallParams::CopyToHost { src: 0x1000 })
        ));
        assert!(matches!(
            at("cuMemcpyDtoD_v2_ptds", block(&dtod)),
            Some(CallParams::CopyOnDevice {
                dst: 0x2000,
                src: 0x3000,
                bytes: 8
            })
        ));
        assert!(matches!(
            at("cuMemcpyHtoDAsync_v2_ptsz", block(&htod)),
            Some(CallParams::CopyToDevice {
                dst: 0x7000,
                bytes: 96
            })
        ));
        assert!(matches!(
            at("cuMemcpyAsync", block(&unified)),
            Some(CallParams::CopyUnified {
                dst: 0x1234,
                src: 0x10,
                bytes: 4
            })
        ));
        assert!(matches!(
            at("cuMemsetD32Async", block(&memset)),
            Some(CallParams::Memset {
                dst: 0x9000,
                bytes: 40
            })
        ));
        assert!(matches!(
            at("cuMemFree_v2", block(&free)),
            Some(CallParams::Free { address: 0x5000 })
        ));
        assert!(matches!(
            at("cuMemUnmap", block(&unmap)),
            Some(CallParams::Free { address: 0x6000 })
        ));
        match at("cuMemcpy2DAsync_v2", block(&copy_2d)) {
            Some(CallParams::Copy2D(Some(c))) => {
                assert_eq!(c.src.memory, MemoryType::Device);
                assert_eq!(c.src.first_byte(), 0x8000 + 2 * 256 + 4);
                assert_eq!(c.dst.memory, MemoryType::Host);
                assert_eq!((c.width_bytes, c.height), (100, 3));
            }
            other => panic!("{other:?}"),
        }
        assert!(at("cuCtxSynchronize", block(&free)).is_none());
        assert!(at("cuMemFree_v2", std::ptr::null()).is_none());
        assert_eq!(MemoryType::from_raw(4), MemoryType::Unified);
        assert_eq!(MemoryType::from_raw(9), MemoryType::Other(9));
    }
}
