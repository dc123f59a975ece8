//! Kernel launches (and whole graph or multi-device launches): the engine's ENTER at the
//! launch's ENTER callback, with the backend prepared for the dispatch, kept per thread until
//! the launch's EXIT callback, where the engine records it and may replay it. A launch into a
//! stream capture is passed through.

use crate::classify::LaunchApi;
use crate::dispatch::{begin_dispatch, kernel_dispatch, LaunchShape};
use crate::tool::{self, lock, Tool};
use kreplay_backend::{resolve_stream, CudaLaunch, CurrentDispatch, DispatchBackend};
use kreplay_core::backend::{DeviceScope, DispatchInfo, LaunchKind};
use kreplay_core::LaunchTicket;
use kreplay_cuda::callback::driver::DriverData;
use kreplay_cuda::launch::LaunchParams;
use kreplay_cuda::query;
use std::cell::RefCell;
use std::ffi::c_void;

/// A launch between its ENTER and EXIT callbacks.
struct PendingLaunch {
    correlation_id: u32,
    ticket: LaunchTicket,
    backend: DispatchBackend<'static>,
    /// A captured launch: the backend was never prepared, so nothing to end.
    passive: bool,
}

/// The stages of a launch's callbacks that `KREPLAY_DEBUG` times (`Tool::launch_stages`).
pub(crate) const LAUNCH_STAGES: [&str; 3] = [
    "decoding and classifying at ENTER",
    "the engine at ENTER",
    "the engine at EXIT",
];

thread_local! {
    static LAUNCHES: RefCell<Vec<PendingLaunch>> = const { RefCell::new(Vec::new()) };
}

/// Lets go of the launches this thread still holds (the tool switched off meanwhile).
pub(crate) fn release_pending() {
    let _ = LAUNCHES.try_with(|l| l.borrow_mut().clear());
}

fn launch_shape(api: LaunchApi, params: *const c_void) -> LaunchShape {
    // SAFETY: the launch API's parameter block, valid during the callback.
    let p = unsafe { LaunchParams::decode(api, params) };
    let per_thread = match api {
        LaunchApi::Kernel { per_thread }
        | LaunchApi::Cooperative { per_thread }
        | LaunchApi::KernelEx { per_thread }
        | LaunchApi::Graph { per_thread } => per_thread,
        LaunchApi::MultiDevice => false,
    };
    LaunchShape {
        f: p.f,
        grid: p.grid,
        block: p.block,
        shared: p.shared,
        stream: resolve_stream(p.stream, per_thread),
    }
}

pub(crate) fn launch_enter(tool: &'static Tool, api: LaunchApi, data: &DriverData) {
    if data.params().is_null() {
        return;
    }
    let timed = kreplay_cuda::debug::enabled().then(std::time::Instant::now);
    if LAUNCHES.try_with(|_| ()).is_err() {
        // A thread being torn down cannot keep the launch for its EXIT: it runs unprofiled,
        // after any open window has closed.
        let mut backend = tool.passive_backend(data.context());
        drop(
            tool.engine
                .fence_for(&mut backend, "a launch at thread exit", DeviceScope::All),
        );
        return;
    }
    let Some(device) = tool.device_of(data.context()) else {
        return;
    };
    let shape = launch_shape(api, data.params());
    if crate::captures::may_be_open() && query::is_capturing(tool.driver, shape.stream) {
        return enter_captured(tool, data, device, &shape);
    }
    let info = if shape.f.is_null() {
        tool.register_agent(device);
        let (kind, name) = if matches!(api, LaunchApi::Graph { .. }) {
            (LaunchKind::Graph, "cuGraphLaunch")
        } else {
            (
                LaunchKind::MultiDevice,
                "cuLaunchCooperativeKernelMultiDevice",
            )
        };
        DispatchInfo {
            device,
            kind,
            kernel_name: name.into(),
            kernel_id: tool.kernels.launch_api_id(&tool.engine, name),
            stream_id: crate::stream_ids::stream_id(tool.driver, data.context(), shape.stream),
            correlation_id: crate::api_trace::dispatch_correlation(data.correlation_id()),
            grid: shape.grid,
            block: shape.block,
            dynamic_shared_bytes: shape.shared,
        }
    } else {
        // SAFETY: a launch's callback (the name is read only for a kernel not seen before).
        let symbol = || unsafe { data.launch_symbol() };
        kernel_dispatch(
            tool,
            device,
            &shape,
            data.context(),
            symbol,
            data.correlation_id(),
            || {
                // SAFETY: the parameter block of the launch whose callback is running.
                unsafe { kreplay_cuda::launch::callback_addresses(tool.driver, api, data.params()) }
            },
        )
    };
    // CUPTI's record of a kernel's execution carries its launch call's correlation id (a graph's
    // or a multi-device launch's are several, or none: those are timed with events).
    let correlation =
        (!shape.f.is_null() && kreplay_cuda::activity::enabled()).then(|| data.correlation_id());
    let Some(current) = begin_dispatch(tool, data.context(), device, shape.stream, correlation)
    else {
        return;
    };
    tool.launch_stage(0, timed);
    enter(tool, data, current, &info);
}

