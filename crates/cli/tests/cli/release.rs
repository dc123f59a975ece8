//! The helper that holds the staging databases, removed after a run, until kreplay has exited
//! (`launch/release.rs`): the kernel frees their page cache as the helper ends, not in
//! kreplay's exit.

use crate::common::*;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};

/// Whether process `pid` has a descriptor open on a file whose link text contains `name`.
fn holds(pid: u32, name: &str) -> bool {
    std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|fds| {
            fds.filter_map(|fd| fd.ok())
                .filter_map(|fd| std::fs::read_link(fd.path()).ok())
                .any(|target| target.to_string_lossy().contains(name))
        })
        .unwrap_or(false)
}

#[test]
fn the_helper_holds_an_inherited_file_until_its_input_ends() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("held.db");
    std::fs::write(&path, vec![7u8; 1 << 20]).unwrap();
    let file = File::open(&path).unwrap();
    // SAFETY: fcntl on the descriptor `file` owns: the helper inherits it.
    assert_eq!(
        unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFD, 0) },
        0
    );
    let mut helper = Command::new(kreplay_exe())
        .arg("--hold-released-files")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    drop(file);
    std::fs::remove_file(&path).unwrap();
    assert!(
        holds(helper.id(), "held.db (deleted)"),
        "the helper holds the file"
    );
    // Its input ends (kreplay exited): it exits, closing the file.
    drop(helper.stdin.take());
    let (status, _) = wait_bounded(helper);
    assert_eq!(status, Some(0));
}

/// A run whose staging files go to a helper however small they are: it ends as any run does,
/// its outputs whole and its staging folder gone.
#[test]
fn a_run_hands_its_staging_databases_to_the_helper_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let app = sim_app();
    let mut args = two_groups_replay(&["-f", "csv", "rocpd", "-d", "out", "-o", "r", "--"]);
    args.push(app.to_str().unwrap());
    let output = kreplay_command(dir.path(), &args)
        .env("KREPLAY_TEST_RELEASE_MIN_BYTES", "0")
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    let out = dir.path().join("out");
    let names: Vec<String> = std::fs::read_dir(&out)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        !names.iter().any(|n| n.starts_with(".kreplay-staging")),
        "the staging folder is removed: {names:?}"
    );
    let db = rusqlite::Connection::open(out.join("r_results.db")).unwrap();
    let check: String = db
        .query_row("PRAGMA integrity_check", [], |r| r.get(0))
        .unwrap();
    assert_eq!(check, "ok");
    let csv = std::fs::read_to_string(out.join("r_counter_collection.csv")).unwrap();
    assert!(csv.lines().count() > 1, "{csv}");
}
