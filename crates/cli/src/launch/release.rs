//! The staging databases handed to a helper process as the staging folder is removed. The
//! kernel frees a deleted file's page cache when its last open file closes: for the databases
//! the application just wrote (4 KiB pages written one by one), 0.18 s at 5×10^5 dispatches and
//! 0.30 s at 10^6, in kreplay's exit, after every output is written (issue 49). The helper
//! (kreplay itself, [`HOLD_ARG`]) holds the files open until kreplay has exited and the kernel
//! frees them as it ends; the user waits for none of it. Only large files are handed over (a
//! process costs more than a small file's release); where the helper cannot start, kreplay
//! releases them itself, as before.

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::os::fd::AsRawFd;
use std::path::Path;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::Mutex;

/// The first argument that makes kreplay the helper: it reads its standard input until it ends
/// (when the kreplay that started it has exited) and exits, closing the files it inherited.
pub const HOLD_ARG: &str = "--hold-released-files";

/// Below this many bytes in all, the files are released by kreplay itself (unless
/// [`crate::env::release_min_bytes`] says otherwise).
const MIN_BYTES: u64 = 64 << 20;

/// The helpers' standard inputs, open until kreplay exits.
static HELPERS: Mutex<Vec<ChildStdin>> = Mutex::new(Vec::new());

/// Hands the files of `staging` (a folder about to be removed) to a helper that holds them
/// until kreplay has exited, when they are large enough to be worth it.
pub(super) fn hand_over(staging: &Path) {
    let files: Vec<File> = std::fs::read_dir(staging)
        .map(|entries| {
            entries
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_file())
                .filter_map(|p| File::open(p).ok())
                .collect()
        })
        .unwrap_or_default();
    let bytes: u64 = files
        .iter()
        .filter_map(|f| f.metadata().ok())
        .map(|m| m.len())
        .sum();
    let min = crate::env::release_min_bytes().unwrap_or(MIN_BYTES);
    if files.is_empty() || bytes < min {
        return;
    }
    if let Ok(exe) = std::env::current_exe() {
        hold(&exe, &files);
    }
}

/// Starts `exe` as the helper holding `files` (inherited: their descriptors are left open
/// across its start; the caller closes its own).
fn hold(exe: &Path, files: &[File]) {
    for file in files {
        // SAFETY: fcntl on a descriptor this function's caller owns; clears close-on-exec so
        // the helper inherits it. No other process is started meanwhile (the run has ended).
        if unsafe { libc::fcntl(file.as_raw_fd(), libc::F_SETFD, 0) } != 0 {
            return;
        }
    }
    let started = Command::new(exe)
        .arg(HOLD_ARG)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    // Its input stays open until kreplay exits; the helper is not waited for.
    if let Some(input) = started.ok().and_then(|mut helper| helper.stdin.take()) {
        HELPERS
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(input);
    }
}

/// The helper's work ([`HOLD_ARG`]): waits for its standard input to end, then exits. Typed at
/// a terminal, it would wait for nothing: it says so and exits with the usage status.
pub fn serve() -> ! {
    if std::io::stdin().is_terminal() {
        eprintln!(
            "kreplay: error: {HOLD_ARG} is kreplay's own helper, started by kreplay after a run; run `kreplay --help` for the options"
        );
        std::process::exit(crate::error::EXIT_USAGE);
    }
    let mut sink = [0u8; 64];
    while matches!(std::io::stdin().read(&mut sink), Ok(n) if n > 0) {}
    std::process::exit(0)
}
