//! What launches and graph nodes share on their way to the engine: a launch's shape, the
//! [`DispatchInfo`] of a kernel launch, the backend prepared for a dispatch, and what a write
//! does to device memory.

use crate::tool::{lock, Tool};
use kreplay_backend::CurrentDispatch;
use kreplay_core::backend::{AllocKind, CallEffect, DispatchInfo, LaunchKind};
use kreplay_cuda::{CUcontext, CUfunction, CUstream};

/// Grid, block, dynamic shared memory, function and stream of a launch.
pub(crate) struct LaunchShape {
    pub f: CUfunction,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub stream: CUstream,
}

/// A kernel launch as the engine sees it (its agent registered first): its kernel's id and
/// name, its kind (printf, device heap, collective, or a kernel reaching another device's or
/// pageable host memory, which its parameter words tell: [`Tool::launch_memory_kind`]), its
/// stream's id.
pub(crate) fn kernel_dispatch(
    tool: &'static Tool,
    device: kreplay_core::backend::DeviceId,
    shape: &LaunchShape,
    ctx: CUcontext,
    symbol: impl FnOnce() -> Option<String>,
    correlation_id: u32,
    words: impl FnOnce() -> Vec<u64>,
) -> DispatchInfo {
    tool.register_agent(device);
    let kernel = tool
        .kernels
        .kernel_id(&tool.engine, shape.f, symbol, device);
    let kind = match kernel.kind {
        LaunchKind::Kernel => tool.launch_memory_kind(device, words),
        kind => kind,
    };
    DispatchInfo {
        device,
        kind,
        kernel_name: kernel.name,
        kernel_id: kernel.id,
        stream_id: crate::stream_ids::stream_id(tool.driver, ctx, shape.stream),
        correlation_id: crate::api_trace::dispatch_correlation(correlation_id),
        grid: shape.grid,
        block: shape.block,
        dynamic_shared_bytes: shape.shared,
    }
}

/// The backend prepared for a dispatch on `stream`; `None` (said once) when it cannot be, and
/// the launch runs unprofiled.
pub(crate) fn begin_dispatch(
    tool: &Tool,
    ctx: CUcontext,
    device: kreplay_core::backend::DeviceId,
    stream: CUstream,
    correlation: Option<u32>,
) -> Option<CurrentDispatch> {
    match lock(&tool.backend).begin_dispatch(ctx, device, stream, correlation) {
        Ok(current) => Some(current),
        Err(e) => {
            tool.warn_once(
                "begin-dispatch",
                &format!("cannot prepare dispatches for replay ({e}); they run unprofiled"),
            );
            None
        }
    }
}

/// A write of `bytes` from `dst` on `device`; `unified`: `dst` may be host memory too, which
/// the inventory tells apart (pinned host memory, or none known: pageable host memory).
pub(crate) fn device_write(
    tool: &Tool,
    device: kreplay_core::backend::DeviceId,
    dst: u64,
    bytes: u64,
    unified: bool,
) -> CallEffect {
    if unified {
        let region = tool.engine.inventory().find(device, dst);
        if region.is_none_or(|r| r.kind == AllocKind::Host) {
            return CallEffect::NoDeviceWrite;
        }
    }
    CallEffect::DeviceWrite {
        device,
        base: dst,
        bytes,
    }
}
