//! Allocations and frees of the application, read from their calls' parameter blocks into the
//! engine's inventory (an allocation at its EXIT, once it succeeded; a free at its ENTER, while
//! the address is still valid).

use crate::classify::{AllocApi, FreeApi};
use crate::tool::Tool;
use kreplay_core::backend::Region;
use kreplay_cuda::callback::driver::DriverData;
use kreplay_cuda::callback::memory::{allocated, freed, Freed};

pub(crate) fn on_alloc(tool: &Tool, api: AllocApi, data: &DriverData) {
    if !data.succeeded() || data.params().is_null() {
        return;
    }
    let Some(device) = tool.device_of(data.context()) else {
        return;
    };
    // SAFETY: the call's parameter block, at the EXIT callback of a call that succeeded.
    let (base, bytes) = unsafe { allocated(api, data.params()) };
    tool.engine.inventory().insert(Region {
        device,
        base,
        bytes,
        kind: crate::classify::alloc_kind(api),
    });
}

pub(crate) fn on_free(tool: &Tool, api: FreeApi, data: &DriverData) {
    if data.params().is_null() {
        return;
    }
    let Some(device) = tool.device_of(data.context()) else {
        return;
    };
    // SAFETY: the call's parameter block, inside its callback.
    match unsafe { freed(api, data.params()) } {
        Freed::Range { base, bytes } => {
            let owner = owner_of(tool, device, base);
            tool.engine.inventory().remove_within(owner, base, bytes);
        }
        Freed::Base(base) => {
            tool.engine
                .inventory()
                .remove(owner_of(tool, device, base), base);
        }
    }
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
