//! What a driver call does to device memory, by its name in families and, for copies and
//! memsets, its parameter block; and whether it changes an executable graph.

use kreplay_cuda::callback::calls::{call_params, CallParams};
use kreplay_cupti_sys as sys;

/// What a driver call (not a launch, not a pure query) does to device memory, from its name
/// and parameters, for the engine's replay units (`kreplay_core::backend::CallEffect`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallKind {
    /// Launches no kernel, leaves the current context and the loaded code alone, and writes no
    /// device memory: synchronisation, events, stream calls, copies to the host, allocations,
    /// module and library loads, attributes, occupancy queries, host functions.
    NoDeviceWrite,
    /// Releases memory.
    Frees,
    /// Writes `bytes` from `dst`: a copy to the device or a memset. `unified`: `dst` may also
    /// be host memory (`cuMemcpy`, `cuMemcpyAsync`), which the caller tells apart.
    Writes { dst: u64, bytes: u64, unified: bool },
    /// Anything else: context switches, unloads, graphs, profiler control, peer and 3-D
    /// copies, calls not listed.
    Unknown,
}

/// The name without the per-thread-stream suffix (`_ptsz`, `_ptds`): the same parameters.
pub(super) fn base_name(name: &str) -> &str {
    name.strip_suffix("_ptsz")
        .or_else(|| name.strip_suffix("_ptds"))
        .unwrap_or(name)
}

/// Name prefixes of driver calls that write no device memory ([`CallKind::NoDeviceWrite`]).
const HARMLESS: &[&str] = &[
    "cuMemcpyDtoH",
    "cuMemAlloc",
    "cuMemHost",
    "cuMemPrefetch",
    "cuMemAdvise",
    "cuMemPool",
    "cuMemGet",
    "cuMemRangeGet",
    "cuMemCreate",
    "cuMemMap",
    "cuMemSetAccess",
    "cuMemAddress",
    "cuModuleLoad",
    "cuModuleGet",
    "cuLibraryLoad",
    "cuLibraryGet",
    "cuKernelGet",
    "cuKernelSetAttribute",
    "cuFuncGet",
    "cuFuncSetAttribute",
    "cuFuncSetCacheConfig",
    "cuOccupancy",
    "cuEvent",
    "cuStreamCreate",
    "cuStreamDestroy",
    "cuStreamSynchronize",
    "cuStreamQuery",
    "cuStreamWaitEvent",
    "cuStreamGet",
    "cuStreamIsCapturing",
    "cuStreamAddCallback",
    "cuLaunchHostFunc",
    "cuCtxSynchronize",
    "cuCtxGet",
    "cuPointer",
    "cuDeviceGet",
    "cuDeviceCanAccessPeer",
    "cuDeviceTotalMem",
    "cuDriverGetVersion",
    "cuGetErrorName",
    "cuGetErrorString",
    "cuGetProcAddress",
    // Graphs built and changed on the host (not instantiated or uploaded, which may do
    // device work): a replay runs kernel nodes from copies of their parameters, so a
    // window stays open across a new node's parameters (jacobiCudaGraphs sets one before
    // every launch).
    "cuGraphCreate",
    "cuGraphAdd",
    "cuGraphClone",
    "cuGraphGet",
    "cuGraphNodeGet",
    "cuGraphNodeFind",
    "cuGraphKernelNode",
    "cuGraphMemsetNode",
    "cuGraphMemcpyNode",
    "cuGraphHostNode",
    "cuGraphChildGraphNodeGetGraph",
    "cuGraphEventRecordNode",
    "cuGraphEventWaitNode",
    "cuGraphDestroyNode",
    "cuGraphDestroy",
    "cuGraphExecKernelNodeSetParams",
    "cuGraphExecNodeSetParams",
    "cuGraphExecUpdate",
    "cuGraphExecGetFlags",
];

