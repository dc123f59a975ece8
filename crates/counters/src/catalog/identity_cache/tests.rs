//! The identity cache on fake driver files and temporary folders.

use super::digest::{digest, stale_digest, stale_warning, STALE_WARNING};
use super::file::{
    checked_groups, forget, from_hex, load, read, remember_groups, store, to_hex, FILE_NAME,
    MAX_ENTRIES,
};
use super::key::{key_from, Key};
use super::place::{cache_dir, ENV_CACHE_DIR};
use crate::catalog::device::DeviceIdentity;
use std::path::{Path, PathBuf};

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
    std::fs::create_dir_all(proc_a.join("driver/nvidia/capabilities/gpu0/mig/gi1/ci0")).unwrap();
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
