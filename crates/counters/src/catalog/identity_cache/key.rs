//! The key of a device configuration, built from files the NVIDIA kernel driver publishes
//! (no CUDA call) and the CUPTI libraries that answer for it.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Bumped when the key or the entry changes meaning.
const FORMAT: &str = "1";

/// What identifies a device configuration: named components, compared whole.
pub type Key = BTreeMap<String, String>;

/// The key of CUDA device `ordinal` as this process would see it; `None` when the driver's
/// files cannot be read (no NVIDIA driver, or a system that does not publish them).
pub fn key_for(
    ordinal: i32,
    cupti_dir: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<Key> {
    key_from(Path::new("/proc"), ordinal, cupti_dir, env)
}

pub(super) fn key_from(
    proc_root: &Path,
    ordinal: i32,
    cupti_dir: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<Key> {
    let nvidia = proc_root.join("driver").join("nvidia");
    let driver = std::fs::read_to_string(nvidia.join("version")).ok()?;
    let driver = driver.lines().next()?.trim().to_string();
    let mut gpus = Vec::new();
    let mut bus_ids: Vec<PathBuf> = std::fs::read_dir(nvidia.join("gpus"))
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    bus_ids.sort();
    for dir in bus_ids {
        let text = std::fs::read_to_string(dir.join("information")).ok()?;
        // The interrupt line can change between boots without changing the device.
        let lines: Vec<&str> = text
            .lines()
            .filter(|l| !l.starts_with("IRQ"))
            .map(str::trim)
            .collect();
        gpus.push(lines.join("; "));
    }
    if gpus.is_empty() {
        return None;
    }
    let mut key = Key::new();
    key.insert("format".into(), FORMAT.into());
    key.insert("ordinal".into(), ordinal.to_string());
    key.insert("driver".into(), driver);
    key.insert("gpus".into(), gpus.join(" | "));
    key.insert(
        "capabilities".into(),
        tree(&nvidia.join("capabilities"), 6).join(" "),
    );
    let params = std::fs::read_to_string(nvidia.join("params")).unwrap_or_default();
    key.insert(
        "profiling".into(),
        params
            .lines()
            .find(|l| l.starts_with("RmProfilingAdminOnly"))
            .unwrap_or("")
            .to_string(),
    );
    key.insert(
        "euid".into(),
        kreplay_cuda::cupti::process::effective_uid().to_string(),
    );
    for name in ["CUDA_VISIBLE_DEVICES", "CUDA_DEVICE_ORDER"] {
        key.insert(name.into(), env(name).unwrap_or_default());
    }
    // The CUPTI that answers: its folder and the two libraries' sizes and times.
    let cupti_dir = cupti_dir?;
    let mut libraries = vec![cupti_dir.display().to_string()];
    let mut names: Vec<PathBuf> = std::fs::read_dir(cupti_dir)
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("libcupti.so") || n.starts_with("libnvperf_host.so"))
        })
        .collect();
    names.sort();
    for path in names {
        let meta = std::fs::metadata(&path).ok()?;
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_nanos());
        libraries.push(format!(
            "{} {} {modified}",
            path.file_name()?.to_string_lossy(),
            meta.len()
        ));
    }
    key.insert("cupti".into(), libraries.join("; "));
    Some(key)
}

/// Every path under `dir` (relative, sorted), down to `depth` levels.
fn tree(dir: &Path, depth: usize) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), 0)];
    while let Some((path, level)) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&path) else {
            continue;
        };
        for entry in entries.flatten() {
            let child = entry.path();
            if let Ok(relative) = child.strip_prefix(dir) {
                found.push(relative.display().to_string());
            }
            if level + 1 < depth && entry.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((child, level + 1));
            }
        }
    }
    found.sort();
    found
}
