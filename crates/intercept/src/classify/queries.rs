//! Calls told apart by their callback id for what the fence does with them: pure queries (no
//! fence), host waits (the fence let go while blocked), a capture's beginning (the counter
//! set-up waited for first), a module's unloading (its variables forgotten).

pub use kreplay_cuda::callback::calls::unloaded_module;
use kreplay_cuda::callback::ids::DriverCall;

/// Whether the call `cbid` waits on the host for device work (a synchronisation).
pub fn is_blocking_wait(cbid: u32) -> bool {
    matches!(
        DriverCall(cbid),
        DriverCall::cuCtxSynchronize
            | DriverCall::cuCtxSynchronize_v2
            | DriverCall::cuStreamSynchronize
            | DriverCall::cuStreamSynchronize_ptsz
            | DriverCall::cuEventSynchronize
    )
}

/// `cuStreamBeginCapture` in each of its versions.
pub fn is_capture_begin(cbid: u32) -> bool {
    matches!(
        DriverCall(cbid),
        DriverCall::cuStreamBeginCapture
            | DriverCall::cuStreamBeginCapture_ptsz
            | DriverCall::cuStreamBeginCapture_v2
            | DriverCall::cuStreamBeginCapture_v2_ptsz
            | DriverCall::cuStreamBeginCaptureToGraph
            | DriverCall::cuStreamBeginCaptureToGraph_ptsz
    )
}

/// `cuStreamEndCapture` (and its per-thread version).
pub fn is_capture_end(cbid: u32) -> bool {
    matches!(
        DriverCall(cbid),
        DriverCall::cuStreamEndCapture | DriverCall::cuStreamEndCapture_ptsz
    )
}

/// Driver calls that only read state and submit no work (stream/context/device/pointer
/// queries, limits, occupancy, and the look-ups of a kernel's function handle). They need not
/// wait for, nor close, a replay in progress: frameworks such as PyTorch and libraries such as cuBLAS make them
/// between most launches, and fencing them would cut replay windows short. A look-up may load a
/// module lazily; its variables enter the inventory at their kernel's first launch, and a window
/// whose snapshot predates that change does not take the launch in (`Inventory::generation`).
pub fn is_query_only(cbid: u32) -> bool {
    matches!(
        DriverCall(cbid),
        DriverCall::cuStreamIsCapturing
            | DriverCall::cuStreamIsCapturing_ptsz
            | DriverCall::cuStreamGetCaptureInfo_v2
            | DriverCall::cuStreamGetCaptureInfo_v3
            | DriverCall::cuCtxGetCurrent
            | DriverCall::cuCtxGetDevice
            | DriverCall::cuCtxGetDevice_v2
            | DriverCall::cuCtxGetFlags
            | DriverCall::cuCtxGetId
            | DriverCall::cuCtxGetApiVersion
            | DriverCall::cuCtxGetStreamPriorityRange
            | DriverCall::cuDeviceGet
            | DriverCall::cuDeviceGetAttribute
            | DriverCall::cuDeviceGetCount
            | DriverCall::cuDeviceGetName
            | DriverCall::cuDeviceGetUuid
            | DriverCall::cuDeviceGetUuid_v2
            | DriverCall::cuDevicePrimaryCtxGetState
            | DriverCall::cuDriverGetVersion
            | DriverCall::cuFuncGetAttribute
            | DriverCall::cuFuncGetName
            | DriverCall::cuFuncIsLoaded
            | DriverCall::cuKernelGetAttribute
            | DriverCall::cuPointerGetAttribute
            | DriverCall::cuPointerGetAttributes
            | DriverCall::cuStreamGetId
            | DriverCall::cuStreamGetId_ptsz
            | DriverCall::cuStreamGetFlags
            | DriverCall::cuStreamGetFlags_ptsz
            | DriverCall::cuStreamGetPriority
            | DriverCall::cuStreamGetPriority_ptsz
            | DriverCall::cuStreamGetCtx
            | DriverCall::cuStreamGetCtx_ptsz
            | DriverCall::cuStreamGetCtx_v2
            | DriverCall::cuGetProcAddress
            | DriverCall::cuGetProcAddress_v2
            | DriverCall::cuMemGetInfo_v2
            | DriverCall::cuModuleGetFunction
            | DriverCall::cuLibraryGetKernel
            | DriverCall::cuKernelGetFunction
            | DriverCall::cuKernelGetName
            | DriverCall::cuFuncGetParamInfo
            | DriverCall::cuKernelGetParamInfo
            | DriverCall::cuCtxGetLimit
            | DriverCall::cuCtxGetCacheConfig
            | DriverCall::cuDeviceTotalMem_v2
            | DriverCall::cuDeviceGetPCIBusId
            | DriverCall::cuOccupancyAvailableDynamicSMemPerBlock
            | DriverCall::cuOccupancyMaxActiveBlocksPerMultiprocessor
            | DriverCall::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
            | DriverCall::cuOccupancyMaxActiveClusters
            | DriverCall::cuOccupancyMaxPotentialBlockSize
            | DriverCall::cuOccupancyMaxPotentialBlockSizeWithFlags
            | DriverCall::cuOccupancyMaxPotentialClusterSize
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_waits_are_told_apart_from_other_calls() {
        // (Module and library unloads are read in kreplay_cuda::callback::calls.)
        assert!(is_blocking_wait(DriverCall::cuStreamSynchronize.0));
        assert!(!is_blocking_wait(DriverCall::cuMemcpyDtoH_v2.0));
    }

    #[test]
    fn queries_are_not_fenced_and_work_is() {
        // cuStreamIsCapturing (499), cuCtxGetCurrent (304), cuPointerGetAttribute (310).
        assert!(is_query_only(499));
        assert!(is_query_only(304));
        assert!(is_query_only(310));
        // cuMemcpyHtoD_v2 (276), cuCtxSynchronize (17), cuLaunchKernel (307) and
        // cuMemAlloc_v2 (243) are not queries.
        assert!(!is_query_only(276));
        // Limits and occupancy are read between PyTorch's and cuDNN's launches (ResNet-18 closed
        // 9 windows at cuCtxGetLimit when they were fenced).
        assert!(is_query_only(DriverCall::cuCtxGetLimit.0));
        assert!(is_query_only(
            DriverCall::cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags.0
        ));
        assert!(!is_query_only(17));
        assert!(!is_query_only(307));
        assert!(!is_query_only(243));
    }
}
