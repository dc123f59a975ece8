//! The callback ids the interception tells apart, under CUDA's own names: a driver-API call
//! ([`DriverCall`], CUPTI's `cupti_driver_cbid.h`) and the callback domains the tool enables
//! ([`Domain`]). Values come from the bindings, so a new CUPTI header renumbering them is
//! followed by a rebuild.

use kreplay_cupti_sys as sys;

/// A driver-API callback id (`CUpti_CallbackId` in `CUPTI_CB_DOMAIN_DRIVER_API`). Its
/// constants carry the driver function's name, so that a search for the call finds its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DriverCall(pub u32);

/// Writes one `DriverCall` constant per driver function, from the bindings' id of that name.
macro_rules! driver_calls {
    ($($name:ident = $id:ident,)*) => {
        #[allow(non_upper_case_globals)]
        impl DriverCall {
            $(
                #[doc = concat!("`", stringify!($name), "`.")]
                pub const $name: DriverCall = DriverCall(sys::$id);
            )*
        }
    };
}

driver_calls! {
    cuCtxGetApiVersion = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetApiVersion,
    cuCtxGetCacheConfig = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetCacheConfig,
    cuCtxGetCurrent = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetCurrent,
    cuCtxGetDevice = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice,
    cuCtxGetDevice_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetDevice_v2,
    cuCtxGetFlags = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetFlags,
    cuCtxGetId = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetId,
    cuCtxGetLimit = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetLimit,
    cuCtxGetStreamPriorityRange = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxGetStreamPriorityRange,
    cuCtxSynchronize = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize,
    cuCtxSynchronize_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize_v2,
    cuDeviceGet = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGet,
    cuDeviceGetAttribute = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetAttribute,
    cuDeviceGetCount = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetCount,
    cuDeviceGetName = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetName,
    cuDeviceGetPCIBusId = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetPCIBusId,
    cuDeviceGetUuid = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid,
    cuDeviceGetUuid_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceGetUuid_v2,
    cuDevicePrimaryCtxGetState = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDevicePrimaryCtxGetState,
    cuDeviceTotalMem_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDeviceTotalMem_v2,
    cuDriverGetVersion = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuDriverGetVersion,
    cuEventSynchronize = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    cuFuncGetAttribute = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuFuncGetAttribute,
    cuFuncGetName = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuFuncGetName,
    cuFuncGetParamInfo = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuFuncGetParamInfo,
    cuFuncIsLoaded = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuFuncIsLoaded,
    cuGetProcAddress = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress,
    cuGetProcAddress_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGetProcAddress_v2,
    cuGraphLaunch = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch,
    cuGraphLaunch_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
    cuKernelGetAttribute = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuKernelGetAttribute,
    cuKernelGetFunction = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuKernelGetFunction,
    cuKernelGetName = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuKernelGetName,
    cuKernelGetParamInfo = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuKernelGetParamInfo,
    cuLaunchCooperativeKernel = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel,
    cuLaunchCooperativeKernelMultiDevice = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice,
    cuLaunchCooperativeKernel_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz,
    cuLaunchKernel = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel,
    cuLaunchKernelEx = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx,
    cuLaunchKernelEx_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    cuLaunchKernel_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    cuLibraryGetKernel = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLibraryGetKernel,
    cuLibraryUnload = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload,
    cuMemAllocAsync = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync,
    cuMemAllocAsync_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz,
    cuMemAllocFromPoolAsync = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync,
    cuMemAllocFromPoolAsync_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz,
    cuMemAllocHost_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2,
    cuMemAllocManaged = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged,
    cuMemAllocPitch_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2,
    cuMemAlloc_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2,
    cuMemFreeAsync = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync,
    cuMemFreeAsync_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz,
    cuMemFreeHost = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost,
    cuMemFree_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2,
    cuMemGetInfo_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemGetInfo_v2,
    cuMemHostAlloc = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc,
    cuMemHostRegister_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2,
    cuMemHostUnregister = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister,
    cuMemSetAccess = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess,
    cuMemUnmap = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemUnmap,
    cuMemcpyDtoH_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2,
    cuModuleGetFunction = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuModuleGetFunction,
    cuModuleUnload = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuModuleUnload,
    cuOccupancyAvailableDynamicSMemPerBlock = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyAvailableDynamicSMemPerBlock,
    cuOccupancyMaxActiveBlocksPerMultiprocessor = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessor,
    cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags,
    cuOccupancyMaxActiveClusters = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxActiveClusters,
    cuOccupancyMaxPotentialBlockSize = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSize,
    cuOccupancyMaxPotentialBlockSizeWithFlags = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialBlockSizeWithFlags,
    cuOccupancyMaxPotentialClusterSize = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuOccupancyMaxPotentialClusterSize,
    cuPointerGetAttribute = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttribute,
    cuPointerGetAttributes = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuPointerGetAttributes,
    cuProfilerStart = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuProfilerStart,
    cuProfilerStop = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuProfilerStop,
    cuStreamBeginCapture = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture,
    cuStreamBeginCaptureToGraph = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph,
    cuStreamBeginCaptureToGraph_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCaptureToGraph_ptsz,
    cuStreamBeginCapture_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_ptsz,
    cuStreamBeginCapture_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2,
    cuStreamBeginCapture_v2_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamBeginCapture_v2_ptsz,
    cuStreamEndCapture = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture,
    cuStreamEndCapture_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamEndCapture_ptsz,
    cuStreamGetCaptureInfo_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v2,
    cuStreamGetCaptureInfo_v3 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCaptureInfo_v3,
    cuStreamGetCtx = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx,
    cuStreamGetCtx_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx_ptsz,
    cuStreamGetCtx_v2 = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetCtx_v2,
    cuStreamGetFlags = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetFlags,
    cuStreamGetFlags_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetFlags_ptsz,
    cuStreamGetId = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetId,
    cuStreamGetId_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetId_ptsz,
    cuStreamGetPriority = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetPriority,
    cuStreamGetPriority_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamGetPriority_ptsz,
    cuStreamIsCapturing = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing,
    cuStreamIsCapturing_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamIsCapturing_ptsz,
    cuStreamSynchronize = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    cuStreamSynchronize_ptsz = CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize_ptsz,
}