/// Name prefixes of driver calls that release memory ([`CallKind::Frees`]).
const FREES: &[&str] = &[
    "cuMemFree",
    "cuMemRelease",
    "cuMemUnmap",
    "cuMemHostUnregister",
];

/// Classifies a driver call by `name` (CUPTI's `functionName`) and its parameter block.
///
/// # Safety
/// `params` is the call's parameter block (as `generated_cuda_meta.h` declares it for `name`),
/// inside its callback, or NULL.
pub unsafe fn classify_call(name: &str, params: *const std::ffi::c_void) -> CallKind {
    if FREES.iter().any(|p| name.starts_with(p)) {
        return CallKind::Frees;
    }
    if HARMLESS.iter().any(|p| name.starts_with(p)) {
        return CallKind::NoDeviceWrite;
    }
    let writes = |dst: u64, bytes: u64| CallKind::Writes {
        dst,
        bytes,
        unified: false,
    };
    // SAFETY: the caller's contract.
    match unsafe { call_params(base_name(name), params) } {
        Some(CallParams::CopyToDevice { dst, bytes })
        | Some(CallParams::CopyOnDevice { dst, bytes, .. })
        | Some(CallParams::Memset { dst, bytes }) => writes(dst, bytes),
        Some(CallParams::CopyUnified { dst, bytes, .. }) => CallKind::Writes {
            dst,
            bytes,
            unified: true,
        },
        Some(CallParams::Memset2D {
            dst,
            pitch,
            width_bytes,
            height,
        }) => writes(dst, span_2d(pitch, width_bytes, height) as u64),
        Some(CallParams::Copy2D(Some(copy))) => copy_2d(&copy),
        // A NULL block or descriptor, a call not listed (and those above, never reached).
        _ => CallKind::Unknown,
    }
}

/// Bytes a 2-D write spans from its first byte: `height` rows of `width` bytes, `pitch` apart.
fn span_2d(pitch: usize, width: usize, height: usize) -> usize {
    if height == 0 {
        0
    } else {
        pitch * (height - 1) + width
    }
}

fn copy_2d(copy: &sys::CUDA_MEMCPY2D) -> CallKind {
    let bytes = span_2d(copy.dstPitch, copy.WidthInBytes, copy.Height) as u64;
    let dst = copy.dstDevice + (copy.dstY * copy.dstPitch + copy.dstXInBytes) as u64;
    match copy.dstMemoryType {
        sys::CUmemorytype_enum_CU_MEMORYTYPE_HOST => CallKind::NoDeviceWrite,
        sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE => CallKind::Writes {
            dst,
            bytes,
            unified: false,
        },
        sys::CUmemorytype_enum_CU_MEMORYTYPE_UNIFIED => CallKind::Writes {
            dst,
            bytes,
            unified: true,
        },
        _ => CallKind::Unknown,
    }
}

