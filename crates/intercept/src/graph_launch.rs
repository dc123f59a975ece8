//! A graph launch run node by node (`kreplay_backend::graphs`): at the launch's ENTER callback its kernel
//! nodes go through the engine as dispatches of the application's, its other nodes as calls,
//! all on the launch's stream in the graph's order; the launch itself is handed an empty
//! executable graph.

use crate::calls::hold_call;
use crate::dispatch::{begin_dispatch, device_write, kernel_dispatch, LaunchShape};
use crate::tool::{lock, Tool};
use kreplay_backend::graphs::{memcpy_destination, memset_span, NodeCall, Step};
use kreplay_backend::{resolve_stream, CudaLaunch, DispatchBackend};
use kreplay_core::backend::{CallEffect, DeviceId, DeviceScope};
use kreplay_cuda::callback::calls::MemoryType;
use kreplay_cuda::callback::driver::DriverData;
use kreplay_cuda::callback::graph::GraphLaunch;
use kreplay_cuda::launch::OwnedLaunch;
use kreplay_cuda::query;
use kreplay_cuda::{CUcontext, CUstream};

/// Runs the graph launch at its ENTER callback node by node, if its graph allows; `false`:
/// the launch goes on as the application made it.
pub(crate) fn launch_by_nodes(
    tool: &'static Tool,
    cbid: u32,
    per_thread: bool,
    data: &DriverData,
) -> bool {
    if !tool.graph_nodes || data.params().is_null() {
        return false;
    }
    // SAFETY: the parameter block of cuGraphLaunch (the _ptsz block has the same fields), at its
    // ENTER callback.
    let launch = unsafe { GraphLaunch::from_params(data.params()) };
    let (exec, stream) = (launch.exec(), launch.stream());
    let stream = resolve_stream(stream, per_thread);
    // Launched into a stream capture, the graph becomes a node of the graph being captured.
    if query::is_capturing(tool.driver, stream) {
        return false;
    }
    let Some(plan) = tool.graphs.plan(exec) else {
        return false;
    };
    let steps = match &plan.steps {
        Ok(steps) => steps,
        Err(why) => {
            tool.engine.warn_once(
                &format!("graph-declined: {why}"),
                &format!("an executable graph runs whole, once per launch, unmeasured: {why}"),
            );
            return false;
        }
    };
    let Some(device) = tool.device_of(data.context()) else {
        return false;
    };
    let stand_in = match tool
        .graphs
        .begin_launch(tool.driver, data.context(), exec, stream)
    {
        Ok(stand_in) => stand_in,
        Err(e) => {
            tool.warn_once(
                "graph-stand-in",
                &format!("graph launches run whole, unmeasured: the empty executable graph that stands in for one could not be made or ordered ({e})"),
            );
            return false;
        }
    };
    launch.launch_instead(stand_in);
    for step in steps {
        match step {
            Step::Kernel(launch) => kernel_node(tool, data, device, launch.with_stream(stream)),
            Step::Call(call) => call_node(tool, data.context(), device, call, stream),
        }
    }
    tool.graphs.end_launch(tool.driver, exec, stream);
    // The stand-in is a graph launch, and a graph launch with work in it fails a measuring
    // range (and every range after it, CUPTI 13.0); an empty one was measured not to (H200,
    // 2026-12-01: nine kernel nodes of three launches in one window, tests/gpu/run.py graphs),
    // so the window stays open across it. With KREPLAY_GRAPH_WINDOW_SPANS=0 the window the
    // nodes are in closes here, and the fence is held until the launch returns (its EXIT).
    if tool.engine.config().switches.graph_window_spans {
        return true;
    }
    let mut backend = tool.passive_backend(data.context());
    let guard = tool.engine.enter_call(
        &mut backend,
        "a graph launch",
        CallEffect::Unknown,
        DeviceScope::All,
    );
    hold_call(cbid, guard);
    true
}

