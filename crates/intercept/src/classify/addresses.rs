//! The device addresses a driver call names, for the devices it may touch.

use super::effects::{base_name, classify_call, CallKind};
use kreplay_cuda::callback::calls::{call_params, CallParams};
use kreplay_cupti_sys as sys;

/// The device addresses a copy, memset or free names (its destination and, for a copy from
/// device memory, its source; what a free releases), by `name` and its parameter block; empty
/// for every other call. The engine's scope of the call comes from them: a call naming another
/// device's memory holds off replays there too.
///
/// # Safety
/// As [`classify_call`].
pub unsafe fn call_addresses(name: &str, params: *const std::ffi::c_void) -> Vec<u64> {
    if params.is_null() {
        return Vec::new();
    }
    // What it writes, as the classification reads it; then what it reads or frees.
    let written = match classify_call(name, params) {
        CallKind::Writes { dst, .. } => Some(dst),
        _ => None,
    };
    // SAFETY: the caller's contract.
    let other = match unsafe { call_params(base_name(name), params) } {
        Some(CallParams::Free { address }) => Some(address),
        Some(CallParams::CopyToHost { src })
        | Some(CallParams::CopyOnDevice { src, .. })
        | Some(CallParams::CopyUnified { src, .. }) => Some(src),
        Some(CallParams::Copy2D(copy)) => copy.and_then(|copy| {
            matches!(
                copy.srcMemoryType,
                sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE
                    | sys::CUmemorytype_enum_CU_MEMORYTYPE_UNIFIED
            )
            .then(|| copy.srcDevice + (copy.srcY * copy.srcPitch + copy.srcXInBytes) as u64)
        }),
        _ => None,
    };
    written.into_iter().chain(other).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_addresses_are_its_destination_source_or_what_it_frees() {
        let at = |name: &str, p: *const std::ffi::c_void| unsafe { call_addresses(name, p) };
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
        let memset = sys::cuMemsetD32_v2_params {
            dstDevice: 0x4000,
            ui: 7,
            N: 2,
        };
        let free = sys::cuMemFree_v2_params { dptr: 0x5000 };
        let unmap = sys::cuMemUnmap_params {
            ptr: 0x6000,
            size: 64,
        };
        let p = |v: &dyn std::any::Any| v as *const dyn std::any::Any as *const std::ffi::c_void;
        assert_eq!(at("cuMemcpyDtoH_v2", p(&dtoh)), vec![0x1000]);
        assert_eq!(at("cuMemcpyDtoHAsync_v2_ptsz", p(&dtoh)), vec![0x1000]);
        assert_eq!(at("cuMemcpyDtoD_v2", p(&dtod)), vec![0x2000, 0x3000]);
        assert_eq!(at("cuMemsetD32_v2", p(&memset)), vec![0x4000]);
        assert_eq!(at("cuMemFree_v2", p(&free)), vec![0x5000]);
        assert_eq!(at("cuMemUnmap", p(&unmap)), vec![0x6000]);
        assert!(at("cuCtxSynchronize", p(&free)).is_empty());
        assert!(at("cuMemFree_v2", std::ptr::null()).is_empty());
    }
}
