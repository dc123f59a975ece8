//! `kreplay-sim-app`: runs a fixed workload on the software device, profiled when started by
//! `kreplay` (which sets `KREPLAY_CONFIG`), and checks that the results equal a single
//! unprofiled execution. Prints one verification line; exits 1 if the results differ, 2 on a
//! usage or configuration error.
//!
//! Usage: `kreplay-sim-app [--iterations N] [--elements N] [--threads N] [--devices N]`
//!
//! With `--threads N` the workload runs on N application threads at once, each on its own
//! buffers of the one device: a replay's restore covers every thread's buffers, so the results
//! are right only if the other threads are kept off the device during a replay. With
//! `--devices N` the process has N devices and thread `t` works on device `t` modulo N.
//!
//! `--stall-drain-after N` makes the device stop becoming idle after N replayed dispatches, so
//! that the drain deadline (`KREPLAY_DRAIN_TIMEOUT`) ends the run: kreplay must store every
//! record collected so far and abort with a one-line message. `--device-memory BYTES` and
//! `--host-staging BYTES` size the device's memory and its host staging (1 GiB and 4 GiB by
//! default), to drive snapshots to host staging or to the too-large decline.
//! The workload marks its phases with NVTX-style ranges and a mark (`workload::run`), and the app
//! a start/end range `workload` around it, ended on another thread: recorded under
//! `--marker-trace`. Its copies and its allocations and frees of every kind are recorded under
//! `--memory-copy-trace` and `--memory-allocation-trace`.
//!
//! `--profile-region FIRST-LAST` (repeatable) calls the profiler start before iteration FIRST
//! and its stop after iteration LAST (0-based; `cudaProfilerStart`/`cudaProfilerStop`), the
//! bounds of `--selected-regions`.
//!
//! `--end-by-signal N` raises signal N (e.g. 6, `abort()`; 15, SIGTERM) once the workload has
//! run, with its last replay window still open: what it recorded must still reach the output.