/// A kernel node as a dispatch of the application's: the engine's ENTER, the launch on the
/// graph launch's stream, the engine's EXIT (the ordinary launch path, with the tool issuing
/// the launch). Its records carry the graph launch's correlation id.
fn kernel_node(tool: &'static Tool, data: &DriverData, device: DeviceId, launch: OwnedLaunch) {
    let (grid, block, shared) = launch.shape();
    let shape = LaunchShape {
        f: launch.function(),
        grid,
        block,
        shared,
        stream: launch.stream(),
    };
    let info = kernel_dispatch(
        tool,
        device,
        &shape,
        data.context(),
        || None,
        data.correlation_id(),
        || launch.addresses(),
    );
    let Some(current) = begin_dispatch(tool, data.context(), device, shape.stream, None) else {
        if let Err(e) = launch.launch(tool.driver) {
            node_failed(tool, &e.to_string());
        }
        return;
    };
    let mut backend = DispatchBackend::new(&tool.backend, &tool.gate, current);
    let ticket = tool.engine.launch_enter(&mut backend, &info);
    match launch.launch(tool.driver) {
        Ok(()) => {
            let kept = CudaLaunch::Owned(Box::new(launch));
            tool.engine.launch_exit(&mut backend, ticket, &kept);
            tool.first_dispatch_done();
        }
        Err(e) => {
            tool.engine.launch_failed(&mut backend, ticket);
            node_failed(tool, &e.to_string());
        }
    }
    lock(&tool.backend).end_dispatch();
}

/// Any other node as a call of the application's on the graph launch's stream: the engine's
/// fence around it, a replay window open across it where its effect allows.
fn call_node(tool: &Tool, ctx: CUcontext, device: DeviceId, call: &NodeCall, stream: CUstream) {
    let effect = node_effect(tool, device, call);
    let scope = tool.scope_of(device, &node_addresses(call));
    let mut backend = tool.passive_backend(ctx);
    let guard = tool
        .engine
        .enter_call(&mut backend, call.call_name(), effect, scope);
    // SAFETY: the node's handles and pointers as the application gave them to its graph.
    let ran = unsafe { call.run(tool.driver, stream) };
    tool.engine.exit_call(&mut backend, guard);
    if let Err(e) = ran {
        node_failed(tool, &e);
    }
}

/// What a node other than a kernel node does to device memory.
fn node_effect(tool: &Tool, device: DeviceId, call: &NodeCall) -> CallEffect {
    let write = |base: u64, bytes: u64| CallEffect::DeviceWrite {
        device,
        base,
        bytes,
    };
    match call {
        NodeCall::Memset(p) => write(p.dst, memset_span(p)),
        NodeCall::Memcpy(p) => match memcpy_destination(p) {
            Some((base, bytes)) => {
                let unified = MemoryType::from_raw(p.dstMemoryType) == MemoryType::Unified;
                device_write(tool, device, base, bytes, unified)
            }
            None if MemoryType::from_raw(p.dstMemoryType) == MemoryType::Host => {
                CallEffect::NoDeviceWrite
            }
            None => CallEffect::Unknown,
        },
        NodeCall::Host(_) | NodeCall::EventRecord(_) | NodeCall::EventWait(_) => {
            CallEffect::NoDeviceWrite
        }
    }
}

/// The device addresses a memset or memcpy node names (its destination and, from device
/// memory, its source), for its scope.
fn node_addresses(call: &NodeCall) -> Vec<u64> {
    match call {
        NodeCall::Memset(p) => vec![p.dst],
        NodeCall::Memcpy(p) => {
            let from_device = MemoryType::from_raw(p.srcMemoryType).by_address();
            let source = from_device.then_some(p.srcDevice);
            source
                .into_iter()
                .chain(memcpy_destination(p).map(|(base, _)| base))
                .collect()
        }
        NodeCall::Host(_) | NodeCall::EventRecord(_) | NodeCall::EventWait(_) => Vec::new(),
    }
}

/// A node that the driver refused: the application's graph launch succeeded (it launched the
/// empty stand-in), so the failure is said, once.
fn node_failed(tool: &Tool, error: &str) {
    tool.warn_once(
        "graph-node-failed",
        &format!("a node of a graph run node by node failed ({error}); the graph's results may be incomplete"),
    );
}
