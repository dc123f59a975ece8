//! The executable graphs run node by node (`kreplay_backend::graphs`), kept current: read at
//! their instantiation, read again when a call changes one, forgotten at their destruction.

use crate::tool::Tool;
use kreplay_cupti_sys as sys;

/// The executable graph of `cuGraphLaunch(_ptsz)` just instantiated (its resource callback).
pub(crate) fn on_instantiated(tool: &Tool, data: &sys::CUpti_ResourceData) {
    if !tool.graph_nodes || data.resourceDescriptor.is_null() {
        return;
    }
    // SAFETY: CUPTI passes a CUpti_GraphData for graph-executable resource callbacks.
    let graph = unsafe { &*(data.resourceDescriptor as *const sys::CUpti_GraphData) };
    if graph.graph.is_null() || graph.graphExec.is_null() {
        return;
    }
    // SAFETY: inside the instantiation: the source graph is alive.
    let plan = unsafe {
        tool.graphs
            .instantiated(tool.driver, data.context, graph.graph, graph.graphExec)
    };
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

/// The executable graph a resource callback is about (its destruction).
pub(crate) fn on_destroying(tool: &Tool, data: &sys::CUpti_ResourceData) {
    if data.resourceDescriptor.is_null() {
        return;
    }
    // SAFETY: as in `on_instantiated`.
    let graph = unsafe { &*(data.resourceDescriptor as *const sys::CUpti_GraphData) };
    tool.graphs.destroyed(graph.graphExec);
}

/// At the EXIT of a successful call [`changes_graph_exec`](crate::classify::changes_graph_exec) names: a kernel node's new parameters and
/// an update's new graph are read again; any other change makes the graph run whole.
pub(crate) fn on_exec_change(tool: &Tool, call: &str, data: &sys::CUpti_CallbackData) {
    let p = data.functionParams;
    if !tool.graph_nodes || p.is_null() {
        return;
    }
    // SAFETY: each call's parameter block as generated_cuda_meta.h declares it, inside its
    // callback; every such block begins with the executable graph.
    unsafe {
        // A kernel node's new parameters, as the second version's block.
        let (exec, set): (
            sys::CUgraphExec,
            Option<(sys::CUgraphNode, sys::CUDA_KERNEL_NODE_PARAMS)>,
        ) = match call.strip_suffix("_ptsz").unwrap_or(call) {
            "cuGraphExecKernelNodeSetParams" => {
                // The first version's block lacks the kernel and context handles.
                let p = &*(p as *const sys::cuGraphExecKernelNodeSetParams_params);
                let set = p.nodeParams.as_ref().map(|v1| {
                    let params = sys::CUDA_KERNEL_NODE_PARAMS {
                        func: v1.func,
                        gridDimX: v1.gridDimX,
                        gridDimY: v1.gridDimY,
                        gridDimZ: v1.gridDimZ,
                        blockDimX: v1.blockDimX,
                        blockDimY: v1.blockDimY,
                        blockDimZ: v1.blockDimZ,
                        sharedMemBytes: v1.sharedMemBytes,
                        kernelParams: v1.kernelParams,
                        extra: v1.extra,
                        ..Default::default()
                    };
                    (p.hNode, params)
                });
                (p.hGraphExec, set)
            }
            "cuGraphExecKernelNodeSetParams_v2" => {
                let p = &*(p as *const sys::cuGraphExecKernelNodeSetParams_v2_params);
                (p.hGraphExec, p.nodeParams.as_ref().map(|k| (p.hNode, *k)))
            }
            "cuGraphExecNodeSetParams" => {
                let p = &*(p as *const sys::cuGraphExecNodeSetParams_params);
                let set = p
                    .nodeParams
                    .as_ref()
                    .filter(|n| n.type_ == sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_KERNEL)
                    // The third version's block has the second's fields, in its order.
                    .map(|n| {
                        let k: sys::CUDA_KERNEL_NODE_PARAMS =
                            std::mem::transmute(n.__bindgen_anon_1.kernel);
                        (p.hNode, k)
                    });
                (p.hGraphExec, set)
            }
            "cuGraphExecUpdate" | "cuGraphExecUpdate_v2" => {
                let p = &*(p as *const sys::cuGraphExecUpdate_v2_params);
                tool.graphs
                    .updated(tool.driver, data.context, p.hGraph, p.hGraphExec);
                return;
            }
            _ => (*(p as *const sys::CUgraphExec), None),
        };
        match set {
            Some((node, params)) => {
                tool.graphs
                    .kernel_node_set(tool.driver, data.context, exec, node, &params)
            }
            None => tool.graphs.changed(exec, call),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_third_kernel_node_block_has_the_second_ones_layout() {
        use std::mem::{offset_of, size_of};
        type V2 = sys::CUDA_KERNEL_NODE_PARAMS;
        type V3 = sys::CUDA_KERNEL_NODE_PARAMS_v3;
        assert_eq!(size_of::<V2>(), size_of::<V3>());
        assert_eq!(offset_of!(V2, func), offset_of!(V3, func));
        assert_eq!(offset_of!(V2, gridDimX), offset_of!(V3, gridDimX));
        assert_eq!(
            offset_of!(V2, sharedMemBytes),
            offset_of!(V3, sharedMemBytes)
        );
        assert_eq!(offset_of!(V2, kernelParams), offset_of!(V3, kernelParams));
        assert_eq!(offset_of!(V2, extra), offset_of!(V3, extra));
        assert_eq!(offset_of!(V2, kern), offset_of!(V3, kern));
        assert_eq!(offset_of!(V2, ctx), offset_of!(V3, ctx));
    }
}
