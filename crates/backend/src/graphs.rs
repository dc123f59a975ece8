//! CUDA graphs under kernel replay: the nodes of an executable graph, read when it is
//! instantiated, run one by one on the launch's stream in its place (the launch itself is
//! handed an empty executable graph), so that each kernel node is an ordinary dispatch —
//! measured in every pass, replayed with memory restored, filtered — and every other node runs
//! once, in the graph's order.
//!
//! Why not measure the graph launch itself: CUPTI 13.0's range profiler fails the launch's
//! range (`cuptiRangeProfilerStop`: CUPTI error 999) and every range after it, measured on the
//! H200 with one range and with a window's worth (`KREPLAY_GRAPH_PROBE`, removed since). Why
//! the swap works: CUPTI's API-enter callback gets the call's own parameter block, and the
//! driver launches the executable graph written there (docs/DECISIONS.md, "CUDA graphs").
//!
//! A graph is declined (it runs whole, unmeasured, as before) when it holds a node kind that
//! cannot run as a call of its own (memory allocation and free nodes, conditional nodes,
//! external semaphores, batched memory operations), a kernel node passing its parameters
//! through `extra` or belonging to another context, or edges with data (programmatic
//! dependent launches). An executable changed after instantiation is read again: a kernel
//! node's new parameters (`cuGraphExecKernelNodeSetParams`), the graph of `cuGraphExecUpdate`;
//! any other change (other nodes' parameters, a node enabled or disabled) declines it.

use kreplay_cuda::drv;
use kreplay_cuda::handles::{Event, GraphExec};
use kreplay_cuda::launch::LaunchApi;
use kreplay_cuda::launch::{LaunchParams, OwnedLaunch};
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, CUcontext, CUevent, CUgraph, CUgraphNode, CUstream};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Child graphs deeper than this are declined (a graph cannot contain itself; this bounds the
/// walk all the same).
const MAX_DEPTH: usize = 16;

/// One node of a graph, as the tool runs it on the launch's stream.
#[derive(Clone)]
pub enum Step {
    /// A kernel node: an ordinary dispatch (its parameters copied at instantiation).
    Kernel(Box<OwnedLaunch>),
    /// Any other node the tool runs: a call of the application's.
    Call(NodeCall),
}

/// A node other than a kernel node, run as the driver call it stands for.
#[derive(Clone)]
pub enum NodeCall {
    Memset(sys::CUDA_MEMSET_NODE_PARAMS),
    Memcpy(Box<sys::CUDA_MEMCPY3D>),
    Host(sys::CUDA_HOST_NODE_PARAMS),
    EventRecord(CUevent),
    EventWait(CUevent),
}

// SAFETY: CUDA handles and the application's host pointers (host-node data, copy endpoints),
// valid on any thread; the tool only passes them back to the driver.
unsafe impl Send for Step {}
unsafe impl Sync for Step {}

impl NodeCall {
    /// What the node is called in the window summary ("replay windows closed by: ...").
    pub fn call_name(&self) -> &'static str {
        match self {
            NodeCall::Memset(_) => "a graph's memset node",
            NodeCall::Memcpy(_) => "a graph's memcpy node",
            NodeCall::Host(_) => "a graph's host node",
            NodeCall::EventRecord(_) => "a graph's event record node",
            NodeCall::EventWait(_) => "a graph's event wait node",
        }
    }

    /// Runs the node on `stream`.
    ///
    /// # Safety
    /// The node's handles and pointers are still the application's (its graph is alive, or
    /// was instantiated with them).
    pub unsafe fn run(&self, d: &Driver, stream: CUstream) -> Result<(), String> {
        let done = match self {
            NodeCall::Memset(p) => {
                let value = p.value;
                match (p.elementSize, p.height) {
                    (1, 1) => drv!(d, cuMemsetD8Async(p.dst, value as u8, p.width, stream)),
                    (2, 1) => drv!(d, cuMemsetD16Async(p.dst, value as u16, p.width, stream)),
                    (4, 1) => drv!(d, cuMemsetD32Async(p.dst, value, p.width, stream)),
                    (1, h) => drv!(
                        d,
                        cuMemsetD2D8Async(p.dst, p.pitch, value as u8, p.width, h, stream)
                    ),
                    (2, h) => drv!(
                        d,
                        cuMemsetD2D16Async(p.dst, p.pitch, value as u16, p.width, h, stream)
                    ),
                    (4, h) => drv!(
                        d,
                        cuMemsetD2D32Async(p.dst, p.pitch, value, p.width, h, stream)
                    ),
                    (size, _) => return Err(format!("a memset of {size}-byte elements")),
                }
            }
            NodeCall::Memcpy(p) => drv!(d, cuMemcpy3DAsync_v2(&**p, stream)),
            NodeCall::Host(p) => drv!(d, cuLaunchHostFunc(stream, p.fn_, p.userData)),
            NodeCall::EventRecord(event) => drv!(d, cuEventRecord(*event, stream)),
            NodeCall::EventWait(event) => drv!(d, cuStreamWaitEvent(stream, *event, 0)),
        };
        done.map_err(|e| e.to_string())
    }
}