use kreplay_core::catalog::MetricCatalog;
use kreplay_core::config::{ConfigError, ToolConfig};
use kreplay_core::Engine;
use kreplay_format::db::DbWriter;
use kreplay_format::{launcher_rank, CounterInfo, ProcessInfo, RANK_VARIABLES, SIZE_VARIABLES};
use kreplay_sim::workload;
use kreplay_sim::{SimCatalog, SimDevice, SimRuntime};
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A line on stdout or stderr, whether or not anyone reads it: a closed pipe (`| head -0`) must
/// not make the app panic (`println!` does) and end with another status than its own.
macro_rules! out {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let mut stdout = std::io::stdout().lock();
        let _ = writeln!(stdout, $($arg)*);
        let _ = stdout.flush();
    }};
}
macro_rules! err {
    ($($arg:tt)*) => {{
        use std::io::Write;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

#[path = "kreplay-sim-app/args.rs"]
mod args;

use args::{parse_args, AppOptions, USAGE};

fn main() -> ExitCode {
    let options = match parse_args(std::env::args().skip(1)) {
        Ok(Some(options)) => options,
        Ok(None) => {
            out!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            err!("kreplay-sim-app: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let config = match ToolConfig::from_env() {
        Ok(config) => Some(config),
        Err(ConfigError::Missing) => None,
        Err(error) => {
            err!("kreplay-sim-app: {error}");
            return ExitCode::from(2);
        }
    };
    match run(options, config) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(message) => {
            err!("kreplay-sim-app: {message}");
            ExitCode::from(1)
        }
    }
}

/// Returns whether verification passed.
fn run(options: AppOptions, config: Option<ToolConfig>) -> Result<bool, String> {
    let AppOptions {
        workload: sizes,
        threads,
        devices,
        stall_drain_after,
        device_memory,
        host_staging,
        end_by_signal,
        until_signal,
    } = options;
    let reference = {
        let mut runtime = SimRuntime::new(SimDevice::new(&[]), None);
        workload::run(&mut runtime, sizes).map_err(|e| format!("reference run: {e}"))?
    };

    let Some(config) = config else {
        let plain = (0..devices).map(|_| SimDevice::new(&[])).collect();
        let runtime = SimRuntime::with_devices(plain, None);
        let outcomes =
            workload::run_threads(&runtime, sizes, threads).map_err(|e| e.to_string())?;
        let verification = workload::verify_all(&outcomes, &reference);
        out!("{}", verification.line);
        return Ok(verification.passed);
    };

    let pid = std::process::id();
    let database = config.database_path_for(pid);
    let writer = DbWriter::create(Path::new(&database), kreplay_core::lifecycle::block_signals)
        .map_err(|e| format!("cannot write the profile database {database}: {e}"))?;
    let sink = Arc::new(writer);
    let engine =
        Arc::new(Engine::for_config(config.clone(), sink.clone()).map_err(|e| e.to_string())?);
    engine.record_process(ProcessInfo {
        pid,
        ppid: std::os::unix::process::parent_id(),
        hostname: std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_string())
            .unwrap_or_default(),
        command: std::env::args().collect(),
        start_ns: unix_now_ns(),
        end_ns: 0,
        rank: launcher_rank(RANK_VARIABLES, |name| std::env::var(name).ok()),
        size: launcher_rank(SIZE_VARIABLES, |name| std::env::var(name).ok()),
        cache_control: config.cache_control,
        sections: Vec::new(),
        kernel_rename: false,
        ..ProcessInfo::default()
    });
    engine.register_counters(counter_infos(&config));

    if let Some(why) = &config.switches.refused {
        err!("kreplay-sim-app: {why}");
        std::process::exit(2);
    }
    let device = || {
        let mut device = SimDevice::new(&config.groups);
        if config.cache_control == kreplay_format::CacheControl::All {
            device.flush_before_launches();
        }
        // Groups share passes as on the GPU: unless KREPLAY_PACK_GROUPS=0.
        if config.switches.pack_groups {
            device.pack_groups();
        }
        if let Some(replays) = stall_drain_after {
            device.stall_drains_after(u64::from(replays));
        }
        if let Some(bytes) = device_memory {
            device.set_capacity(bytes);
        }
        if let Some(bytes) = host_staging {
            device.set_host_staging_limit(bytes);
        }
        device
    };
    let mut runtime = SimRuntime::with_devices(
        (0..devices).map(|_| device()).collect(),
        Some(engine.clone()),
    );
    // A C or Python application leaves the crash signals at their default action (Rust's
    // runtime catches SIGSEGV and SIGBUS, for stack overflows, and returns from a raised one):
    // so does this app, so that kreplay's crash handling runs in it as in those.
    for signal in kreplay_core::lifecycle::CRASH_SIGNALS {
        // SAFETY: restores a crash signal's default action (process-wide).
        unsafe { libc::signal(signal, libc::SIG_DFL) };
    }
    kreplay_core::lifecycle::install(
        kreplay_core::lifecycle::Endings::Signals,
        runtime.finisher(),
    );
    // A start/end range around the workload, ended on another thread than the one that
    // started it (NVTX allows it; recorded under --marker-trace).
    let workload_range = runtime.range_start("workload");
    let outcomes = workload::run_threads(&runtime, sizes, threads);
    std::thread::scope(|scope| {
        let mut other = runtime.share();
        scope.spawn(move || other.range_end(workload_range));
    });
    if until_signal {
        launch_until_signalled(&mut runtime, sizes)?;
    }
    if let Some(signal) = end_by_signal {
        // Two more in-place launches, with no call after them: their window is open when the
        // signal comes.
        let bytes = u64::from(sizes.elements) * 4;
        let buffer = runtime
            .alloc(kreplay_core::backend::AllocKind::Device, bytes)
            .map_err(|e| e.to_string())?;
        let kernel = workload::scale_add_kernel();
        for _ in 0..2 {
            let args = vec![buffer, u64::from(sizes.elements), 3, 1];
            runtime
                .launch(&workload::launch(&kernel, sizes.elements, args))
                .map_err(|e| e.to_string())?;
        }
        let signal = signal as libc::c_int;
        // SAFETY: a signal to this process; its last words keep the records (a crash signal's
        // handler waits for the writer, then raises it again at its default action).
        unsafe { libc::raise(signal) };
        std::thread::sleep(std::time::Duration::from_secs(10));
        return Err(format!("signal {signal} did not end the process"));
    }
    runtime.finish();
    drop(runtime);
    drop(engine);
    if let Ok(writer) = Arc::try_unwrap(sink) {
        writer
            .finish()
            .map_err(|e| format!("writing the profile database {database}: {e}"))?;
    }
    let outcomes = outcomes.map_err(|e| e.to_string())?;
    let verification = workload::verify_all(&outcomes, &reference);
    out!("{}", verification.line);
    Ok(verification.passed)
}

/// After the workload, launches in place until a signal ends the process, saying first on
/// stdout that it does (a test sends its signal then): a replay window is open most of the time.
fn launch_until_signalled(
    runtime: &mut SimRuntime,
    sizes: workload::WorkloadOptions,
) -> Result<(), String> {
    let bytes = u64::from(sizes.elements) * 4;
    let buffer = runtime
        .alloc(kreplay_core::backend::AllocKind::Device, bytes)
        .map_err(|e| e.to_string())?;
    let kernel = workload::scale_add_kernel();
    out!("kreplay-sim-app: launching until a signal ends the process");
    loop {
        let args = vec![buffer, u64::from(sizes.elements), 3, 1];
        runtime
            .launch(&workload::launch(&kernel, sizes.elements, args))
            .map_err(|e| e.to_string())?;
    }
}

/// One record per requested counter, described by the SIM catalog.
fn counter_infos(config: &ToolConfig) -> Vec<CounterInfo> {
    let catalog = SimCatalog::new();
    config
        .groups
        .iter()
        .flat_map(|group| group.counters.iter())
        .map(|counter| {
            let description = catalog.describe(&counter.metric).unwrap_or_default();
            CounterInfo {
                name: counter.requested.clone(),
                metric: counter.metric.clone(),
                description: description.description,
                unit: description.unit,
            }
        })
        .collect()
}

fn unix_now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0)
}
