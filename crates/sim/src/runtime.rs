//! The software device's "driver API": what an application calls, routed through the replay
//! engine exactly as the CUDA backend routes CUDA calls: allocations enter the inventory, every
//! other call goes through `Engine::enter_call`/`exit_call` with what it does to device memory
//! (as the CUDA backend classifies copies, memsets, allocations and frees), and a launch is
//! `launch_enter` → the application's own execution → `launch_exit` (`launch_failed` when the
//! kernel faulted).

use crate::device::{SharedSimDevice, SimDevice, SimError, SimKernel, SimLaunch};
use kreplay_core::backend::{
    AllocKind, CallEffect, DeviceId, DeviceScope, DispatchInfo, LaunchKind,
};
use kreplay_core::Engine;
use kreplay_format::{AgentInfo, KernelSymbol};
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, MutexGuard};

/// The engine for the software device.
pub type SimEngine = Engine<SimDevice>;

/// Streams are numbered per process, from 1, one per runtime.
fn next_stream_id() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// One application thread's handle on a process's software devices (one, or several with
/// [`SimRuntime::with_devices`]), profiled when an engine is attached; its calls go to its
/// current device ([`SimRuntime::set_device`], like `cudaSetDevice`). [`SimRuntime::share`]
/// gives another thread a runtime on the same devices and engine.
pub struct SimRuntime {
    device: SharedSimDevice,
    /// The device this thread's calls go to.
    current: DeviceId,
    engine: Option<Arc<SimEngine>>,
    registered_kernels: HashSet<u64>,
    next_correlation_id: u64,
    stream_id: u64,
}

impl SimRuntime {
    /// `engine: None` runs unprofiled (the reference execution).
    pub fn new(device: SimDevice, engine: Option<Arc<SimEngine>>) -> SimRuntime {
        Self::with_devices(vec![device], engine)
    }

    /// A process with several devices, numbered 0, 1, ... in order; calls go to device 0 until
    /// [`SimRuntime::set_device`].
    pub fn with_devices(devices: Vec<SimDevice>, engine: Option<Arc<SimEngine>>) -> SimRuntime {
        let device = SharedSimDevice::many(devices);
        if let Some(engine) = &engine {
            for id in 0..device.count() {
                engine.register_agent(AgentInfo {
                    agent_id: id as u64,
                    name: "kreplay software device".to_string(),
                    chip: crate::SIM_CHIP.to_string(),
                    sm_count: 4,
                    global_memory_bytes: crate::device::DEFAULT_CAPACITY_BYTES,
                    pci_location: String::new(),
                    max_threads_per_sm: 1024,
                    shared_memory_per_sm_bytes: 65_536,
                });
            }
        }
        SimRuntime {
            device,
            current: 0,
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
            current: self.current,
            engine: self.engine.clone(),
            registered_kernels: HashSet::new(),
            next_correlation_id: 0,
            stream_id: next_stream_id(),
        }
    }

