//! Running one planned run: the application is started with the tool's configuration in its
//! environment (`KREPLAY_CONFIG`, and `CUDA_INJECTION64_PATH` so that `cuInit` loads
//! `libkreplay_inject.so`); every process it starts writes its own database into a private
//! staging folder; after it exits (also when it crashed) the databases are merged and written
//! in the requested formats, and the staging folder is removed.

use crate::error::UsageError;
use crate::placeholders::{expand, hostname, PlaceholderValues};
use crate::plan::{RunSpec, SummaryOutput};
use crate::progress::{Progress, APP_DELAY, WRITE_DELAY};
use anyhow::{bail, Context};
use kreplay_core::config::{
    drain_timeout_ms, drain_timeout_seconds, ToolConfig, DEFAULT_DRAIN_TIMEOUT_MS, ENV_CONFIG,
    ENV_DRAIN_TIMEOUT,
};
use kreplay_format::output::TEMP_NAME_OVERHEAD;
use kreplay_format::sections_out::render_sections_summary;
use kreplay_format::stats_out::{
    kernel_stats, render_summary, write_stats_csv, write_summary_file,
};
use kreplay_format::{read_databases, write_outputs, OutputFormat, RunData};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::Ordering;

mod signals;
use signals::{SignalGuard, STOP_WAITING};

/// Names the injected library; overrides the copy next to the `kreplay` executable.
pub const ENV_INJECT_LIB: &str = "KREPLAY_INJECT_LIB";
pub const INJECT_LIB_NAME: &str = "libkreplay_inject.so";
/// The reference software device's app records through the engine itself; it needs no injection.
pub const SIM_APP_NAME: &str = "kreplay-sim-app";

/// Seconds kreplay waits, after the application ended, for processes it started that still run.
pub const ENV_CHILD_WAIT_S: &str = "KREPLAY_CHILD_WAIT_S";
const DEFAULT_CHILD_WAIT_S: f64 = 30.0;

/// The drain deadline for the application, seconds: `--drain-timeout` when given (checked with
/// the other options), else `KREPLAY_DRAIN_TIMEOUT` from kreplay's environment (checked here,
/// before the start), else the library's default. It travels in `KREPLAY_CONFIG` only.
pub fn drain_timeout(flag: Option<f64>) -> Result<Option<f64>, UsageError> {
    if flag.is_some() {
        return Ok(flag);
    }
    match std::env::var(ENV_DRAIN_TIMEOUT) {
        Ok(value) => drain_timeout_seconds(&value).map(Some).ok_or_else(|| {
            UsageError::new(format!(
                "{ENV_DRAIN_TIMEOUT}={value:?} is not a number of seconds above 0; set it to e.g. 60 (or unset it for {})",
                DEFAULT_DRAIN_TIMEOUT_MS / 1000
            ))
        }),
        Err(_) => Ok(None),
    }
}

/// How long to wait for the application's leftover processes: [`ENV_CHILD_WAIT_S`], else 30 s.
pub fn child_wait() -> Result<std::time::Duration, UsageError> {
    let Ok(value) = std::env::var(ENV_CHILD_WAIT_S) else {
        return Ok(std::time::Duration::from_secs_f64(DEFAULT_CHILD_WAIT_S));
    };
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1.0e9)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| {
            UsageError::new(format!(
                "{ENV_CHILD_WAIT_S}={value:?} is not a number of seconds; set it to e.g. 30 or 0 (or unset it for 30)"
            ))
        })
}

