//! The executable graphs run node by node (`kreplay_backend::graphs`), kept current: read at
//! their instantiation, read again when a call changes one, forgotten at their destruction.

use crate::tool::Tool;
use kreplay_cuda::callback::driver::DriverData;
use kreplay_cuda::callback::graph::{exec_change, ExecChange};
use kreplay_cuda::{CUcontext, CUgraph, CUgraphExec};

/// The executable graph of `cuGraphLaunch(_ptsz)` just instantiated from `graph` in `ctx` (its
/// resource callback).
pub(crate) fn on_instantiated(tool: &Tool, ctx: CUcontext, graph: CUgraph, exec: CUgraphExec) {
    if !tool.graph_nodes || graph.is_null() || exec.is_null() {
        return;
    }
    // SAFETY: inside the instantiation: the source graph is alive.
    let plan = unsafe { tool.graphs.instantiated(tool.driver, ctx, graph, exec) };
    tool.debug(&format!(
        "graph instantiated: {} kernel node(s){}",
        plan.kernel_nodes(),
        plan.steps
            .as_ref()
            .err()
            .map(|why| format!(", runs whole: {why}"))
            .unwrap_or_default()
    ));
}

/// An executable graph about to be destroyed (its resource callback).
pub(crate) fn on_destroying(tool: &Tool, exec: CUgraphExec) {
    tool.graphs.destroyed(exec);
}

/// At the EXIT of a successful call [`changes_graph_exec`](crate::classify::changes_graph_exec)
/// names: a kernel node's new parameters and an update's new graph are read again; any other
/// change makes the graph run whole.
pub(crate) fn on_exec_change(tool: &Tool, call: &str, data: &DriverData) {
    let p = data.params();
    if !tool.graph_nodes || p.is_null() {
        return;
    }
    // SAFETY: the call's parameter block, inside its callback; the caller checked that the call
    // changes an executable graph.
    match unsafe { exec_change(call, p) } {
        // SAFETY: the graphs are the application's, alive during its call.
        ExecChange::Updated { graph, exec } => unsafe {
            tool.graphs
                .updated(tool.driver, data.context(), graph, exec)
        },
        // SAFETY: as above.
        ExecChange::KernelNode { exec, node, params } => unsafe {
            tool.graphs
                .kernel_node_set(tool.driver, data.context(), exec, node, &params)
        },
        ExecChange::Other { exec } => tool.graphs.changed(exec, call),
    }
}