    /// The current device, locked.
    pub fn device(&self) -> MutexGuard<'_, SimDevice> {
        self.device.on(self.current)
    }

    /// How many devices the process has.
    pub fn device_count(&self) -> usize {
        self.device.count()
    }

    /// Makes `device` (a number [`SimRuntime::with_devices`] gave) the one this thread's calls
    /// go to.
    pub fn set_device(&mut self, device: DeviceId) {
        assert!(
            (device as usize) < self.device.count(),
            "no device {device}"
        );
        self.current = device;
    }

    pub fn engine(&self) -> Option<&Arc<SimEngine>> {
        self.engine.as_ref()
    }

    /// Runs `call` on the device inside `Engine::enter_call`/`exit_call` (when profiled).
    fn call<T>(
        &mut self,
        name: &str,
        effect: CallEffect,
        call: impl FnOnce(&mut SimDevice) -> T,
    ) -> T {
        let current = self.current;
        self.call_on(name, effect, DeviceScope::One(current), |devices| {
            call(&mut devices.on(current))
        })
    }

    /// As [`SimRuntime::call`], for a call of `scope` that may use any device.
    fn call_on<T>(
        &mut self,
        name: &str,
        effect: CallEffect,
        scope: DeviceScope,
        call: impl FnOnce(&SharedSimDevice) -> T,
    ) -> T {
        let Some(engine) = self.engine.clone() else {
            return call(&self.device);
        };
        let guard = engine.enter_call(&mut self.device, name, effect, scope);
        let result = call(&self.device);
        engine.exit_call(&mut self.device, guard);
        result
    }

    fn device_id(&self) -> DeviceId {
        self.current
    }

    /// Allocates and (when profiled) records the allocation in the engine's inventory.
    pub fn alloc(&mut self, kind: AllocKind, bytes: u64) -> Result<u64, SimError> {
        let region = self.call("alloc", CallEffect::NoDeviceWrite, |d| d.alloc(kind, bytes))?;
        if let Some(engine) = &self.engine {
            engine.inventory().insert(region);
        }
        Ok(region.base)
    }

    pub fn free(&mut self, base: u64) -> Result<(), SimError> {
        let device = self.device_id();
        self.call("free", CallEffect::Frees, |d| d.free(base))?;
        if let Some(engine) = &self.engine {
            engine.inventory().remove(device, base);
        }
        Ok(())
    }

    /// A host-to-device copy.
    pub fn write_u32s(&mut self, address: u64, values: &[u32]) -> Result<(), SimError> {
        let effect = self.writes(address, values.len() as u64 * 4);
        self.call("write_u32s", effect, |d| d.write_u32s(address, values))
    }

    /// The host's own store into memory it can reach directly (managed memory): no CUDA call,
    /// so nothing the tool sees.
    pub fn host_store_u32(&mut self, address: u64, value: u32) -> Result<(), SimError> {
        self.device().write_u32s(address, &[value])
    }

    /// A device-to-host copy.
    pub fn read_u32s(&mut self, address: u64, count: usize) -> Result<Vec<u32>, SimError> {
        self.call("read_u32s", CallEffect::NoDeviceWrite, |d| {
            d.read_u32s(address, count)
        })
    }

    /// A device-to-device copy.
    pub fn copy(&mut self, dst: u64, src: u64, bytes: u64) -> Result<(), SimError> {
        let effect = self.writes(dst, bytes);
        self.call("copy", effect, |d| d.copy(dst, src, bytes))
    }

    /// A copy from `src` on `src_device` to `dst` on the current device (as `cudaMemcpyPeer`):
    /// a call that touches two devices, so it holds off replays on every device.
    pub fn copy_peer(
        &mut self,
        dst: u64,
        src_device: DeviceId,
        src: u64,
        bytes: u64,
    ) -> Result<(), SimError> {
        let effect = self.writes(dst, bytes);
        let current = self.current;
        self.call_on("copy_peer", effect, DeviceScope::All, |devices| {
            let data = devices
                .on(src_device)
                .read_u32s(src, (bytes / 4) as usize)?;
            devices.on(current).write_u32s(dst, &data)
        })
    }

    /// A memset of `u32`s.
    pub fn fill_u32s(&mut self, dst: u64, value: u32, count: usize) -> Result<(), SimError> {
        let effect = self.writes(dst, count as u64 * 4);
        self.call("fill_u32s", effect, |d| d.fill_u32s(dst, value, count))
    }

    /// A synchronisation: nothing to do on a synchronous device, but a call all the same.
    pub fn synchronize(&mut self) {
        self.call("synchronize", CallEffect::NoDeviceWrite, |_| ())
    }

    fn writes(&self, base: u64, bytes: u64) -> CallEffect {
        CallEffect::DeviceWrite {
            device: self.device_id(),
            base,
            bytes,
        }
    }

    /// The end of the process: closes an open replay window (its passes run here), then
    /// flushes every record.
    pub fn finish(&mut self) {
        if let Some(engine) = self.engine.clone() {
            engine.finish_with(&mut self.device);
        }
    }

    /// What [`SimRuntime::finish`] does, callable from another thread (the last words of a
    /// process ended by a signal, see `kreplay_core::lifecycle`).
    pub fn finisher(&self) -> impl Fn() + Send + Sync + 'static {
        let engine = self.engine.clone();
        let device = self.device.clone();
        move || {
            if let Some(engine) = &engine {
                engine.finish_with(&mut device.clone());
            }
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
