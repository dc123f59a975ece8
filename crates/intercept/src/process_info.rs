//! The process's record: its command line, host, parent, launcher rank and start time.

use kreplay_format::ProcessInfo;

/// `/proc/self/cmdline`: every argument ends with a NUL. Empty arguments are kept (the command
/// line is recorded exactly); only the piece after the last terminator is not an argument.
fn parse_cmdline(bytes: &[u8]) -> Vec<String> {
    let body = bytes.strip_suffix(&[0]).unwrap_or(bytes);
    if body.is_empty() {
        return Vec::new();
    }
    body.split(|b| *b == 0)
        .map(|part| String::from_utf8_lossy(part).into_owned())
        .collect()
}

pub(crate) fn process_info(
    pid: u32,
    cache_control: kreplay_format::CacheControl,
    launcher: &kreplay_core::config::LauncherRank,
) -> ProcessInfo {
    let command = std::fs::read("/proc/self/cmdline")
        .map(|bytes| parse_cmdline(&bytes))
        .unwrap_or_default();
    let hostname = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    ProcessInfo {
        pid,
        ppid: std::os::unix::process::parent_id(),
        hostname,
        command,
        start_ns: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0),
        end_ns: 0,
        rank: launcher.rank.clone(),
        size: launcher.size.clone(),
        cache_control,
        sections: Vec::new(),
        kernel_rename: false,
        mangled_kernels: false,
        truncate_kernels: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cmdline_keeps_empty_arguments_and_drops_only_the_terminator() {
        assert_eq!(parse_cmdline(b"./app\0\0x\0"), vec!["./app", "", "x"]);
        assert_eq!(parse_cmdline(b"./app\0"), vec!["./app"]);
        assert!(parse_cmdline(b"").is_empty());
    }
}