/// Bytes a memset node writes from its destination.
pub fn memset_span(p: &sys::CUDA_MEMSET_NODE_PARAMS) -> u64 {
    let row = p.width as u64 * u64::from(p.elementSize);
    match p.height {
        0 => 0,
        1 => row,
        h => (h as u64 - 1) * p.pitch as u64 + row,
    }
}

/// Where a 3-D copy writes device memory: its first byte and how many bytes from there, or
/// `None` when its destination is not device memory by address (host memory, an array).
/// `UNIFIED` destinations are addresses too; the caller tells host from device.
pub fn memcpy_destination(p: &sys::CUDA_MEMCPY3D) -> Option<(u64, u64)> {
    let addressed = p.dstMemoryType == sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE
        || p.dstMemoryType == sys::CUmemorytype_enum_CU_MEMORYTYPE_UNIFIED;
    if !addressed {
        return None;
    }
    let (pitch, rows_per_slice) = (p.dstPitch as u64, p.dstHeight as u64);
    let first = p.dstDevice
        + p.dstXInBytes as u64
        + (p.dstY as u64 + p.dstZ as u64 * rows_per_slice) * pitch;
    let (height, depth) = (p.Height.max(1) as u64, p.Depth.max(1) as u64);
    let rows = (depth - 1) * rows_per_slice + (height - 1);
    Some((first, rows * pitch + p.WidthInBytes as u64))
}

