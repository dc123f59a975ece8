//! The application's CUDA graphs as the tool reads them: an executable graph's nodes and edges,
//! each node as a typed value (a kernel node as a launch of the tool's own, a memset, memcpy,
//! host or event node as the call it stands for), and the call that runs such a node on a
//! stream. Which graphs are run node by node, in what order, is the backend's.
//!
//! The driver's parameter blocks (`CUDA_MEMSET_NODE_PARAMS`, `CUDA_MEMCPY3D`, ...) stay inside
//! the node values, as the driver wrote them: they are handed back to the driver unchanged.

mod calls;
mod kernel_node;
mod read;

pub use calls::{memcpy_destination, memset_span, NodeCall, Step};
pub use kernel_node::{kernel_launch, KernelNodeParams};
pub use read::{edges, launchable_from_device, nodes, read_node, EdgesError, Node};
