//! The process-wide tool state: configuration, engine, CUDA backend, record sink, and the
//! bookkeeping of kernels, devices and modules.

use super::callbacks;
use kreplay_backend::graphs::GraphRegistry;
use kreplay_backend::modules::KernelRegistry;
use kreplay_backend::{
    CounterOptions, CudaBackend, CudaEngine, CurrentDispatch, DispatchBackend, MeasureGate,
};
use kreplay_core::backend::{AllocKind, DeviceId, DeviceScope, LaunchKind};
use kreplay_core::config::{InProcessMode, ToolConfig};
use kreplay_core::lifecycle::{self, Endings, Life};
use kreplay_counters::setup::CounterSetup;
use kreplay_cuda::{cupti_call, loader};
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, struct_size};
use kreplay_format::{CounterInfo, ProcessInfo, RecordSink};
use std::collections::{HashMap, HashSet};
use std::ffi::{c_void, CString};
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
    started: std::time::Instant,
    /// The first dispatch's end has been reported.
    first_dispatch_done: AtomicBool,
    /// For `KREPLAY_DEBUG`: cubins scanned at module load, their bytes, nanoseconds spent.
    pub module_scans: [AtomicU64; 3],
    /// For `KREPLAY_DEBUG`: application callbacks (driver calls, launches, resource events),
    /// their count and nanoseconds spent in each kind (launches include their replays).
    pub callback_time: [[AtomicU64; 2]; 3],
}

static TOOL: OnceLock<Tool> = OnceLock::new();

/// The tool while it is on.
pub(crate) fn tool() -> Option<&'static Tool> {
    if lifecycle::life() != Life::On {
        return None;
    }
    TOOL.get()
}

/// The tool for the process that set it up (`None` in a forked child), on or off: for what
/// must still happen after the tool switched itself off (flushing its records).
fn own_tool() -> Option<&'static Tool> {
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
        let _ = std::panic::catch_unwind(|| {
            if let Some(tool) = own_tool() {
                tool.sink.flush();
            }
        });
    }
}

/// One `kreplay: ...` line on stderr; a failed write (a closed pipe) is ignored, never a panic.
pub fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "kreplay: {message}");
}

pub fn initialize() -> Result<(), String> {
    if TOOL.get().is_some() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let mut laps = kreplay_cuda::debug::Laps::start();
    let config = ToolConfig::from_env().map_err(|e| e.to_string())?;
    kreplay_cuda::debug::enable(config.switches.debug);
    let driver = loader::driver().map_err(|e| e.to_string())?;
    laps.lap("configuration and driver");
    let cupti = loader::cupti().map_err(|e| e.to_string())?;
    laps.lap("CUPTI loaded");
    let pid = std::process::id();
    let path = config.database_path_for(pid);
    let writer = kreplay_format::db::DbWriter::create(std::path::Path::new(&path))
        .map_err(|e| format!("cannot write the database {path}: {e}"))?;
    laps.lap("database");
    let sink: Arc<dyn RecordSink> = Arc::new(writer);
    let groups: Vec<Vec<String>> = config
        .groups
        .iter()
        .map(|g| g.metrics().map(str::to_string).collect())
        .collect();
    let counter_infos: Vec<CounterInfo> = config
        .groups
        .iter()
        .flat_map(|g| g.counters.iter())
        .map(|c| CounterInfo {
            name: c.requested.clone(),
            metric: c.metric.clone(),
            description: String::new(),
            unit: String::new(),
        })
        .collect();
    let engine = CudaEngine::for_config(config.clone(), sink.clone()).map_err(|e| e.to_string())?;
    engine.record_process(process_info(pid, config.cache_control, &config.launcher));
    engine.register_counters(counter_infos);
    let options = CounterOptions::for_window(
        config.replay_window.dispatches() as usize,
        config.mode != InProcessMode::KernelReplay,
        config.cache_control,
        config.switches.clone(),
    );
    let mut backend = CudaBackend::new(
        driver,
        (!groups.is_empty()).then_some(cupti),
        groups,
        options,
    );
    backend.set_warn(Box::new(|message| match TOOL.get() {
        Some(tool) => tool.engine.warn_once(message, message),
        None => say(message),
    }));
    // The check runs at the counter set-up, once the tool is in place.
    backend.set_identity_check(config.checked_identity.clone());
    let counter_setup = backend.counter_setup();
    let graph_nodes = !config.groups.is_empty() && config.switches.graph_nodes;
    let tool = Tool {
        engine,
        backend: Mutex::new(backend),
        counter_setup,
        gate: MeasureGate::default(),
        driver,
        cupti,
        sink,
        kernels: KernelRegistry::new(driver),
        graphs: GraphRegistry::default(),
        graph_nodes,
        agents: Mutex::new(HashSet::new()),
        pageable_devices: Mutex::new(HashSet::new()),
        context_devices: Mutex::new(HashMap::new()),
        started,
        first_dispatch_done: AtomicBool::new(false),
        module_scans: Default::default(),
        callback_time: Default::default(),
    };
    if TOOL.set(tool).is_err() {
        return Ok(());
    }
    lifecycle::switch_on();
    laps.lap("engine");
    subscribe(cupti)?;
    laps.lap("subscribed");
    // Every ending of the process (its exit, a signal) runs `finish_process`; a forked child
    // finishes nothing.
    lifecycle::install(Endings::ExitAndSignals, finish_process);
    if let Some(tool) = TOOL.get() {
        tool.phase("injection ready");
        tool.debug(&format!("injection: {}", laps.summary()));
    }
    Ok(())
}

