//! The software device's "driver API": what an application calls, routed through the replay
//! engine exactly as the CUDA backend routes CUDA calls: allocations enter the inventory, every
//! other call goes through `Engine::enter_call`/`exit_call` with what it does to device memory
//! (as the CUDA backend classifies copies, memsets, allocations and frees), and a launch is
//! `launch_enter` → the application's own execution → `launch_exit` (`launch_failed` when the
//! kernel faulted).

use crate::device::{SharedSimDevice, SimDevice};
use kreplay_core::backend::{CallEffect, DeviceId, DeviceScope};
use kreplay_core::Engine;
use kreplay_format::AgentInfo;
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
    /// How deep the thread is in the runtime's own calls (`api_trace`): only the outermost is
    /// the application's.
    api_depth: u32,
    stream_id: u64,
    /// The arguments of the call being made (`api_args`), for its record.
    next_args: Option<api_args::SimArgs>,
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
                    chip: kreplay_core::reference_chip::SIM_CHIP.to_string(),
                    sm_count: 4,
                    global_memory_bytes: crate::device::DEFAULT_CAPACITY_BYTES,
                    pci_location: String::new(),
                    max_threads_per_sm: 1024,
                    shared_memory_per_sm_bytes: 65_536,
                });
                engine.register_code_object(module::code_object(id as DeviceId));
            }
        }
        SimRuntime {
            device,
            current: 0,
            engine,
            registered_kernels: HashSet::new(),
            api_depth: 0,
            stream_id: next_stream_id(),
            next_args: None,
        }
    }

    /// A runtime for another application thread: same device, same engine, its own stream.
    pub fn share(&self) -> SimRuntime {
        SimRuntime {
            device: self.device.clone(),
            current: self.current,
            engine: self.engine.clone(),
            registered_kernels: HashSet::new(),
            api_depth: 0,
            stream_id: next_stream_id(),
            next_args: None,
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
        let correlation_id = self.next_correlation();
        self.api(api_trace::call_names(name), correlation_id, |runtime| {
            let guard = engine.enter_call(&mut runtime.device, name, effect, scope);
            let result = call(&runtime.device);
            engine.exit_call(&mut runtime.device, guard);
            result
        })
    }

    fn device_id(&self) -> DeviceId {
        self.current
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
}

mod api_args;
mod api_trace;
mod graph;
mod launch;
mod markers;
mod memory;
mod memory_trace;
pub mod module;

pub use graph::GraphNode;
