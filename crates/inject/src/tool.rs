//! The process-wide tool state: configuration, engine, CUDA backend, record sink, and the
//! bookkeeping of kernels, devices and modules.

use crate::callbacks;
use kreplay_core::backend::{AllocKind, DeviceId, LaunchKind, Region};
use kreplay_core::config::{InProcessMode, ToolConfig};
use kreplay_cuda::backend::{
    CounterOptions, CudaBackend, CudaEngine, CurrentDispatch, DispatchBackend, MeasureGate,
};
use kreplay_cuda::module_symbols::{CubinSymbols, SideEffect};
use kreplay_cuda::setup::CounterSetup;
use kreplay_cuda::{cupti_call, drv, loader};
use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use kreplay_cupti_sys::{self as sys, struct_size};
use kreplay_format::{CounterInfo, KernelSymbol, ProcessInfo, RecordSink};
use std::collections::{HashMap, HashSet};
use std::ffi::{c_void, CString};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// See [`Tool::module_contents`].
#[derive(Default)]
pub(crate) struct ModuleContents {
    /// Launched functions (`CUfunction` or `CUkernel` handles).
    pub functions: HashSet<usize>,
    /// Tracked `__device__`/`__constant__` variables: device and address.
    pub variables: Vec<(DeviceId, u64)>,
}

pub(crate) struct Tool {
    pub engine: CudaEngine,
    pub backend: Mutex<CudaBackend>,
    /// The backend's counter set-ups, started from the context-creation callback without the
    /// backend's lock (see `kreplay_cuda::setup`). `None` without counters.
    pub counter_setup: Option<CounterSetup>,
    pub gate: MeasureGate,
    pub driver: &'static Driver,
    pub cupti: &'static Cupti,
    pub sink: Arc<dyn RecordSink>,
    pub kernels: Mutex<HashMap<usize, KernelEntry>>,
    next_kernel_id: AtomicU64,
    pub agents: Mutex<HashSet<DeviceId>>,
    /// Devices whose kernels reach pageable host memory (HMM, ATS), found at registration.
    pub pageable_devices: Mutex<HashSet<DeviceId>>,
    pub context_devices: Mutex<HashMap<usize, DeviceId>>,
    /// Cubins loaded but not yet matched to a module handle (see `resolve_module_variables`).
    pub pending_cubins: Mutex<Vec<CubinSymbols>>,
    /// Kernels (mangled names) whose code prints or uses the device heap, from every cubin
    /// loaded so far: they run once ([`Tool::launch_kind_of`]).
    pub kernel_effects: Mutex<HashMap<String, LaunchKind>>,
    /// Modules (or libraries) whose variables are tracked, per device.
    pub resolved_modules: Mutex<HashSet<(usize, DeviceId)>>,
    /// Launch handles whose module variables were looked for on a device.
    pub resolved_launches: Mutex<HashSet<(usize, DeviceId)>>,
    /// What each loaded module or library (by handle) brought: its launched functions and the
    /// variables tracked for it, forgotten when it is unloaded (see [`Tool::forget_module`]).
    pub module_contents: Mutex<HashMap<usize, ModuleContents>>,
    /// `KREPLAY_DEBUG` is set: print diagnostics of module-variable tracking and the time
    /// the tool's own phases end at.
    pub debug: bool,
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

#[derive(Debug, Clone)]
pub(crate) struct KernelEntry {
    pub id: u64,
    pub mangled: String,
}

static TOOL: OnceLock<Tool> = OnceLock::new();
/// Set when the tool switches itself off (a panic, another CUPTI subscriber).
static DISABLED: AtomicBool = AtomicBool::new(false);

/// Set in a child the application forked without exec: the tool's threads, its writer and the
/// CUDA state it holds belong to the parent, so the child's callbacks and exit do nothing.
static FORKED: AtomicBool = AtomicBool::new(false);

extern "C" fn in_forked_child() {
    FORKED.store(true, Ordering::SeqCst);
}

pub(crate) fn tool() -> Option<&'static Tool> {
    if DISABLED.load(Ordering::Relaxed) || FORKED.load(Ordering::Relaxed) {
        return None;
    }
    TOOL.get()
}

