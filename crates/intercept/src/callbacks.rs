//! The CUPTI callback: driver-domain launches, allocations, frees and the fence; resource-domain
//! contexts, streams and modules.

use super::graph_launch;
use super::tool::{self, host_address, lock, Tool};
use crate::classify::{
    call_addresses, classify_call, classify_driver_cbid, is_blocking_wait, is_capture_begin,
    is_query_only, unloaded_module, AllocApi, CallKind, DriverEvent, FreeApi, LaunchApi,
};
use kreplay_backend::module_symbols::scan_cubin;
use kreplay_backend::{resolve_stream, CudaLaunch, CurrentDispatch, DispatchBackend};
use kreplay_core::backend::{AllocKind, CallEffect, DeviceScope, DispatchInfo, LaunchKind, Region};
use kreplay_core::engine::CallGuard;
use kreplay_core::LaunchTicket;
use kreplay_cuda::guard::in_tool;
use kreplay_cuda::launch::LaunchParams;
use kreplay_cuda::query;
use kreplay_cupti_sys as sys;
use std::cell::RefCell;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

/// A launch between its ENTER and EXIT callbacks.
struct PendingLaunch {
    correlation_id: u32,
    ticket: LaunchTicket,
    backend: DispatchBackend<'static>,
    /// A captured launch: the backend was never prepared, so nothing to end.
    passive: bool,
}

thread_local! {
    static LAUNCHES: RefCell<Vec<PendingLaunch>> = const { RefCell::new(Vec::new()) };
    /// Calls between their ENTER and EXIT (fence held, write to capture), with their callback id.
    static CALLS: RefCell<Vec<(u32, CallGuard)>> = const { RefCell::new(Vec::new()) };
}

/// The function CUPTI calls. Never unwinds: a panic switches the tool off.
pub(crate) unsafe extern "C" fn callback(
    _userdata: *mut c_void,
    domain: sys::CUpti_CallbackDomain,
    cbid: sys::CUpti_CallbackId,
    cbdata: *const c_void,
) {
    // The tool's own driver calls fire callbacks too; only module loads matter then.
    if in_tool() && domain != sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RESOURCE {
        return;
    }
    let Some(tool) = tool::tool() else {
        // Switched off: let go of whatever this thread still holds from an ENTER, so that no
        // other thread waits on a fence or a window that nothing will release.
        release_thread_holds();
        return;
    };
    if cbdata.is_null() {
        return;
    }
    let timed = kreplay_cuda::debug::enabled().then(std::time::Instant::now);
    let outcome = catch_unwind(AssertUnwindSafe(|| match domain {
        sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_DRIVER_API => {
            // SAFETY: CUPTI passes a CUpti_CallbackData for the driver domain.
            on_driver(tool, cbid, unsafe {
                &*(cbdata as *const sys::CUpti_CallbackData)
            })
        }
        sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RESOURCE => {
            // SAFETY: CUPTI passes a CUpti_ResourceData for the resource domain.
            on_resource(tool, cbid, unsafe {
                &*(cbdata as *const sys::CUpti_ResourceData)
            })
        }
        _ => {}
    }));
    if let Some(started) = timed {
        let kind = match domain {
            sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RESOURCE => 2,
            _ if matches!(classify_driver_cbid(cbid), DriverEvent::Launch(_)) => 1,
            _ => 0,
        };
        let [count, nanos] = &tool.callback_time[kind];
        count.fetch_add(1, Ordering::Relaxed);
        nanos.fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }
    if outcome.is_err() {
        tool::disable("internal error in a CUDA callback");
        release_thread_holds();
    }
}

/// Drops this thread's pending launch tickets and fences (their guards release the replay
/// window). Never panics: the thread-locals may already be gone in a thread-exit destructor.
fn release_thread_holds() {
    let _ = catch_unwind(|| {
        let _ = CALLS.try_with(|f| f.borrow_mut().clear());
        let _ = LAUNCHES.try_with(|l| l.borrow_mut().clear());
    });
}