/// A driver call that changes an executable graph after instantiation, by its name (its first
/// parameter is the executable): node parameters set, an update from another graph, a node
/// enabled or disabled.
pub fn changes_graph_exec(call: &str) -> bool {
    (call.starts_with("cuGraphExec")
        && (call.contains("SetParams")
            || call.contains("SetEvent")
            || call.starts_with("cuGraphExecUpdate")))
        || call.starts_with("cuGraphNodeSetEnabled")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_are_classified_by_what_they_do_to_device_memory() {
        for name in [
            "cuMemcpyDtoH_v2",
            "cuMemcpyDtoHAsync_v2_ptsz",
            "cuMemAlloc_v2",
            "cuMemHostAlloc",
            "cuLibraryLoadData",
            "cuLibraryGetKernel",
            "cuKernelSetAttribute",
            "cuCtxGetLimit",
            "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
            "cuEventRecord_ptsz",
            "cuCtxSynchronize_v2",
            "cuStreamSynchronize",
            "cuStreamWaitEvent",
            "cuLaunchHostFunc",
            "cuGraphAddKernelNode_v2",
            "cuGraphExecKernelNodeSetParams_v2",
            "cuGraphExecUpdate_v2",
            "cuGraphDestroy",
        ] {
            // SAFETY: these never read their parameters.
            let kind = unsafe { classify_call(name, std::ptr::null()) };
            assert_eq!(kind, CallKind::NoDeviceWrite, "{name}");
        }
        for name in [
            "cuMemFree_v2",
            "cuMemFreeAsync",
            "cuMemFreeHost",
            "cuMemUnmap",
        ] {
            // SAFETY: as above.
            assert_eq!(
                unsafe { classify_call(name, std::ptr::null()) },
                CallKind::Frees
            );
        }
        for name in [
            "cuCtxSetCurrent",
            "cuCtxPushCurrent_v2",
            "cuCtxDestroy_v2",
            "cuDevicePrimaryCtxReset_v2",
            "cuModuleUnload",
            "cuLibraryUnload",
            "cuGraphLaunch",
            "cuGraphInstantiateWithFlags",
            "cuProfilerStart",
            "cuStreamBeginCapture_v2",
            "cuMemcpyPeerAsync",
            "cuMemcpy3D_v2",
            "a driver call",
        ] {
            // SAFETY: as above.
            assert_eq!(
                unsafe { classify_call(name, std::ptr::null()) },
                CallKind::Unknown,
                "{name}"
            );
        }
    }

    #[test]
    fn writes_name_their_destination_and_size() {
        let htod = sys::cuMemcpyHtoDAsync_v2_params {
            dstDevice: 0x7000,
            srcHost: std::ptr::null(),
            ByteCount: 96,
            hStream: std::ptr::null_mut(),
        };
        // SAFETY: the parameter block of the call named.
        let kind = unsafe {
            classify_call(
                "cuMemcpyHtoDAsync_v2_ptsz",
                &htod as *const _ as *const std::ffi::c_void,
            )
        };
        assert_eq!(
            kind,
            CallKind::Writes {
                dst: 0x7000,
                bytes: 96,
                unified: false
            }
        );
        let memset = sys::cuMemsetD32Async_params {
            dstDevice: 0x9000,
            ui: 7,
            N: 10,
            hStream: std::ptr::null_mut(),
        };
        // SAFETY: as above.
        let kind = unsafe {
            classify_call(
                "cuMemsetD32Async",
                &memset as *const _ as *const std::ffi::c_void,
            )
        };
        assert_eq!(
            kind,
            CallKind::Writes {
                dst: 0x9000,
                bytes: 40,
                unified: false
            }
        );
        let unified = sys::cuMemcpyAsync_params {
            dst: 0x1234,
            src: 0x10,
            ByteCount: 4,
            hStream: std::ptr::null_mut(),
        };
        // SAFETY: as above.
        let kind = unsafe {
            classify_call(
                "cuMemcpyAsync",
                &unified as *const _ as *const std::ffi::c_void,
            )
        };
        assert_eq!(
            kind,
            CallKind::Writes {
                dst: 0x1234,
                bytes: 4,
                unified: true
            }
        );
        assert_eq!(span_2d(256, 100, 3), 612);
        assert_eq!(span_2d(256, 100, 0), 0);
    }

    #[test]
    fn calls_that_change_an_executable_graph_are_told_apart() {
        for call in [
            "cuGraphExecKernelNodeSetParams_v2",
            "cuGraphExecMemsetNodeSetParams",
            "cuGraphExecEventRecordNodeSetEvent",
            "cuGraphExecUpdate_v2",
            "cuGraphExecNodeSetParams",
            "cuGraphNodeSetEnabled",
        ] {
            assert!(changes_graph_exec(call), "{call}");
        }
        for call in [
            "cuGraphExecDestroy",
            "cuGraphExecGetFlags",
            "cuGraphKernelNodeSetParams_v2",
            "cuGraphLaunch",
            "cuGraphUpload",
            "cuGraphInstantiateWithFlags",
        ] {
            assert!(!changes_graph_exec(call), "{call}");
        }
    }
}
