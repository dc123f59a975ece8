//! The launcher's work around an application: output names from placeholders, the staging
//! folder, the application's exit status and signals, pass folders, and outputs that cannot be
//! written (refused before the start, or kept as databases after it).

use super::stand_in::*;
use crate::common::*;
use kreplay_core::config::ToolConfig;

#[test]
fn outputs_are_named_with_placeholders_and_staging_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(
        dir.path(),
        &[
            "--pmc",
            W,
            "-d",
            "D/%env{KREPLAY_TEST_TAG}%",
            "-o",
            "%tag%/%pid%_$env{KREPLAY_TEST_TAG}",
            "-f",
            "json",
            "csv",
            "rocpd",
        ],
        0,
        false,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let files = files_under(&dir.path().join("D"));
    assert!(
        files.contains(&"tagged/sh/4242_tagged_results.json".to_string()),
        "{files:?}"
    );
    assert!(
        files.contains(&"tagged/sh/4242_tagged_results.db".to_string()),
        "{files:?}"
    );
    assert!(
        files.contains(&"tagged/sh/4242_tagged_counter_collection.csv".to_string()),
        "{files:?}"
    );
    assert!(
        !files.iter().any(|f| f.contains(".kreplay-staging")),
        "{files:?}"
    );
    assert!(stderr.contains("kreplay: wrote "), "{stderr}");
    // The summary: per kernel, per pass, and replay cost totals.
    assert!(stderr.contains("2 dispatch(es) of 1 kernel(s)"), "{stderr}");
    assert!(stderr.contains(&format!("{W}=32")), "{stderr}");
    assert!(stderr.contains("8.0 KiB snapshotted"), "{stderr}");
    // Default name: %hostname%/%pid% with the recorded process's host and pid.
    let out = run_stand_in(dir.path(), &["--pmc", W, "-d", "E"], 0, false);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(
        files_under(&dir.path().join("E")),
        vec!["fixturehost/4242_results.db"]
    );
}

#[test]
fn log_level_info_prints_the_configuration_given_to_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(
        dir.path(),
        &["--pmc", W, "-d", "D", "--log-level", "info"],
        0,
        false,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let line = stderr
        .lines()
        .find_map(|l| l.strip_prefix("kreplay: KREPLAY_CONFIG="))
        .unwrap_or_else(|| panic!("no configuration line: {stderr}"));
    let config = ToolConfig::from_json(line).unwrap();
    assert_eq!(config.log_level, "info");
    assert!(
        config.database_path.ends_with("/%pid%.db"),
        "{}",
        config.database_path
    );
    assert!(
        config.database_path.contains(".kreplay-staging-"),
        "{}",
        config.database_path
    );
}

#[test]
fn the_apps_exit_status_is_forwarded_after_writing_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(
        dir.path(),
        &["--pmc", W, "-d", "D", "-o", "out", "-f", "json"],
        3,
        false,
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(dir.path().join("D/out_results.json").is_file());
    let out = run_stand_in(
        dir.path(),
        &["--pmc", W, "-d", "S", "-o", "out", "-f", "json"],
        0,
        true,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("signal 9"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        dir.path().join("S/out_results.json").is_file(),
        "crashed apps still get their output"
    );
}

#[test]
fn sigterm_to_kreplay_reaches_the_app_and_output_is_still_written() {
    let dir = tempfile::tempdir().unwrap();
    let child = stand_in_command(
        dir.path(),
        &["--pmc", W, "-d", "T", "-o", "out", "-f", "json"],
        0,
    )
    .env("APP_SLEEP", "30")
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    // Wait until the app has written its database into the staging folder.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let staged = files_under(&dir.path().join("T"))
            .iter()
            .any(|f| f.contains(".kreplay-staging") && f.ends_with(".db"));
        if staged {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the stand-in never wrote its database"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // SAFETY: sending a signal to our own child process.
    unsafe {
        libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
    }
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed().as_secs() < 20, "the app was not stopped");
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("signal 15"), "{stderr}");
    assert!(dir.path().join("T/out_results.json").is_file(), "{stderr}");
}

