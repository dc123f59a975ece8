//! A device's identity (chip name and counter-availability image) kept between runs.
//!
//! Reading it costs the CLI ≈ 0.5 s on an H200 before the application can start (`cuInit`,
//! profiler initialisation, a primary context, the image itself: `bench/probes/init_cost.cu`).
//! Both depend only on the GPU and the software that answers for it, so a run reuses the
//! identity an earlier run read, under a key built from files the NVIDIA kernel driver
//! publishes (no CUDA call): the driver version, each GPU's model, UUID, VBIOS, firmware and bus
//! location, the MIG capability tree (instances appear there), the profiling permission and the
//! user, `CUDA_VISIBLE_DEVICES` / `CUDA_DEVICE_ORDER`, and the CUPTI libraries (path, size,
//! modification time). Any change of these reads the device again. Without
//! `/proc/driver/nvidia` there is no key and nothing is cached.
//!
//! Where: `$KREPLAY_CACHE_DIR`, else `$XDG_CACHE_HOME/kreplay`, else `$HOME/.cache/kreplay`;
//! `KREPLAY_CACHE_DIR=off` switches the cache off. The file holds the few most recent keys.
//! Writes go to a temporary file renamed into place, so concurrent runs never read half a file.
//!
//! A cached identity is checked twice: a group the cached image rejects is checked again on a
//! freshly read one before the run is refused, and the injected library compares the image it
//! reads in the application with [`digest`] of the one the checks used; when they differ it
//! reports [`STALE_WARNING`] and the CLI drops the entry. (Using the cached image in the
//! application instead of reading it was tried: ≈ 50–80 ms less per run on an H200, most of
//! the read's ≈ 130 ms moving into CUPTI's first counter start; but a stale entry then goes
//! unnoticed (CUPTI does not give the image while the profiler is enabled), and a check at exit
//! that disabled the profiler first ended the application with SIGSEGV on the H200. Not kept.)

use super::device::DeviceIdentity;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Environment variable naming the cache folder (`off`: no cache).
pub const ENV_CACHE_DIR: &str = "KREPLAY_CACHE_DIR";
/// File name in the cache folder.
pub const FILE_NAME: &str = "device-identity.json";
/// Start of the warning the injected library records when the image it read in the application
/// is not the one the CLI checked the groups with.
pub const STALE_WARNING: &str = "the device identity the counter groups were checked with";
/// Keys kept in the file (a machine rarely has more GPU configurations than this).
const MAX_ENTRIES: usize = 8;
/// Single-pass verdicts kept per key.
const MAX_GROUPS: usize = 256;
/// Bumped when the key or the entry changes meaning.
const FORMAT: &str = "1";

