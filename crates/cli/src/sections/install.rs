//! Where Nsight Compute is installed: its `sections` folder, found as a user would.

use std::path::{Path, PathBuf};

/// Where to look for an Nsight Compute installation (the process's, or a test's).
pub struct SearchPlaces {
    pub path: Option<std::ffi::OsString>,
    /// Folders holding versioned installations (`nsight-compute-2025.3.0`, `2025.3.0`).
    pub roots: Vec<(PathBuf, &'static str)>,
}

impl SearchPlaces {
    pub fn from_process() -> SearchPlaces {
        let mut roots: Vec<(PathBuf, &'static str)> = Vec::new();
        if let Ok(entries) = std::fs::read_dir("/usr/local") {
            let mut cuda: Vec<PathBuf> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| {
                    p.file_name()
                        .and_then(|n| n.to_str())
                        .is_some_and(|n| n.starts_with("cuda"))
                })
                .collect();
            cuda.sort();
            roots.extend(cuda.into_iter().rev().map(|p| (p, "nsight-compute-")));
        }
        roots.push((PathBuf::from("/opt/nvidia/nsight-compute"), ""));
        SearchPlaces {
            path: crate::env::search_path(),
            roots,
        }
    }
}

/// The `sections` folder of the Nsight Compute installation `places` lead to: the folder of the
/// `ncu` found on `PATH` (a link followed), or next to it, or the newest versioned installation
/// under one of the roots.
pub fn find_installation(places: &SearchPlaces) -> Option<PathBuf> {
    let sections_of = |install: &Path| Some(install.join("sections")).filter(|s| s.is_dir());
    if let Some(path) = &places.path {
        for dir in std::env::split_paths(path) {
            let ncu = dir.join("ncu");
            if !ncu.is_file() {
                continue;
            }
            let real = std::fs::canonicalize(&ncu).unwrap_or(ncu);
            if let Some(found) = real.parent().and_then(sections_of) {
                return Some(found);
            }
            // CUDA's bin/ncu is a script that starts ../nsight-compute-<version>/ncu.
            if let Some(found) = real
                .parent()
                .and_then(Path::parent)
                .and_then(|root| newest_under(root, "nsight-compute-"))
            {
                return Some(found);
            }
        }
    }
    places
        .roots
        .iter()
        .find_map(|(root, prefix)| newest_under(root, prefix))
}

/// The `sections` folder of the newest `<root>/<prefix><version>` that has one.
fn newest_under(root: &Path, prefix: &str) -> Option<PathBuf> {
    let mut candidates: Vec<(Vec<u64>, PathBuf)> = std::fs::read_dir(root)
        .ok()?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let version = name.strip_prefix(prefix)?;
            let key: Vec<u64> = version.split('.').map(|p| p.parse().unwrap_or(0)).collect();
            let sections = e.path().join("sections");
            sections.is_dir().then_some((key, sections))
        })
        .collect();
    candidates.sort();
    candidates.pop().map(|(_, path)| path)
}