#[test]
fn application_replay_writes_pass_folders_with_progress_lines() {
    let dir = tempfile::tempdir().unwrap();
    let out = run_stand_in(
        dir.path(),
        &["--pmc", W, "--pmc", I, "-d", "D", "-o", "out", "-f", "json"],
        0,
        false,
    );
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("kreplay: pass 1/2: "), "{stderr}");
    assert!(stderr.contains("kreplay: pass 2/2: "), "{stderr}");
    assert_eq!(
        files_under(&dir.path().join("D")),
        vec!["pass_1/out_results.json", "pass_2/out_results.json"]
    );
}

#[test]
fn unwritable_output_keeps_the_databases_and_fails() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("D")).unwrap();
    // The application itself puts a file where the output folder should be: found only after
    // the run.
    let blocked = |app_exit| {
        stand_in_command(
            dir.path(),
            &["--pmc", W, "-d", "D", "-o", "sub/out"],
            app_exit,
        )
        .env("APP_BLOCK", dir.path().join("D/sub"))
        .output()
        .unwrap()
    };
    let out = blocked(0);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot write the output files"), "{stderr}");
    assert!(
        stderr.contains("the recorded databases are kept in"),
        "{stderr}"
    );
    assert!(
        !stderr.contains("the application exited with status"),
        "it exited 0: {stderr}"
    );
    let staged = files_under(&dir.path().join("D"));
    assert!(
        staged
            .iter()
            .any(|f| f.contains(".kreplay-staging") && f.ends_with(".db")),
        "{staged:?}"
    );
    // The app's own failure status wins over kreplay's.
    std::fs::remove_file(dir.path().join("D/sub")).unwrap();
    let out = blocked(5);
    assert_eq!(out.status.code(), Some(5), "{}", text(&out.stderr));
    assert!(text(&out.stderr).contains("the application exited with status 5"));
}

#[test]
fn impossible_output_paths_are_refused_before_the_application_starts() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("plain"), "a file").unwrap();
    let long = "n".repeat(300);
    for (args, expected) in [
        (vec!["-d", "plain/D", "-o", "out"], "which is a file, not a folder"),
        (vec!["-d", ".", "-o", "plain/out"], "which is a file, not a folder"),
        (vec!["-d", "D", "-o", long.as_str()], "more than the"),
        (vec!["-d", "D", "-o", "%pid%_nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn"], "more than the"),
    ] {
        let mut all = vec!["--pmc", W];
        all.extend(&args);
        let out = stand_in_command(dir.path(), &all, 0)
            .env("APP_BLOCK", dir.path().join("started"))
            .output()
            .unwrap();
        let stderr = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(!dir.path().join("started").exists(), "{args:?}: the app ran");
    }
    // The longest name that fits: 255 bytes with the counter CSV's suffix and the temporary
    // name's (36 bytes), written for real.
    let longest = "n".repeat(255 - 36);
    let out = stand_in_command(
        dir.path(),
        &["--pmc", W, "-d", "L", "-o", &longest, "-f", "csv"],
        0,
    )
    .output()
    .unwrap();
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert!(dir
        .path()
        .join(format!("L/{longest}_counter_collection.csv"))
        .is_file());
}

#[test]
fn a_missing_application_is_named_and_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let fake_lib = dir.path().join("libfake_inject.so");
    std::fs::write(&fake_lib, b"").unwrap();
    let out = kreplay_command(dir.path(), &["--pmc", W, "-d", "D", "--", "./no-such-app"])
        .env("KREPLAY_INJECT_LIB", &fake_lib)
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("cannot start './no-such-app'"), "{stderr}");
    assert!(files_under(&dir.path().join("D")).is_empty());
}

#[test]
fn a_missing_injection_library_is_named() {
    let dir = tempfile::tempdir().unwrap();
    let out = kreplay_command(dir.path(), &["--pmc", W, "--", "true"])
        .env("KREPLAY_INJECT_LIB", dir.path().join("nope.so"))
        .output()
        .unwrap();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("libkreplay_inject.so was not found")
            && stderr.contains("KREPLAY_INJECT_LIB"),
        "{stderr}"
    );
}