/// What identifies a device configuration: named components, compared whole.
pub type Key = BTreeMap<String, String>;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Entry {
    key: Key,
    chip: String,
    /// The counter-availability image, hex.
    availability: String,
    /// Counter groups (metric names, in order) already checked to fit one hardware pass with
    /// this identity and CUPTI; a run with only such groups needs no catalog.
    #[serde(default)]
    single_pass: Vec<Vec<String>>,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct CacheFile {
    entries: Vec<Entry>,
}

/// The cache folder the environment (`env`, a lookup of the process's variables) names
/// (`None`: switched off, or no home folder).
pub fn cache_dir(env: impl Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let non_empty = |name| env(name).filter(|v| !v.is_empty());
    if let Some(dir) = non_empty(ENV_CACHE_DIR) {
        return (dir != "off").then(|| PathBuf::from(dir));
    }
    if let Some(xdg) = non_empty("XDG_CACHE_HOME") {
        return Some(PathBuf::from(xdg).join("kreplay"));
    }
    non_empty("HOME").map(|home| PathBuf::from(home).join(".cache").join("kreplay"))
}

/// The key of CUDA device `ordinal` as this process would see it; `None` when the driver's
/// files cannot be read (no NVIDIA driver, or a system that does not publish them).
pub fn key_for(
    ordinal: i32,
    cupti_dir: Option<&Path>,
    env: impl Fn(&str) -> Option<String>,
) -> Option<Key> {
    key_from(Path::new("/proc"), ordinal, cupti_dir, env)
}

fn key_from(
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

/// This machine's key for CUDA device `ordinal` and the cache folder, when both exist
/// (`env`: a lookup of the process's variables).
pub fn slot(ordinal: i32, env: impl Fn(&str) -> Option<String>) -> Option<(Key, PathBuf)> {
    let dir = cache_dir(&env)?;
    Some((
        key_for(ordinal, kreplay_cuda::loader::cupti_dir_unloaded(), env)?,
        dir,
    ))
}

/// The identity stored under `key` in `dir`, if any.
pub fn load(dir: &Path, key: &Key) -> Option<DeviceIdentity> {
    let file = read(dir)?;
    let entry = file.entries.into_iter().find(|e| &e.key == key)?;
    Some(DeviceIdentity {
        chip: entry.chip,
        counter_availability: from_hex(&entry.availability)?,
    })
}

/// Stores `identity` under `key` in `dir` (most recent first, the oldest keys dropped).
pub fn store(dir: &Path, key: &Key, identity: &DeviceIdentity) -> std::io::Result<()> {
    update(dir, |entries| {
        entries.retain(|e| &e.key != key);
        entries.insert(
            0,
            Entry {
                key: key.clone(),
                chip: identity.chip.clone(),
                availability: to_hex(&identity.counter_availability),
                single_pass: Vec::new(),
            },
        );
        entries.truncate(MAX_ENTRIES);
    })
}

/// The identity under `key` when every one of `groups` was checked with it to fit one pass.
pub fn checked_groups(dir: &Path, key: &Key, groups: &[Vec<String>]) -> Option<DeviceIdentity> {
    let entry = read(dir)?.entries.into_iter().find(|e| &e.key == key)?;
    if !groups.iter().all(|g| entry.single_pass.contains(g)) {
        return None;
    }
    Some(DeviceIdentity {
        chip: entry.chip,
        counter_availability: from_hex(&entry.availability)?,
    })
}

/// Notes that `groups` fit one pass each with the identity under `key` whose digest is
/// `identity` (nothing is noted when the entry holds another identity by now).
pub fn remember_groups(
    dir: &Path,
    key: &Key,
    identity: &str,
    groups: &[Vec<String>],
) -> std::io::Result<()> {
    update(dir, |entries| {
        let Some(entry) = entries.iter_mut().find(|e| &e.key == key) else {
            return;
        };
        let same = from_hex(&entry.availability)
            .is_some_and(|image| digest(&entry.chip, &image) == identity);
        if !same {
            return;
        }
        for group in groups {
            if !entry.single_pass.contains(group) {
                entry.single_pass.push(group.clone());
            }
        }
        // Bounded: the oldest verdicts go first.
        let excess = entry.single_pass.len().saturating_sub(MAX_GROUPS);
        entry.single_pass.drain(..excess);
    })
}

/// Drops every entry whose identity has `digest` (see [`digest`]).
pub fn forget(dir: &Path, stale: &str) -> std::io::Result<()> {
    update(dir, |entries| {
        entries.retain(|e| {
            from_hex(&e.availability).is_none_or(|image| digest(&e.chip, &image) != stale)
        })
    })
}

fn read(dir: &Path) -> Option<CacheFile> {
    let text = std::fs::read_to_string(dir.join(FILE_NAME)).ok()?;
    serde_json::from_str(&text).ok()
}

fn update(dir: &Path, change: impl FnOnce(&mut Vec<Entry>)) -> std::io::Result<()> {
    // A file that does not parse is replaced, not merged.
    let mut file = read(dir).unwrap_or_default();
    change(&mut file.entries);
    std::fs::create_dir_all(dir)?;
    let temporary = dir.join(format!(".{FILE_NAME}.{}", std::process::id()));
    std::fs::write(&temporary, serde_json::to_vec(&file)?)?;
    std::fs::rename(&temporary, dir.join(FILE_NAME)).inspect_err(|_| {
        let _ = std::fs::remove_file(&temporary);
    })
}

/// A short fingerprint of a chip and its counter-availability image (FNV-1a, 64 bits, hex),
/// which the CLI hands to the injected library with the groups it checked.
pub fn digest(chip: &str, image: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in chip.bytes().chain([0]).chain(image.iter().copied()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The warning for a device whose identity (`actual`, read in the application) is not the one
/// the groups were checked with (`checked`).
pub fn stale_warning(checked: &str, actual: &str) -> String {
    format!(
        "{STALE_WARNING} ({checked}) is not CUDA device 0's ({actual}, read in the application); the identity cached by kreplay is dropped, so the next run reads the device again"
    )
}

/// The digest a [`stale_warning`] names as checked, if `warning` is one.
pub fn stale_digest(warning: &str) -> Option<&str> {
    let rest = warning.strip_prefix(STALE_WARNING)?.trim_start();
    let (digest, _) = rest.strip_prefix('(')?.split_once(')')?;
    Some(digest)
}

fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake `/proc` with one GPU and a CUPTI folder; returns (proc root, cupti dir).
    fn fake_machine(root: &Path, uuid: &str, irq: u32) -> (PathBuf, PathBuf) {
        let proc_root = root.join("proc");
        let nvidia = proc_root.join("driver/nvidia");
        let gpu = nvidia.join("gpus/0000:00:06.0");
        std::fs::create_dir_all(&gpu).unwrap();
        std::fs::create_dir_all(nvidia.join("capabilities/gpu0/mig")).unwrap();
        std::fs::write(
            nvidia.join("version"),
            "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04\nGCC version: 15\n",
        )
        .unwrap();
        std::fs::write(
            nvidia.join("params"),
            "ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 0\n",
        )
        .unwrap();
        std::fs::write(
            gpu.join("information"),
            format!("Model: \t\t NVIDIA H200\nIRQ:   \t\t {irq}\nGPU UUID: \t {uuid}\nBus Location: \t 0000:00:06.0\n"),
        )
        .unwrap();
        let cupti = root.join("cupti");
        std::fs::create_dir_all(&cupti).unwrap();
        std::fs::write(cupti.join("libcupti.so.13"), b"cupti").unwrap();
        std::fs::write(cupti.join("libnvperf_host.so"), b"nvperf").unwrap();
        (proc_root, cupti)
    }

    fn key(proc_root: &Path, cupti: &Path, visible: Option<&str>) -> Option<Key> {
        key_from(proc_root, 0, Some(cupti), |name| {
            (name == "CUDA_VISIBLE_DEVICES")
                .then(|| visible.map(str::to_string))
                .flatten()
        })
    }

    fn identity(byte: u8) -> DeviceIdentity {
        DeviceIdentity {
            chip: "GH100".into(),
            counter_availability: vec![byte, 0, 255, 7],
        }
    }

    #[test]
    fn the_key_follows_the_device_and_ignores_the_interrupt_line() {
        let temp = tempfile::tempdir().unwrap();
        let (proc_a, cupti) = fake_machine(&temp.path().join("a"), "GPU-1111", 41);
        let (proc_b, _) = fake_machine(&temp.path().join("b"), "GPU-1111", 77);
        let (proc_c, _) = fake_machine(&temp.path().join("c"), "GPU-2222", 41);
        let a = key(&proc_a, &cupti, None).expect("a key");
        assert_eq!(Some(&a), key(&proc_b, &cupti, None).as_ref(), "IRQ only");
        assert_ne!(Some(&a), key(&proc_c, &cupti, None).as_ref(), "other GPU");
        assert_ne!(
            Some(&a),
            key(&proc_a, &cupti, Some("1")).as_ref(),
            "other CUDA_VISIBLE_DEVICES"
        );
        // A MIG instance appears in the capability tree.
        std::fs::create_dir_all(proc_a.join("driver/nvidia/capabilities/gpu0/mig/gi1/ci0"))
            .unwrap();
        assert_ne!(Some(&a), key(&proc_a, &cupti, None).as_ref(), "MIG layout");
        // Another CUPTI build.
        let (proc_d, cupti_d) = fake_machine(&temp.path().join("d"), "GPU-1111", 41);
        let base = key(&proc_d, &cupti_d, None).unwrap();
        std::fs::write(cupti_d.join("libnvperf_host.so"), b"a newer nvperf").unwrap();
        assert_ne!(Some(base), key(&proc_d, &cupti_d, None), "CUPTI changed");
    }

    #[test]
    fn no_driver_files_no_key() {
        let temp = tempfile::tempdir().unwrap();
        assert_eq!(key(temp.path(), temp.path(), None), None);
        let (proc_root, _) = fake_machine(temp.path(), "GPU-1", 1);
        assert_eq!(
            key_from(&proc_root, 0, None, |_| None),
            None,
            "no CUPTI folder"
        );
    }

    #[test]
    fn stored_identities_come_back_under_their_key_only() {
        let temp = tempfile::tempdir().unwrap();
        let (proc_root, cupti) = fake_machine(temp.path(), "GPU-1", 1);
        let dir = temp.path().join("cache");
        let k = key(&proc_root, &cupti, None).unwrap();
        let other = key(&proc_root, &cupti, Some("0")).unwrap();
        assert_eq!(load(&dir, &k), None);
        store(&dir, &k, &identity(1)).unwrap();
        store(&dir, &other, &identity(2)).unwrap();
        assert_eq!(load(&dir, &k), Some(identity(1)));
        assert_eq!(load(&dir, &other), Some(identity(2)));
        store(&dir, &k, &identity(3)).unwrap();
        assert_eq!(
            load(&dir, &k),
            Some(identity(3)),
            "replaced, not duplicated"
        );
        let file = read(&dir).unwrap();
        assert_eq!(file.entries.len(), 2);
        // The stale one is forgotten by its digest; the other stays.
        let stale = identity(3);
        forget(&dir, &digest(&stale.chip, &stale.counter_availability)).unwrap();
        assert_eq!(load(&dir, &k), None);
        assert_eq!(load(&dir, &other), Some(identity(2)));
    }

    #[test]
    fn group_verdicts_belong_to_their_identity() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let key = Key::from([("n".to_string(), "1".to_string())]);
        let group = |names: &[&str]| names.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let (a, b) = (group(&["x.sum", "y.sum"]), group(&["z.sum"]));
        let id = identity(1);
        let id_digest = digest(&id.chip, &id.counter_availability);
        // No entry yet: nothing is noted.
        remember_groups(dir, &key, &id_digest, std::slice::from_ref(&a)).unwrap();
        assert_eq!(checked_groups(dir, &key, std::slice::from_ref(&a)), None);
        store(dir, &key, &id).unwrap();
        assert_eq!(
            checked_groups(dir, &key, std::slice::from_ref(&a)),
            None,
            "not checked yet"
        );
        remember_groups(dir, &key, &id_digest, std::slice::from_ref(&a)).unwrap();
        assert_eq!(
            checked_groups(dir, &key, std::slice::from_ref(&a)),
            Some(id.clone())
        );
        assert_eq!(
            checked_groups(dir, &key, &[a.clone(), b.clone()]),
            None,
            "b unchecked"
        );
        assert_eq!(
            checked_groups(dir, &key, &[group(&["y.sum", "x.sum"])]),
            None,
            "order matters"
        );
        // A verdict for another identity is not noted; a new identity forgets the old verdicts.
        remember_groups(dir, &key, "0000000000000000", std::slice::from_ref(&b)).unwrap();
        assert_eq!(checked_groups(dir, &key, &[b]), None);
        store(dir, &key, &identity(2)).unwrap();
        assert_eq!(checked_groups(dir, &key, &[a]), None);
    }

    #[test]
    fn the_file_keeps_the_most_recent_keys_and_survives_garbage() {
        let temp = tempfile::tempdir().unwrap();
        let dir = temp.path();
        let keys: Vec<Key> = (0..MAX_ENTRIES + 2)
            .map(|i| Key::from([("n".to_string(), i.to_string())]))
            .collect();
        for k in &keys {
            store(dir, k, &identity(9)).unwrap();
        }
        assert_eq!(load(dir, &keys[0]), None, "the oldest is dropped");
        assert_eq!(load(dir, &keys[MAX_ENTRIES + 1]), Some(identity(9)));
        std::fs::write(dir.join(FILE_NAME), "{not json").unwrap();
        assert_eq!(load(dir, &keys[MAX_ENTRIES + 1]), None);
        store(dir, &keys[1], &identity(4)).unwrap();
        assert_eq!(load(dir, &keys[1]), Some(identity(4)), "garbage replaced");
    }

    #[test]
    fn the_cache_folder_comes_from_the_environment() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == name)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(
            cache_dir(env(&[(ENV_CACHE_DIR, "/c"), ("HOME", "/h")])),
            Some("/c".into())
        );
        assert_eq!(
            cache_dir(env(&[(ENV_CACHE_DIR, "off"), ("HOME", "/h")])),
            None
        );
        assert_eq!(
            cache_dir(env(&[("XDG_CACHE_HOME", "/x"), ("HOME", "/h")])),
            Some("/x/kreplay".into())
        );
        assert_eq!(
            cache_dir(env(&[("HOME", "/h")])),
            Some("/h/.cache/kreplay".into())
        );
        assert_eq!(cache_dir(env(&[])), None);
    }

    #[test]
    fn a_stale_warning_names_the_digest_to_drop() {
        let warning = stale_warning("0011223344556677", "8899aabbccddeeff");
        assert_eq!(stale_digest(&warning), Some("0011223344556677"));
        assert_eq!(stale_digest("graph launches are not replayed"), None);
        assert_eq!(stale_digest(STALE_WARNING), None);
    }

    #[test]
    fn hex_and_digest() {
        let bytes = vec![0u8, 1, 0xab, 0xff];
        assert_eq!(from_hex(&to_hex(&bytes)), Some(bytes.clone()));
        assert_eq!(from_hex("abc"), None);
        assert_eq!(from_hex("zz"), None);
        assert_ne!(
            digest("GH100", &bytes),
            digest("GH100", &[0, 1, 0xab, 0xfe])
        );
        assert_ne!(digest("GH100", &bytes), digest("GB100", &bytes));
        assert_eq!(digest("GH100", &bytes).len(), 16);
    }
}