/// The tool for the process that set it up (`None` in a forked child), disabled or not: for
/// what must still happen after the tool switched itself off (flushing its records).
fn own_tool() -> Option<&'static Tool> {
    if FORKED.load(Ordering::Relaxed) {
        return None;
    }
    TOOL.get()
}

/// Switches the tool off for the rest of the process, saying why once.
/// Runs outside the callbacks' `catch_unwind`, so it must not panic itself: stderr errors are
/// ignored (`eprintln!` panics on EPIPE) and the flush is guarded.
pub(crate) fn disable(reason: &str) {
    if !DISABLED.swap(true, Ordering::SeqCst) {
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
pub(crate) fn say(message: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "kreplay: {message}");
}

pub(crate) fn initialize() -> Result<(), String> {
    if TOOL.get().is_some() {
        return Ok(());
    }
    let started = std::time::Instant::now();
    let mut laps = kreplay_cuda::debug::Laps::start();
    let config = ToolConfig::from_env().map_err(|e| e.to_string())?;
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
    engine.record_process(process_info(pid, config.cache_control));
    engine.register_counters(counter_infos);
    let options = CounterOptions {
        max_ranges: config.replay_window.dispatches() as usize,
        single_group_schedules: config.mode != InProcessMode::KernelReplay,
        cache_control: config.cache_control,
        switches: config.switches.clone(),
    };
    let mut backend = CudaBackend::new(
        driver,
        (!groups.is_empty()).then_some(cupti),
        groups,
        options,
    );
    // The check runs at the counter set-up, once the tool is in place.
    backend.set_identity_check(
        config.checked_identity.clone(),
        Box::new(|message| match TOOL.get() {
            Some(tool) => tool.engine.warn_once(message, message),
            None => say(message),
        }),
    );
    let counter_setup = backend.counter_setup();
    let tool = Tool {
        engine,
        backend: Mutex::new(backend),
        counter_setup,
        gate: MeasureGate::default(),
        driver,
        cupti,
        sink,
        kernels: Mutex::new(HashMap::new()),
        next_kernel_id: AtomicU64::new(1),
        agents: Mutex::new(HashSet::new()),
        pageable_devices: Mutex::new(HashSet::new()),
        context_devices: Mutex::new(HashMap::new()),
        pending_cubins: Mutex::new(Vec::new()),
        kernel_effects: Mutex::new(HashMap::new()),
        resolved_modules: Mutex::new(HashSet::new()),
        resolved_launches: Mutex::new(HashSet::new()),
        module_contents: Mutex::new(HashMap::new()),
        debug: kreplay_cuda::debug::enabled(),
        started,
        first_dispatch_done: AtomicBool::new(false),
        module_scans: Default::default(),
        callback_time: Default::default(),
    };
    if TOOL.set(tool).is_err() {
        return Ok(());
    }
    laps.lap("engine");
    subscribe(cupti)?;
    laps.lap("subscribed");
    // SAFETY: registers plain extern "C" functions.
    unsafe {
        libc::pthread_atfork(None, None, Some(in_forked_child));
        libc::atexit(at_exit);
    }
    kreplay_core::last_words::install(finish_process);
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
        DISABLED.store(true, Ordering::SeqCst);
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

extern "C" fn at_exit() {
    // A signal on this thread while it finishes would wait for the finish it interrupted (30 s,
    // then the window's passes lost): it is held until the exit, or taken by another thread.
    kreplay_core::last_words::hold_signals();
    finish_process();
}

/// The process ends (its exit handlers, or a signal's last words, see
/// [`kreplay_core::last_words`]): the open window's passes run, every record is flushed. Once.
fn finish_process() {
    // A second caller (exit while a signal's last words run, or the reverse) waits for the
    // first to finish instead of ending the process under it.
    static FINISHED: std::sync::Once = std::sync::Once::new();
    FINISHED.call_once(finish_process_once);
}

fn finish_process_once() {
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

fn process_info(pid: u32, cache_control: kreplay_format::CacheControl) -> ProcessInfo {
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
        rank: kreplay_format::launcher_rank(kreplay_format::RANK_VARIABLES, |name| {
            std::env::var(name).ok()
        }),
        size: kreplay_format::launcher_rank(kreplay_format::SIZE_VARIABLES, |name| {
            std::env::var(name).ok()
        }),
        cache_control,
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
        let _scope = kreplay_cuda::guard::ToolScope::enter();
        let mut device: sys::CUdevice = 0;
        // SAFETY: writes the ordinal of a live context's device.
        unsafe { drv!(self.driver, cuCtxGetDevice_v2(&mut device, ctx)) }.ok()?;
        let device = device as DeviceId;
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
        let pageable = {
            let _scope = kreplay_cuda::guard::ToolScope::enter();
            kreplay_cuda::launch::pageable_memory_access(self.driver, device as sys::CUdevice)
        };
        if pageable {
            lock(&self.pageable_devices).insert(device);
        }
        let chip = {
            let _scope = kreplay_cuda::guard::ToolScope::enter();
            kreplay_cuda::profiler::chip_name(self.cupti, device as usize).unwrap_or_default()
        };
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

    /// Notes the kernels of a loaded cubin that cannot be replayed safely. The device heap
    /// wins over printf (both run once; the heap is the reason that breaks a replay). A kernel
    /// name in several modules takes the strictest of them.
    pub fn note_side_effects(&self, symbols: &CubinSymbols) {
        let mut effects = lock(&self.kernel_effects);
        for kernel in &symbols.kernels {
            let found = symbols.side_effects_of(kernel);
            let kind = if found.contains(&SideEffect::DeviceHeap) {
                LaunchKind::DeviceHeap
            } else if found.contains(&SideEffect::DevicePrintf) {
                LaunchKind::DevicePrintf
            } else {
                continue;
            };
            let entry = effects.entry(kernel.clone()).or_insert(kind);
            if kind == LaunchKind::DeviceHeap {
                *entry = kind;
            }
        }
    }

    /// How an ordinary launch of `kernel` (a mangled name) is handled: once when its code prints
    /// or uses the device heap, else as a kernel. (`assert` is replayed: it prints only when it
    /// fails, and then the launch fails.)
    pub fn launch_kind_of(&self, kernel: &str) -> LaunchKind {
        if kreplay_cuda::classify::is_collective_kernel(kernel) {
            return LaunchKind::Collective;
        }
        lock(&self.kernel_effects)
            .get(kernel)
            .copied()
            .unwrap_or(LaunchKind::Kernel)
    }

    /// Whether a launch on `device` passes an address of ordinary host memory that the device
    /// reaches directly (pageable memory access): no snapshot covers it, so it must not be
    /// replayed. Asks nothing on a device without pageable memory access.
    pub fn reaches_pageable_host(
        &self,
        device: DeviceId,
        api: kreplay_cuda::classify::LaunchApi,
        params: *const std::ffi::c_void,
    ) -> bool {
        // Only kernel replay runs a launch more than once.
        if self.engine.config().mode != kreplay_core::config::InProcessMode::KernelReplay
            || !lock(&self.pageable_devices).contains(&device)
        {
            return false;
        }
        let _scope = kreplay_cuda::guard::ToolScope::enter();
        // SAFETY: `params` is the parameter block of the launch whose callback is running.
        let words = unsafe { kreplay_cuda::launch::callback_addresses(self.driver, api, params) };
        let inventory = self.engine.inventory();
        kreplay_cuda::launch::pageable_host_word(self.driver, &words, |word| {
            inventory.find_anywhere(word).is_some()
        })
        .is_some()
    }

    /// The kernel id and name of `f` if it was registered already.
    pub fn known_kernel(&self, f: sys::CUfunction) -> Option<(u64, String)> {
        lock(&self.kernels)
            .get(&(f as usize))
            .map(|e| (e.id, e.mangled.clone()))
    }

    /// The kernel id of `f`, registering the kernel (and its module's variables) the first time.
    pub fn kernel_id(
        &self,
        f: sys::CUfunction,
        symbol_name: Option<String>,
        device: DeviceId,
    ) -> (u64, String) {
        let known = lock(&self.kernels).get(&(f as usize)).cloned();
        if let Some(entry) = known {
            // A `CUkernel` launched on another device for the first time: its module is loaded
            // there separately, with variables of its own.
            if lock(&self.resolved_launches).insert((f as usize, device)) {
                self.resolve_module_variables(f, &entry.mangled, device);
            }
            return (entry.id, entry.mangled);
        }
        lock(&self.resolved_launches).insert((f as usize, device));
        let function = self.context_function(f);
        let mangled = symbol_name.unwrap_or_else(|| function_name(self.driver, function));
        let id = self.next_kernel_id.fetch_add(1, Ordering::Relaxed);
        self.resolve_module_variables(f, &mangled, device);
        let attributes = kreplay_cuda::kernel::function_attributes(self.driver, function);
        self.engine.register_kernel(KernelSymbol {
            kernel_id: id,
            mangled_name: mangled.clone(),
            demangled_name: kreplay_cuda::kernel::demangle(&mangled),
            registers: attributes.registers,
            static_shared_bytes: attributes.static_shared_bytes,
            local_bytes: attributes.local_bytes,
            param_bytes: attributes.param_bytes,
        });
        lock(&self.kernels).insert(
            f as usize,
            KernelEntry {
                id,
                mangled: mangled.clone(),
            },
        );
        (id, mangled)
    }

    /// The current context's `CUfunction` for a launch handle that may be a `CUkernel`.
    fn context_function(&self, f: sys::CUfunction) -> sys::CUfunction {
        let _scope = kreplay_cuda::guard::ToolScope::enter();
        let mut function: sys::CUfunction = std::ptr::null_mut();
        // SAFETY: a CUfunction handle is refused with an error code, leaving `function` NULL.
        match unsafe {
            drv!(
                self.driver,
                cuKernelGetFunction(&mut function, f as sys::CUkernel)
            )
        } {
            Ok(()) if !function.is_null() => function,
            _ => f,
        }
    }

    /// Puts the `__device__` and `__constant__` variables of `f`'s module into the inventory.
    /// CUPTI's MODULE_LOADED names a cubin but not its module handle, so the cubin that defines
    /// the kernel `name` is matched to the handle of `f`'s module. The runtime launches with
    /// context-independent `CUkernel` handles (library loading): for those the library's
    /// `cuLibraryGetGlobal` gives the addresses in the current context, and `cuKernelGetFunction`
    /// first makes sure the module is loaded there (lazy loading). For a `CUfunction`,
    /// `cuFuncLoad` does that and `cuModuleGetGlobal` looks the names up. Either load fires its
    /// MODULE_LOADED callback on this thread before the call returns.
    fn resolve_module_variables(&self, f: sys::CUfunction, name: &str, device: DeviceId) {
        let _scope = kreplay_cuda::guard::ToolScope::enter();
        let d = self.driver;
        let mut library: sys::CUlibrary = std::ptr::null_mut();
        let mut module: sys::CUmodule = std::ptr::null_mut();
        // SAFETY: handle queries; an `f` of the other kind is refused with an error code.
        let owner = unsafe {
            if drv!(d, cuKernelGetLibrary(&mut library, f as sys::CUkernel)).is_ok() {
                let mut function: sys::CUfunction = std::ptr::null_mut();
                let _ = drv!(d, cuKernelGetFunction(&mut function, f as sys::CUkernel));
                Some(library as usize)
            } else {
                let _ = drv!(d, cuFuncLoad(f));
                drv!(d, cuFuncGetModule(&mut module, f))
                    .ok()
                    .map(|()| module as usize)
            }
        };
        let Some(owner) = owner else {
            self.debug(&format!(
                "{name}: neither a library kernel nor a module function"
            ));
            return;
        };
        lock(&self.module_contents)
            .entry(owner)
            .or_default()
            .functions
            .insert(f as usize);
        if lock(&self.resolved_modules).contains(&(owner, device)) {
            return;
        }
        let cubin = {
            let mut pending = lock(&self.pending_cubins);
            let index = pending
                .iter()
                .rposition(|c| c.kernels.iter().any(|k| k == name));
            index.map(|i| pending.remove(i))
        };
        let Some(cubin) = cubin else {
            self.debug(&format!("{name}: no loaded cubin defines it"));
            return;
        };
        lock(&self.resolved_modules).insert((owner, device));
        for variable in cubin.variables {
            let Ok(c_name) = CString::new(variable.name.as_str()) else {
                continue;
            };
            let (mut address, mut bytes): (sys::CUdeviceptr, usize) = (0, 0);
            // SAFETY: looks a name up in a live library or module.
            let found = unsafe {
                if library.is_null() {
                    drv!(
                        d,
                        cuModuleGetGlobal_v2(&mut address, &mut bytes, module, c_name.as_ptr())
                    )
                } else {
                    drv!(
                        d,
                        cuLibraryGetGlobal(&mut address, &mut bytes, library, c_name.as_ptr())
                    )
                }
            };
            match found {
                Ok(()) => {
                    self.debug(&format!(
                        "tracking {} {} ({bytes} bytes at {address:#x}) of {name}'s module",
                        if variable.constant {
                            "__constant__"
                        } else {
                            "__device__"
                        },
                        variable.name
                    ));
                    self.engine.inventory().insert(Region {
                        device,
                        base: address,
                        bytes: bytes as u64,
                        kind: AllocKind::ModuleVariable,
                    });
                    lock(&self.module_contents)
                        .entry(owner)
                        .or_default()
                        .variables
                        .push((device, address));
                }
                Err(e) => self.debug(&format!("{}: {e}", variable.name)),
            }
        }
    }

    /// A module or library (`owner`, its handle) is being unloaded: its variables leave the
    /// inventory (a snapshot would copy memory that no longer exists: the driver faults inside
    /// `cuMemcpyBatchAsync` on it) and its functions are forgotten, so that a function or module
    /// loaded later at the same handle is looked up afresh (its name, its own variables).
    pub fn forget_module(&self, owner: usize) {
        let Some(contents) = lock(&self.module_contents).remove(&owner) else {
            return;
        };
        for (device, base) in &contents.variables {
            self.engine
                .inventory()
                .remove_of_kind(*device, *base, AllocKind::ModuleVariable);
        }
        let mut kernels = lock(&self.kernels);
        for f in &contents.functions {
            kernels.remove(f);
        }
        drop(kernels);
        lock(&self.resolved_launches).retain(|(f, _)| !contents.functions.contains(f));
        lock(&self.resolved_modules).retain(|(o, _)| *o != owner);
        self.debug(&format!(
            "module {owner:#x} unloaded: {} variable(s) and {} function(s) forgotten",
            contents.variables.len(),
            contents.functions.len()
        ));
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
        if self.debug && !self.first_dispatch_done.swap(true, Ordering::Relaxed) {
            self.phase("first dispatch done");
        }
    }
}

fn function_name(driver: &Driver, f: sys::CUfunction) -> String {
    let _scope = kreplay_cuda::guard::ToolScope::enter();
    let mut name: *const std::ffi::c_char = std::ptr::null();
    // SAFETY: the driver writes a pointer to the function's name, owned by the driver.
    match unsafe { drv!(driver, cuFuncGetName(&mut name, f)) } {
        // SAFETY: the driver's own string for the function.
        Ok(()) => unsafe { kreplay_cuda::error::c_text(name) }.unwrap_or_default(),
        Err(_) => format!("function@{:#x}", f as usize),
    }
}

pub(crate) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// A host pointer as the inventory's address.
pub(crate) fn host_address(p: *mut c_void) -> u64 {
    p as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_forked_child_sees_the_tool_switched_off_and_the_parent_does_not() {
        // SAFETY: registers a plain extern "C" function (as `initialize` does).
        unsafe { libc::pthread_atfork(None, None, Some(in_forked_child)) };
        // SAFETY: the child only reads an atomic and calls _exit.
        let child = unsafe { libc::fork() };
        assert!(child >= 0);
        if child == 0 {
            let code = if FORKED.load(Ordering::SeqCst) { 0 } else { 1 };
            // SAFETY: ends the child without the parent's exit handlers.
            unsafe { libc::_exit(code) };
        }
        let mut status = 0;
        // SAFETY: our own child.
        assert_eq!(unsafe { libc::waitpid(child, &mut status, 0) }, child);
        assert!(libc::WIFEXITED(status));
        assert_eq!(libc::WEXITSTATUS(status), 0, "the child saw FORKED set");
        assert!(!FORKED.load(Ordering::SeqCst), "the parent's tool stays on");
    }

    #[test]
    fn cmdline_keeps_empty_arguments_and_drops_only_the_terminator() {
        assert_eq!(parse_cmdline(b"./app\0\0x\0"), vec!["./app", "", "x"]);
        assert_eq!(parse_cmdline(b"./app\0"), vec!["./app"]);
        assert!(parse_cmdline(b"").is_empty());
    }
}
