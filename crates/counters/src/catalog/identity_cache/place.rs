//! Where the cache lives, from the environment, and this machine's slot in it.

use super::key::{key_for, Key};
use std::path::PathBuf;

/// Environment variable naming the cache folder (`off`: no cache).
pub const ENV_CACHE_DIR: &str = "KREPLAY_CACHE_DIR";

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

/// This machine's key for CUDA device `ordinal` and the cache folder, when both exist
/// (`env`: a lookup of the process's variables).
pub fn slot(ordinal: i32, env: impl Fn(&str) -> Option<String>) -> Option<(Key, PathBuf)> {
    let dir = cache_dir(&env)?;
    Some((
        key_for(ordinal, kreplay_cuda::loader::cupti_dir_unloaded(), env)?,
        dir,
    ))
}
