//! Starting the application with the tool configured: the injected library found, the staging
//! folder its processes write into, and the command with `KREPLAY_CONFIG` and
//! `CUDA_INJECTION64_PATH` in its environment (the only variables kreplay sets for it).

use super::launcher::Launcher;
use crate::env::{inject_lib, ENV_INJECT_LIB};
use crate::plan::RunSpec;
use anyhow::{bail, Context};
use kreplay_core::config::{
    drain_timeout_ms, ToolConfig, DEFAULT_DRAIN_TIMEOUT_MS, DEFAULT_HOST_STAGING_MAX_BYTES,
    ENV_CONFIG, ENV_DRAIN_TIMEOUT,
};
use std::path::{Path, PathBuf};
use std::process::Command;

pub const INJECT_LIB_NAME: &str = "libkreplay_inject.so";
/// The reference software device's app records through the engine itself; it needs no injection.
pub const SIM_APP_NAME: &str = "kreplay-sim-app";

/// The folder `kreplay` runs from; helpers (the injected library, the demo apps) sit next to it.
pub fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

/// `libkreplay_inject.so`: `$KREPLAY_INJECT_LIB`, else next to `kreplay`. Err says where it looked.
pub fn find_inject_lib() -> Result<PathBuf, String> {
    if let Some(path) = inject_lib() {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("{ENV_INJECT_LIB}={} is not a file", path.display()))
        };
    }
    let beside = exe_dir()
        .map(|d| d.join(INJECT_LIB_NAME))
        .unwrap_or_else(|| PathBuf::from(INJECT_LIB_NAME));
    if beside.is_file() {
        Ok(beside)
    } else {
        Err(format!("{} does not exist", beside.display()))
    }
}

pub(super) fn is_sim_app(program: &str) -> bool {
    Path::new(program)
        .file_name()
        .is_some_and(|n| n == SIM_APP_NAME)
}

/// The part of a directory template before its first placeholder: a place that exists whatever
/// the placeholders turn out to be, for the staging folder.
pub(super) fn fixed_prefix(template: &str) -> PathBuf {
    let mut prefix = PathBuf::new();
    for part in Path::new(template).components() {
        let text = part.as_os_str().to_string_lossy();
        if text.contains('%') || text.contains("$env{") || text.contains("$ENV{") {
            break;
        }
        prefix.push(part);
    }
    if prefix.as_os_str().is_empty() {
        PathBuf::from(".")
    } else {
        prefix
    }
}

/// NVTX's variable naming the library its calls are handed to (`--marker-trace`, NVTX filters).
const ENV_NVTX_INJECTION: &str = "NVTX_INJECTION64_PATH";

fn tool_config(spec: &RunSpec, database_path: String, launcher: &Launcher) -> ToolConfig {
    ToolConfig {
        groups: spec.groups.clone(),
        mode: spec.mode,
        filter: spec.filter.clone(),
        kernel_trace: spec.kernel_trace,
        database_path,
        drain_timeout_ms: launcher
            .drain_timeout_s
            .map(drain_timeout_ms)
            .unwrap_or(DEFAULT_DRAIN_TIMEOUT_MS),
        host_staging_max_bytes: launcher
            .host_staging_max
            .unwrap_or(DEFAULT_HOST_STAGING_MAX_BYTES),
        log_level: spec.log_level.clone(),
        replay_window: spec.replay_window,
        checked_identity: spec.checked_identity.clone(),
        cache_control: spec.cache_control,
        // The application reads its own environment's (kreplay's, inherited).
        switches: Default::default(),
        launcher: Default::default(),
        marker_trace: spec.marker_trace,
        api_trace: spec.api_trace,
        memory_copy_trace: spec.memory_copy_trace,
        memory_allocation_trace: spec.memory_allocation_trace,
    }
}

/// The configuration a run would pass to the application (database path left as a template).
pub fn echo_config(spec: &RunSpec, launcher: &Launcher) -> ToolConfig {
    tool_config(spec, "<staging>/%pid%.db".into(), launcher)
}