/// A callback domain (`CUpti_CallbackDomain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Domain(pub u32);

impl Domain {
    /// Driver-API calls, at their ENTER and EXIT.
    pub const DRIVER_API: Domain = Domain(sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_DRIVER_API);
    /// Runtime-API calls, at their ENTER and EXIT (enabled for `--runtime-trace` and
    /// `--sys-trace` only).
    pub const RUNTIME_API: Domain = Domain(sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RUNTIME_API);
    /// Resource events: contexts, streams, modules, graphs.
    pub const RESOURCE: Domain = Domain(sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RESOURCE);
    /// The application's NVTX calls (`--marker-trace`; they reach CUPTI through
    /// `NVTX_INJECTION64_PATH`).
    pub const NVTX: Domain = Domain(sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_NVTX);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_call_ids_match_the_cupti_13_table() {
        // Numbers from cupti_driver_cbid.h of CUDA 13.0.
        assert_eq!(DriverCall::cuLaunchKernel, DriverCall(307));
        assert_eq!(DriverCall::cuGraphLaunch_ptsz, DriverCall(515));
        assert_eq!(DriverCall::cuMemAlloc_v2, DriverCall(243));
        assert_eq!(DriverCall::cuCtxSynchronize, DriverCall(17));
        // cupti_callbacks.h: the runtime API is domain 2, the driver API 1.
        assert_eq!(Domain::RUNTIME_API, Domain(2));
        assert_eq!(Domain::DRIVER_API, Domain(1));
    }
}
