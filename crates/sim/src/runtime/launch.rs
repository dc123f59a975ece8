//! The application's launches (a kernel, a launch recorded into a stream capture), each
//! between the engine's `launch_enter` and `launch_exit`; graph launches are in `graph`.

use crate::device::{SimError, SimKernel, SimLaunch};
use crate::runtime::api_args::SimArgs;
use crate::runtime::{api_trace, SimEngine, SimRuntime};
use kreplay_core::backend::{DispatchInfo, LaunchKind};
use kreplay_format::KernelSymbol;

impl SimRuntime {
    /// Launches one kernel.
    pub fn launch(&mut self, launch: &SimLaunch) -> Result<(), SimError> {
        self.launch_as(LaunchKind::Kernel, launch)
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
        let correlation_id = self.next_correlation();
        self.set_args(SimArgs::launch(&launch, self.stream_id));
        self.api(Some(api_trace::LAUNCH), correlation_id, |runtime| {
            let info = runtime.dispatch_info(LaunchKind::StreamCapture, &launch, correlation_id);
            let ticket = engine.launch_enter(&mut runtime.device, &info);
            engine.launch_exit(&mut runtime.device, ticket, &launch);
        });
    }

    /// Launches one kernel as a launch of `kind` (what the CUDA backend would classify it as).
    pub(crate) fn launch_as(
        &mut self,
        kind: LaunchKind,
        launch: &SimLaunch,
    ) -> Result<(), SimError> {
        let correlation_id = self.next_correlation();
        self.launch_with(kind, launch, correlation_id)
    }

    /// Launches one kernel as a launch of `kind` under `correlation_id` (a graph's kernel nodes
    /// share their graph launch's).
    pub(crate) fn launch_with(
        &mut self,
        kind: LaunchKind,
        launch: &SimLaunch,
        correlation_id: u64,
    ) -> Result<(), SimError> {
        self.launch_running(kind, launch, correlation_id, |runtime| {
            let current = runtime.current;
            runtime.device().execute(&SimLaunch {
                device: current,
                ..launch.clone()
            })
        })
    }

    /// The engine's `launch_enter` for `launch` (on the current device), `execute` (the
    /// application's own execution: pass 0), then `launch_exit`, or `launch_failed` when it
    /// faulted. Unprofiled, `execute` alone.
    pub(crate) fn launch_running(
        &mut self,
        kind: LaunchKind,
        launch: &SimLaunch,
        correlation_id: u64,
        execute: impl FnOnce(&mut SimRuntime) -> Result<(), SimError>,
    ) -> Result<(), SimError> {
        let Some(engine) = self.engine.clone() else {
            return execute(self);
        };
        let launch = SimLaunch {
            device: self.current,
            ..launch.clone()
        };
        self.register(&engine, &launch.kernel);
        let names = api_trace::launch_names(kind);
        if kind != LaunchKind::Graph {
            self.set_args(SimArgs::launch(&launch, self.stream_id));
        }
        self.api(Some(names), correlation_id, |runtime| {
            let info = runtime.dispatch_info(kind, &launch, correlation_id);
            let ticket = engine.launch_enter(&mut runtime.device, &info);
            let result = execute(runtime);
            // A GPU launch returns while the kernel runs: let other application threads run
            // here, as they would, so that multi-threaded runs interleave with replay windows.
            std::thread::yield_now();
            if result.is_ok() {
                engine.launch_exit(&mut runtime.device, ticket, &launch);
            } else {
                // A faulted launch is not replayed (it would fault again) nor recorded.
                engine.launch_failed(&mut runtime.device, ticket);
            }
            result
        })
    }

    /// The next correlation id of the process's calls (one per call of the application, as
    /// CUPTI's): a launch's dispatch carries its call's.
    pub(crate) fn next_correlation(&mut self) -> u64 {
        api_trace::next_correlation()
    }

    fn dispatch_info(
        &self,
        kind: LaunchKind,
        launch: &SimLaunch,
        correlation_id: u64,
    ) -> DispatchInfo {
        DispatchInfo {
            device: self.current,
            kind,
            kernel_name: launch.kernel.mangled_name().into(),
            kernel_id: launch.kernel.id(),
            stream_id: self.stream_id,
            correlation_id,
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