/// A launch recorded into a stream capture: not executed, so no tool CUDA calls (they could
/// invalidate the capture); the engine passes it through.
fn enter_captured(
    tool: &'static Tool,
    data: &DriverData,
    device: kreplay_core::backend::DeviceId,
    shape: &LaunchShape,
) {
    // SAFETY: a launch's callback.
    let symbol = unsafe { data.launch_symbol() };
    let (kernel_id, kernel_name) = tool
        .kernels
        .known_kernel(shape.f)
        .unwrap_or_else(|| (0, symbol.unwrap_or_default().into()));
    let info = DispatchInfo {
        device,
        kind: LaunchKind::StreamCapture,
        kernel_name,
        kernel_id,
        stream_id: 0,
        correlation_id: crate::api_trace::dispatch_correlation(data.correlation_id()),
        grid: shape.grid,
        block: shape.block,
        dynamic_shared_bytes: shape.shared,
    };
    let current = CurrentDispatch::passive(data.context(), shape.stream);
    enter(tool, data, current, &info);
}

/// The engine's side of a launch's ENTER, kept with its backend for the EXIT callback.
fn enter(tool: &'static Tool, data: &DriverData, current: CurrentDispatch, info: &DispatchInfo) {
    let passive = current.is_passive();
    let mut backend = DispatchBackend::new(&tool.backend, &tool.gate, current);
    let timed = kreplay_cuda::debug::enabled().then(std::time::Instant::now);
    let ticket = tool.engine.launch_enter(&mut backend, info);
    tool.launch_stage(1, timed);
    keep_pending(PendingLaunch {
        correlation_id: data.correlation_id(),
        ticket,
        backend,
        passive,
    });
}

/// Keeps a launch for its EXIT callback (`launch_enter` made sure the thread-locals exist).
fn keep_pending(pending: PendingLaunch) {
    let _ = LAUNCHES.try_with(|l| l.borrow_mut().push(pending));
}

/// The engine's side of a launch's EXIT; `false` when no ENTER of this launch is pending.
pub(crate) fn launch_exit(api: LaunchApi, data: &DriverData) -> bool {
    let pending = LAUNCHES
        .try_with(|l| {
            let mut launches = l.borrow_mut();
            let pos = launches
                .iter()
                .rposition(|p| p.correlation_id == data.correlation_id())?;
            Some(launches.remove(pos))
        })
        .ok()
        .flatten();
    let Some(PendingLaunch {
        ticket,
        mut backend,
        passive,
        ..
    }) = pending
    else {
        return false;
    };
    let Some(tool) = tool::tool() else {
        return true;
    };
    if !data.succeeded() {
        // Nothing executed: no pass to read and nothing to replay (a relaunch would fail the
        // same way). The window is released and nothing is recorded.
        tool.engine.launch_failed(&mut backend, ticket);
        if !passive {
            lock(&tool.backend).end_dispatch();
        }
        return true;
    }
    let launch = CudaLaunch::callback(api, data.params());
    let timed = kreplay_cuda::debug::enabled().then(std::time::Instant::now);
    tool.engine.launch_exit(&mut backend, ticket, &launch);
    tool.launch_stage(2, timed);
    tool.first_dispatch_done();
    if !passive {
        lock(&tool.backend).end_dispatch();
    }
    true
}
