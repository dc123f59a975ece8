//! What a driver-domain callback id means to the tool: a launch of some kind, an allocation or a
//! free of some kind, or nothing of interest. Kept apart from the callback so that the table is
//! unit-tested without a GPU.

use kreplay_core::backend::AllocKind;
use kreplay_cupti_sys as sys;

/// How a launch API is re-issued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchApi {
    /// `cuLaunchKernel` (and `_ptsz`): `cuLaunchKernel_params`.
    Kernel { per_thread: bool },
    /// `cuLaunchKernelEx` (and `_ptsz`): `cuLaunchKernelEx_params`.
    KernelEx { per_thread: bool },
    /// `cuLaunchCooperativeKernel` (and `_ptsz`): `cuLaunchCooperativeKernel_params`.
    Cooperative { per_thread: bool },
    /// `cuGraphLaunch` (and `_ptsz`): runs once.
    Graph,
    /// `cuLaunchCooperativeKernelMultiDevice`: runs once.
    MultiDevice,
}

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
    /// `cuMemMap`: `{ptr, size, offset, handle, flags}`.
    Map,
}

impl AllocApi {
    pub fn kind(self) -> AllocKind {
        match self {
            AllocApi::Alloc => AllocKind::Device,
            AllocApi::Pitch => AllocKind::Pitched,
            AllocApi::Async | AllocApi::FromPool => AllocKind::Pool,
            AllocApi::Managed => AllocKind::Managed,
            AllocApi::HostAlloc | AllocApi::AllocHost | AllocApi::HostRegister => AllocKind::Host,
            AllocApi::Map => AllocKind::VirtualMapping,
        }
    }
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

/// What a driver callback id is to the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverEvent {
    Launch(LaunchApi),
    Alloc(AllocApi),
    Free(FreeApi),
    /// Nothing the tool tracks.
    Other,
}

