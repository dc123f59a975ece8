//! What a driver call means to the tool, in one place, unit-tested without a GPU. By callback id:
//! a launch, an allocation or a free of some kind ([`classify_driver_cbid`]), a host wait
//! ([`is_blocking_wait`]), a capture's beginning, a module's unloading, a pure query. By name, for
//! the hundreds of other calls, in families: what a call does to device memory
//! ([`classify_call`]) and whether it changes an executable graph ([`changes_graph_exec`]). And
//! which kernels wait on peers ([`kreplay_backend::modules::is_collective_kernel`]).

use kreplay_core::backend::AllocKind;
pub use kreplay_cuda::launch::LaunchApi;
use kreplay_cupti_sys as sys;

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
        match cbid {
            sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuModuleUnload => {
                (*(params as *const sys::cuModuleUnload_params)).hmod as usize
            }
            sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuLibraryUnload => {
                (*(params as *const sys::cuLibraryUnload_params)).library as usize
            }
            _ => return None,
        }
    };
    Some(owner)
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
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch => {
            Launch(LaunchApi::Graph { per_thread: false })
        }
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz => {
            Launch(LaunchApi::Graph { per_thread: true })
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
        sys::CUpti_driver_api_trace_cbid_enum_CUPTI_DRIVER_TRACE_CBID_cuMemSetAccess => {
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
fn base_name(name: &str) -> &str {
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
    if params.is_null() {
        return CallKind::Unknown;
    }
    let writes = |dst: u64, bytes: usize| CallKind::Writes {
        dst,
        bytes: bytes as u64,
        unified: false,
    };
    match base_name(name) {
        "cuMemcpyHtoD_v2" | "cuMemcpyHtoDAsync_v2" => {
            let p = &*(params as *const sys::cuMemcpyHtoD_v2_params);
            writes(p.dstDevice, p.ByteCount)
        }
        "cuMemcpyDtoD_v2" | "cuMemcpyDtoDAsync_v2" => {
            let p = &*(params as *const sys::cuMemcpyDtoD_v2_params);
            writes(p.dstDevice, p.ByteCount)
        }
        "cuMemcpy" | "cuMemcpyAsync" => {
            let p = &*(params as *const sys::cuMemcpy_params);
            CallKind::Writes {
                dst: p.dst,
                bytes: p.ByteCount as u64,
                unified: true,
            }
        }
        "cuMemsetD8_v2" | "cuMemsetD8Async" => {
            let p = &*(params as *const sys::cuMemsetD8_v2_params);
            writes(p.dstDevice, p.N)
        }
        "cuMemsetD16_v2" | "cuMemsetD16Async" => {
            let p = &*(params as *const sys::cuMemsetD16_v2_params);
            writes(p.dstDevice, p.N * 2)
        }
        "cuMemsetD32_v2" | "cuMemsetD32Async" => {
            let p = &*(params as *const sys::cuMemsetD32_v2_params);
            writes(p.dstDevice, p.N * 4)
        }
        "cuMemsetD2D8_v2" | "cuMemsetD2D8Async" => {
            let p = &*(params as *const sys::cuMemsetD2D8_v2_params);
            writes(p.dstDevice, span_2d(p.dstPitch, p.Width, p.Height))
        }
        "cuMemsetD2D16_v2" | "cuMemsetD2D16Async" => {
            let p = &*(params as *const sys::cuMemsetD2D16_v2_params);
            writes(p.dstDevice, span_2d(p.dstPitch, p.Width * 2, p.Height))
        }
        "cuMemsetD2D32_v2" | "cuMemsetD2D32Async" => {
            let p = &*(params as *const sys::cuMemsetD2D32_v2_params);
            writes(p.dstDevice, span_2d(p.dstPitch, p.Width * 4, p.Height))
        }
        "cuMemcpy2D_v2" | "cuMemcpy2DAsync_v2" | "cuMemcpy2DUnaligned_v2" => {
            let p = &*(params as *const sys::cuMemcpy2D_v2_params);
            if p.pCopy.is_null() {
                return CallKind::Unknown;
            }
            copy_2d(&*p.pCopy)
        }
        _ => CallKind::Unknown,
    }
}

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
    let other = match base_name(name) {
        "cuMemFree_v2" => Some((*(params as *const sys::cuMemFree_v2_params)).dptr),
        "cuMemFreeAsync" => Some((*(params as *const sys::cuMemFreeAsync_params)).dptr),
        "cuMemUnmap" => Some((*(params as *const sys::cuMemUnmap_params)).ptr),
        "cuMemcpyDtoH_v2" | "cuMemcpyDtoHAsync_v2" => {
            Some((*(params as *const sys::cuMemcpyDtoH_v2_params)).srcDevice)
        }
        "cuMemcpyDtoD_v2" | "cuMemcpyDtoDAsync_v2" => {
            Some((*(params as *const sys::cuMemcpyDtoD_v2_params)).srcDevice)
        }
        "cuMemcpy" | "cuMemcpyAsync" => Some((*(params as *const sys::cuMemcpy_params)).src),
        "cuMemcpy2D_v2" | "cuMemcpy2DAsync_v2" | "cuMemcpy2DUnaligned_v2" => {
            let p = &*(params as *const sys::cuMemcpy2D_v2_params);
            p.pCopy.as_ref().and_then(|copy| {
                matches!(
                    copy.srcMemoryType,
                    sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE
                        | sys::CUmemorytype_enum_CU_MEMORYTYPE_UNIFIED
                )
                .then(|| copy.srcDevice + (copy.srcY * copy.srcPitch + copy.srcXInBytes) as u64)
            })
        }
        _ => None,
    };
    written.into_iter().chain(other).collect()
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
            DriverEvent::Launch(LaunchApi::Graph { per_thread: false })
        );
        assert_eq!(
            classify_driver_cbid(515),
            DriverEvent::Launch(LaunchApi::Graph { per_thread: true })
        );
        assert_eq!(
            classify_driver_cbid(480),
            DriverEvent::Launch(LaunchApi::MultiDevice)
        );
        assert_eq!(classify_driver_cbid(17), DriverEvent::Other);
    }

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
        assert_eq!(kind(553), Some(AllocKind::VirtualMapping), "cuMemSetAccess");
        assert_eq!(kind(551), None, "cuMemMap: not accessible yet");
        assert!(AllocApi::Alloc.kind().is_tracked());
        assert!(AllocApi::Managed.kind().is_tracked());
        assert!(AllocApi::Map.kind().is_tracked());
        assert!(!AllocApi::HostAlloc.kind().is_tracked());
        assert_eq!(classify_driver_cbid(245), DriverEvent::Free(FreeApi::Free));
        assert_eq!(
            classify_driver_cbid(600),
            DriverEvent::Free(FreeApi::FreeAsync)
        );
        assert_eq!(classify_driver_cbid(552), DriverEvent::Free(FreeApi::Unmap));
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
