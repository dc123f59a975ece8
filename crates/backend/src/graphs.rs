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
//!
//! The driver's side (reading nodes, running a node as its call) is
//! [`kreplay_cuda::graph`]; here: the plan of each executable (`plan`, in the order of
//! `order`) and the registry of the process's executables and their launches (`registry`).

mod order;
mod plan;
mod registry;

pub use kreplay_cuda::graph::{memcpy_destination, memset_span, NodeCall, Step};
pub use order::topological_order;
pub use plan::GraphPlan;
pub use registry::GraphRegistry;