/// Classifies a `CUPTI_CB_DOMAIN_DRIVER_API` callback id.
pub fn classify_driver_cbid(cbid: u32) -> DriverEvent {
    use DriverEvent::*;
    match cbid {
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel => {
            Launch(LaunchApi::Kernel { per_thread: false })
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz => {
            Launch(LaunchApi::Kernel { per_thread: true })
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx => {
            Launch(LaunchApi::KernelEx { per_thread: false })
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz => {
            Launch(LaunchApi::KernelEx { per_thread: true })
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel => {
            Launch(LaunchApi::Cooperative { per_thread: false })
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz => {
            Launch(LaunchApi::Cooperative { per_thread: true })
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch
        | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz => {
            Launch(LaunchApi::Graph)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernelMultiDevice => {
            Launch(LaunchApi::MultiDevice)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAlloc_v2 => {
            Alloc(AllocApi::Alloc)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocPitch_v2 => {
            Alloc(AllocApi::Pitch)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync
        | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocAsync_ptsz => {
            Alloc(AllocApi::Async)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync
        | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocFromPoolAsync_ptsz => {
            Alloc(AllocApi::FromPool)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocManaged => {
            Alloc(AllocApi::Managed)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemHostAlloc => {
            Alloc(AllocApi::HostAlloc)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemAllocHost_v2 => {
            Alloc(AllocApi::AllocHost)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemHostRegister_v2 => {
            Alloc(AllocApi::HostRegister)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemMap => {
            Alloc(AllocApi::Map)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFree_v2 => {
            Free(FreeApi::Free)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync
        | sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFreeAsync_ptsz => {
            Free(FreeApi::FreeAsync)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemFreeHost => {
            Free(FreeApi::FreeHost)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemHostUnregister => {
            Free(FreeApi::HostUnregister)
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemUnmap => {
            Free(FreeApi::Unmap)
        }
        _ => Other,
    }
}

/// Driver calls that only read state and submit no work (stream/context/device/pointer
/// queries, and the look-ups of a kernel's function handle). They need not wait for, nor close,
/// a replay in progress: frameworks such as PyTorch and libraries such as cuBLAS make them
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
    )
}

/// Driver calls (by name, any `_v2`/`_ptsz`/`Async` variant) a replay window measured by one
/// execution may stay open across (`Engine::fence_in_window`): they launch no kernel, leave
/// the current context and the loaded code alone, and their work on the device (copies,
/// memsets) is kept apart from measured kernels by the engine's drains. Everything else
/// (context switches, unloads, graphs, profiler control, calls not listed) closes the window.
pub fn may_stay_in_window(name: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "cuMemcpy",
        "cuMemset",
        "cuMemAlloc",
        "cuMemFree",
        "cuMemHost",
        "cuMemPrefetch",
        "cuMemAdvise",
        "cuMemPool",
        "cuMemGet",
        "cuMemRangeGet",
        "cuMemCreate",
        "cuMemRelease",
        "cuMemMap",
        "cuMemUnmap",
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
    ];
    PREFIXES.iter().any(|prefix| name.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_ids_match_the_cupti_13_table() {
        // Numbers from cupti_driver_cbid.h of CUDA 13.0 (reference §2.5).
        assert_eq!(
            classify_driver_cbid(307),
            DriverEvent::Launch(LaunchApi::Kernel { per_thread: false })
        );
        assert_eq!(
            classify_driver_cbid(442),
            DriverEvent::Launch(LaunchApi::Kernel { per_thread: true })
        );
        assert_eq!(
            classify_driver_cbid(652),
            DriverEvent::Launch(LaunchApi::KernelEx { per_thread: false })
        );
        assert_eq!(
            classify_driver_cbid(478),
            DriverEvent::Launch(LaunchApi::Cooperative { per_thread: true })
        );
        assert_eq!(
            classify_driver_cbid(514),
            DriverEvent::Launch(LaunchApi::Graph)
        );
        assert_eq!(
            classify_driver_cbid(515),
            DriverEvent::Launch(LaunchApi::Graph)
        );
        assert_eq!(
            classify_driver_cbid(480),
            DriverEvent::Launch(LaunchApi::MultiDevice)
        );
        assert_eq!(classify_driver_cbid(17), DriverEvent::Other);
    }

    #[test]
    fn windows_stay_open_across_memory_and_module_calls_only() {
        for name in [
            "cuMemcpyHtoDAsync_v2",
            "cuMemcpyDtoH_v2",
            "cuMemsetD8Async",
            "cuMemAlloc_v2",
            "cuMemFree_v2",
            "cuMemHostAlloc",
            "cuLibraryLoadData",
            "cuLibraryGetKernel",
            "cuOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
            "cuEventRecord_ptsz",
            "cuCtxSynchronize_v2",
            "cuStreamSynchronize",
        ] {
            assert!(may_stay_in_window(name), "{name}");
        }
        for name in [
            "cuCtxSetCurrent",
            "cuCtxPushCurrent_v2",
            "cuCtxPopCurrent_v2",
            "cuCtxDestroy_v2",
            "cuDevicePrimaryCtxReset_v2",
            "cuModuleUnload",
            "cuLibraryUnload",
            "cuGraphLaunch",
            "cuGraphInstantiateWithFlags",
            "cuProfilerStart",
            "cuLaunchKernel",
            "cuStreamBeginCapture_v2",
            "a driver call",
        ] {
            assert!(!may_stay_in_window(name), "{name}");
        }
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
        assert!(!is_query_only(17));
        assert!(!is_query_only(307));
        assert!(!is_query_only(243));
    }

    #[test]
    fn allocations_are_classified_as_the_engine_expects() {
        let kind = |cbid| match classify_driver_cbid(cbid) {
            DriverEvent::Alloc(a) => Some(a.kind()),
            _ => None,
        };
        assert_eq!(kind(243), Some(AllocKind::Device));
        assert_eq!(kind(244), Some(AllocKind::Pitched));
        assert_eq!(kind(598), Some(AllocKind::Pool));
        assert_eq!(kind(611), Some(AllocKind::Pool));
        assert_eq!(kind(371), Some(AllocKind::Managed));
        assert_eq!(kind(39), Some(AllocKind::Host));
        assert_eq!(kind(294), Some(AllocKind::Host));
        assert_eq!(kind(551), Some(AllocKind::VirtualMapping));
        assert!(AllocApi::Alloc.kind().is_tracked());
        assert!(!AllocApi::Managed.kind().is_tracked());
        assert_eq!(classify_driver_cbid(245), DriverEvent::Free(FreeApi::Free));
        assert_eq!(
            classify_driver_cbid(600),
            DriverEvent::Free(FreeApi::FreeAsync)
        );
        assert_eq!(classify_driver_cbid(552), DriverEvent::Free(FreeApi::Unmap));
    }
}
