//! Starting the tool inside `cuInit` (the injected library's `InitializeInjection`): the
//! configuration, the driver, CUPTI and the database; the engine with the CUDA backend; the
//! CUPTI subscription of [`callbacks::callback`]; then the process's lifecycle
//! (`kreplay_core::lifecycle`), whose endings run [`finish_process`].

use crate::callbacks;
use crate::finish::finish_process;
use crate::process_info::process_info;
use crate::tool::{say, set_tool, set_up_tool, Tool};
use kreplay_backend::graphs::GraphRegistry;
use kreplay_backend::modules::KernelRegistry;
use kreplay_backend::{CounterOptions, CudaBackend, CudaEngine, MeasureGate};
use kreplay_core::config::{InProcessMode, ToolConfig};
use kreplay_core::lifecycle::{self, Endings};
use kreplay_cuda::callback::subscribe::SubscribeError;
use kreplay_cuda::loader;
use kreplay_cuda::Cupti;
use kreplay_format::{CounterInfo, RecordSink};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

/// Sets the tool up and subscribes its callbacks; an error says why it could not (the
/// application then runs without it).
pub fn initialize() -> Result<(), String> {
    if set_up_tool().is_some() {
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
    let writer = kreplay_format::db::DbWriter::create(
        std::path::Path::new(&path),
        kreplay_core::lifecycle::block_signals,
    )
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
    backend.set_warn(Box::new(|message| match set_up_tool() {
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
        launch_stages: Default::default(),
    };
    if !set_tool(tool) {
        return Ok(());
    }
    lifecycle::switch_on();
    laps.lap("engine");
    // NVTX calls are followed for --marker-trace and for the NVTX filters.
    // The runtime API is followed for --runtime-trace and --sys-trace only.
    let runtime = config.api_trace != kreplay_core::api_trace::ApiLevel::Off;
    subscribe(cupti, config.tracks_markers(), runtime)?;
    laps.lap("subscribed");
    // Every ending of the process (its exit, a signal) runs `finish_process`; a forked child
    // finishes nothing.
    lifecycle::install(Endings::ExitAndSignals, finish_process);
    // Without counters launches are timed without waiting, and read off the application's
    // threads.
    if config.groups.is_empty() {
        // Kernel launches are timed by CUPTI's records of their executions where it can (by
        // events otherwise).
        let records = config
            .kernel_trace
            .then(|| kreplay_cuda::activity::enable(cupti));
        if let (Some(Err(e)), Some(tool)) = (records, set_up_tool()) {
            tool.debug(&format!(
                "kernel records: {e}; launches are timed with events"
            ));
        }
        crate::traced_reader::start();
    }
    if let Some(tool) = set_up_tool() {
        tool.phase("injection ready");
        tool.debug(&format!("injection: {}", laps.summary()));
    }
    Ok(())
}

fn subscribe(cupti: &'static Cupti, markers: bool, runtime: bool) -> Result<(), String> {
    match kreplay_cuda::callback::subscribe::subscribe(
        cupti,
        "kreplay",
        Some(callbacks::callback),
        markers,
        runtime,
    ) {
        Ok(()) => Ok(()),
        Err(SubscribeError::Enable(e)) => Err(e.to_string()),
        // The tool never started: nothing was recorded.
        Err(SubscribeError::Taken(other)) => {
            lifecycle::switch_off();
            let other = if other.is_empty() {
                "another CUPTI-based tool (Nsight Systems, Nsight Compute, cuda-gdb, ...)"
                    .to_string()
            } else {
                format!("'{other}'")
            };
            Err(format!("{other} already holds CUPTI in this process"))
        }
        Err(SubscribeError::Subscribe(e)) => {
            lifecycle::switch_off();
            Err(e.to_string())
        }
    }
}