/// The order to run `n` nodes in, given `edges` (from, to) between them: every node after the
/// nodes it depends on, ties in the order the driver listed them. `None`: a cycle.
pub fn topological_order(n: usize, edges: &[(usize, usize)]) -> Option<Vec<usize>> {
    let mut waiting_on = vec![0usize; n];
    let mut after: Vec<Vec<usize>> = vec![Vec::new(); n];
    for &(from, to) in edges {
        waiting_on[to] += 1;
        after[from].push(to);
    }
    // A min-heap of ready nodes keeps the driver's order among independent nodes.
    let mut ready: std::collections::BinaryHeap<std::cmp::Reverse<usize>> = (0..n)
        .filter(|&i| waiting_on[i] == 0)
        .map(std::cmp::Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(std::cmp::Reverse(node)) = ready.pop() {
        order.push(node);
        for &next in &after[node] {
            waiting_on[next] -= 1;
            if waiting_on[next] == 0 {
                ready.push(std::cmp::Reverse(next));
            }
        }
    }
    (order.len() == n).then_some(order)
}

/// An executable graph's nodes in the order the tool runs them, or why it runs whole.
#[derive(Clone)]
pub struct GraphPlan {
    pub steps: Result<Vec<Step>, String>,
    /// The context the executable belongs to.
    ctx: usize,
    /// The step of each kernel node, by the node handle of the graph the executable was
    /// instantiated from (how the application names a node when it changes the executable).
    kernel_steps: HashMap<usize, usize>,
}

impl GraphPlan {
    fn declined(ctx: CUcontext, why: String) -> GraphPlan {
        GraphPlan {
            steps: Err(why),
            ctx: ctx as usize,
            kernel_steps: HashMap::new(),
        }
    }

    /// The number of kernel nodes (0 for a declined graph).
    pub fn kernel_nodes(&self) -> usize {
        self.steps.as_ref().map_or(0, |steps| {
            steps
                .iter()
                .filter(|s| matches!(s, Step::Kernel(_)))
                .count()
        })
    }
}

/// What the tool keeps of an application's executable graph it runs node by node: the empty
/// executable its launches are handed (one per executable, so that unrelated graphs are not
/// ordered behind each other), and an event recorded after the nodes of its last launch (a
/// launch is ordered after the executable's previous launches, whatever their streams).
struct Launches {
    ctx: usize,
    stand_in: GraphExec,
    done: Event,
    launched: bool,
}

/// The executable graphs of the process, by handle.
#[derive(Default)]
pub struct GraphRegistry {
    plans: Mutex<HashMap<usize, Arc<GraphPlan>>>,
    launches: Mutex<HashMap<usize, Launches>>,
    /// Stand-ins and events of destroyed executables, destroyed at the next graph launch (not
    /// inside the destruction's resource callback, where the driver holds its own locks).
    retired: Mutex<Vec<Launches>>,
}

impl GraphRegistry {
    /// Reads `graph`, just instantiated as `exec` in `ctx`.
    ///
    /// # Safety
    /// Inside the instantiation's callback: `graph` and `exec` are alive.
    pub unsafe fn instantiated(
        &self,
        d: &Driver,
        ctx: CUcontext,
        graph: CUgraph,
        exec: sys::CUgraphExec,
    ) -> Arc<GraphPlan> {
        let mut flags: sys::cuuint64_t = 0;
        let device_launch = drv!(d, cuGraphExecGetFlags(exec, &mut flags)).is_ok()
            && flags
                & sys::CUgraphInstantiate_flags_enum_CUDA_GRAPH_INSTANTIATE_FLAG_DEVICE_LAUNCH
                    as sys::cuuint64_t
                != 0;
        let plan = Arc::new(if device_launch {
            GraphPlan::declined(
                ctx,
                "it was instantiated to be launched from the device too".into(),
            )
        } else {
            read_plan(d, ctx, graph)
        });
        kreplay_cuda::lock(&self.plans).insert(exec as usize, plan.clone());
        plan
    }

    /// `cuGraphExecUpdate` made `graph` the source of `exec`: read again. The application still
    /// names kernel nodes by the handles of the graph `exec` was instantiated from; an update
    /// keeps the topology, so step `i` is the same node in both.
    ///
    /// # Safety
    /// Inside the update's callback: `graph` is alive.
    pub unsafe fn updated(
        &self,
        d: &Driver,
        ctx: CUcontext,
        graph: CUgraph,
        exec: sys::CUgraphExec,
    ) {
        let old = self.plan(exec);
        let mut plan = read_plan(d, ctx, graph);
        match old {
            Some(old) if old.steps.is_ok() && old.kernel_nodes() == plan.kernel_nodes() => {
                plan.kernel_steps = old.kernel_steps.clone();
            }
            _ if plan.steps.is_ok() => {
                plan = GraphPlan::declined(
                    ctx,
                    "it was updated from a graph the tool cannot match to its own (cuGraphExecUpdate)".into(),
                );
            }
            _ => {}
        }
        kreplay_cuda::lock(&self.plans).insert(exec as usize, Arc::new(plan));
    }

    /// The plan of `exec`, if it was instantiated while the tool was on.
    pub fn plan(&self, exec: sys::CUgraphExec) -> Option<Arc<GraphPlan>> {
        kreplay_cuda::lock(&self.plans)
            .get(&(exec as usize))
            .cloned()
    }

    /// `cuGraphExecKernelNodeSetParams` gave `node` of `exec` the parameters `p`: its step is
    /// copied again (its launch attributes kept); the graph is declined if that fails or the
    /// node is not known. The copy is made outside the registry's lock.
    ///
    /// # Safety
    /// Inside the call's callback: `p` is the call's parameter block.
    pub unsafe fn kernel_node_set(
        &self,
        d: &Driver,
        ctx: CUcontext,
        exec: sys::CUgraphExec,
        node: CUgraphNode,
        p: &sys::CUDA_KERNEL_NODE_PARAMS,
    ) {
        let Some(old) = self.plan(exec) else {
            return;
        };
        let Ok(steps) = &old.steps else {
            return;
        };
        let next = match old.kernel_steps.get(&(node as usize)) {
            Some(&at) => {
                let attrs = match &steps[at] {
                    Step::Kernel(launch) => launch.attributes().to_vec(),
                    _ => Vec::new(),
                };
                match kernel_launch(d, ctx, p, attrs) {
                    Ok(launch) => {
                        let mut next = (*old).clone();
                        if let Ok(steps) = &mut next.steps {
                            steps[at] = Step::Kernel(Box::new(launch));
                        }
                        next
                    }
                    Err(why) => GraphPlan::declined(ctx, why),
                }
            }
            None => GraphPlan::declined(
                ctx,
                "a kernel node the tool did not read was given new parameters".into(),
            ),
        };
        let mut plans = kreplay_cuda::lock(&self.plans);
        match plans.get_mut(&(exec as usize)) {
            Some(current) if Arc::ptr_eq(current, &old) => *current = Arc::new(next),
            // Changed meanwhile by another thread: what it runs is no longer certain.
            Some(current) => {
                *current = Arc::new(GraphPlan::declined(
                    ctx,
                    "it was changed by two threads at once".into(),
                ))
            }
            None => {}
        }
    }

    /// `exec` was changed after instantiation in a way the tool does not follow (`how`: the
    /// call): it runs whole from now on.
    pub fn changed(&self, exec: sys::CUgraphExec, how: &str) {
        if let Some(plan) = kreplay_cuda::lock(&self.plans).get_mut(&(exec as usize)) {
            if plan.steps.is_ok() {
                *plan = Arc::new(GraphPlan::declined(
                    plan.ctx as CUcontext,
                    format!("it was changed after instantiation ({how})"),
                ));
            }
        }
    }

    /// `exec` is being destroyed: its plan goes, and the tool's stand-in and event are retired
    /// (destroyed at the next graph launch; the driver releases them once what uses them ran).
    pub fn destroyed(&self, exec: sys::CUgraphExec) {
        kreplay_cuda::lock(&self.plans).remove(&(exec as usize));
        if let Some(launches) = kreplay_cuda::lock(&self.launches).remove(&(exec as usize)) {
            kreplay_cuda::lock(&self.retired).push(launches);
        }
    }

    /// `ctx` is being destroyed: what belonged to it is forgotten, its handles not destroyed
    /// (they go with the context; this runs in the destruction's resource callback).
    pub fn context_destroyed(&self, ctx: CUcontext) {
        let ctx = ctx as usize;
        kreplay_cuda::lock(&self.plans).retain(|_, plan| plan.ctx != ctx);
        let gone: Vec<Launches> = {
            let mut launches = kreplay_cuda::lock(&self.launches);
            let (gone, kept) = std::mem::take(&mut *launches)
                .into_iter()
                .partition(|(_, l)| l.ctx == ctx);
            *launches = kept;
            gone.into_values().collect()
        };
        let mut retired = kreplay_cuda::lock(&self.retired);
        let (retired_gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut *retired)
            .into_iter()
            .partition(|l| l.ctx == ctx);
        *retired = kept;
        gone.into_iter()
            .chain(retired_gone)
            .for_each(std::mem::forget);
    }

    /// Before `exec`'s nodes run on `stream` (in `ctx`, current): the empty executable the
    /// launch is handed instead, after `stream` was made to wait for the nodes of `exec`'s
    /// previous launch. Made at the first launch.
    pub fn begin_launch(
        &self,
        d: &'static Driver,
        ctx: CUcontext,
        exec: sys::CUgraphExec,
        stream: CUstream,
    ) -> Result<sys::CUgraphExec, String> {
        let mine: Vec<Launches> = {
            let mut retired = kreplay_cuda::lock(&self.retired);
            let (mine, others) = std::mem::take(&mut *retired)
                .into_iter()
                .partition(|l| l.ctx == ctx as usize);
            *retired = others;
            mine
        };
        // The tool's own handles of destroyed executables of the current context, used by
        // nothing after this (the driver frees them once the work using them ran).
        drop(mine);
        let mut all = kreplay_cuda::lock(&self.launches);
        let launches = match all.entry(exec as usize) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => e.insert(new_launches(d, ctx)?),
        };
        if launches.launched {
            // SAFETY: the tool's own event, recorded on a stream of the same context.
            unsafe { drv!(d, cuStreamWaitEvent(stream, launches.done.raw(), 0)) }
                .map_err(|e| e.to_string())?;
        }
        Ok(launches.stand_in.raw())
    }

    /// After `exec`'s nodes were issued on `stream`: the next launch waits for them.
    pub fn end_launch(&self, d: &Driver, exec: sys::CUgraphExec, stream: CUstream) {
        if let Some(launches) = kreplay_cuda::lock(&self.launches).get_mut(&(exec as usize)) {
            // SAFETY: the tool's own event on a live stream of its context.
            launches.launched =
                unsafe { drv!(d, cuEventRecord(launches.done.raw(), stream)) }.is_ok();
        }
    }
}