/// What a run needs before the application starts: the injection library (if found), the
/// staging folder its processes write into, and the command with the configuration.
pub(super) struct Prepared {
    pub(super) program: String,
    pub(super) inject: Result<PathBuf, String>,
    pub(super) staging: PathBuf,
    pub(super) command: Command,
}

pub(super) fn prepare(spec: &RunSpec, launcher: &Launcher) -> anyhow::Result<Prepared> {
    let program = launcher
        .app
        .first()
        .context("no application to run; give it after `--`")?
        .clone();
    let inject = find_inject_lib();
    if let Err(reason) = &inject {
        if !is_sim_app(&program) {
            bail!(
                "the injection library {INJECT_LIB_NAME} was not found ({reason}); build it with `cargo build --release` (it is put next to kreplay) or set {ENV_INJECT_LIB} to its path"
            );
        }
    }

    let staging_parent = fixed_prefix(&spec.output_directory);
    std::fs::create_dir_all(&staging_parent).with_context(|| {
        format!(
            "cannot create the output directory {}",
            staging_parent.display()
        )
    })?;
    let staging = staging_parent
        .canonicalize()
        .unwrap_or(staging_parent.clone())
        .join(format!(
            ".kreplay-staging-{}-{}",
            std::process::id(),
            spec.index
        ));
    std::fs::create_dir_all(&staging)
        .with_context(|| format!("cannot create the staging folder {}", staging.display()))?;
    let config = tool_config(
        spec,
        staging.join("%pid%.db").display().to_string(),
        launcher,
    );

    // rocprofv3 prints its configuration at these levels; so does kreplay.
    if matches!(spec.log_level.as_str(), "info" | "trace" | "env" | "config") {
        say!("kreplay: {ENV_CONFIG}={}", config.to_json());
        if let Ok(lib) = &inject {
            say!("kreplay: CUDA_INJECTION64_PATH={}", lib.display());
            if spec.marker_trace || spec.filter.tracks_ranges() {
                say!("kreplay: {ENV_NVTX_INJECTION}={}", lib.display());
            }
        }
    }
    let config_value = match config.to_env_value(&staging.join("config.json")) {
        Ok(value) => value,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            bail!(
                "cannot write the configuration file into {}: {e}",
                staging.display()
            );
        }
    };
    let mut command = Command::new(&program);
    command
        .args(&launcher.app[1..])
        .env(ENV_CONFIG, config_value)
        // The deadline is in the configuration (`drain_timeout`): an inherited variable must not
        // override it.
        .env_remove(ENV_DRAIN_TIMEOUT);
    end_with_kreplay(&mut command);
    if let Ok(lib) = &inject {
        command.env("CUDA_INJECTION64_PATH", lib);
        if spec.marker_trace || spec.filter.tracks_ranges() {
            // The application's NVTX calls reach CUPTI through the injection library, which
            // hands NVTX to the CUPTI copy it uses (`InitializeInjectionNvtx2`).
            command.env(ENV_NVTX_INJECTION, lib);
        }
    }
    Ok(Prepared {
        program,
        inject,
        staging,
        command,
    })
}

/// A kreplay killed without a word (`kill -9`, `timeout -k`) must not leave the application
/// running on without it, its records never written and the GPU's counters held: the
/// application gets SIGTERM when kreplay's thread that started it ends, and its last words keep
/// every record in the staging folder (`kreplay convert` reads them). kreplay starts the
/// application from its main thread, which lives until kreplay exits, and waits for it.
fn end_with_kreplay(command: &mut Command) {
    use std::os::unix::process::CommandExt;
    let kreplay = std::process::id() as libc::pid_t;
    // SAFETY: between fork and exec only async-signal-safe calls (prctl, getppid, raise).
    unsafe {
        command.pre_exec(move || {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM as libc::c_ulong);
            // kreplay died before the request was made: the signal would never come.
            if libc::getppid() != kreplay {
                libc::raise(libc::SIGTERM);
            }
            Ok(())
        });
    }
}
