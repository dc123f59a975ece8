//! Launches, allocations and frees, told apart by their callback id.

pub use kreplay_cuda::callback::memory::{AllocApi, FreeApi};
use kreplay_cuda::launch::LaunchApi;
use kreplay_cupti_sys as sys;

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
}
