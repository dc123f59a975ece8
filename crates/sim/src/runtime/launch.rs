//! The application's launches (a kernel, a graph, a launch recorded into a stream capture),
//! each between the engine's `launch_enter` and `launch_exit`.

use crate::device::{SimError, SimKernel, SimLaunch};
use crate::runtime::{SimEngine, SimRuntime};
use kreplay_core::backend::{DispatchInfo, LaunchKind};
use kreplay_format::KernelSymbol;

impl SimRuntime {
    /// Launches one kernel.
    pub fn launch(&mut self, launch: &SimLaunch) -> Result<(), SimError> {
        self.launch_as(LaunchKind::Kernel, std::slice::from_ref(launch))
    }

    /// Launches a graph of kernels, executed in order as one launch (never replayed).
    pub fn launch_graph(&mut self, nodes: &[SimLaunch]) -> Result<(), SimError> {
        self.launch_as(LaunchKind::Graph, nodes)
    }

    /// Records `launch` into a stream capture: nothing executes (the capture is never
    /// instantiated by this device).
    pub fn capture(&mut self, launch: &SimLaunch) {
        let Some(engine) = self.engine.clone() else {
            return;
        };
        let launch = SimLaunch {
            device: self.current,
            ..launch.clone()
        };
        let info = self.dispatch_info(LaunchKind::StreamCapture, &launch);
        let ticket = engine.launch_enter(&mut self.device, &info);
        engine.launch_exit(&mut self.device, ticket, &launch);
    }

    pub(crate) fn launch_as(
        &mut self,
        kind: LaunchKind,
        nodes: &[SimLaunch],
    ) -> Result<(), SimError> {
        // On the current device.
        let nodes: Vec<SimLaunch> = nodes
            .iter()
            .map(|n| SimLaunch {
                device: self.current,
                ..n.clone()
            })
            .collect();
        let Some(first) = nodes.first() else {
            return Ok(());
        };
        let Some(engine) = self.engine.clone() else {
            let mut device = self.device();
            return nodes.iter().try_for_each(|n| device.execute(n));
        };
        for node in &nodes {
            self.register(&engine, &node.kernel);
        }
        let info = self.dispatch_info(kind, first);
        let ticket = engine.launch_enter(&mut self.device, &info);
        // The application's own launch: pass 0.
        let result = {
            let mut device = self.device();
            nodes.iter().try_for_each(|n| device.execute(n))
        };
        // A GPU launch returns while the kernel runs: let other application threads run here,
        // as they would, so that multi-threaded runs interleave with replay windows.
        std::thread::yield_now();
        if result.is_ok() {
            engine.launch_exit(&mut self.device, ticket, first);
        } else {
            // A faulted launch is not replayed (it would fault again) nor recorded.
            engine.launch_failed(&mut self.device, ticket);
        }
        result
    }

    fn dispatch_info(&mut self, kind: LaunchKind, launch: &SimLaunch) -> DispatchInfo {
        self.next_correlation_id += 1;
        DispatchInfo {
            device: self.current,
            kind,
            kernel_name: launch.kernel.mangled_name().to_string(),
            kernel_id: launch.kernel.id(),
            stream_id: self.stream_id,
            correlation_id: self.next_correlation_id,
            grid: launch.grid,
            block: launch.block,
            dynamic_shared_bytes: 0,
        }
    }

    fn register(&mut self, engine: &SimEngine, kernel: &SimKernel) {
        if self.registered_kernels.insert(kernel.id()) {
            engine.register_kernel(KernelSymbol {
                kernel_id: kernel.id(),
                code_object_id: super::module::code_object_id(self.current),
                mangled_name: kernel.mangled_name().to_string(),
                demangled_name: kernel.demangled_name().to_string(),
                registers: 16,
                static_shared_bytes: 0,
                local_bytes: 0,
                param_bytes: 8 * 4,
            });
        }
    }
}
