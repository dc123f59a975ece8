//! How much pinned host memory a snapshot may stage: what the process can still use, from
//! `/proc/meminfo` and the cgroup v2 limit.

/// The most pinned host memory one snapshot may take: half of what the process can still use
/// (the host's `MemAvailable`, or less when its cgroup's limit leaves less), so that a snapshot
/// too large for the device never exhausts the host or the container.
pub(crate) fn host_staging_limit() -> u64 {
    let read = |path: &str| std::fs::read_to_string(path).ok();
    available_memory(
        read("/proc/meminfo").as_deref(),
        read("/proc/self/cgroup").as_deref(),
        |dir, file| read(&format!("/sys/fs/cgroup{dir}/{file}")),
    )
    .map_or(4 << 30, |bytes| bytes / 2)
}

/// Bytes the process can still use: `MemAvailable` from `meminfo`, capped by the cgroup v2
/// limit (`memory.max` − `memory.current`) of the cgroup `cgroup` names, read through
/// `cgroup_file(dir, name)`.
fn available_memory(
    meminfo: Option<&str>,
    cgroup: Option<&str>,
    cgroup_file: impl Fn(&str, &str) -> Option<String>,
) -> Option<u64> {
    let host = meminfo.and_then(|text| {
        let line = text.lines().find(|l| l.starts_with("MemAvailable:"))?;
        Some(line.split_whitespace().nth(1)?.parse::<u64>().ok()? * 1024)
    });
    // cgroup v2: one line "0::/path".
    let group = cgroup.and_then(|text| text.lines().find_map(|l| l.strip_prefix("0::")));
    let limited = group.and_then(|dir| {
        let dir = dir.trim().trim_end_matches('/');
        let max = cgroup_file(dir, "memory.max")?.trim().parse::<u64>().ok()?;
        let current = cgroup_file(dir, "memory.current")?
            .trim()
            .parse::<u64>()
            .ok()?;
        Some(max.saturating_sub(current))
    });
    match (host, limited) {
        (Some(h), Some(c)) => Some(h.min(c)),
        (h, c) => h.or(c),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_staging_follows_the_cgroup_limit_when_it_leaves_less() {
        let meminfo = "MemTotal: 1000 kB\nMemAvailable:  800 kB\n";
        let files = |max: &'static str| {
            move |dir: &str, name: &str| match (dir, name) {
                ("/job", "memory.max") => Some(max.to_string()),
                ("/job", "memory.current") => Some("100000\n".to_string()),
                _ => None,
            }
        };
        let cgroup = Some("0::/job\n");
        assert_eq!(
            available_memory(Some(meminfo), cgroup, files("300000")),
            Some(200_000)
        );
        assert_eq!(
            available_memory(Some(meminfo), cgroup, files("max")),
            Some(819_200)
        );
        assert_eq!(
            available_memory(Some(meminfo), None, files("1")),
            Some(819_200)
        );
        assert_eq!(available_memory(None, None, files("1")), None);
    }
}