fn on_driver(tool: &'static Tool, cbid: u32, data: &sys::CUpti_CallbackData) {
    let enter = data.callbackSite == sys::CUpti_ApiCallbackSite_CUPTI_API_ENTER;
    if enter {
        // Once, at the application's first driver call after `cuInit`: before any context, so
        // before any set-up thread (see `kreplay_counters::setup`).
        if let Some(setup) = &tool.counter_setup {
            setup.initialize_profiler();
            // A thread that calls exit() waits for set-ups under way first.
            kreplay_counters::setup::guard_thread_exit();
        }
    }
    match classify_driver_cbid(cbid) {
        DriverEvent::Launch(api) => {
            if enter {
                let by_nodes = matches!(api, LaunchApi::Graph { per_thread }
                    if graph_launch::launch_by_nodes(tool, cbid, per_thread, data));
                if !by_nodes {
                    launch_enter(tool, api, data);
                }
            } else if !launch_exit(api, data) {
                // A graph launch run node by node holds its stand-in's fence until here.
                end_call(tool, cbid, data.context);
            }
        }
        // Pure queries submit no work: no fence, and a parked replay window stays open.
        DriverEvent::Other if is_query_only(cbid) => {}
        event => {
            let mut backend = DispatchBackend::new(
                &tool.backend,
                &tool.gate,
                CurrentDispatch::passive(data.context, std::ptr::null_mut()),
            );
            // The call's name says, in the end-of-run window line, what closed windows.
            let call = if data.functionName.is_null() {
                "a driver call"
            } else {
                // SAFETY: CUPTI passes the API's name as a NUL-terminated static string.
                unsafe { std::ffi::CStr::from_ptr(data.functionName) }
                    .to_str()
                    .unwrap_or("a driver call")
            };
            if enter {
                if is_capture_begin(cbid) {
                    // A capture must not begin while the context's counter set-up runs.
                    if let Some(setup) = &tool.counter_setup {
                        setup.finish(data.context);
                    }
                }
                if CALLS.try_with(|_| ()).is_err() {
                    // A thread being torn down has no thread-locals left to keep the call's
                    // fence in: an open window closes first (its replay must not outlive memory
                    // this call may free), then the call goes on unfenced.
                    drop(tool.engine.fence_for(&mut backend, call, DeviceScope::All));
                } else {
                    let effect = call_effect(tool, data, call);
                    let scope = call_scope(tool, data, call, effect);
                    // A parked replay window stays open across the call, or is closed here, on
                    // this thread, before the call runs.
                    let guard = tool.engine.enter_call(&mut backend, call, effect, scope);
                    if is_blocking_wait(cbid) {
                        // Wait out a replay in progress, but do not hold the fence while
                        // blocked: the replaying thread may need this thread's earlier work to
                        // finish. A wait writes nothing, so there is nothing to capture.
                        drop(guard.into_fence());
                    } else {
                        let _ = CALLS.try_with(|c| c.borrow_mut().push((cbid, guard)));
                    }
                }
                if let DriverEvent::Free(api) = event {
                    on_free(tool, api, data);
                }
                // SAFETY: the call's parameter block, at its ENTER callback.
                if let Some(owner) = unsafe { unloaded_module(cbid, data.functionParams) } {
                    tool.kernels.forget_module(&tool.engine, owner);
                }
            } else {
                end_call(tool, cbid, data.context);
                if let DriverEvent::Alloc(api) = event {
                    on_alloc(tool, api, data);
                }
                if crate::classify::changes_graph_exec(call) && succeeded(data) {
                    graph_launch::on_exec_change(tool, call, data);
                }
            }
        }
    }
}

/// Keeps a call's guard (its fence, the write to capture) for the call's EXIT.
pub(super) fn hold_call(cbid: u32, guard: CallGuard) {
    let _ = CALLS.try_with(|c| c.borrow_mut().push((cbid, guard)));
}

/// At a call's EXIT: the guard its ENTER kept, handed back to the engine.
fn end_call(tool: &Tool, cbid: u32, ctx: sys::CUcontext) {
    let guard = CALLS
        .try_with(|c| {
            let mut calls = c.borrow_mut();
            let pos = calls.iter().rposition(|(id, _)| *id == cbid)?;
            Some(calls.remove(pos).1)
        })
        .ok()
        .flatten();
    if let Some(guard) = guard {
        let mut backend = DispatchBackend::new(
            &tool.backend,
            &tool.gate,
            CurrentDispatch::passive(ctx, std::ptr::null_mut()),
        );
        tool.engine.exit_call(&mut backend, guard);
    }
}

