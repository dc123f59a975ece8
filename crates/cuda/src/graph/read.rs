//! Reading a graph: whether an executable may be launched from the device, a graph's nodes and
//! edges, and each node as a [`Node`].

use super::calls::{NodeCall, Step};
use super::kernel_node::read_kernel_node;
use crate::drv;
use crate::error::CudaError;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext, CUevent, CUgraph, CUgraphExec, CUgraphNode};

/// One node of a graph, read.
pub enum Node {
    /// A node the tool runs on the launch's stream.
    Step(Step),
    /// A child graph node: the graph whose nodes it runs.
    Child(CUgraph),
    /// An empty node (it only orders others).
    Empty,
}

/// Whether `exec` was instantiated to be launched from the device too (false when the driver
/// cannot say).
pub fn launchable_from_device(d: &Driver, exec: CUgraphExec) -> bool {
    let mut flags: sys::cuuint64_t = 0;
    // SAFETY: writes the flags of a live executable graph.
    unsafe { drv!(d, cuGraphExecGetFlags(exec, &mut flags)) }.is_ok()
        && flags
            & sys::CUgraphInstantiate_flags_enum_CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
                as sys::cuuint64_t
            != 0
}

/// `graph`'s nodes, in the order the driver lists them.
pub fn nodes(d: &Driver, graph: CUgraph) -> Result<Vec<CUgraphNode>, CudaError> {
    let mut count = 0usize;
    // SAFETY: a live graph; the first call writes the count, the second as many handles.
    unsafe { drv!(d, cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count))? };
    let mut nodes: Vec<CUgraphNode> = vec![std::ptr::null_mut(); count];
    // SAFETY: as above, into `count` handles.
    unsafe { drv!(d, cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count))? };
    nodes.truncate(count);
    Ok(nodes)
}

/// Why a graph's edges could not be read.
#[derive(Debug)]
pub enum EdgesError {
    /// Counting them failed.
    Count(CudaError),
    /// Listing them failed: some carry data (a programmatic dependency), which a query without
    /// edge data refuses as lossy.
    WithData(CudaError),
}

/// `graph`'s edges (from, to), read without edge data.
pub fn edges(d: &Driver, graph: CUgraph) -> Result<Vec<(CUgraphNode, CUgraphNode)>, EdgesError> {
    let mut edge_count = 0usize;
    // SAFETY: a live graph; writes the count.
    unsafe {
        drv!(
            d,
            cuGraphGetEdges_v2(
                graph,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut edge_count
            )
        )
    }
    .map_err(EdgesError::Count)?;
    let mut from: Vec<CUgraphNode> = vec![std::ptr::null_mut(); edge_count];
    let mut to: Vec<CUgraphNode> = vec![std::ptr::null_mut(); edge_count];
    if edge_count > 0 {
        // SAFETY: as above, into `edge_count` handles each.
        unsafe {
            drv!(
                d,
                cuGraphGetEdges_v2(
                    graph,
                    from.as_mut_ptr(),
                    to.as_mut_ptr(),
                    std::ptr::null_mut(),
                    &mut edge_count
                )
            )
        }
        .map_err(EdgesError::WithData)?;
    }
    Ok(from.into_iter().zip(to).take(edge_count).collect())
}

/// `node` (of a live graph of `ctx`) as a [`Node`], or why the tool cannot run it as a call of
/// its own.
pub fn read_node(d: &Driver, ctx: CUcontext, node: CUgraphNode) -> Result<Node, String> {
    let mut kind: sys::CUgraphNodeType = 0;
    // SAFETY: a live node; writes its kind.
    unsafe { drv!(d, cuGraphNodeGetType(node, &mut kind)) }.map_err(|e| e.to_string())?;
    let got = |r: Result<(), CudaError>| r.map_err(|e| e.to_string());
    let call = |call| Ok(Node::Step(Step::Call(call)));
    // SAFETY (each arm): a live node of the kind read above; the driver writes its parameters.
    match kind {
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_KERNEL => Ok(Node::Step(Step::Kernel(
            Box::new(read_kernel_node(d, ctx, node)?),
        ))),
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_MEMSET => {
            let mut p = sys::CUDA_MEMSET_NODE_PARAMS::default();
            got(unsafe { drv!(d, cuGraphMemsetNodeGetParams(node, &mut p)) })?;
            call(NodeCall::Memset(p))
        }
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_MEMCPY => {
            let mut p = sys::CUDA_MEMCPY3D::default();
            got(unsafe { drv!(d, cuGraphMemcpyNodeGetParams(node, &mut p)) })?;
            call(NodeCall::Memcpy(Box::new(p)))
        }
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_HOST => {
            let mut p = sys::CUDA_HOST_NODE_PARAMS::default();
            got(unsafe { drv!(d, cuGraphHostNodeGetParams(node, &mut p)) })?;
            call(NodeCall::Host(p))
        }
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_GRAPH => {
            let mut child: CUgraph = std::ptr::null_mut();
            got(unsafe { drv!(d, cuGraphChildGraphNodeGetGraph(node, &mut child)) })?;
            Ok(Node::Child(child))
        }
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_EMPTY => Ok(Node::Empty),
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_EVENT_RECORD => {
            let mut event: CUevent = std::ptr::null_mut();
            got(unsafe { drv!(d, cuGraphEventRecordNodeGetEvent(node, &mut event)) })?;
            call(NodeCall::EventRecord(event))
        }
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_WAIT_EVENT => {
            let mut event: CUevent = std::ptr::null_mut();
            got(unsafe { drv!(d, cuGraphEventWaitNodeGetEvent(node, &mut event)) })?;
            call(NodeCall::EventWait(event))
        }
        other => Err(format!("it holds a {}", node_kind_name(other))),
    }
}

/// A node kind the tool does not run as a call of its own, for the decline.
fn node_kind_name(kind: sys::CUgraphNodeType) -> &'static str {
    match kind {
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_MEM_ALLOC => "memory allocation node",
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_MEM_FREE => "memory free node",
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_CONDITIONAL => "conditional node",
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL => {
            "external semaphore signal node"
        }
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT => {
            "external semaphore wait node"
        }
        sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_BATCH_MEM_OP => {
            "batched memory operation node"
        }
        _ => "node of a kind this version does not know",
    }
}
