//! The software device's API calls as the CUDA API calls they stand for, handed to the
//! engine's one API entry point ([`kreplay_core::Engine::api_call`]) as the CUDA backend hands
//! it CUPTI's runtime- and driver-API callbacks: each call of the application a runtime call
//! (`cudaMalloc`, `cudaLaunchKernel`, ...) made of the driver call beneath it (`cuMemAlloc_v2`,
//! `cuLaunchKernel`, ...), timed on the device's clock (the dispatches' clock). A launch's
//! dispatch carries its runtime call's correlation id. Calls made inside another (a graph's
//! nodes run one by one) are the tool's, not the application's: not recorded.

use crate::runtime::SimRuntime;
use kreplay_core::api_trace::{ApiCall, ApiLevel};
use kreplay_core::backend::{AllocKind, LaunchKind};
use kreplay_format::ApiDomain;
use kreplay_format::RecordedArgs;
use std::sync::atomic::{AtomicU64, Ordering};

/// A call as the CUDA runtime and driver name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ApiNames {
    /// `None`: a driver call the application makes itself (no runtime call stands for it).
    pub runtime: Option<&'static str>,
    pub driver: &'static str,
}

const fn names(runtime: &'static str, driver: &'static str) -> ApiNames {
    ApiNames {
        runtime: Some(runtime),
        driver,
    }
}

pub(crate) const LAUNCH: ApiNames = names("cudaLaunchKernel", "cuLaunchKernel");
pub(crate) const GRAPH_LAUNCH: ApiNames = names("cudaGraphLaunch", "cuGraphLaunch");
pub(crate) const FREE: ApiNames = names("cudaFree", "cuMemFree_v2");
pub(crate) const COPY_TO_DEVICE: ApiNames = names("cudaMemcpy", "cuMemcpyHtoD_v2");
pub(crate) const COPY_TO_HOST: ApiNames = names("cudaMemcpy", "cuMemcpyDtoH_v2");
pub(crate) const COPY_ON_DEVICE: ApiNames = names("cudaMemcpy", "cuMemcpyDtoD_v2");
pub(crate) const COPY_PEER: ApiNames = names("cudaMemcpyPeer", "cuMemcpyPeer");
pub(crate) const FILL: ApiNames = names("cudaMemset", "cuMemsetD32_v2");
pub(crate) const SYNCHRONIZE: ApiNames = names("cudaDeviceSynchronize", "cuCtxSynchronize");
pub(crate) const PROFILER_START: ApiNames = names("cudaProfilerStart", "cuProfilerStart");
pub(crate) const PROFILER_STOP: ApiNames = names("cudaProfilerStop", "cuProfilerStop");

/// The allocation call of `kind`; `None` for a module-scope variable (the loader's, as on the
/// GPU: no call of the application's).
pub(crate) fn alloc_names(kind: AllocKind) -> Option<ApiNames> {
    Some(match kind {
        AllocKind::Pitched => names("cudaMallocPitch", "cuMemAllocPitch_v2"),
        AllocKind::Managed => names("cudaMallocManaged", "cuMemAllocManaged"),
        AllocKind::Pool => names("cudaMallocAsync", "cuMemAllocAsync"),
        AllocKind::Host => names("cudaHostAlloc", "cuMemHostAlloc"),
        AllocKind::VirtualMapping => ApiNames {
            runtime: None,
            driver: "cuMemMap",
        },
        AllocKind::ModuleVariable => return None,
        _ => names("cudaMalloc", "cuMemAlloc_v2"),
    })
}

/// The free of memory of `kind` (`None`: memory the tool does not know).
pub(crate) fn free_names(kind: Option<AllocKind>) -> ApiNames {
    match kind {
        Some(AllocKind::Pool) => names("cudaFreeAsync", "cuMemFreeAsync"),
        Some(AllocKind::Host) => names("cudaFreeHost", "cuMemFreeHost"),
        Some(AllocKind::VirtualMapping) => ApiNames {
            runtime: None,
            driver: "cuMemUnmap",
        },
        _ => FREE,
    }
}

/// The call a launch of `kind` stands for.
pub(crate) fn launch_names(kind: LaunchKind) -> ApiNames {
    match kind {
        LaunchKind::Graph => GRAPH_LAUNCH,
        _ => LAUNCH,
    }
}

/// The call the runtime's internal `name` (see `SimRuntime::call_on`) stands for; `None` for
/// the tool's own (a graph launch's stand-in).
pub(crate) fn call_names(name: &str) -> Option<ApiNames> {
    Some(match name {
        "alloc" => names("cudaMalloc", "cuMemAlloc_v2"),
        "free" => FREE,
        "write_u32s" => COPY_TO_DEVICE,
        "read_u32s" => COPY_TO_HOST,
        "copy" => COPY_ON_DEVICE,
        "copy_peer" => COPY_PEER,
        "fill_u32s" => FILL,
        "synchronize" => SYNCHRONIZE,
        _ => return None,
    })
}

/// The next correlation id of the process (ids are per process, as CUPTI's).
pub(crate) fn next_correlation() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl SimRuntime {
    /// Runs the application's call `names` under `correlation_id`, recording it under
    /// `--runtime-trace` (the runtime call) or `--sys-trace` (and the driver call inside it)
    /// unless it runs inside another call of the runtime.
    pub(crate) fn api<T>(
        &mut self,
        names: Option<ApiNames>,
        correlation_id: u64,
        call: impl FnOnce(&mut Self) -> T,
    ) -> T {
        let level = self
            .engine
            .as_ref()
            .map_or(ApiLevel::Off, |e| e.api_level());
        let Some(names) = names.filter(|_| level != ApiLevel::Off && self.api_depth == 0) else {
            self.api_depth += 1;
            let result = call(self);
            self.api_depth -= 1;
            if self.api_depth == 0 {
                // A call not recorded: its arguments go with it.
                self.next_args = None;
            }
            return result;
        };
        // A driver call the application makes itself has the call's id; one the runtime makes
        // (recorded under --sys-trace only) an id of its own, naming the runtime call.
        let driver_id = match names.runtime {
            None => Some(correlation_id),
            Some(_) => (level == ApiLevel::All).then(next_correlation),
        };
        let start_ns = self.device().marker_time_ns();
        let driver_start_ns = self.device().marker_time_ns();
        self.api_depth += 1;
        let result = call(self);
        self.api_depth -= 1;
        let driver_end_ns = self.device().marker_time_ns();
        let end_ns = self.device().marker_time_ns();
        let args = self.next_args.take().unwrap_or_default();
        if let Some(engine) = self.engine.clone() {
            if let Some(driver_id) = driver_id {
                engine.api_call(&ApiCall {
                    domain: ApiDomain::Driver,
                    function: names.driver,
                    correlation_id: driver_id,
                    parent_id: if driver_id == correlation_id {
                        0
                    } else {
                        correlation_id
                    },
                    start_ns: driver_start_ns,
                    end_ns: driver_end_ns,
                    args: RecordedArgs::of(names.driver, args.driver.as_slice()),
                });
            }
            if let Some(runtime) = names.runtime {
                engine.api_call(&ApiCall {
                    domain: ApiDomain::Runtime,
                    function: runtime,
                    correlation_id,
                    parent_id: 0,
                    start_ns,
                    end_ns,
                    args: RecordedArgs::of(runtime, args.runtime.as_slice()),
                });
            }
        }
        result
    }
}