/// An empty executable graph and an event, in `ctx` (current).
fn new_launches(d: &'static Driver, ctx: CUcontext) -> Result<Launches, String> {
    Ok(Launches {
        ctx: ctx as usize,
        stand_in: GraphExec::empty(d).map_err(|e| e.to_string())?,
        done: Event::untimed(d).map_err(|e| e.to_string())?,
        launched: false,
    })
}

/// `graph`'s plan in `ctx`: its steps, or why it runs whole.
///
/// # Safety
/// `graph` is alive.
unsafe fn read_plan(d: &Driver, ctx: CUcontext, graph: CUgraph) -> GraphPlan {
    let mut reader = GraphReader {
        d,
        ctx,
        steps: Vec::new(),
        kernel_steps: HashMap::new(),
    };
    match reader.graph(graph, 0) {
        Ok(()) => GraphPlan {
            steps: Ok(reader.steps),
            ctx: ctx as usize,
            kernel_steps: reader.kernel_steps,
        },
        Err(why) => GraphPlan::declined(ctx, why),
    }
}

/// A graph being read into steps (see [`GraphRegistry::instantiated`]).
struct GraphReader<'a> {
    d: &'a Driver,
    ctx: CUcontext,
    steps: Vec<Step>,
    kernel_steps: HashMap<usize, usize>,
}

