//! Launches, allocations and frees, told apart by their callback id.

use kreplay_core::backend::AllocKind;
use kreplay_cuda::callback::ids::DriverCall;
pub use kreplay_cuda::callback::memory::{AllocApi, FreeApi};
use kreplay_cuda::launch::LaunchApi;

/// What the engine's inventory makes of memory an allocation API returns.
pub fn alloc_kind(api: AllocApi) -> AllocKind {
    match api {
        AllocApi::Alloc => AllocKind::Device,
        AllocApi::Pitch => AllocKind::Pitched,
        AllocApi::Async | AllocApi::FromPool => AllocKind::Pool,
        AllocApi::Managed => AllocKind::Managed,
        AllocApi::HostAlloc | AllocApi::AllocHost | AllocApi::HostRegister => AllocKind::Host,
        AllocApi::Map => AllocKind::VirtualMapping,
    }
}

/// What a driver callback id is to the tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverEvent {
    Launch(LaunchApi),
    Alloc(AllocApi),
    Free(FreeApi),
    /// `cuProfilerStart` (`start`) or `cuProfilerStop`, which `cudaProfilerStart` and
    /// `cudaProfilerStop` call: the bounds of `--selected-regions`.
    Profiler {
        start: bool,
    },
    /// Nothing the tool tracks.
    Other,
}

/// Classifies a `CUPTI_CB_DOMAIN_DRIVER_API` callback id.
pub fn classify_driver_cbid(cbid: u32) -> DriverEvent {
    use DriverEvent::*;
    match DriverCall(cbid) {
        DriverCall::cuLaunchKernel => Launch(LaunchApi::Kernel { per_thread: false }),
        DriverCall::cuLaunchKernel_ptsz => Launch(LaunchApi::Kernel { per_thread: true }),
        DriverCall::cuLaunchKernelEx => Launch(LaunchApi::KernelEx { per_thread: false }),
        DriverCall::cuLaunchKernelEx_ptsz => Launch(LaunchApi::KernelEx { per_thread: true }),
        DriverCall::cuLaunchCooperativeKernel => {
            Launch(LaunchApi::Cooperative { per_thread: false })
        }
        DriverCall::cuLaunchCooperativeKernel_ptsz => {
            Launch(LaunchApi::Cooperative { per_thread: true })
        }
        DriverCall::cuGraphLaunch => Launch(LaunchApi::Graph { per_thread: false }),
        DriverCall::cuGraphLaunch_ptsz => Launch(LaunchApi::Graph { per_thread: true }),
        DriverCall::cuLaunchCooperativeKernelMultiDevice => Launch(LaunchApi::MultiDevice),
        DriverCall::cuMemAlloc_v2 => Alloc(AllocApi::Alloc),
        DriverCall::cuMemAllocPitch_v2 => Alloc(AllocApi::Pitch),
        DriverCall::cuMemAllocAsync | DriverCall::cuMemAllocAsync_ptsz => Alloc(AllocApi::Async),
        DriverCall::cuMemAllocFromPoolAsync | DriverCall::cuMemAllocFromPoolAsync_ptsz => {
            Alloc(AllocApi::FromPool)
        }
        DriverCall::cuMemAllocManaged => Alloc(AllocApi::Managed),
        DriverCall::cuMemHostAlloc => Alloc(AllocApi::HostAlloc),
        DriverCall::cuMemAllocHost_v2 => Alloc(AllocApi::AllocHost),
        DriverCall::cuMemHostRegister_v2 => Alloc(AllocApi::HostRegister),
        DriverCall::cuMemSetAccess => Alloc(AllocApi::Map),
        DriverCall::cuMemFree_v2 => Free(FreeApi::Free),
        DriverCall::cuMemFreeAsync | DriverCall::cuMemFreeAsync_ptsz => Free(FreeApi::FreeAsync),
        DriverCall::cuMemFreeHost => Free(FreeApi::FreeHost),
        DriverCall::cuMemHostUnregister => Free(FreeApi::HostUnregister),
        DriverCall::cuMemUnmap => Free(FreeApi::Unmap),
        DriverCall::cuProfilerStart => Profiler { start: true },
        DriverCall::cuProfilerStop => Profiler { start: false },
        _ => Other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kreplay_core::backend::AllocKind;

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
    fn profiler_start_and_stop_bound_the_selected_regions() {
        // cupti_driver_cbid.h of CUDA 13.0: cuProfilerStart 308, cuProfilerStop 309 (what
        // cudaProfilerStart/Stop call); cuProfilerInitialize (311) is not a bound.
        assert_eq!(
            classify_driver_cbid(308),
            DriverEvent::Profiler { start: true }
        );
        assert_eq!(
            classify_driver_cbid(309),
            DriverEvent::Profiler { start: false }
        );
        assert_eq!(classify_driver_cbid(311), DriverEvent::Other);
    }

    #[test]
    fn allocations_are_classified_as_the_engine_expects() {
        let kind = |cbid| match classify_driver_cbid(cbid) {
            DriverEvent::Alloc(a) => Some(alloc_kind(a)),
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
        assert!(alloc_kind(AllocApi::Alloc).is_tracked());
        assert!(alloc_kind(AllocApi::Managed).is_tracked());
        assert!(alloc_kind(AllocApi::Map).is_tracked());
        assert!(!alloc_kind(AllocApi::HostAlloc).is_tracked());
        assert_eq!(classify_driver_cbid(245), DriverEvent::Free(FreeApi::Free));
        assert_eq!(
            classify_driver_cbid(600),
            DriverEvent::Free(FreeApi::FreeAsync)
        );
        assert_eq!(classify_driver_cbid(552), DriverEvent::Free(FreeApi::Unmap));
    }
}
