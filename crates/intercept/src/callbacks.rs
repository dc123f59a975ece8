//! The function CUPTI calls for every driver call and resource event of the application, and
//! where each goes: launches ([`launches`]; a graph launch run node by node, [`graph_launch`]),
//! other driver calls ([`calls`]: the fence, allocations and frees), resource events
//! ([`resources`]), NVTX calls ([`markers`]), the API calls `--runtime-trace`/`--sys-trace`
//! record ([`api_trace`]). A panic in any of them switches the tool off: it never reaches the driver.

use crate::classify::{classify_driver_cbid, is_query_only, DriverEvent, LaunchApi};
use crate::tool::{self, Tool};
use crate::{api_trace, calls, graph_launch, launches, markers, resources};
use kreplay_cuda::callback::domain::{callback_data, CallbackData};
use kreplay_cuda::callback::driver::DriverData;
use kreplay_cuda::callback::ids::Domain;
use kreplay_cuda::guard::in_tool;
use std::ffi::c_void;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;

/// The function CUPTI calls. Never unwinds: a panic switches the tool off.
pub(crate) unsafe extern "C" fn callback(
    _userdata: *mut c_void,
    domain: u32,
    cbid: u32,
    cbdata: *const c_void,
) {
    // The tool's own driver calls fire callbacks too; only module loads matter then.
    if in_tool() && Domain(domain) != Domain::RESOURCE {
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
    // SAFETY: what CUPTI passed to this callback of `domain` (not NULL), used during it only.
    let data = unsafe { callback_data(domain, cbdata) };
    let outcome = catch_unwind(AssertUnwindSafe(|| match data {
        CallbackData::Driver(data) => {
            // An API call's time is the application's: the tool's work at its ENTER and EXIT
            // is left out.
            if !data.is_enter() {
                api_trace::driver_exiting(tool, cbid, data);
            }
            on_driver(tool, cbid, data);
            if data.is_enter() {
                api_trace::driver_entered(tool, data);
            }
        }
        CallbackData::Runtime(data) => api_trace::on_runtime(tool, cbid, data),
        CallbackData::Resource(data) => resources::on_resource(tool, cbid, data),
        CallbackData::Nvtx(data) => markers::on_nvtx(tool, cbid, data),
        CallbackData::Other => {}
    }));
    if let Some(started) = timed {
        let kind = match Domain(domain) {
            Domain::RESOURCE => 2,
            Domain::NVTX => 0,
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
        calls::release_held();
        launches::release_pending();
    });
}

fn on_driver(tool: &'static Tool, cbid: u32, data: &DriverData) {
    let enter = data.is_enter();
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
                    launches::launch_enter(tool, api, data);
                }
            } else if !launches::launch_exit(api, data) {
                // A graph launch run node by node holds its stand-in's fence until here.
                calls::end_call(tool, cbid, data.context());
            }
        }
        DriverEvent::Profiler { start } => {
            // Fenced as any call; the region begins or ends once the call has returned.
            calls::driver_call(tool, cbid, DriverEvent::Profiler { start }, enter, data);
            if !enter {
                tool.engine.profiler_control(start);
            }
        }
        // Pure queries submit no work: no fence, and a parked replay window stays open.
        DriverEvent::Other if is_query_only(cbid) => {}
        event => calls::driver_call(tool, cbid, event, enter, data),
    }
}