impl GraphReader<'_> {
    /// Appends `graph`'s nodes, child graphs inlined, in an order that respects its edges.
    unsafe fn graph(&mut self, graph: CUgraph, depth: usize) -> Result<(), String> {
        let d = self.d;
        if depth > MAX_DEPTH {
            return Err(format!("child graphs nest deeper than {MAX_DEPTH}"));
        }
        let failed = |what: &str, e: kreplay_cuda::error::CudaError| format!("{what}: {e}");
        let mut count = 0usize;
        drv!(d, cuGraphGetNodes(graph, std::ptr::null_mut(), &mut count))
            .map_err(|e| failed("cuGraphGetNodes", e))?;
        let mut nodes: Vec<CUgraphNode> = vec![std::ptr::null_mut(); count];
        drv!(d, cuGraphGetNodes(graph, nodes.as_mut_ptr(), &mut count))
            .map_err(|e| failed("cuGraphGetNodes", e))?;
        nodes.truncate(count);
        let mut edge_count = 0usize;
        // Without edge data: an edge that carries some (a programmatic dependency) makes the
        // query fail as lossy, and such a graph is declined.
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
        .map_err(|e| failed("cuGraphGetEdges", e))?;
        let mut from: Vec<CUgraphNode> = vec![std::ptr::null_mut(); edge_count];
        let mut to: Vec<CUgraphNode> = vec![std::ptr::null_mut(); edge_count];
        if edge_count > 0 {
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
            .map_err(|e| failed("edges with data (programmatic dependent launch)", e))?;
        }
        let index: HashMap<usize, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (*n as usize, i))
            .collect();
        let edges: Vec<(usize, usize)> = from
            .iter()
            .zip(&to)
            .take(edge_count)
            .filter_map(|(f, t)| Some((*index.get(&(*f as usize))?, *index.get(&(*t as usize))?)))
            .collect();
        let order = topological_order(nodes.len(), &edges).ok_or("its edges form a cycle")?;
        for i in order {
            self.node(nodes[i], depth)?;
        }
        Ok(())
    }

    /// Appends one node (a child graph's nodes for a child graph node).
    unsafe fn node(&mut self, node: CUgraphNode, depth: usize) -> Result<(), String> {
        let (d, ctx, steps) = (self.d, self.ctx, &mut self.steps);
        let mut kind: sys::CUgraphNodeType = 0;
        drv!(d, cuGraphNodeGetType(node, &mut kind)).map_err(|e| e.to_string())?;
        let got = |r: Result<(), kreplay_cuda::error::CudaError>| r.map_err(|e| e.to_string());
        match kind {
            sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_KERNEL => {
                self.kernel_steps.insert(node as usize, steps.len());
                steps.push(Step::Kernel(Box::new(read_kernel_node(d, ctx, node)?)));
            }
            sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_MEMSET => {
                let mut p = sys::CUDA_MEMSET_NODE_PARAMS::default();
                got(drv!(d, cuGraphMemsetNodeGetParams(node, &mut p)))?;
                steps.push(Step::Call(NodeCall::Memset(p)));
            }
            sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_MEMCPY => {
                let mut p = sys::CUDA_MEMCPY3D::default();
                got(drv!(d, cuGraphMemcpyNodeGetParams(node, &mut p)))?;
                steps.push(Step::Call(NodeCall::Memcpy(Box::new(p))));
            }
            sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_HOST => {
                let mut p = sys::CUDA_HOST_NODE_PARAMS::default();
                got(drv!(d, cuGraphHostNodeGetParams(node, &mut p)))?;
                steps.push(Step::Call(NodeCall::Host(p)));
            }
            sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_GRAPH => {
                let mut child: CUgraph = std::ptr::null_mut();
                got(drv!(d, cuGraphChildGraphNodeGetGraph(node, &mut child)))?;
                self.graph(child, depth + 1)?;
            }
            sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_EMPTY => {}
            sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_EVENT_RECORD => {
                let mut event: CUevent = std::ptr::null_mut();
                got(drv!(d, cuGraphEventRecordNodeGetEvent(node, &mut event)))?;
                steps.push(Step::Call(NodeCall::EventRecord(event)));
            }
            sys::CUgraphNodeType_enum_CU_GRAPH_NODE_TYPE_WAIT_EVENT => {
                let mut event: CUevent = std::ptr::null_mut();
                got(drv!(d, cuGraphEventWaitNodeGetEvent(node, &mut event)))?;
                steps.push(Step::Call(NodeCall::EventWait(event)));
            }
            other => return Err(format!("it holds a {}", node_kind_name(other))),
        }
        Ok(())
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

/// A kernel node as a launch of the tool's own: its parameters copied, its cluster shape,
/// cooperative flag and priority kept as launch attributes (its L2 access policy and memory
/// synchronisation domain are not: they change no result).
unsafe fn read_kernel_node(
    d: &Driver,
    ctx: CUcontext,
    node: CUgraphNode,
) -> Result<OwnedLaunch, String> {
    let mut p = sys::CUDA_KERNEL_NODE_PARAMS::default();
    drv!(d, cuGraphKernelNodeGetParams_v2(node, &mut p)).map_err(|e| e.to_string())?;
    let attribute = |id| {
        let mut value = sys::CUlaunchAttributeValue::default();
        drv!(d, cuGraphKernelNodeGetAttribute(node, id, &mut value))
            .ok()
            .map(|()| value)
    };
    if attribute(sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_DEVICE_UPDATABLE_KERNEL_NODE)
        .is_some_and(|v| v.deviceUpdatableKernelNode.deviceUpdatable != 0)
    {
        return Err("a kernel node can be updated from the device".into());
    }
    let mut attrs = Vec::new();
    for id in [
        sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION,
        sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_COOPERATIVE,
        sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_PRIORITY,
    ] {
        let Some(value) = attribute(id) else {
            continue;
        };
        let set = match id {
            sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_COOPERATIVE => value.cooperative != 0,
            sys::CUlaunchAttributeID_enum_CU_LAUNCH_ATTRIBUTE_PRIORITY => value.priority != 0,
            _ => {
                let c = value.clusterDim;
                c.x.max(c.y).max(c.z) > 1
            }
        };
        if set {
            attrs.push(sys::CUlaunchAttribute {
                id,
                pad: [0; 4],
                value,
            });
        }
    }
    kernel_launch(d, ctx, &p, attrs)
}

/// A kernel node's parameters `p` as a launch of the tool's own with `attrs`, its parameter
/// bytes copied.
///
/// # Safety
/// `p.kernelParams` points at one pointer per parameter of the kernel, each to its bytes.
unsafe fn kernel_launch(
    d: &Driver,
    ctx: CUcontext,
    p: &sys::CUDA_KERNEL_NODE_PARAMS,
    attrs: Vec<sys::CUlaunchAttribute>,
) -> Result<OwnedLaunch, String> {
    if !p.extra.is_null() {
        return Err("a kernel node passes its parameters through `extra`".into());
    }
    if !p.ctx.is_null() && p.ctx != ctx {
        return Err("a kernel node belongs to another context".into());
    }
    let f = if p.func.is_null() {
        p.kern as sys::CUfunction
    } else {
        p.func
    };
    // The tool's launch is the node's only execution: parameters it could not read would run
    // the kernel without them.
    if kreplay_cuda::launch::parameter_layout(d, f).is_empty()
        && !p.kernelParams.is_null()
        && kernel_param_bytes(d, p) != 0
    {
        return Err("the parameters of a kernel node could not be read".into());
    }
    let api = if attrs.is_empty() {
        LaunchApi::Kernel { per_thread: false }
    } else {
        LaunchApi::KernelEx { per_thread: false }
    };
    let shape = LaunchParams {
        f,
        grid: [p.gridDimX, p.gridDimY, p.gridDimZ],
        block: [p.blockDimX, p.blockDimY, p.blockDimZ],
        shared: p.sharedMemBytes,
        stream: std::ptr::null_mut(),
        kernel_params: p.kernelParams,
        extra: std::ptr::null_mut(),
        config: std::ptr::null(),
    };
    OwnedLaunch::from_parts(d, ctx, api, &shape, attrs).map_err(|e| e.to_string())
}

/// The bytes of a kernel node's parameters, as the driver describes its function (0 when it
/// cannot say).
unsafe fn kernel_param_bytes(d: &Driver, p: &sys::CUDA_KERNEL_NODE_PARAMS) -> u32 {
    let mut f = p.func;
    if f.is_null() && drv!(d, cuKernelGetFunction(&mut f, p.kern)).is_err() {
        return 0;
    }
    kreplay_cuda::kernel::function_attributes(d, f).param_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_run_after_what_they_depend_on_in_listed_order_otherwise() {
        // 3 -> 0 -> 2, 1 free: 1 and 3 are ready first (1 listed first).
        assert_eq!(
            topological_order(4, &[(3, 0), (0, 2)]),
            Some(vec![1, 3, 0, 2])
        );
        assert_eq!(topological_order(3, &[]), Some(vec![0, 1, 2]));
        // A diamond: 0 -> {1, 2} -> 3.
        assert_eq!(
            topological_order(4, &[(0, 2), (0, 1), (1, 3), (2, 3)]),
            Some(vec![0, 1, 2, 3])
        );
        assert_eq!(topological_order(2, &[(0, 1), (1, 0)]), None);
        assert_eq!(topological_order(0, &[]), Some(vec![]));
    }

    #[test]
    fn memset_nodes_write_rows_a_pitch_apart() {
        let mut p = sys::CUDA_MEMSET_NODE_PARAMS {
            dst: 0x1000,
            pitch: 0,
            value: 7,
            elementSize: 4,
            width: 256,
            height: 1,
        };
        // One row: the pitch is not used (captured memsets leave it 0).
        assert_eq!(memset_span(&p), 1024);
        p.pitch = 2048;
        p.height = 3;
        assert_eq!(memset_span(&p), 2 * 2048 + 1024);
        p.height = 0;
        assert_eq!(memset_span(&p), 0);
    }

    #[test]
    fn copies_to_device_memory_say_where_they_write() {
        let mut p = sys::CUDA_MEMCPY3D {
            dstMemoryType: sys::CUmemorytype_enum_CU_MEMORYTYPE_DEVICE,
            dstDevice: 0x10000,
            WidthInBytes: 100,
            Height: 1,
            Depth: 1,
            ..Default::default()
        };
        assert_eq!(memcpy_destination(&p), Some((0x10000, 100)));
        // Rows 2..4 of slice 1 of a 512-byte pitch, 8 rows a slice, from byte 16.
        p.dstPitch = 512;
        p.dstHeight = 8;
        p.dstXInBytes = 16;
        p.dstY = 2;
        p.dstZ = 1;
        p.Height = 3;
        assert_eq!(
            memcpy_destination(&p),
            Some((0x10000 + 16 + (2 + 8) * 512, 2 * 512 + 100))
        );
        p.dstMemoryType = sys::CUmemorytype_enum_CU_MEMORYTYPE_HOST;
        assert_eq!(memcpy_destination(&p), None);
        p.dstMemoryType = sys::CUmemorytype_enum_CU_MEMORYTYPE_ARRAY;
        assert_eq!(memcpy_destination(&p), None);
    }
}
