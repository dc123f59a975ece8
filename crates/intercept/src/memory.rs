//! Allocations and frees of the application, read from their calls' parameter blocks into the
//! engine's inventory (an allocation at its EXIT, once it succeeded; a free at its ENTER, while
//! the address is still valid).

use crate::callback_data::succeeded;
use crate::classify::{AllocApi, FreeApi};
use crate::tool::{host_address, Tool};
use kreplay_core::backend::Region;
use kreplay_cupti_sys as sys;

pub(crate) fn on_alloc(tool: &Tool, api: AllocApi, data: &sys::CUpti_CallbackData) {
    if !succeeded(data) || data.functionParams.is_null() {
        return;
    }
    let Some(device) = tool.device_of(data.context) else {
        return;
    };
    let p = data.functionParams;
    // SAFETY: each API's parameter block, as generated_cuda_meta.h declares it; output
    // pointers were written by the successful call.
    let (base, bytes) = unsafe {
        match api {
            AllocApi::Alloc => {
                let p = &*(p as *const sys::cuMemAlloc_v2_params);
                (*p.dptr, p.bytesize as u64)
            }
            AllocApi::Pitch => {
                let p = &*(p as *const sys::cuMemAllocPitch_v2_params);
                (*p.dptr, (*p.pPitch * p.Height) as u64)
            }
            AllocApi::Async | AllocApi::FromPool => {
                let p = &*(p as *const sys::cuMemAllocAsync_params);
                (*p.dptr, p.bytesize as u64)
            }
            AllocApi::Managed => {
                let p = &*(p as *const sys::cuMemAllocManaged_params);
                (*p.dptr, p.bytesize as u64)
            }
            AllocApi::HostAlloc => {
                let p = &*(p as *const sys::cuMemHostAlloc_params);
                (host_address(*p.pp), p.bytesize as u64)
            }
            AllocApi::AllocHost => {
                let p = &*(p as *const sys::cuMemAllocHost_v2_params);
                (host_address(*p.pp), p.bytesize as u64)
            }
            AllocApi::HostRegister => {
                let p = &*(p as *const sys::cuMemHostRegister_v2_params);
                (host_address(p.p), p.bytesize as u64)
            }
            AllocApi::Map => {
                let p = &*(p as *const sys::cuMemSetAccess_params);
                (p.ptr, p.size as u64)
            }
        }
    };
    tool.engine.inventory().insert(Region {
        device,
        base,
        bytes,
        kind: api.kind(),
    });
}

pub(crate) fn on_free(tool: &Tool, api: FreeApi, data: &sys::CUpti_CallbackData) {
    if data.functionParams.is_null() {
        return;
    }
    let Some(device) = tool.device_of(data.context) else {
        return;
    };
    let p = data.functionParams;
    // SAFETY: each API's parameter block, valid during the callback.
    let base = unsafe {
        match api {
            FreeApi::Free => (*(p as *const sys::cuMemFree_v2_params)).dptr,
            FreeApi::FreeAsync => (*(p as *const sys::cuMemFreeAsync_params)).dptr,
            FreeApi::FreeHost => host_address((*(p as *const sys::cuMemFreeHost_params)).p),
            FreeApi::HostUnregister => {
                host_address((*(p as *const sys::cuMemHostUnregister_params)).p)
            }
            FreeApi::Unmap => {
                let unmap = &*(p as *const sys::cuMemUnmap_params);
                let owner = owner_of(tool, device, unmap.ptr);
                tool.engine
                    .inventory()
                    .remove_within(owner, unmap.ptr, unmap.size as u64);
                return;
            }
        }
    };
    tool.engine
        .inventory()
        .remove(owner_of(tool, device, base), base);
}

/// The device whose inventory holds `address`: memory of another device may be freed from
/// this context's (unified addressing); `device` when none holds it.
fn owner_of(
    tool: &Tool,
    device: kreplay_core::backend::DeviceId,
    address: u64,
) -> kreplay_core::backend::DeviceId {
    tool.engine
        .inventory()
        .find_anywhere(address)
        .map_or(device, |region| region.device)
}
