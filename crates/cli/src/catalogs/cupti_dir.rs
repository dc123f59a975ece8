//! The exact `KREPLAY_CUPTI_DIR` to set when CUPTI is not found but `.ci/run` has installed it:
//! the loader searches the system's folders, not a checkout's `.deps/`, so a user who ran
//! `.ci/run` and then the README's examples would otherwise be told only to "set" the variable.

use kreplay_cuda::loader::{CUPTI_SONAME, ENV_CUPTI_DIR};
use std::path::{Path, PathBuf};

/// Where `.ci/run` installs the CUPTI wheel's libraries, relative to a checkout.
const CI_CUPTI_DIR: &str = ".deps/cupti/nvidia/cu13/lib";

/// `message` (a catalog or loader error), with the variable to set appended when it says that
/// CUPTI was not found and a checkout above the binary or the current folder holds it.
pub fn with_cupti_dir_hint(message: String) -> String {
    if !message.contains(&format!("CUPTI ({CUPTI_SONAME}) not found")) {
        return message;
    }
    let exe = std::env::current_exe().ok();
    let cwd = std::env::current_dir().ok();
    match installed_cupti_dir([cwd.as_deref(), exe.as_deref()]) {
        Some(dir) => format!(
            "{message}. .ci/run installed it in {0}: run `export {ENV_CUPTI_DIR}={0}` and try again",
            dir.display()
        ),
        None => message,
    }
}

/// The first `.deps/cupti/nvidia/cu13/lib` holding CUPTI in a folder above one of `starts`.
fn installed_cupti_dir<'a>(starts: impl IntoIterator<Item = Option<&'a Path>>) -> Option<PathBuf> {
    starts
        .into_iter()
        .flatten()
        .flat_map(Path::ancestors)
        .map(|dir| dir.join(CI_CUPTI_DIR))
        .find(|lib| lib.join(CUPTI_SONAME).is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkout_above_a_start_is_found() {
        let repo = tempfile::tempdir().unwrap();
        let lib = repo.path().join(CI_CUPTI_DIR);
        std::fs::create_dir_all(&lib).unwrap();
        let bin = repo.path().join("target/release");
        std::fs::create_dir_all(&bin).unwrap();
        assert_eq!(installed_cupti_dir([None, Some(bin.as_path())]), None);
        std::fs::write(lib.join(CUPTI_SONAME), b"").unwrap();
        assert_eq!(installed_cupti_dir([None, Some(bin.as_path())]), Some(lib));
    }

    #[test]
    fn other_errors_are_kept_as_they_are() {
        assert_eq!(with_cupti_dir_hint("no GPU".into()), "no GPU");
    }
}
