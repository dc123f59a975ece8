//! The application's graph launches, run as the CUDA backend runs them
//! (`kreplay_intercept::graph_launch`): with counter groups, node by node on the launch's
//! stream in the graph's order, each kernel node a dispatch of its own (the engine's
//! `launch_enter` → its execution → `launch_exit`, measured and replayed like any launch) and
//! each other node a call of the application's (`enter_call`/`exit_call` with what it writes),
//! run once; every node of one graph launch shares the launch's correlation id. Without counter
//! groups, or with `KREPLAY_GRAPH_NODES=0`, the graph runs whole, as one launch the engine runs
//! once.

use crate::device::{SimError, SimKernel, SimLaunch};
use crate::runtime::api_args::SimArgs;
use crate::runtime::api_trace::GRAPH_LAUNCH;
use crate::runtime::SimRuntime;
use kreplay_core::backend::{CallEffect, DeviceScope, LaunchKind};
use std::sync::OnceLock;

/// A node of a graph ([`SimRuntime::launch_graph`]).
#[derive(Debug, Clone)]
pub enum GraphNode {
    /// A kernel node.
    Kernel(SimLaunch),
    /// A memset node: `count` `u32`s of `value` from `dst`.
    Fill { dst: u64, value: u32, count: usize },
    /// A device-to-device memcpy node.
    Copy { dst: u64, src: u64, bytes: u64 },
}

/// What a graph launch run whole is to the engine: a launch of `cuGraphLaunch`, as the CUDA
/// backend names one (no kernel of the application's, no grid).
fn graph_launch_kernel() -> &'static SimKernel {
    static KERNEL: OnceLock<SimKernel> = OnceLock::new();
    KERNEL.get_or_init(|| SimKernel::new(1 << 32, "cuGraphLaunch", "cuGraphLaunch", |_| ()))
}

impl SimRuntime {
    /// Launches a graph of `nodes`, in that order (see the module documentation).
    pub fn launch_graph(&mut self, nodes: &[GraphNode]) -> Result<(), SimError> {
        let Some(engine) = self.engine.clone() else {
            return self.run_nodes(nodes);
        };
        let config = engine.config();
        if config.groups.is_empty() || !config.switches.graph_nodes {
            return self.launch_whole(nodes);
        }
        let window_spans = config.switches.graph_window_spans;
        let correlation_id = self.next_correlation();
        // One cudaGraphLaunch of the application; its nodes' calls are the tool's.
        self.set_args(SimArgs::graph_launch(nodes.as_ptr() as u64, self.stream_id));
        self.api(Some(GRAPH_LAUNCH), correlation_id, |runtime| {
            nodes.iter().try_for_each(|node| match node {
                GraphNode::Kernel(launch) => {
                    runtime.launch_with(LaunchKind::Kernel, launch, correlation_id)
                }
                GraphNode::Fill { dst, value, count } => runtime.fill_u32s(*dst, *value, *count),
                GraphNode::Copy { dst, src, bytes } => runtime.copy_untraced(*dst, *src, *bytes),
            })
        })?;
        // The CUDA backend then launches an empty graph in the application's place; with
        // KREPLAY_GRAPH_WINDOW_SPANS=0 the window the nodes joined closes there.
        if !window_spans {
            self.call_on(
                "a graph launch",
                CallEffect::Unknown,
                DeviceScope::All,
                |_| (),
            );
        }
        Ok(())
    }

    /// The graph as one launch (a graph launch run whole): its nodes executed in order inside
    /// the engine's `launch_enter`/`launch_exit` of one `cuGraphLaunch`.
    fn launch_whole(&mut self, nodes: &[GraphNode]) -> Result<(), SimError> {
        let launch = SimLaunch {
            kernel: graph_launch_kernel().clone(),
            grid: [0; 3],
            block: [0; 3],
            args: Vec::new(),
            device: self.current,
        };
        let correlation_id = self.next_correlation();
        self.set_args(SimArgs::graph_launch(nodes.as_ptr() as u64, self.stream_id));
        self.launch_running(LaunchKind::Graph, &launch, correlation_id, |runtime| {
            runtime.run_nodes(nodes)
        })
    }

    /// Runs `nodes` on the current device, unseen by the engine.
    fn run_nodes(&mut self, nodes: &[GraphNode]) -> Result<(), SimError> {
        let current = self.current;
        let mut device = self.device();
        nodes.iter().try_for_each(|node| match node {
            GraphNode::Kernel(launch) => device.execute(&SimLaunch {
                device: current,
                ..launch.clone()
            }),
            GraphNode::Fill { dst, value, count } => device.fill_u32s(*dst, *value, *count),
            GraphNode::Copy { dst, src, bytes } => device.copy(*dst, *src, *bytes),
        })
    }
}
