//! CUPTI's resource events: a module loaded (recorded as a code object, its kernels and
//! variables scanned), a context created (its counter set-up begun) or destroyed (its window
//! closed, its state dropped), an executable graph instantiated or destroyed.

use crate::graph_exec;
use crate::tool::{lock, Tool};
use kreplay_backend::module_symbols::scan_cubin;
use kreplay_core::backend::DeviceScope;
use kreplay_cuda::callback::resource::{ResourceData, ResourceEvent};
use kreplay_cuda::guard::in_tool;
use std::sync::atomic::Ordering;

pub(crate) fn on_resource(tool: &'static Tool, cbid: u32, data: &ResourceData) {
    match data.event(cbid) {
        ResourceEvent::ModuleLoaded { cubin } => {
            let Some(image) = cubin else {
                return;
            };
            let began = std::time::Instant::now();
            let scanned = scan_cubin(image);
            if kreplay_cuda::debug::enabled() {
                let [scans, bytes, nanos] = &tool.module_scans;
                scans.fetch_add(1, Ordering::Relaxed);
                bytes.fetch_add(image.len() as u64, Ordering::Relaxed);
                nanos.fetch_add(began.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
            // Every load is a code object of the context's device (0 if it cannot be told).
            let device = tool.device_of(data.context()).unwrap_or(0);
            let kernels = scanned.as_ref().map_or(&[][..], |s| &s.kernels[..]);
            tool.kernels
                .module_loaded(&tool.engine, device, image, kernels);
            match scanned {
                Ok(symbols) => {
                    tool.debug(&format!(
                        "module loaded: {} kernels, variables {:?}",
                        symbols.kernels.len(),
                        symbols
                            .variables
                            .iter()
                            .map(|v| v.name.as_str())
                            .collect::<Vec<_>>()
                    ));
                    tool.kernels.cubin_loaded(symbols);
                }
                Err(e) => tool.debug(&format!("module loaded, not an ELF cubin: {e}")),
            }
        }
        // The tool's own streams too: their handles may be the application's next.
        ResourceEvent::StreamDestroying => crate::stream_ids::stream_destroying(),
        _ if in_tool() => {}
        ResourceEvent::GraphExecCreated { graph, exec } => {
            graph_exec::on_instantiated(tool, data.context(), graph, exec)
        }
        ResourceEvent::GraphExecDestroying { exec } => graph_exec::on_destroying(tool, exec),
        // The driver holds locks of its own during resource callbacks: nothing here may wait
        // for the backend's lock, which is held across counter calls that take those locks.
        ResourceEvent::ContextCreated => {
            tool.phase("context created");
            if let Some(setup) = &tool.counter_setup {
                setup.prepare(data.context());
            }
        }
        ResourceEvent::ContextDestroying => {
            // A counter set-up still running on it stops first (it must not outlive it).
            if let Some(setup) = &tool.counter_setup {
                setup.abandon(data.context());
            }
            // A replay window still open on this context runs its passes while it exists.
            let mut backend = tool.passive_backend(data.context());
            // Every device: no driver query inside a resource callback of a dying context.
            drop(
                tool.engine
                    .fence_for(&mut backend, "context destruction", DeviceScope::All),
            );
            kreplay_cuda::drain::forget_context(data.context());
            // Not waiting long for the backend's lock: its holder may wait in CUPTI for a
            // driver lock this thread holds. Without it, the tool's state for the context stays
            // and is replaced when a dispatch finds the device with another context.
            let began = std::time::Instant::now();
            loop {
                match tool.backend.try_lock() {
                    Ok(mut b) => break b.forget_context(data.context()),
                    Err(std::sync::TryLockError::Poisoned(p)) => {
                        break p.into_inner().forget_context(data.context())
                    }
                    Err(std::sync::TryLockError::WouldBlock)
                        if began.elapsed() < std::time::Duration::from_millis(100) =>
                    {
                        std::thread::sleep(std::time::Duration::from_micros(200))
                    }
                    Err(std::sync::TryLockError::WouldBlock) => break tool.debug(
                        "context destroyed while the backend was busy: its state is replaced later",
                    ),
                }
            }
            lock(&tool.context_devices).remove(&(data.context() as usize));
            tool.graphs.context_destroyed(data.context());
        }
        ResourceEvent::Other => {}
    }
}
