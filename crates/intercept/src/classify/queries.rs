//! Calls told apart by their callback id for what the fence does with them: pure queries (no
//! fence), host waits (the fence let go while blocked), a capture's beginning (the counter
//! set-up waited for first), a module's unloading (its variables forgotten).

pub use kreplay_cuda::callback::calls::unloaded_module;
use kreplay_cupti_sys as sys;

/// Whether the call `cbid` waits on the host for device work (a synchronisation).
pub fn is_blocking_wait(cbid: u32) -> bool {
    matches!(
        cbid,
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize
    )
}

/// `cuStreamBeginCapture` in each of its versions.
pub fn is_capture_begin(cbid: u32) -> bool {
    matches!(
        cbid,
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz
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
        cbid,
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing_ptsz
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetFlags
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetId
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetApiVersion
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetStreamPriorityRange
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGet
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetName
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuFuncGetName
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuFuncIsLoaded
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetId
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetId_ptsz
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetFlags
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetFlags_ptsz
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetPriority
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetPriority_ptsz
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx_ptsz
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuKernelGetName
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuFuncGetParamInfo
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuKernelGetParamInfo
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetLimit
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetCacheConfig
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceTotalMem_v2
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetPCIBusId
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyAvailableDynamicSMemPerBlock
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessor
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveClusters
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSize
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSizeWithFlags
            | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialClusterSize
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_and_library_unloads_name_their_handle_and_other_calls_none() {
        let module = sys::cuModuleUnload_params {
            hmod: 0x1230 as sys::CUmodule,
        };
        let library = sys::cuLibraryUnload_params {
            library: 0x4560 as sys::CUlibrary,
        };
        let at = |p: *const std::ffi::c_void, cbid| unsafe { unloaded_module(cbid, p) };
        use sys::*;
        assert_eq!(
            at(
                &module as *const _ as *const _,
                CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuModuleUnload
            ),
            Some(0x1230)
        );
        assert_eq!(
            at(
                &library as *const _ as *const _,
                CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload
            ),
            Some(0x4560)
        );
        assert_eq!(
            at(
                &module as *const _ as *const _,
                CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2
            ),
            None
        );
        assert_eq!(
            at(
                std::ptr::null(),
                CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuModuleUnload
            ),
            None
        );
        assert!(is_blocking_wait(
            CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize
        ));
        assert!(!is_blocking_wait(
            CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2
        ));
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
        assert!(is_query_only(
            sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetLimit
        ));
        assert!(is_query_only(
            sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags
        ));
        assert!(!is_query_only(17));
        assert!(!is_query_only(307));
        assert!(!is_query_only(243));
    }
}
