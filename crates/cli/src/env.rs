//! kreplay's own environment, read here and nowhere else in the command line: the variables that
//! tune kreplay itself (`KREPLAY_LOG`, `KREPLAY_PROGRESS`, `KREPLAY_DRAIN_TIMEOUT`, ...), what
//! rocprofv3 reads too (its PC-sampling switch, `SLURM_JOB_ID`), the launchers' rank variables and
//! the `%env{NAME}%` of output names. Values are checked here, as the options are: a bad one is a
//! usage error before the application starts.
//!
//! The variables kreplay sets for the application (`KREPLAY_CONFIG`, `CUDA_INJECTION64_PATH`)
//! are written by the launcher (`launch/application.rs`) and read by the injected library.

use crate::error::UsageError;
use kreplay_core::config::{drain_timeout_seconds, DEFAULT_DRAIN_TIMEOUT_MS, ENV_DRAIN_TIMEOUT};
use std::ffi::OsString;
use std::time::Duration;

/// Names the injected library; overrides the copy next to the `kreplay` executable.
pub const ENV_INJECT_LIB: &str = "KREPLAY_INJECT_LIB";
/// Seconds kreplay waits, after the application ended, for processes it started that still run.
pub const ENV_CHILD_WAIT_S: &str = "KREPLAY_CHILD_WAIT_S";
const DEFAULT_CHILD_WAIT_S: f64 = 30.0;
/// Milliseconds kreplay waits after the application ends before writing its outputs (tests).
const ENV_HOLD_OUTPUTS_MS: &str = "KREPLAY_TEST_HOLD_OUTPUTS_MS";
/// Bytes of staging databases from which a helper holds them until kreplay has exited (tests).
const ENV_RELEASE_MIN_BYTES: &str = "KREPLAY_TEST_RELEASE_MIN_BYTES";
/// `0`, `off`, `false` or `no` turns the progress line off.
pub const ENV_PROGRESS: &str = "KREPLAY_PROGRESS";
/// kreplay's own log filter (`tracing`'s syntax: `debug`, `kreplay=trace`, ...).
const ENV_LOG: &str = "KREPLAY_LOG";
/// rocprofv3 takes this variable, whatever its value, as a request for PC sampling.
const ENV_PC_SAMPLING: &str = "ROCPROFILER_PC_SAMPLING_BETA_ENABLED";
/// The library CUDA loads into a process that initialises it.
const ENV_CUDA_INJECTION: &str = "CUDA_INJECTION64_PATH";

/// The variable `name` of kreplay's environment; `None` when unset or not Unicode. For names the
/// command line does not choose: `%env{NAME}%` in output names, the launchers' rank variables, the
/// library's switches checked before the run.
pub fn var(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// kreplay may initialise CUDA itself (to ask GPU 0 which counters it has): an injection library
/// named in its own environment must not load into kreplay. The application gets its own
/// `CUDA_INJECTION64_PATH` from the launcher. Call first, while there is one thread.
pub fn forget_injection_library() {
    std::env::remove_var(ENV_CUDA_INJECTION);
}

/// `KREPLAY_DEBUG`, as the injected library reads it: diagnostic lines on stderr.
pub fn debug_lines() -> bool {
    kreplay_core::config::Switches::from_lookup(var).debug
}

/// The retired switches set in kreplay's environment (they have no effect).
pub fn retired_switches() -> Vec<&'static str> {
    kreplay_core::config::retired_switches_set(|name| std::env::var_os(name).is_some()).collect()
}

/// `KREPLAY_LOG`: the log filter asked for, if any.
pub fn log_filter() -> Option<String> {
    var(ENV_LOG)
}

/// Whether rocprofv3's PC-sampling variable is set (whatever its value).
pub fn pc_sampling_requested() -> bool {
    std::env::var_os(ENV_PC_SAMPLING).is_some()
}

/// `KREPLAY_PROGRESS` turns the progress line off (`0`, `off`, `false`, `no`).
pub fn progress_off() -> bool {
    var(ENV_PROGRESS).is_some_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "0" | "off" | "false" | "no"
        )
    })
}

/// `COLUMNS`: the terminal's width, when the shell says it (40 columns at least).
pub fn terminal_columns() -> Option<usize> {
    var("COLUMNS")
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c >= 40)
}

/// `PATH`, where an `ncu` (and its Nsight Compute installation) is looked for.
pub fn search_path() -> Option<OsString> {
    std::env::var_os("PATH")
}

/// `KREPLAY_INJECT_LIB`: the injected library to use instead of the one next to `kreplay`.
pub fn inject_lib() -> Option<OsString> {
    std::env::var_os(ENV_INJECT_LIB)
}

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
pub fn child_wait() -> Result<Duration, UsageError> {
    let Ok(value) = std::env::var(ENV_CHILD_WAIT_S) else {
        return Ok(Duration::from_secs_f64(DEFAULT_CHILD_WAIT_S));
    };
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1.0e9)
        .map(Duration::from_secs_f64)
        .ok_or_else(|| {
            UsageError::new(format!(
                "{ENV_CHILD_WAIT_S}={value:?} is not a number of seconds; set it to e.g. 30 or 0 (or unset it for 30)"
            ))
        })
}

/// For the tests of the helper that holds the staging databases: the size from which it does
/// (`launch/release.rs`).
pub fn release_min_bytes() -> Option<u64> {
    var(ENV_RELEASE_MIN_BYTES).and_then(|v| v.parse().ok())
}

/// For the test that signals kreplay while it writes: a pause before the writing.
pub fn hold_outputs() -> Option<Duration> {
    var(ENV_HOLD_OUTPUTS_MS)
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
}
