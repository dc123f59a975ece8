//! A first hour without a GPU: README's reference-device examples run as written, a missing
//! CUPTI that .ci/run installed is pointed at, and reports go to stderr.

use crate::common::*;
use std::path::Path;

/// README's "Use" commands that run on the reference device (`./target/release/kreplay ...`),
/// continuation lines joined.
fn readme_sim_commands() -> Vec<String> {
    let readme = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    let text = std::fs::read_to_string(readme).unwrap();
    let start = text.find("## Use").expect("README has a Use section");
    let end = start + text[start..].find("\n## ").unwrap_or(text.len() - start);
    let joined = text[start..end].replace("\\\n", " ");
    joined
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("./target/release/kreplay "))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn readme_reference_device_examples_run_as_written() {
    let commands = readme_sim_commands();
    assert!(commands.len() >= 7, "{commands:?}");
    sim_app();
    let bin = kreplay_exe().parent().unwrap().to_path_buf();
    let dir = tempfile::tempdir().unwrap();
    for command in &commands {
        let words: Vec<String> = command
            .split_whitespace()
            .map(|w| w.replace("./target/release/", &format!("{}/", bin.display())))
            .collect();
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        let out = kreplay(dir.path(), &args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "README's `{command}` failed: {}{}",
            text(&out.stdout),
            text(&out.stderr)
        );
    }
    assert!(dir.path().join("converted/out_results.pftrace").is_file());
}

#[test]
fn cupti_installed_by_ci_run_is_named_when_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let lib = dir.path().join(".deps/cupti/nvidia/cu13/lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(lib.join("libcupti.so.13"), b"").unwrap();
    let out = kreplay_command(dir.path(), &["avail", "list", "--chip", "GH100"])
        .env_remove("KREPLAY_CUPTI_DIR")
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    // A machine with CUPTI installed where the loader looks finds it: nothing to point at.
    if stderr.contains("CUPTI (libcupti.so.13) not found") {
        let export = format!("export KREPLAY_CUPTI_DIR={}", lib.display());
        assert!(stderr.contains(&export), "{stderr}");
        assert_eq!(out.status.code(), Some(2), "{stderr}");
    }
}

#[test]
fn convert_reports_on_stderr_as_a_run_does() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_sim(dir.path(), &["--pmc", W, "-d", "out", "-o", "r"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = kreplay(
        dir.path(),
        &[
            "convert",
            "-i",
            "out/r_results.db",
            "-f",
            "json",
            "pftrace",
            "-d",
            "c",
        ],
    );
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stdout.is_empty(), "{stdout}");
    assert!(stderr.contains("kreplay: merged 1 database(s)"), "{stderr}");
    assert!(
        stderr.contains("kreplay: wrote c/out_results.pftrace"),
        "{stderr}"
    );
}