/// Reaps the application's processes that outlived it (kreplay is their subreaper), for up to
/// `limit`; returns how many still run then.
fn wait_for_descendants(limit: std::time::Duration) -> usize {
    let began = std::time::Instant::now();
    let mut said = false;
    loop {
        let mut status = 0;
        // SAFETY: waitpid on any child, not blocking.
        let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if pid > 0 {
            continue;
        }
        if pid < 0 {
            return 0; // ECHILD: none left
        }
        if began.elapsed() >= limit || STOP_WAITING.load(Ordering::SeqCst) {
            let running = running_children();
            say!(
                "kreplay: warning: {running} process(es) the application started still run after {:.0} s; what they recorded so far is written and their databases are kept ({ENV_CHILD_WAIT_S} sets the wait)",
                began.elapsed().as_secs_f64()
            );
            return running.max(1);
        }
        if !said && began.elapsed() >= std::time::Duration::from_millis(500) {
            say!(
                "kreplay: the application ended; waiting up to {:.0} s for {} process(es) it started that still run (Ctrl-C stops waiting)",
                limit.as_secs_f64(),
                running_children()
            );
            said = true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
}

/// kreplay's child processes, from /proc (0 if it cannot be read).
fn running_children() -> usize {
    let me = std::process::id().to_string();
    std::fs::read_to_string(format!("/proc/{me}/task/{me}/children"))
        .map(|text| text.split_whitespace().count())
        .unwrap_or(0)
}

/// Milliseconds kreplay waits after the application ends before writing its outputs (tests).
const ENV_HOLD_OUTPUTS_MS: &str = "KREPLAY_TEST_HOLD_OUTPUTS_MS";

/// What every run of one `kreplay` invocation shares.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The application and its arguments.
    pub app: Vec<String>,
    pub launch_time: String,
    pub drain_timeout_s: Option<f64>,
    /// How long to wait, after the application ended, for processes it started ([`child_wait`]).
    pub child_wait: std::time::Duration,
}

/// What a run left behind.
#[derive(Debug)]
pub struct RunResult {
    /// The application's exit status (1 when a signal ended it).
    pub app_exit_code: i32,
    /// kreplay's: the application's, or 1 when it succeeded but its outputs could not be
    /// written.
    pub exit_code: i32,
    pub files: Vec<PathBuf>,
    /// Everything the run recorded (None when nothing was recorded).
    pub data: Option<RunData>,
    /// rocprofv3's summary tables for stderr and for stdout (`-S`, `-D`, `--summary-groups`),
    /// one text per output destination.
    pub summaries: Vec<(SummaryOutput, String)>,
}

/// Records in `data` (what a producer sent), for the progress line.
pub fn record_count(data: &RunData) -> usize {
    data.processes
        .iter()
        .map(|p| {
            1 + p.agents.len()
                + p.kernels.len()
                + p.counters.len()
                + p.dispatches.len()
                + p.costs.len()
                + p.warnings.len()
        })
        .sum()
}

/// rocprofv3 indents the summary tables it prints on a stream by four spaces.
const SUMMARY_STREAM_INDENT: &str = "    ";

/// The `--stats` files and the summary of one output destination: files written, and texts
/// for the streams.
fn post_process(
    spec: &RunSpec,
    run: &RunData,
    dir: &Path,
    name: &str,
    files: &mut Vec<PathBuf>,
    summaries: &mut Vec<(SummaryOutput, String)>,
) -> Result<(), kreplay_format::FormatError> {
    if spec.stats && spec.formats.contains(&OutputFormat::Csv) {
        files.extend(write_stats_csv(run, dir, name)?);
    }
    if !spec.sections.is_empty() {
        let text = render_sections_summary(run);
        if !text.is_empty() {
            summaries.push((
                SummaryOutput::Stderr,
                format!("kreplay: sections per kernel (minimum, maximum and average over its dispatches):\n{text}"),
            ));
        }
    }
    let Some(summary) = &spec.summary else {
        return Ok(());
    };
    let stats = kernel_stats(run);
    if stats.is_empty() {
        return Ok(());
    }
    match &summary.output {
        SummaryOutput::File(file) => files.push(write_summary_file(
            &stats,
            &summary.tables,
            summary.unit,
            dir,
            name,
            file,
        )?),
        stream => {
            let text = render_summary(&stats, &summary.tables, summary.unit, SUMMARY_STREAM_INDENT);
            if !text.is_empty() {
                summaries.push((stream.clone(), text));
            }
        }
    }
    Ok(())
}

/// The folder `kreplay` runs from; helpers (the injected library, the demo apps) sit next to it.
pub fn exe_dir() -> Option<PathBuf> {
    std::env::current_exe()
        .ok()
        .and_then(|p| p.canonicalize().ok())
        .and_then(|p| p.parent().map(Path::to_path_buf))
}

/// `libkreplay_inject.so`: `$KREPLAY_INJECT_LIB`, else next to `kreplay`. Err says where it looked.
pub fn find_inject_lib() -> Result<PathBuf, String> {
    if let Some(path) = std::env::var_os(ENV_INJECT_LIB) {
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

fn is_sim_app(program: &str) -> bool {
    Path::new(program)
        .file_name()
        .is_some_and(|n| n == SIM_APP_NAME)
}

/// The part of a directory template before its first placeholder: a place that exists whatever
/// the placeholders turn out to be, for the staging folder.
fn fixed_prefix(template: &str) -> PathBuf {
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

fn tool_config(spec: &RunSpec, database_path: String, drain_timeout_s: Option<f64>) -> ToolConfig {
    ToolConfig {
        groups: spec.groups.clone(),
        mode: spec.mode,
        filter: spec.filter.clone(),
        kernel_trace: spec.kernel_trace,
        database_path,
        drain_timeout_ms: drain_timeout_s
            .map(drain_timeout_ms)
            .unwrap_or(DEFAULT_DRAIN_TIMEOUT_MS),
        log_level: spec.log_level.clone(),
        replay_window: spec.replay_window,
        checked_identity: spec.checked_identity.clone(),
        cache_control: spec.cache_control,
        // The application reads its own environment's (kreplay's, inherited).
        switches: Default::default(),
        launcher: Default::default(),
    }
}

/// The configuration a run would pass to the application (database path left as a template).
pub fn echo_config(spec: &RunSpec, launcher: &Launcher) -> ToolConfig {
    tool_config(spec, "<staging>/%pid%.db".into(), launcher.drain_timeout_s)
}

/// The most a process id can be on Linux (`pid_max` at most 2^22): placeholders are expanded
/// with it when output paths are checked before the application exists.
const LARGEST_PID: u32 = 4_194_304;

/// The longest name an output file adds to `-o`, with the temporary name it is written under
/// before it replaces the file.
const LONGEST_OUTPUT_SUFFIX: usize = kreplay_format::output::suffix::LONGEST + TEMP_NAME_OVERHEAD;

/// Finds, before the application starts, output paths no run could write: a file name longer
/// than the file system allows, a folder that would have to be made under a regular file, or
/// a folder kreplay may not write in. Placeholders are expanded as they will be (the process
/// ids with the largest possible one).
pub fn check_destination(spec: &RunSpec, launcher: &Launcher) -> Result<(), UsageError> {
    let mut values =
        PlaceholderValues::for_process(LARGEST_PID, &launcher.app, &launcher.launch_time);
    values.ppid = LARGEST_PID;
    values.pgid = LARGEST_PID;
    values.psid = LARGEST_PID;
    let mut dir = PathBuf::from(expand(&spec.output_directory, &values));
    if let Some(sub) = &spec.subdir {
        dir.push(sub);
    }
    let name = expand(&spec.output_file, &values);
    let path = dir.join(&name);
    // The summary file `<o>_<NAME>.txt` may be the longest name written.
    let summary_suffix = match spec.summary.as_ref().map(|s| &s.output) {
        Some(SummaryOutput::File(file)) if !file.contains('/') => {
            file.len() + "_.txt".len() + TEMP_NAME_OVERHEAD
        }
        _ => 0,
    };
    let longest_suffix = LONGEST_OUTPUT_SUFFIX.max(summary_suffix);
    let mut existing = path.parent().unwrap_or(Path::new("."));
    let mut fresh = Vec::new();
    while !existing.as_os_str().is_empty() && !existing.exists() {
        fresh.push(existing);
        existing = existing.parent().unwrap_or(Path::new(""));
    }
    let existing = if existing.as_os_str().is_empty() {
        Path::new(".")
    } else {
        existing
    };
    if !existing.is_dir() {
        return Err(UsageError::new(format!(
            "the output path {} goes through {}, which is a file, not a folder; choose another -d/--output-directory or -o/--output-file",
            path.display(),
            existing.display()
        )));
    }
    let c_existing = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes()).ok();
    if let Some(c) = &c_existing {
        // SAFETY: a NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } != 0 {
            return Err(UsageError::new(format!(
                "cannot write the outputs under {}: {}; choose another -d/--output-directory",
                existing.display(),
                std::io::Error::last_os_error()
            )));
        }
    }
    // SAFETY: a NUL-terminated path; -1 (no limit known) keeps the usual 255.
    let name_max = c_existing
        .map(|c| unsafe { libc::pathconf(c.as_ptr(), libc::_PC_NAME_MAX) })
        .filter(|&n| n > 0)
        .unwrap_or(255) as usize;
    let file_name = path.file_name().map(|n| n.len()).unwrap_or(0);
    let too_long = fresh
        .iter()
        .filter_map(|p| p.file_name())
        .map(|n| (n.len(), n.to_string_lossy().into_owned()))
        .chain([(
            file_name + longest_suffix,
            format!(
                "{}_counter_collection.csv",
                path.file_name().unwrap_or_default().to_string_lossy()
            ),
        )])
        .find(|(bytes, _)| *bytes > name_max);
    if let Some((bytes, component)) = too_long {
        let shown: String = component.chars().take(40).collect();
        return Err(UsageError::new(format!(
            "an output name would be {bytes} bytes long ('{shown}…'), more than the {name_max} this file system allows in one name; shorten -o/--output-file or -d/--output-directory"
        )));
    }
    Ok(())
}

/// Runs the application once for `spec` and writes its outputs.
pub fn execute(spec: &RunSpec, launcher: &Launcher) -> anyhow::Result<RunResult> {
    let mut prepared = prepare(spec, launcher)?;
    let ended = run_application(&mut prepared, launcher)?;
    collect_and_write(spec, &prepared, ended)
}

/// What a run needs before the application starts: the injection library (if found), the
/// staging folder its processes write into, and the command with the configuration.
struct Prepared {
    program: String,
    inject: Result<PathBuf, String>,
    staging: PathBuf,
    command: Command,
}

fn prepare(spec: &RunSpec, launcher: &Launcher) -> anyhow::Result<Prepared> {
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
        launcher.drain_timeout_s,
    );

    // rocprofv3 prints its configuration at these levels; so does kreplay.
    if matches!(spec.log_level.as_str(), "info" | "trace" | "env" | "config") {
        say!("kreplay: {ENV_CONFIG}={}", config.to_json());
        if let Ok(lib) = &inject {
            say!("kreplay: CUDA_INJECTION64_PATH={}", lib.display());
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
    if let Ok(lib) = &inject {
        command.env("CUDA_INJECTION64_PATH", lib);
    }
    Ok(Prepared {
        program,
        inject,
        staging,
        command,
    })
}

/// The application ended (and the processes it left running, or the wait for them did).
struct Ended {
    exit_code: i32,
    root_pid: u32,
    orphans_running: usize,
    exited: std::time::Instant,
    /// The output names' placeholder values of the application's process.
    placeholders: PlaceholderValues,
    /// Held while the outputs are written (signals then say so instead of being forwarded).
    _signals: SignalGuard,
    writing: Progress,
}

fn run_application(prepared: &mut Prepared, launcher: &Launcher) -> anyhow::Result<Ended> {
    // Processes the application starts and leaves running are re-parented to kreplay, which
    // waits for them (their databases are complete only when they end).
    // SAFETY: prctl with an integer argument.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
    let mut child = match prepared.command.spawn() {
        Ok(child) => child,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&prepared.staging);
            bail!(
                "cannot start '{}': {e}; check the application path after `--`",
                prepared.program
            );
        }
    };
    let spawned = std::time::Instant::now();
    tracing::debug!(
        "the application started {:.1} ms after kreplay",
        crate::since_start_ms()
    );
    let root_pid = child.id();
    let signals = SignalGuard::install(root_pid);
    // While the application runs: its process group and session are read from it.
    let placeholders =
        PlaceholderValues::for_process(root_pid, &launcher.app, &launcher.launch_time);
    let running = Progress::start("the application is running", APP_DELAY);
    let status = child.wait().context("waiting for the application");
    running.finish();
    let status = status?;
    signals.waiting_for_descendants();
    let orphans_running = wait_for_descendants(launcher.child_wait);
    signals.writing_outputs();
    let writing = Progress::start("reading the recorded data", WRITE_DELAY);
    // For the test that signals kreplay while it writes: a pause before the writing.
    if let Some(ms) = std::env::var(ENV_HOLD_OUTPUTS_MS)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms));
    }
    let exited = std::time::Instant::now();
    tracing::debug!(
        "the application ran {:.1} ms",
        exited.duration_since(spawned).as_secs_f64() * 1e3
    );

    let exit_code = match status.code() {
        Some(code) => code,
        None => {
            use std::os::unix::process::ExitStatusExt;
            say!(
                "kreplay: the application was ended by signal {}; writing what it recorded",
                status.signal().unwrap_or(0)
            );
            1
        }
    };
    Ok(Ended {
        exit_code,
        root_pid,
        orphans_running,
        exited,
        placeholders,
        _signals: signals,
        writing,
    })
}

