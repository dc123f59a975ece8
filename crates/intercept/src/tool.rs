//! The process-wide tool state: configuration, engine, CUDA backend, record sink, and the
//! bookkeeping of kernels, devices and modules; the questions the callbacks ask of it (a
//! context's device, the memory a launch or call reaches); and whether it is on, the
//! lifecycle's state (`kreplay_core::lifecycle`).

use kreplay_backend::graphs::GraphRegistry;
use kreplay_backend::modules::KernelRegistry;
use kreplay_backend::{CudaBackend, CudaEngine, CurrentDispatch, DispatchBackend, MeasureGate};
use kreplay_core::backend::{AllocKind, DeviceId, DeviceScope, LaunchKind};
use kreplay_core::config::InProcessMode;
use kreplay_core::lifecycle::{self, Life};
use kreplay_counters::setup::CounterSetup;
use kreplay_cuda::{CUcontext, CUdevice, Cupti, Driver};
use kreplay_format::RecordSink;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

pub(crate) struct Tool {
    pub engine: CudaEngine,
    pub backend: Mutex<CudaBackend>,
    /// The backend's counter set-ups, started from the context-creation callback without the
    /// backend's lock (see `kreplay_counters::setup`). `None` without counters.
    pub counter_setup: Option<CounterSetup>,
    pub gate: MeasureGate,
    pub driver: &'static Driver,
    pub cupti: &'static Cupti,
    pub sink: Arc<dyn RecordSink>,
    /// The kernels and modules launched from (ids, names, module variables, side effects).
    pub kernels: KernelRegistry,
    /// Executable graphs read at instantiation, run node by node (`kreplay_backend::graphs`).
    pub graphs: GraphRegistry,
    /// Graph launches run node by node: counters are collected and `KREPLAY_GRAPH_NODES` is
    /// not 0.
    pub graph_nodes: bool,
    pub agents: Mutex<HashSet<DeviceId>>,
    /// Devices whose kernels reach pageable host memory (HMM, ATS), found at registration.
    pub pageable_devices: Mutex<HashSet<DeviceId>>,
    pub context_devices: Mutex<HashMap<usize, DeviceId>>,
    /// When `InitializeInjection` began (for the phase times of `KREPLAY_DEBUG`).
    pub started: std::time::Instant,
    /// The first dispatch's end has been reported.
    pub first_dispatch_done: AtomicBool,
    /// For `KREPLAY_DEBUG`: cubins scanned at module load, their bytes, nanoseconds spent.
    pub module_scans: [AtomicU64; 3],
    /// For `KREPLAY_DEBUG`: application callbacks (driver calls, launches, resource events),
    /// their count and nanoseconds spent in each kind (launches include their replays).
    pub callback_time: [[AtomicU64; 2]; 3],
    /// For `KREPLAY_DEBUG`: where a launch's callbacks spend their time (see
    /// [`crate::launches::LAUNCH_STAGES`]), count and nanoseconds of each.
    pub launch_stages: [[AtomicU64; 2]; 3],
}

static TOOL: OnceLock<Tool> = OnceLock::new();

/// Makes `tool` the process's tool; `false` when one was set already (that one stays).
pub(crate) fn set_tool(tool: Tool) -> bool {
    TOOL.set(tool).is_ok()
}

/// The process's tool once set, whatever its state (for its own start, and for what may be
/// said before it is on).
pub(crate) fn set_up_tool() -> Option<&'static Tool> {
    TOOL.get()
}

/// The tool while it is on.
pub(crate) fn tool() -> Option<&'static Tool> {
    if lifecycle::life() != Life::On {
        return None;
    }
    TOOL.get()
}

/// The tool for the process that set it up (`None` in a forked child), on or off: for what
/// must still happen after the tool switched itself off (flushing its records).
pub(crate) fn own_tool() -> Option<&'static Tool> {
    if lifecycle::life() == Life::ForkedChild {
        return None;
    }
    TOOL.get()
}

/// Switches the tool off for the rest of the process (on → off), saying why once.
/// Runs outside the callbacks' `catch_unwind`, so it must not panic itself: stderr errors are
/// ignored (`eprintln!` panics on EPIPE) and the flush is guarded.
pub(crate) fn disable(reason: &str) {
    if lifecycle::switch_off() {
        say(&format!(
            "{reason}; profiling is off for the rest of this process, the application continues"
        ));
        // What was recorded goes to disk, waited for at most a second: the application's
        // thread is never held on the writer's I/O (a long backlog drains on its own, and the
        // end of the process waits for the rest).
        let _ = std::panic::catch_unwind(|| {
            if let Some(tool) = own_tool() {
                tool.sink.commit_within(std::time::Duration::from_secs(1));
            }
        });
    }
}

/// One `kreplay: ...` line on stderr; a failed write (a closed pipe) is ignored, never a panic.
pub fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "kreplay: {message}");
}

impl Tool {
    /// Says `message` once per process (stderr and a Warning record), through the engine's
    /// bookkeeping and logger.
    pub fn warn_once(&self, key: &'static str, message: &str) {
        self.engine.warn_once(key, message);
    }

    /// For `KREPLAY_DEBUG`: adds the time since `since` to launch stage `stage`.
    pub fn launch_stage(&self, stage: usize, since: Option<std::time::Instant>) {
        if let Some(since) = since {
            let [count, nanos] = &self.launch_stages[stage];
            count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            nanos.fetch_add(
                since.elapsed().as_nanos() as u64,
                std::sync::atomic::Ordering::Relaxed,
            );
        }
    }

