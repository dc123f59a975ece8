//! An executable graph's plan: its nodes in the order the tool runs them (child graphs
//! inlined), or why it runs whole.

use super::order::topological_order;
use kreplay_cuda::error::CudaError;
use kreplay_cuda::graph::{self as cuda_graph, EdgesError, Node, Step};
use kreplay_cuda::{CUcontext, CUgraph, CUgraphNode, Driver};
use std::collections::HashMap;

/// Child graphs deeper than this are declined (a graph cannot contain itself; this bounds the
/// walk all the same).
const MAX_DEPTH: usize = 16;

/// An executable graph's nodes in the order the tool runs them, or why it runs whole.
#[derive(Clone)]
pub struct GraphPlan {
    pub steps: Result<Vec<Step>, String>,
    /// The context the executable belongs to.
    pub(super) ctx: usize,
    /// The step of each kernel node, by the node handle of the graph the executable was
    /// instantiated from (how the application names a node when it changes the executable).
    pub(super) kernel_steps: HashMap<usize, usize>,
}

impl GraphPlan {
    pub(super) fn declined(ctx: CUcontext, why: String) -> GraphPlan {
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

/// `graph`'s plan in `ctx`: its steps, or why it runs whole. `graph` is alive.
pub(super) fn read_plan(d: &Driver, ctx: CUcontext, graph: CUgraph) -> GraphPlan {
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

/// A graph being read into steps (see [`read_plan`]).
struct GraphReader<'a> {
    d: &'a Driver,
    ctx: CUcontext,
    steps: Vec<Step>,
    kernel_steps: HashMap<usize, usize>,
}

impl GraphReader<'_> {
    /// Appends `graph`'s nodes, child graphs inlined, in an order that respects its edges.
    fn graph(&mut self, graph: CUgraph, depth: usize) -> Result<(), String> {
        let d = self.d;
        if depth > MAX_DEPTH {
            return Err(format!("child graphs nest deeper than {MAX_DEPTH}"));
        }
        let failed = |what: &str, e: CudaError| format!("{what}: {e}");
        let nodes = cuda_graph::nodes(d, graph).map_err(|e| failed("cuGraphGetNodes", e))?;
        // Without edge data: an edge that carries some (a programmatic dependency) makes the
        // query fail as lossy, and such a graph is declined.
        let listed = cuda_graph::edges(d, graph).map_err(|e| match e {
            EdgesError::Count(e) => failed("cuGraphGetEdges", e),
            EdgesError::WithData(e) => failed("edges with data (programmatic dependent launch)", e),
        })?;
        let index: HashMap<usize, usize> = nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (*n as usize, i))
            .collect();
        let edges: Vec<(usize, usize)> = listed
            .iter()
            .filter_map(|(f, t)| Some((*index.get(&(*f as usize))?, *index.get(&(*t as usize))?)))
            .collect();
        let order = topological_order(nodes.len(), &edges).ok_or("its edges form a cycle")?;
        for i in order {
            self.node(nodes[i], depth)?;
        }
        Ok(())
    }

    /// Appends one node (a child graph's nodes for a child graph node).
    fn node(&mut self, node: CUgraphNode, depth: usize) -> Result<(), String> {
        match cuda_graph::read_node(self.d, self.ctx, node)? {
            Node::Step(step) => {
                if matches!(step, Step::Kernel(_)) {
                    self.kernel_steps.insert(node as usize, self.steps.len());
                }
                self.steps.push(step);
            }
            Node::Child(child) => self.graph(child, depth + 1)?,
            Node::Empty => {}
        }
        Ok(())
    }
}