/// The databases the run's processes wrote into the staging folder, sorted.
fn staged_databases(staging: &Path) -> Vec<PathBuf> {
    let mut databases: Vec<PathBuf> = std::fs::read_dir(staging)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "db"))
                .collect()
        })
        .unwrap_or_default();
    databases.sort();
    databases
}

/// Which process's data goes to which files: each process gets the name its own placeholders
/// give. With %pid% in the name (the default), a multi-process application writes one set of
/// files per process, as rocprofv3 does; without it they share one set.
fn destinations(
    spec: &RunSpec,
    data: &RunData,
    placeholders_base: &PlaceholderValues,
    root_pid: u32,
) -> BTreeMap<(PathBuf, String), RunData> {
    let mut by_destination: BTreeMap<(PathBuf, String), RunData> = BTreeMap::new();
    for process in &data.processes {
        let mut values = placeholders_base.clone();
        values.pid = process.process.pid;
        if process.process.pid != root_pid {
            values.ppid = process.process.ppid;
        }
        if !process.process.hostname.is_empty() {
            values.hostname = process.process.hostname.clone();
        } else {
            values.hostname = hostname();
        }
        // A rank the process's own launcher gave it (torchrun, mpirun under kreplay) names its
        // files; else the one kreplay itself was given.
        if process.process.rank.is_some() {
            values.rank = process.process.rank.clone();
            values.size = process.process.size.clone();
        }
        let mut dir = PathBuf::from(expand(&spec.output_directory, &values));
        if let Some(sub) = &spec.subdir {
            dir.push(sub);
        }
        let name = expand(&spec.output_file, &values);
        by_destination
            .entry((dir, name))
            .or_default()
            .processes
            .push(process.clone());
    }
    by_destination
}