/// What a call does to device memory, for the replay engine: the driver-call classification,
/// with destinations of unified copies told apart through the allocation inventory (pinned
/// host memory, or none known: a copy to pageable host memory).
fn call_effect(tool: &Tool, data: &sys::CUpti_CallbackData, call: &str) -> CallEffect {
    // SAFETY: the call's parameter block, at its ENTER callback.
    match unsafe { classify_call(call, data.functionParams) } {
        CallKind::NoDeviceWrite => CallEffect::NoDeviceWrite,
        CallKind::Frees => CallEffect::Frees,
        CallKind::Unknown => CallEffect::Unknown,
        CallKind::Writes {
            dst,
            bytes,
            unified,
        } => match tool.device_of(data.context) {
            Some(device) => device_write(tool, device, dst, bytes, unified),
            None => CallEffect::Unknown,
        },
    }
}

/// The devices a call may touch: the calling context's device, unless the call is not known
/// to be harmless (a context switch, a peer copy, a graph call, anything unclassified) or names
/// memory of another device.
fn call_scope(
    tool: &Tool,
    data: &sys::CUpti_CallbackData,
    call: &str,
    effect: CallEffect,
) -> DeviceScope {
    match tool.device_of(data.context) {
        Some(device) if effect != CallEffect::Unknown => {
            // SAFETY: the call's parameter block, at its ENTER callback.
            let addresses = unsafe { call_addresses(call, data.functionParams) };
            tool.scope_of(device, &addresses)
        }
        _ => DeviceScope::All,
    }
}

