//! `kreplay demo`: kernel replay with two counter groups on a bundled workload, printing the
//! counters of every pass. On a machine with an NVIDIA GPU it profiles `kreplay-demo` (kernels
//! from embedded PTX); without one it says so and runs the same shape on the reference software
//! device's app, `kreplay-sim-app`.

use crate::args::{DemoArgs, LogLevel, ProfileArgs, ReplayMode};
use crate::launch::{exe_dir, find_inject_lib, SIM_APP_NAME};
use std::path::PathBuf;

const GPU_APP_NAME: &str = "kreplay-demo";
const GPU_GROUPS: DemoGroups = [
    ["sm__warps_launched.sum", "smsp__inst_executed.sum"],
    ["sm__warps_launched.sum", "dram__bytes_read.sum"],
];
/// What the reference device's run shows, said after its report.
const SIM_EXPLAINED: &str = "kreplay demo: this ran on the reference software device (a test instrument, not a GPU); counters are simulated.
kreplay demo: pass 0 and 1 are the two counter groups, measured on every dispatch of one run by replaying it, the kernel nodes of the app's CUDA graph included: kreplay runs a graph launch node by node, each kernel node a dispatch of its own (docs/kernel-replay.md, \"CUDA graphs\"). The app also records a launch into a stream capture, which runs nothing and is not profiled; the output files keep a warning saying so.";
const SIM_GROUPS: DemoGroups = [
    ["sim__warps_launched.sum", "sim__inst_executed.sum"],
    ["sim__warps_launched.sum", "sim__bytes_written.sum"],
];

/// The number of CUDA devices, or why there is none to use.
fn cuda_devices() -> Result<i32, String> {
    let driver = kreplay_cuda::loader::driver().map_err(|e| {
        // The loader's message carries advice for the catalog; the first clause is the reason.
        e.to_string()
            .split(';')
            .next()
            .unwrap_or("no driver")
            .to_string()
    })?;
    // (main removed CUDA_INJECTION64_PATH from kreplay's own environment before this cuInit.)
    // SAFETY: cuInit and cuDeviceGetCount take plain values / a pointer to a local.
    unsafe {
        let rc = driver.cuInit(0);
        if rc != 0 {
            return Err(format!("cuInit failed with CUDA error {rc}"));
        }
        let mut count = 0;
        let rc = driver.cuDeviceGetCount(&mut count);
        if rc != 0 {
            return Err(format!("cuDeviceGetCount failed with CUDA error {rc}"));
        }
        if count < 1 {
            return Err("the driver reports no CUDA device".into());
        }
        Ok(count)
    }
}

/// Two counter groups of two metrics each.
type DemoGroups = [[&'static str; 2]; 2];

/// Chooses the workload: the GPU demo when a GPU, the demo binary and the injection library are
/// all there; else the software device, with the reason.
fn choose(args: &DemoArgs) -> Result<(PathBuf, DemoGroups), (String, PathBuf)> {
    let dir = exe_dir().unwrap_or_else(|| PathBuf::from("."));
    let sim_app = dir.join(SIM_APP_NAME);
    if args.sim {
        return Err(("--sim was given".into(), sim_app));
    }
    let devices = cuda_devices().map_err(|reason| (reason, sim_app.clone()))?;
    let gpu_app = dir.join(GPU_APP_NAME);
    if !gpu_app.is_file() {
        return Err((
            format!(
                "{devices} GPU(s) present, but {} is missing; build it with `cargo build --release`",
                gpu_app.display()
            ),
            sim_app,
        ));
    }
    if let Err(reason) = find_inject_lib() {
        return Err((
            format!("{devices} GPU(s) present, but the injection library is missing: {reason}"),
            sim_app,
        ));
    }
    Ok((gpu_app, GPU_GROUPS))
}

pub fn run(args: &DemoArgs) -> anyhow::Result<i32> {
    let (app, groups, on_sim) = match choose(args) {
        Ok((app, groups)) => (app, groups, false),
        Err((reason, sim_app)) => {
            if reason.contains("GPU(s) present") {
                say!("kreplay: {reason}; running the bundled demo on the reference software device instead");
            } else {
                say!("kreplay: no NVIDIA GPU found ({reason}); running the bundled demo on the reference software device instead");
            }
            if !sim_app.is_file() {
                anyhow::bail!(
                    "the software-device demo app {} is missing; build it with `cargo build --release`",
                    sim_app.display()
                );
            }
            (sim_app, SIM_GROUPS, true)
        }
    };
    let pmc: Vec<Vec<String>> = groups
        .iter()
        .map(|g| g.iter().map(|s| s.to_string()).collect())
        .collect();
    let command_line = format!(
        "kreplay {} --replay-mode kernel --kernel-replay-beta-enabled -f json csv rocpd -d {} -o demo -- {}",
        pmc.iter()
            .map(|g| format!("--pmc {}", g.join(" ")))
            .collect::<Vec<_>>()
            .join(" "),
        args.output_dir.display(),
        app.display()
    );
    say!("kreplay demo: {command_line}");
    let profile = ProfileArgs {
        pmc,
        replay_mode: Some(ReplayMode::Kernel),
        kernel_replay_beta_enabled: Some(true),
        output_directory: Some(args.output_dir.display().to_string()),
        output_file: Some("demo".into()),
        output_format: vec!["json".into(), "csv".into(), "rocpd".into()],
        app: vec![app.display().to_string()],
        // The reference device's app records a stream capture on purpose: the notice the engine
        // prints for it calls for nothing here, so the demo explains it in its own words instead.
        log_level: on_sim.then_some(LogLevel::Error),
        ..ProfileArgs::default()
    };
    // On stderr, as a run's report: the application's own output keeps stdout.
    let code = crate::profile::profile(&profile, &mut crate::say::Quiet(std::io::stderr()))?;
    if on_sim {
        say!("{SIM_EXPLAINED}");
    } else {
        say!(
            "kreplay demo: profiled on the GPU; files in {}",
            args.output_dir.display()
        );
    }
    Ok(code)
}