/// The recorded databases as one run, with what the CLI knows added: the sections, the
/// counters' descriptions; cached device identities the run found stale are forgotten.
fn collect(spec: &RunSpec, databases: &[PathBuf]) -> Result<RunData, kreplay_format::FormatError> {
    let mut data = read_databases(databases)?;
    // The sections were resolved here, before the run: every output of every process gets them.
    for process in &mut data.processes {
        process.process.sections = spec.sections.clone();
    }
    crate::counters::describe_recorded_counters(&mut data);
    crate::counters::forget_stale_identities(
        data.processes
            .iter()
            .flat_map(|p| &p.warnings)
            .map(|w| w.message.as_str()),
    );
    Ok(data)
}

/// Every output of the run, destination by destination (`placeholders`: the values of the
/// application's process and its pid), adding to `files` and `summaries` as they are written;
/// the first destination that cannot be written ends it, with why.
fn write_destinations(
    spec: &RunSpec,
    data: &RunData,
    (placeholders, root_pid): (&PlaceholderValues, u32),
    files: &mut Vec<PathBuf>,
    summaries: &mut Vec<(SummaryOutput, String)>,
) -> Result<(), (PathBuf, kreplay_format::FormatError)> {
    for ((dir, name), run) in &destinations(spec, data, placeholders, root_pid) {
        write_outputs(run, dir, name, &spec.formats)
            .and_then(|written| {
                files.extend(written);
                post_process(spec, run, dir, name, files, summaries)
            })
            .map_err(|e| (dir.clone(), e))?;
    }
    Ok(())
}

