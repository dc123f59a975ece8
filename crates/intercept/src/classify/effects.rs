//! What a driver call does to device memory, by its name in families and, for copies and
//! memsets, its parameters (decoded by `kreplay_cuda::callback::calls`); and whether it changes
//! an executable graph.

use kreplay_cuda::callback::calls::{CallParams, Copy2D, MemoryType};

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

/// Classifies a driver call by `name` (CUPTI's `functionName`) and its decoded parameters
/// (`None`: a NULL block, or a call whose block is not decoded).
pub fn classify_call(name: &str, params: Option<CallParams>) -> CallKind {
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
    match params {
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

fn copy_2d(copy: &Copy2D) -> CallKind {
    let bytes = span_2d(copy.dst.pitch, copy.width_bytes, copy.height) as u64;
    let dst = copy.dst.first_byte();
    match copy.dst.memory {
        MemoryType::Host => CallKind::NoDeviceWrite,
        MemoryType::Device => CallKind::Writes {
            dst,
            bytes,
            unified: false,
        },
        MemoryType::Unified => CallKind::Writes {
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
            let kind = classify_call(name, None);
            assert_eq!(kind, CallKind::NoDeviceWrite, "{name}");
        }
        for name in [
            "cuMemFree_v2",
            "cuMemFreeAsync",
            "cuMemFreeHost",
            "cuMemUnmap",
        ] {
            assert_eq!(classify_call(name, None), CallKind::Frees);
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
            assert_eq!(classify_call(name, None), CallKind::Unknown, "{name}");
        }
    }

    #[test]
    fn writes_name_their_destination_and_size() {
        // The blocks these come from are read in kreplay_cuda::callback::calls.
        let htod = CallParams::CopyToDevice {
            dst: 0x7000,
            bytes: 96,
        };
        let kind = classify_call("cuMemcpyHtoDAsync_v2_ptsz", Some(htod));
        assert_eq!(
            kind,
            CallKind::Writes {
                dst: 0x7000,
                bytes: 96,
                unified: false
            }
        );
        let memset = CallParams::Memset {
            dst: 0x9000,
            bytes: 40,
        };
        let kind = classify_call("cuMemsetD32Async", Some(memset));
        assert_eq!(
            kind,
            CallKind::Writes {
                dst: 0x9000,
                bytes: 40,
                unified: false
            }
        );
        let unified = CallParams::CopyUnified {
            dst: 0x1234,
            src: 0x10,
            bytes: 4,
        };
        let kind = classify_call("cuMemcpyAsync", Some(unified));
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