fn subscribe(cupti: &'static Cupti) -> Result<(), String> {
    let name = CString::new("kreplay").expect("no NUL");
    let mut old_name =
        vec![0 as std::ffi::c_char; sys::CUPTI_OLD_SUBSCRIBER_NAME_MIN_LEN as usize + 64];
    let mut params = sys::CUpti_SubscriberParams {
        structSize: struct_size!(sys::CUpti_SubscriberParams, oldSubscriberSize),
        subscriberName: name.as_ptr(),
        oldSubscriberName: old_name.as_mut_ptr(),
        oldSubscriberSize: old_name.len(),
    };
    let mut handle: sys::CUpti_SubscriberHandle = std::ptr::null_mut();
    // SAFETY: the callback is a plain extern "C" function; params point at live buffers.
    let result = unsafe {
        cupti_call!(
            cupti,
            cuptiSubscribe_v2(
                &mut handle,
                Some(callbacks::callback),
                std::ptr::null_mut(),
                &mut params
            )
        )
    };
    if let Err(e) = result {
        lifecycle::switch_off();
        if e.cupti_code()
            == Some(sys::CUptiResult_CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED as i32)
        {
            // SAFETY: CUPTI wrote a NUL-terminated name into the zeroed buffer (or nothing).
            let other =
                unsafe { kreplay_cuda::error::c_text(old_name.as_ptr()) }.unwrap_or_default();
            let other = if other.is_empty() {
                "another CUPTI-based tool (Nsight Systems, Nsight Compute, cuda-gdb, ...)"
                    .to_string()
            } else {
                format!("'{other}'")
            };
            return Err(format!("{other} already holds CUPTI in this process"));
        }
        return Err(e.to_string());
    }
    // SAFETY: enabling domains on our own subscriber, from the one thread that initialises.
    unsafe {
        cupti_call!(
            cupti,
            cuptiEnableDomain(
                1,
                handle,
                sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_DRIVER_API
            )
        )
        .map_err(|e| e.to_string())?;
        cupti_call!(
            cupti,
            cuptiEnableDomain(
                1,
                handle,
                sys::CUpti_CallbackDomain_CUPTI_CB_DOMAIN_RESOURCE
            )
        )
        .map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The process ends (its exit handlers, or a signal's last words, see
/// [`kreplay_core::lifecycle`], which runs this once): the open window's passes run, every
/// record is flushed.
fn finish_process() {
    let _ = std::panic::catch_unwind(|| {
        if let Some(tool) = own_tool() {
            // What is queued is committed first: the window's passes below need the tool's
            // locks, which the thread a signal interrupted may hold.
            tool.sink.flush();
            // A replay window still open (no CUDA call since its last launch) runs its passes
            // now. Exit handlers run in reverse order of registration and this one is
            // registered inside cuInit, so it is expected (not verified) to run before a
            // teardown handler the CUDA runtime registered earlier, while contexts exist.
            let mut backend = DispatchBackend::new(
                &tool.backend,
                &tool.gate,
                CurrentDispatch::passive(std::ptr::null_mut(), std::ptr::null_mut()),
            );
            tool.phase("exit handler");
            if let Some(setup) = &tool.counter_setup {
                setup.finish_all();
            }
            let [scans, bytes, nanos] = &tool.module_scans;
            tool.debug(&format!(
                "{} cubin(s) scanned at module load, {:.1} MiB, {:.1} ms",
                scans.load(Ordering::Relaxed),
                bytes.load(Ordering::Relaxed) as f64 / (1 << 20) as f64,
                nanos.load(Ordering::Relaxed) as f64 / 1e6
            ));
            // ENTER and EXIT count separately: two callbacks per driver call or launch.
            let kinds = [
                "driver-call callbacks",
                "launch callbacks (with their replays)",
                "resource events",
            ];
            let spent: Vec<String> = kinds
                .iter()
                .zip(&tool.callback_time)
                .map(|(kind, [count, nanos])| {
                    format!(
                        "{} {kind} {:.1} ms",
                        count.load(Ordering::Relaxed),
                        nanos.load(Ordering::Relaxed) as f64 / 1e6
                    )
                })
                .collect();
            tool.debug(&format!("time in callbacks: {}", spent.join(", ")));
            warn_of_other_cupti(tool);
            tool.engine.finish_with(&mut backend);
            tool.phase("records flushed");
            for line in lock(&tool.backend).pass_summary() {
                say(&line);
            }
        }
    });
}

/// The application loaded a CUPTI of its own (PyTorch maps one at import, for Kineto behind
/// `torch.profiler`): a process has one CUPTI subscriber, kreplay, so a profiler the application
/// runs on that copy gets no GPU events. Whether it runs one cannot be seen from here, so the
/// line says "if". Said once, at the end (the copy may be loaded at any time).
fn warn_of_other_cupti(tool: &Tool) {
    let copies = loader::other_cupti_copies();
    if let Some(first) = copies.first() {
        tool.warn_once(
            "other-cupti",
            &format!(
                "the application loaded its own CUPTI ({}{}): if it profiles itself with it (torch.profiler, Kineto, JAX's profiler), those GPU events are lost while kreplay profiles the process (one CUPTI subscriber per process)",
                first.display(),
                if copies.len() > 1 { ", and more" } else { "" }
            ),
        );
    }
}

/// `/proc/self/cmdline`: every argument ends with a NUL. Empty arguments are kept (the command
/// line is recorded exactly); only the piece after the last terminator is not an argument.
fn parse_cmdline(bytes: &[u8]) -> Vec<String> {
    let body = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    if body.is_empty() {
        return Vec::new();
    }
    body.split(|b| *b == 0)
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect()
}

fn process_info(
    pid: u32,
    cache_control: kreplay_format::CacheControl,
    launcher: &kreplay_core::config::LauncherRank,
) -> ProcessInfo {
    let command = std::fs::read("/proc/self/cmdline")
        .map(|bytes| parse_cmdline(&bytes))
        .unwrap_or_default();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    ProcessInfo {
        pid,
        ppid: std::os::unix::process::parent_id(),
        hostname,
        command,
        start_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
        end_ns: 0,
        rank: launcher.rank.clone(),
        size: launcher.size.clone(),
        cache_control,
        sections: Vec::new(),
    }
}

impl Tool {
    /// Says `message` once per process (stderr and a Warning record), through the engine's
    /// bookkeeping and logger.
    pub fn warn_once(&self, key: &'static str, message: &str) {
        self.engine.warn_once(key, message);
    }

    /// The device ordinal of a context (cached).
    pub fn device_of(&self, ctx: sys::CUcontext) -> Option<DeviceId> {
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
        let description =
            kreplay_cuda::kernel::describe_device(self.driver, device as sys::CUdevice)
                .unwrap_or_default();
        let pageable =
            kreplay_cuda::launch::pageable_memory_access(self.driver, device as sys::CUdevice);
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
        if self.engine.config().mode != InProcessMode::KernelReplay {
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

/// A host pointer as the inventory's address.
pub(crate) fn host_address(p: *mut c_void) -> u64 {
    p as u64
}

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

    #[test]
    fn cmdline_keeps_empty_arguments_and_drops_only_the_terminator() {
        assert_eq!(parse_cmdline(b"./app\0\0x\0"), vec!["./app", "", "x"]);
        assert_eq!(parse_cmdline(b"./app\0"), vec!["./app"]);
        assert!(parse_cmdline(b"").is_empty());
    }
}