/// A write of `bytes` from `dst` on `device`; `unified`: `dst` may be host memory too, which
/// the inventory tells apart (pinned host memory, or none known: pageable host memory).
pub(super) fn device_write(
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

fn succeeded(data: &sys::CUpti_CallbackData) -> bool {
    // SAFETY: at EXIT the return value points at the call's CUresult.
    !data.functionReturnValue.is_null()
        && unsafe { *(data.functionReturnValue as *const sys::CUresult) } == 0
}

fn on_alloc(tool: &Tool, api: AllocApi, data: &sys::CUpti_CallbackData) {
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

fn on_free(tool: &Tool, api: FreeApi, data: &sys::CUpti_CallbackData) {
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

/// Grid, block, dynamic shared memory, function and stream of a launch.
pub(super) struct LaunchShape {
    pub f: sys::CUfunction,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared: u32,
    pub stream: sys::CUstream,
}

/// A kernel launch as the engine sees it (its agent registered first): its kernel's id and
/// name, its kind (printf, device heap, collective, or a kernel reaching another device's or
/// pageable host memory, which its parameter words tell: [`Tool::launch_memory_kind`]), its
/// stream's id.
pub(super) fn kernel_dispatch(
    tool: &'static Tool,
    device: kreplay_core::backend::DeviceId,
    shape: &LaunchShape,
    symbol: Option<String>,
    correlation_id: u32,
    words: impl FnOnce() -> Vec<u64>,
) -> DispatchInfo {
    tool.register_agent(device);
    let (kernel_id, kernel_name) = tool
        .kernels
        .kernel_id(&tool.engine, shape.f, symbol, device);
    let kind = match tool.kernels.launch_kind_of(&kernel_name) {
        LaunchKind::Kernel => tool.launch_memory_kind(device, words),
        kind => kind,
    };
    DispatchInfo {
        device,
        kind,
        kernel_name,
        kernel_id,
        stream_id: query::stream_id(tool.driver, shape.stream),
        correlation_id: u64::from(correlation_id),
        grid: shape.grid,
        block: shape.block,
        dynamic_shared_bytes: shape.shared,
    }
}

/// The backend prepared for a dispatch on `stream`; `None` (said once) when it cannot be, and
/// the launch runs unprofiled.
pub(super) fn begin_dispatch(
    tool: &Tool,
    ctx: sys::CUcontext,
    device: kreplay_core::backend::DeviceId,
    stream: sys::CUstream,
) -> Option<CurrentDispatch> {
    match lock(&tool.backend).begin_dispatch(ctx, device, stream) {
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

fn launch_enter(tool: &'static Tool, api: LaunchApi, data: &sys::CUpti_CallbackData) {
    if data.functionParams.is_null() {
        return;
    }
    if LAUNCHES.try_with(|_| ()).is_err() {
        // A thread being torn down cannot keep the launch for its EXIT: it runs unprofiled,
        // after any open window has closed.
        let mut backend = DispatchBackend::new(
            &tool.backend,
            &tool.gate,
            CurrentDispatch::passive(data.context, std::ptr::null_mut()),
        );
        drop(
            tool.engine
                .fence_for(&mut backend, "a launch at thread exit", DeviceScope::All),
        );
        return;
    }
    let Some(device) = tool.device_of(data.context) else {
        return;
    };
    let shape = launch_shape(api, data.functionParams);
    if query::is_capturing(tool.driver, shape.stream) {
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
            kernel_name: name.to_string(),
            kernel_id: tool.kernels.launch_api_id(&tool.engine, name),
            stream_id: query::stream_id(tool.driver, shape.stream),
            correlation_id: u64::from(data.correlationId),
            grid: shape.grid,
            block: shape.block,
            dynamic_shared_bytes: shape.shared,
        }
    } else {
        // SAFETY: symbolName is valid for launch callbacks (and only read for them).
        let symbol =
            unsafe { kreplay_cuda::error::c_text(data.symbolName) }.filter(|s| !s.is_empty());
        kernel_dispatch(tool, device, &shape, symbol, data.correlationId, || {
            // SAFETY: the parameter block of the launch whose callback is running.
            unsafe {
                kreplay_cuda::launch::callback_addresses(tool.driver, api, data.functionParams)
            }
        })
    };
    let Some(current) = begin_dispatch(tool, data.context, device, shape.stream) else {
        return;
    };
    enter(tool, data, current, &info);
}

/// A launch recorded into a stream capture: not executed, so no tool CUDA calls (they could
/// invalidate the capture); the engine passes it through.
fn enter_captured(
    tool: &'static Tool,
    data: &sys::CUpti_CallbackData,
    device: kreplay_core::backend::DeviceId,
    shape: &LaunchShape,
) {
    // SAFETY: symbolName is valid for launch callbacks (and only read for them).
    let symbol = unsafe { kreplay_cuda::error::c_text(data.symbolName) }.filter(|s| !s.is_empty());
    let (kernel_id, kernel_name) = tool
        .kernels
        .known_kernel(shape.f)
        .unwrap_or_else(|| (0, symbol.unwrap_or_default()));
    let info = DispatchInfo {
        device,
        kind: LaunchKind::StreamCapture,
        kernel_name,
        kernel_id,
        stream_id: 0,
        correlation_id: u64::from(data.correlationId),
        grid: shape.grid,
        block: shape.block,
        dynamic_shared_bytes: shape.shared,
    };
    let current = CurrentDispatch::passive(data.context, shape.stream);
    enter(tool, data, current, &info);
}

/// The engine's side of a launch's ENTER, kept with its backend for the EXIT callback.
fn enter(
    tool: &'static Tool,
    data: &sys::CUpti_CallbackData,
    current: CurrentDispatch,
    info: &DispatchInfo,
) {
    let passive = current.is_passive();
    let mut backend = DispatchBackend::new(&tool.backend, &tool.gate, current);
    let ticket = tool.engine.launch_enter(&mut backend, info);
    keep_pending(PendingLaunch {
        correlation_id: data.correlationId,
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
fn launch_exit(api: LaunchApi, data: &sys::CUpti_CallbackData) -> bool {
    let pending = LAUNCHES
        .try_with(|l| {
            let mut launches = l.borrow_mut();
            let pos = launches
                .iter()
                .rposition(|p| p.correlation_id == data.correlationId)?;
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
    if !succeeded(data) {
        // Nothing executed: no pass to read and nothing to replay (a relaunch would fail the
        // same way). The window is released and nothing is recorded.
        tool.engine.launch_failed(&mut backend, ticket);
        if !passive {
            lock(&tool.backend).end_dispatch();
        }
        return true;
    }
    let launch = CudaLaunch::callback(api, data.functionParams);
    tool.engine.launch_exit(&mut backend, ticket, &launch);
    tool.first_dispatch_done();
    if !passive {
        lock(&tool.backend).end_dispatch();
    }
    true
}

fn on_resource(tool: &'static Tool, cbid: u32, data: &sys::CUpti_ResourceData) {
    match cbid {
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_MODULE_LOADED => {
            let module = data.resourceDescriptor as *const sys::CUpti_ModuleResourceData;
            if module.is_null() {
                return;
            }
            // SAFETY: CUPTI's module descriptor; the cubin is valid during the callback.
            let image = unsafe {
                let m = &*module;
                if m.pCubin.is_null() || m.cubinSize == 0 {
                    return;
                }
                std::slice::from_raw_parts(m.pCubin as *const u8, m.cubinSize)
            };
            let began = std::time::Instant::now();
            let scanned = scan_cubin(image);
            if kreplay_cuda::debug::enabled() {
                let [scans, bytes, nanos] = &tool.module_scans;
                scans.fetch_add(1, Ordering::Relaxed);
                bytes.fetch_add(image.len() as u64, Ordering::Relaxed);
                nanos.fetch_add(began.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
            match scanned {
                Ok(symbols) => {
                    tool.debug(&format!(
                        "module loaded: {} kernels, variables {:?}",
                        symbols.kernels.len(),
                        symbols
                            .variables
                            .iter()
                            .map(|v| v.name.as_str())
                            .collect::<Vec<_>>()
                    ));
                    tool.kernels.cubin_loaded(symbols);
                }
                Err(e) => tool.debug(&format!("module loaded, not an ELF cubin: {e}")),
            }
        }
        _ if in_tool() => {}
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_GRAPHEXEC_CREATED => {
            graph_launch::on_instantiated(tool, data)
        }
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_GRAPHEXEC_DESTROY_STARTING => {
            graph_launch::on_destroying(tool, data)
        }
        // The driver holds locks of its own during resource callbacks: nothing here may wait
        // for the backend's lock, which is held across counter calls that take those locks.
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_CONTEXT_CREATED => {
            tool.phase("context created");
            if let Some(setup) = &tool.counter_setup {
                setup.prepare(data.context);
            }
        }
        sys::CUpti_CallbackIdResource_CUPTI_CBID_RESOURCE_CONTEXT_DESTROY_STARTING => {
            // A counter set-up still running on it stops first (it must not outlive it).
            if let Some(setup) = &tool.counter_setup {
                setup.abandon(data.context);
            }
            // A replay window still open on this context runs its passes while it exists.
            let mut backend = DispatchBackend::new(
                &tool.backend,
                &tool.gate,
                CurrentDispatch::passive(data.context, std::ptr::null_mut()),
            );
            // Every device: no driver query inside a resource callback of a dying context.
            drop(
                tool.engine
                    .fence_for(&mut backend, "context destruction", DeviceScope::All),
            );
            kreplay_cuda::drain::forget_context(data.context);
            // Not waiting long for the backend's lock: its holder may wait in CUPTI for a
            // driver lock this thread holds. Without it, the tool's state for the context stays
            // and is replaced when a dispatch finds the device with another context.
            let began = std::time::Instant::now();
            loop {
                match tool.backend.try_lock() {
                    Ok(mut b) => break b.forget_context(data.context),
                    Err(std::sync::TryLockError::Poisoned(p)) => {
                        break p.into_inner().forget_context(data.context)
                    }
                    Err(std::sync::TryLockError::WouldBlock)
                        if began.elapsed() < std::time::Duration::from_millis(100) =>
                    {
                        std::thread::sleep(std::time::Duration::from_micros(200))
                    }
                    Err(std::sync::TryLockError::WouldBlock) => break tool.debug(
                        "context destroyed while the backend was busy: its state is replaced later",
                    ),
                }
            }
            lock(&tool.context_devices).remove(&(data.context as usize));
            tool.graphs.context_destroyed(data.context);
        }
        _ => {}
    }
}
