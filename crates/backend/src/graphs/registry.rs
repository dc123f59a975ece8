//! The executable graphs of the process: each one's plan, read at instantiation and again when
//! the application changes it, and for those run node by node the empty executable their
//! launches are handed and the event that orders one launch after the previous.

use super::plan::{read_plan, GraphPlan};
use kreplay_cuda::graph::{kernel_launch, launchable_from_device, KernelNodeParams, Step};
use kreplay_cuda::handles::{self, Event, GraphExec};
use kreplay_cuda::{CUcontext, CUgraph, CUgraphExec, CUgraphNode, CUstream, Driver};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

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
        exec: CUgraphExec,
    ) -> Arc<GraphPlan> {
        let plan = Arc::new(if launchable_from_device(d, exec) {
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
    pub unsafe fn updated(&self, d: &Driver, ctx: CUcontext, graph: CUgraph, exec: CUgraphExec) {
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
    pub fn plan(&self, exec: CUgraphExec) -> Option<Arc<GraphPlan>> {
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
        exec: CUgraphExec,
        node: CUgraphNode,
        p: &KernelNodeParams,
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
                // SAFETY: `p` is the call's parameter block, as the caller promises.
                match unsafe { kernel_launch(d, ctx, p, attrs) } {
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
    pub fn changed(&self, exec: CUgraphExec, how: &str) {
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
    pub fn destroyed(&self, exec: CUgraphExec) {
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
        exec: CUgraphExec,
        stream: CUstream,
    ) -> Result<CUgraphExec, String> {
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
            // The tool's own event, recorded on a stream of the same context.
            handles::wait_event(d, stream, launches.done.raw()).map_err(|e| e.to_string())?;
        }
        Ok(launches.stand_in.raw())
    }

    /// After `exec`'s nodes were issued on `stream`: the next launch waits for them.
    pub fn end_launch(&self, d: &Driver, exec: CUgraphExec, stream: CUstream) {
        if let Some(launches) = kreplay_cuda::lock(&self.launches).get_mut(&(exec as usize)) {
            // The tool's own event on a live stream of its context.
            launches.launched = handles::record_event(d, launches.done.raw(), stream).is_ok();
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