fn collect_and_write(
    spec: &RunSpec,
    prepared: &Prepared,
    ended: Ended,
) -> anyhow::Result<RunResult> {
    let Ended {
        exit_code,
        root_pid,
        orphans_running,
        exited,
        placeholders,
        _signals,
        writing,
    } = ended;
    let staging = &prepared.staging;
    let databases = staged_databases(staging);
    // Processes still running may write into the staging folder yet: it stays.
    let remove_staging = || {
        if orphans_running == 0 {
            let _ = std::fs::remove_dir_all(staging);
        } else {
            say!(
                "kreplay: the staging folder {} is kept for the processes still running",
                staging.display()
            );
        }
    };
    if databases.is_empty() {
        writing.finish();
        remove_staging();
        say!(
            "kreplay: warning: the application recorded nothing ({}); no output written",
            if prepared.inject.is_ok() {
                "it created no CUDA context, or the injection library could not start; see messages above"
            } else {
                "the profiled app did not read KREPLAY_CONFIG"
            }
        );
        return Ok(RunResult {
            app_exit_code: exit_code,
            exit_code,
            files: Vec::new(),
            data: None,
            summaries: Vec::new(),
        });
    }
    // From here on a failure must not hide the application's status: it is reported, the
    // databases are kept, and the run ends with the app's status (or 1 if the app succeeded).
    let failed = |what: String, error: &dyn std::fmt::Display| {
        writing.finish();
        say!(
            "kreplay: error: {what}: {error}; the recorded databases are kept in {}",
            staging.display()
        );
        RunResult {
            app_exit_code: exit_code,
            exit_code: if exit_code == 0 { 1 } else { exit_code },
            files: Vec::new(),
            data: None,
            summaries: Vec::new(),
        }
    };
    let data = match collect(spec, &databases) {
        Ok(data) => data,
        Err(e) => return Ok(failed("cannot read the recorded data".into(), &e)),
    };
    writing.set_message(format!("writing outputs: {} records", record_count(&data)));
    let mut files = Vec::new();
    let mut summaries = Vec::new();
    if let Err((dir, e)) = write_destinations(
        spec,
        &data,
        (&placeholders, root_pid),
        &mut files,
        &mut summaries,
    ) {
        let mut result = failed(
            format!("cannot write the output files to {}", dir.display()),
            &e,
        );
        result.files = files;
        result.data = Some(data);
        return Ok(result);
    }
    writing.finish();
    remove_staging();
    tracing::debug!(
        "outputs written {:.1} ms after the application exited",
        exited.elapsed().as_secs_f64() * 1e3
    );
    Ok(RunResult {
        app_exit_code: exit_code,
        exit_code,
        files,
        data: Some(data),
        summaries,
    })
}

#[cfg(test)]
mod tests;
