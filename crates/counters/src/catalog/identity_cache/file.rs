//! The cache file: the most recent identities by key, each with the groups already checked
//! with it, written through a temporary file renamed into place.

use super::digest::digest;
use super::key::Key;
use crate::catalog::device::DeviceIdentity;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// File name in the cache folder.
pub const FILE_NAME: &str = "device-identity.json";
/// Keys kept in the file (a machine rarely has more GPU configurations than this).
pub(super) const MAX_ENTRIES: usize = 8;
/// Single-pass verdicts kept per key.
const MAX_GROUPS: usize = 256;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(super) struct Entry {
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
pub(super) struct CacheFile {
    pub(super) entries: Vec<Entry>,
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

pub(super) fn read(dir: &Path) -> Option<CacheFile> {
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

pub(super) fn to_hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub(super) fn from_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}
