//! The application's driver calls other than launches and pure queries: each holds the
//! engine's fence (or keeps a replay window open across it) from its ENTER to its EXIT
//! callback, with what it does to device memory and which devices it may touch; copies,
//! allocations and frees are recorded for the memory traces there too (`memory_trace`).

use crate::classify::{
    call_addresses, classify_call, is_blocking_wait, is_capture_begin, unloaded_module, CallKind,
    DriverEvent,
};
use crate::dispatch::device_write;
use crate::tool::{lock, Tool};
use crate::{graph_exec, memory, memory_trace};
use kreplay_core::backend::{CallEffect, DeviceScope};
use kreplay_core::engine::CallGuard;
use kreplay_cuda::callback::calls::CallParams;
use kreplay_cuda::callback::driver::DriverData;
use kreplay_cuda::CUcontext;
use std::cell::RefCell;

thread_local! {
    /// Calls between their ENTER and EXIT (fence held, write to capture), with their callback id.
    static CALLS: RefCell<Vec<(u32, CallGuard)>> = const { RefCell::new(Vec::new()) };
}

/// Lets go of the calls this thread still holds (the tool switched off meanwhile).
pub(crate) fn release_held() {
    let _ = CALLS.try_with(|f| f.borrow_mut().clear());
}

/// A driver call that is not a launch nor a pure query, at its ENTER (`enter`) or EXIT callback:
/// the engine's fence and replay window around it, and what it does to the inventory
/// (allocations at EXIT, frees and module unloads at ENTER) and to executable graphs.
pub(crate) fn driver_call(
    tool: &'static Tool,
    cbid: u32,
    event: DriverEvent,
    enter: bool,
    data: &DriverData,
) {
    let mut backend = tool.passive_backend(data.context());
    // The call's name says, in the end-of-run window line, what closed windows.
    let call = data.function_name();
    if enter {
        if is_capture_begin(cbid) {
            // A capture must not begin while the context's counter set-up runs.
            if let Some(setup) = &tool.counter_setup {
                setup.finish(data.context());
            }
        }
        if CALLS.try_with(|_| ()).is_err() {
            // A thread being torn down has no thread-locals left to keep the call's
            // fence in: an open window closes first (its replay must not outlive memory
            // this call may free), then the call goes on unfenced.
            drop(tool.engine.fence_for(&mut backend, call, DeviceScope::All));
        } else {
            let params = data.call_params();
            let effect = call_effect(tool, data, call, params);
            let scope = call_scope(tool, data, call, params, effect);
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
        // Before a free leaves the inventory: the traces read its memory's kind there.
        memory_trace::on_enter(tool, cbid, event, data);
        if let DriverEvent::Free(api) = event {
            memory::on_free(tool, api, data);
        }
        // SAFETY: the parameter block of the call `cbid`, at its ENTER callback.
        if let Some(owner) = unsafe { unloaded_module(cbid, data.params()) } {
            tool.kernels.forget_module(&tool.engine, owner);
            // CUPTI's SASS instrumentation must not outlive the module (see
            // `RangeProfiler::before_module_unload`); not once the process is ending (the
            // CUDA runtime unloads its modules in an exit handler that runs after the tool's
            // finish, and disabling the profiler at exit ended an application before).
            if !kreplay_core::lifecycle::finish_begun() {
                lock(&tool.backend).before_module_unload(data.context());
            }
        }
    } else {
        crate::captures::on_exit(cbid, data);
        memory_trace::on_exit(tool, cbid, data);
        end_call(tool, cbid, data.context());
        if let DriverEvent::Alloc(api) = event {
            memory::on_alloc(tool, api, data);
        }
        if crate::classify::changes_graph_exec(call) && data.succeeded() {
            graph_exec::on_exec_change(tool, call, data);
        }
    }
}

/// Keeps a call's guard (its fence, the write to capture) for the call's EXIT.
pub(crate) fn hold_call(cbid: u32, guard: CallGuard) {
    let _ = CALLS.try_with(|c| c.borrow_mut().push((cbid, guard)));
}

/// At a call's EXIT: the guard its ENTER kept, handed back to the engine.
pub(crate) fn end_call(tool: &Tool, cbid: u32, ctx: CUcontext) {
    let guard = CALLS
        .try_with(|c| {
            let mut calls = c.borrow_mut();
            let pos = calls.iter().rposition(|(id, _)| *id == cbid)?;
            Some(calls.remove(pos).1)
        })
        .ok()
        .flatten();
    let mut backend = tool.passive_backend(ctx);
    match guard {
        Some(guard) => tool.engine.exit_call(&mut backend, guard),
        // A blocking wait (its fence went at its ENTER) completed the launches traced before
        // it: recorded now rather than at the next launch.
        None => tool.engine.collect_ready_traced(&mut backend),
    }
}

/// What a call does to device memory, for the replay engine: the driver-call classification,
/// with destinations of unified copies told apart through the allocation inventory (pinned
/// host memory, or none known: a copy to pageable host memory).
fn call_effect(
    tool: &Tool,
    data: &DriverData,
    call: &str,
    params: Option<CallParams>,
) -> CallEffect {
    match classify_call(call, params) {
        CallKind::NoDeviceWrite => CallEffect::NoDeviceWrite,
        CallKind::Frees => CallEffect::Frees,
        CallKind::Unknown => CallEffect::Unknown,
        CallKind::Writes {
            dst,
            bytes,
            unified,
        } => match tool.device_of(data.context()) {
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
    data: &DriverData,
    call: &str,
    params: Option<CallParams>,
    effect: CallEffect,
) -> DeviceScope {
    match tool.device_of(data.context()) {
        Some(device) if effect != CallEffect::Unknown => {
            tool.scope_of(device, &call_addresses(call, params))
        }
        _ => DeviceScope::All,
    }
}
