//! Helpers for tests that run the real `kreplay` binary in a temporary folder.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Three metrics of the reference software device, which holds two counters per pass: any two
/// fit one pass, all three need two.
pub const W: &str = "sim__warps_launched.sum";
pub const I: &str = "sim__inst_executed.sum";
pub const C: &str = "sim__cycles_elapsed.max";

pub fn kreplay_exe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_kreplay"))
}

/// `kreplay-sim-app` from the same build, next to `kreplay`. `cargo test --workspace` (the
/// README's `.ci/run`) builds it; under `cargo test -p kreplay-cli` alone it is built here, once,
/// into the same target folder and profile.
pub fn sim_app() -> PathBuf {
    static BUILT: std::sync::Mutex<bool> = std::sync::Mutex::new(false);
    let bin_dir = kreplay_exe()
        .parent()
        .expect("kreplay has a folder")
        .to_path_buf();
    let path = bin_dir.join("kreplay-sim-app");
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if !path.is_file() && !*built {
        *built = true;
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut command = Command::new(cargo);
        command.args(["build", "-p", "kreplay-sim", "--bin", "kreplay-sim-app"]);
        if let Some(target_dir) = bin_dir.parent() {
            command.arg("--target-dir").arg(target_dir);
        }
        if bin_dir.file_name().is_some_and(|n| n == "release") {
            command.arg("--release");
        }
        let status = command.status().expect("cargo runs");
        assert!(status.success(), "building kreplay-sim-app failed");
    }
    assert!(
        path.is_file(),
        "{} is missing: run the tests with `cargo test --workspace` (or `cargo build -p kreplay-sim` first)",
        path.display()
    );
    path
}

/// A command for `kreplay args...` in `dir`, with an environment that does not leak the
/// caller's profiler settings.
pub fn kreplay_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(kreplay_exe());
    command
        .args(args)
        .current_dir(dir)
        .env_remove("ROCPROFILER_PC_SAMPLING_BETA_ENABLED")
        .env_remove("KREPLAY_CONFIG")
        .env_remove("CUDA_INJECTION64_PATH")
        .env_remove("KREPLAY_LOG")
        .env_remove("KREPLAY_PACK_GROUPS")
        .env_remove("KREPLAY_TIMING_EXECUTION");
    command
}

/// Kernel replay of the two groups `{W, I}` and `{W, C}` (two hardware passes on the sim),
/// followed by `more`.
pub fn two_groups_replay<'a>(more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "--pmc",
        W,
        I,
        "--pmc",
        W,
        C,
        "--replay-mode",
        "kernel",
        "--kernel-replay-beta-enabled",
    ];
    args.extend_from_slice(more);
    args
}

/// kreplay with `args`, then `--` and the sim app, in `dir`.
pub fn run_sim(dir: &Path, args: &[&str]) -> Output {
    let app = sim_app();
    let mut all: Vec<&str> = args.to_vec();
    all.push("--");
    all.push(app.to_str().unwrap());
    kreplay(dir, &all)
}

pub fn kreplay(dir: &Path, args: &[&str]) -> Output {
    kreplay_command(dir, args).output().expect("kreplay runs")
}

pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Asserts a usage error: exit status 2 and `message` on stderr, on one line.
pub fn assert_usage_error(output: &Output, message: &str) {
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    let line = stderr
        .lines()
        .find(|l| l.contains(message))
        .unwrap_or_else(|| panic!("expected {message:?} on stderr, got: {stderr}"));
    assert!(line.starts_with("kreplay: error: "), "{line}");
}

/// Every file under `dir`, relative, sorted.
pub fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.push(
                    path.strip_prefix(dir)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    out.sort();
    out
}

/// Longer than any case needs on a loaded machine; a case that takes this long has hung.
pub const HUNG: std::time::Duration = std::time::Duration::from_secs(120);

/// Waits for `child` to end, at most [`HUNG`]; its exit status and stderr.
pub fn wait_bounded(mut child: std::process::Child) -> (Option<i32>, String) {
    let began = std::time::Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let mut stderr = String::new();
            use std::io::Read;
            if let Some(mut pipe) = child.stderr.take() {
                let _ = pipe.read_to_string(&mut stderr);
            }
            return (status.code(), stderr);
        }
        if began.elapsed() > HUNG {
            let _ = child.kill();
            panic!("the run did not end within {HUNG:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}
