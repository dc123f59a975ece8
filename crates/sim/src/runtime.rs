//! The software device's "driver API": what an application calls, routed through the replay
//! engine exactly as the CUDA backend routes CUDA calls: allocations enter the inventory, every
//! other call holds the engine's fence (`Engine::fence_in_window`, as the CUDA backend does for
//! copies and allocations: an open replay window closes first unless one execution measures
//! all its groups), and a launch is `launch_enter` → the application's own execution →
//! `launch_exit`.

use crate::device::{SharedSimDevice, SimDevice, SimError, SimKernel, SimLaunch};
use kreplay_core::backend::{AllocKind, DispatchInfo, LaunchKind};
use kreplay_core::Engine;
use kreplay_format::{AgentInfo, KernelSymbol};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, MutexGuard};

/// Streams are numbered per process, from 1, one per runtime.
fn next_stream_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One application thread's handle on a software device, profiled when an engine is attached.
/// [`SimRuntime::share`] gives another thread a runtime on the same device and engine.
pub struct SimRuntime {
    device: SharedSimDevice,
    engine: Option<Arc<Engine>>,
    registered_kernels: HashSet<u64>,
    next_correlation_id: u64,
    stream_id: u64,
}

impl SimRuntime {
    /// `engine: None` runs unprofiled (the reference execution).
    pub fn new(device: SimDevice, engine: Option<Arc<Engine>>) -> SimRuntime {
        let device_id = device.id();
        if let Some(engine) = &engine {
            engine.register_agent(AgentInfo {
                agent_id: u64::from(device_id),
                name: "kreplay software device".to_string(),
                chip: crate::SIM_CHIP.to_string(),
                sm_count: 4,
                global_memory_bytes: crate::device::DEFAULT_CAPACITY_BYTES,
                pci_location: String::new(),
            });
        }
        SimRuntime {
            device: SharedSimDevice::new(device),
            engine,
            registered_kernels: HashSet::new(),
            next_correlation_id: 0,
            stream_id: next_stream_id(),
        }
    }

    /// A runtime for another application thread: same device, same engine, its own stream.
    pub fn share(&self) -> SimRuntime {
        SimRuntime {
            device: self.device.clone(),
            engine: self.engine.clone(),
            registered_kernels: HashSet::new(),
            next_correlation_id: 0,
            stream_id: next_stream_id(),
        }
    }

    /// The device, locked.
    pub fn device(&self) -> MutexGuard<'_, SimDevice> {
        self.device.lock()
    }

    pub fn engine(&self) -> Option<&Arc<Engine>> {
        self.engine.as_ref()
    }

    /// Allocates and (when profiled) records the allocation in the engine's inventory.
    pub fn alloc(&mut self, kind: AllocKind, bytes: u64) -> Result<u64, SimError> {
        let _fence = self
            .engine
            .clone()
            .map(|e| e.fence_in_window(&mut self.device, "alloc"));
        let region = self.device.lock().alloc(kind, bytes)?;
        if let Some(engine) = &self.engine {
            engine.inventory().insert(region);
        }
        Ok(region.base)
    }

    pub fn free(&mut self, base: u64) -> Result<(), SimError> {
        let _fence = self
            .engine
            .clone()
            .map(|e| e.fence_in_window(&mut self.device, "free"));
        let mut device = self.device.lock();
        device.free(base)?;
        if let Some(engine) = &self.engine {
            engine.inventory().remove(device.id(), base);
        }
        Ok(())
    }

    pub fn write_u32s(&mut self, address: u64, values: &[u32]) -> Result<(), SimError> {
        let _fence = self
            .engine
            .clone()
            .map(|e| e.fence_in_window(&mut self.device, "write_u32s"));
        self.device.lock().write_u32s(address, values)
    }

    pub fn read_u32s(&mut self, address: u64, count: usize) -> Result<Vec<u32>, SimError> {
        let _fence = self
            .engine
            .clone()
            .map(|e| e.fence_in_window(&mut self.device, "read_u32s"));
        self.device.lock().read_u32s(address, count)
    }

    /// The end of the process: closes an open replay window (its passes run here), then
    /// flushes every record.
    pub fn finish(&mut self) {
        if let Some(engine) = self.engine.clone() {
            engine.finish_with(&mut self.device);
        }
    }

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
        let info = self.dispatch_info(LaunchKind::StreamCapture, launch);
        let ticket = engine.launch_enter(&mut self.device, &info);
        engine.launch_exit(&mut self.device, ticket, launch);
    }

    fn launch_as(&mut self, kind: LaunchKind, nodes: &[SimLaunch]) -> Result<(), SimError> {
        let Some(first) = nodes.first() else {
            return Ok(());
        };
        let Some(engine) = self.engine.clone() else {
            let mut device = self.device.lock();
            return nodes.iter().try_for_each(|n| device.execute(n));
        };
        for node in nodes {
            self.register(&engine, &node.kernel);
        }
        let info = self.dispatch_info(kind, first);
        let ticket = engine.launch_enter(&mut self.device, &info);
        // The application's own launch: pass 0.
        let result = {
            let mut device = self.device.lock();
            nodes.iter().try_for_each(|n| device.execute(n))
        };
        // A GPU launch returns while the kernel runs: let other application threads run here,
        // as they would, so that multi-threaded runs interleave with replay windows.
        std::thread::yield_now();
        engine.launch_exit(&mut self.device, ticket, first);
        result
    }

    fn dispatch_info(&mut self, kind: LaunchKind, launch: &SimLaunch) -> DispatchInfo {
        self.next_correlation_id += 1;
        DispatchInfo {
            device: self.device.lock().id(),
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

    fn register(&mut self, engine: &Engine, kernel: &SimKernel) {
        if self.registered_kernels.insert(kernel.id()) {
            engine.register_kernel(KernelSymbol {
                kernel_id: kernel.id(),
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