    /// The backend for an engine call outside a dispatch the tool prepared (a call's fence, a
    /// context's end, the exit): passive on `ctx`, it touches no device for the dispatch.
    pub fn passive_backend(&self, ctx: CUcontext) -> DispatchBackend<'_> {
        DispatchBackend::new(
            &self.backend,
            &self.gate,
            CurrentDispatch::passive(ctx, std::ptr::null_mut()),
        )
    }

    /// The device ordinal of a context (cached).
    pub fn device_of(&self, ctx: CUcontext) -> Option<DeviceId> {
        if let Some(device) = lock(&self.context_devices).get(&(ctx as usize)) {
            return Some(*device);
        }
        let device = kreplay_cuda::query::context_device(self.driver, ctx)?;
        lock(&self.context_devices).insert(ctx as usize, device);
        Some(device)
    }

    pub fn register_agent(&self, device: DeviceId) {
        if !lock(&self.agents).insert(device) {
            return;
        }
        let description = kreplay_cuda::kernel::describe_device(self.driver, device as CUdevice)
            .unwrap_or_default();
        let pageable =
            kreplay_cuda::launch::pageable_memory_access(self.driver, device as CUdevice);
        if pageable {
            lock(&self.pageable_devices).insert(device);
        }
        let chip =
            kreplay_counters::profiler::chip_name(self.cupti, device as usize).unwrap_or_default();
        self.engine.register_agent(kreplay_format::AgentInfo {
            agent_id: u64::from(device),
            name: description.name,
            chip,
            sm_count: description.sm_count,
            global_memory_bytes: description.global_memory_bytes,
            pci_location: description.pci_location,
            max_threads_per_sm: description.max_threads_per_sm,
            shared_memory_per_sm_bytes: description.shared_memory_per_sm_bytes,
        });
    }

    /// What a kernel launch on `device` reaches through its parameter words (`words`, its
    /// possible addresses, asked for only when needed): another device's memory
    /// ([`LaunchKind::PeerMemory`], when the process has memory on several devices), ordinary
    /// host memory the device reaches directly ([`LaunchKind::PageableHost`], on a device with
    /// pageable memory access); no snapshot covers either, so such a launch must not be
    /// replayed. Asks nothing in other modes, where no launch runs twice.
    pub fn launch_memory_kind(
        &self,
        device: DeviceId,
        words: impl FnOnce() -> Vec<u64>,
    ) -> LaunchKind {
        // Nothing is replayed in a run without counters, nor outside kernel replay.
        let config = self.engine.config();
        if config.mode != InProcessMode::KernelReplay || config.groups.is_empty() {
            return LaunchKind::Kernel;
        }
        let inventory = self.engine.inventory();
        let peers = inventory.devices().iter().any(|d| *d != device);
        let pageable = lock(&self.pageable_devices).contains(&device);
        if !peers && !pageable {
            return LaunchKind::Kernel;
        }
        let words = words();
        if peers && self.scope_of(device, &words) == DeviceScope::All {
            return LaunchKind::PeerMemory;
        }
        let reaches_host = pageable
            && kreplay_cuda::launch::pageable_host_word(self.driver, &words, |word| {
                inventory.find_anywhere(word).is_some()
            })
            .is_some();
        if reaches_host {
            LaunchKind::PageableHost
        } else {
            LaunchKind::Kernel
        }
    }

    /// The devices a call or launch on `device` that names `addresses` may touch: `device`
    /// alone, or every device when one of the addresses is another device's memory (host
    /// memory, visible to all, and unknown addresses do not count).
    pub fn scope_of(&self, device: DeviceId, addresses: &[u64]) -> DeviceScope {
        let inventory = self.engine.inventory();
        let elsewhere = addresses.iter().any(|&address| {
            inventory
                .find_anywhere(address)
                .is_some_and(|r| r.device != device && r.kind != AllocKind::Host)
        });
        if elsewhere {
            DeviceScope::All
        } else {
            DeviceScope::One(device)
        }
    }

    /// A diagnostic line, printed when `KREPLAY_DEBUG` is set.
    pub fn debug(&self, line: &str) {
        kreplay_cuda::debug::line(line);
    }

    /// With `KREPLAY_DEBUG`: when one of the tool's phases ended, since `InitializeInjection`.
    pub fn phase(&self, what: &str) {
        self.debug(&format!(
            "{what} at {:.1} ms",
            self.started.elapsed().as_secs_f64() * 1e3
        ));
    }

    /// With `KREPLAY_DEBUG`: the end of the first dispatch (counters set up, measured, replayed).
    pub fn first_dispatch_done(&self) {
        if kreplay_cuda::debug::enabled() && !self.first_dispatch_done.swap(true, Ordering::Relaxed)
        {
            self.phase("first dispatch done");
        }
    }
}

pub(crate) use kreplay_cuda::lock;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_sees_the_tool_switched_off_and_the_parent_does_not() {
        // As `initialize` does, through the lifecycle.
        lifecycle::fork::watch_forks();
        // SAFETY: the child only reads an atomic and calls _exit.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            // Switching off in the child leaves it a forked child (never flushing the parent's
            // writer).
            disable("test");
            let code = if lifecycle::life() == Life::ForkedChild {
                0
            } else {
                1
            };
            // SAFETY: ends the child without the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status));
        assert_eq!(
            libc::WEXITSTATUS(status),
            0,
            "the child saw itself as a forked child"
        );
        assert_ne!(
            lifecycle::life(),
            Life::ForkedChild,
            "the parent is not a forked child"
        );
    }

    #[test]
    fn until_initialised_switching_off_changes_nothing() {
        // No test calls `initialize` (it needs a driver).
        assert_eq!(lifecycle::life(), Life::Uninitialised);
        disable("test");
        assert_eq!(
            lifecycle::life(),
            Life::Uninitialised,
            "only an active tool switches off"
        );
    }
}
