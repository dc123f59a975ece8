//! Finding and loading CUPTI and the CUDA driver, once per process.
//!
//! Nothing links CUDA at build time: [`cupti()`] and [`driver()`] open the libraries on first
//! use and cache the outcome (success or the error) for the life of the process, so every later
//! call is a cheap lookup and a missing library is reported the same way every time.
//!
//! CUPTI is searched for, in order:
//! 1. `KREPLAY_CUPTI_DIR` — a folder holding `libcupti.so*` and `libnvperf_host.so`. When it is
//!    set it is the only place looked at, so that a wrong value is an error and not a silent
//!    fallback to another CUPTI version;
//! 2. `$CUDA_HOME/{lib64,targets/x86_64-linux/lib}`, then `/usr/local/cuda/{…}` (CUDA 13 keeps
//!    CUPTI there, not in `extras/CUPTI/lib64`);
//! 3. the `nvidia/cu13/lib` folder of an installed `nvidia-cuda-cupti` wheel, in the usual
//!    site-packages folders (virtualenv, conda, user, system, `PYTHONPATH`), and as a last resort
//!    in the folders `python3` itself reports in `sys.path` (not inside a profiled application,
//!    i.e. when `CUDA_INJECTION64_PATH` is set: the CLI hands its folder down instead);
//! 4. the system loader path (`dlopen("libcupti.so.13")`, i.e. `LD_LIBRARY_PATH`/ldconfig).
//!
//! `libcupti` loads `libnvperf_host.so` by its soname at run time and has no run path, so a
//! CUPTI found in a folder that is not on the loader path could not find it. We therefore open
//! `libnvperf_host.so` from the same folder first, by absolute path and with `RTLD_GLOBAL`: the
//! later `dlopen("libnvperf_host.so")` inside CUPTI then resolves to the already loaded copy.

use kreplay_cupti_sys::cupti::Cupti;
use kreplay_cupti_sys::driver::Driver;
use libloading::os::unix::{Library as UnixLibrary, RTLD_GLOBAL, RTLD_NOW};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Environment variable naming the folder that holds `libcupti.so*` and `libnvperf_host.so`.
pub const ENV_CUPTI_DIR: &str = "KREPLAY_CUPTI_DIR";
/// The CUPTI library's soname for CUDA 13.
pub const CUPTI_SONAME: &str = "libcupti.so.13";
/// The PerfWorks host library CUPTI's host API loads at run time.
pub const NVPERF_HOST: &str = "libnvperf_host.so";
/// The driver library (`cuda.h`'s functions).
pub const DRIVER_SONAME: &str = "libcuda.so.1";

/// How to get the CUPTI libraries, appended to every "not found" message.
const CUPTI_FIX: &str = "install them with `python3 -m pip install nvidia-cuda-cupti==13.0.85` \
     (or run .ci/run) and set KREPLAY_CUPTI_DIR to its nvidia/cu13/lib folder, or install the CUDA 13 toolkit";

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LoadError {
    /// No folder in the search order held CUPTI.
    #[error("CUPTI ({CUPTI_SONAME}) not found; looked in {}; {CUPTI_FIX}", looked_in(.searched))]
    CuptiNotFound { searched: Vec<PathBuf> },
    /// `KREPLAY_CUPTI_DIR` is set but does not hold the libraries.
    #[error("{ENV_CUPTI_DIR}={dir:?} holds no {what}; point it at a folder with libcupti.so* and libnvperf_host.so (e.g. the nvidia/cu13/lib folder of the nvidia-cuda-cupti wheel), or unset it")]
    BadCuptiDir { dir: PathBuf, what: String },
    /// A library file was found but could not be opened (wrong architecture, missing dependency…).
    #[error("could not load {path:?}: {reason}; {CUPTI_FIX}")]
    Open { path: PathBuf, reason: String },
    /// The NVIDIA driver library is absent (no GPU driver on this machine).
    #[error("the NVIDIA driver ({DRIVER_SONAME}) could not be loaded: {reason}; install the NVIDIA driver (or run on a machine with a GPU)")]
    Driver { reason: String },
}

/// libloading's message with dlerror's text, which it keeps as the error's source ("dlopen
/// failed" alone does not say which file or symbol was missing).
fn reason(error: &libloading::Error) -> String {
    use std::error::Error as _;
    match error.source() {
        Some(source) => format!("{error}: {source}"),
        None => error.to_string(),
    }
}

fn looked_in(searched: &[PathBuf]) -> String {
    if searched.is_empty() {
        return "no folder".to_string();
    }
    searched
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// CUPTI as loaded, with the folder it came from (`None` when the system loader found it).
pub struct LoadedCupti {
    pub cupti: Cupti,
    pub dir: Option<PathBuf>,
    /// Kept open for the life of the process so that CUPTI's own `dlopen` finds it.
    _nvperf_host: Option<UnixLibrary>,
}

static CUPTI: OnceLock<Result<LoadedCupti, LoadError>> = OnceLock::new();
static DRIVER: OnceLock<Result<Driver, LoadError>> = OnceLock::new();

/// CUPTI, loaded on first use (see the module documentation for the search order).
pub fn cupti() -> Result<&'static Cupti, LoadError> {
    loaded_cupti().map(|loaded| &loaded.cupti)
}

/// The folder CUPTI was loaded from, for the libraries beside it (`libcheckpoint.so`,
/// `libnvperf_target.so`). `Ok(None)` when the system loader path supplied CUPTI.
pub fn cupti_dir() -> Result<Option<&'static Path>, LoadError> {
    loaded_cupti().map(|loaded| loaded.dir.as_deref())
}

/// The folder CUPTI would be loaded from, found without loading it (`None`: the system
/// loader path, or not found). The same search as [`cupti()`], once per process.
pub fn cupti_dir_unloaded() -> Option<&'static Path> {
    static DIR: OnceLock<Option<PathBuf>> = OnceLock::new();
    DIR.get_or_init(|| find_cupti_dir(&SearchEnv::from_process()).ok().flatten())
        .as_deref()
}

/// The file [`cupti()`] loaded CUPTI from (its soname when the system loader path supplied it),
/// loading it first; for the NVTX injection, which must reach the same copy.
pub fn cupti_library() -> Result<PathBuf, LoadError> {
    let loaded = loaded_cupti()?;
    Ok(loaded
        .dir
        .as_deref()
        .and_then(cupti_file_in)
        .unwrap_or_else(|| PathBuf::from(CUPTI_SONAME)))
}

/// CUPTI and where it came from.
pub fn loaded_cupti() -> Result<&'static LoadedCupti, LoadError> {
    CUPTI
        .get_or_init(|| load_cupti(&SearchEnv::from_process()))
        .as_ref()
        .map_err(Clone::clone)
}

/// Copies of CUPTI mapped into this process other than the one kreplay loaded: the
/// application's own (PyTorch's Kineto behind `torch.profiler`, JAX's profiler, ... ship one).
/// Read from `/proc/self/maps`; empty when it cannot be read.
pub fn other_cupti_copies() -> Vec<PathBuf> {
    let maps = std::fs::read_to_string("/proc/self/maps").unwrap_or_default();
    let ours = CUPTI
        .get()
        .and_then(|loaded| loaded.as_ref().ok())
        .and_then(|loaded| loaded.dir.clone());
    cupti_copies_besides(&maps, ours.as_deref())
}

/// The distinct `libcupti.so*` files `maps` (a `/proc/<pid>/maps` text) names outside `ours`
/// (the folder kreplay loaded CUPTI from). Without `ours` (CUPTI came from the system loader
/// path), the first copy mapped is taken to be kreplay's.
fn cupti_copies_besides(maps: &str, ours: Option<&Path>) -> Vec<PathBuf> {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let ours = ours.map(canonical);
    let mut copies: Vec<PathBuf> = Vec::new();
    for line in maps.lines() {
        // address perms offset dev inode path (the path may contain spaces).
        let Some(path) = line.splitn(6, char::is_whitespace).nth(5).map(str::trim) else {
            continue;
        };
        let path = Path::new(path);
        let is_cupti = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with("libcupti.so"));
        if is_cupti && path.is_absolute() {
            let path = canonical(path);
            if !copies.contains(&path) {
                copies.push(path);
            }
        }
    }
    match ours {
        Some(dir) => copies.retain(|p| p.parent() != Some(dir.as_path())),
        None if !copies.is_empty() => {
            copies.remove(0);
        }
        None => {}
    }
    copies
}

/// The CUDA driver (`libcuda.so.1`), loaded on first use from the system loader path.
pub fn driver() -> Result<&'static Driver, LoadError> {
    DRIVER
        .get_or_init(|| {
            // SAFETY: libcuda's initialisers have no preconditions; symbols are only resolved here.
            unsafe { Driver::new(DRIVER_SONAME) }
                .map_err(|e| LoadError::Driver { reason: reason(&e) })
        })
        .as_ref()
        .map_err(Clone::clone)
}

/// The environment the search reads, separated from the process so tests can supply their own.
#[derive(Debug, Clone, Default)]
struct SearchEnv {
    cupti_dir: Option<PathBuf>,
    cuda_home: Option<PathBuf>,
    /// Candidate site-packages folders, most specific first.
    site_packages: Vec<PathBuf>,
    /// Ask `python3` for `sys.path` when nothing else found a wheel.
    ask_python: bool,
    /// Also try the system loader path last.
    try_system_loader: bool,
    /// Standard toolkit locations (`/usr/local/cuda`), overridable in tests.
    default_cuda_homes: Vec<PathBuf>,
}

impl SearchEnv {
    fn from_process() -> Self {
        let var = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        SearchEnv {
            cupti_dir: var(ENV_CUPTI_DIR),
            cuda_home: var("CUDA_HOME").or_else(|| var("CUDA_PATH")),
            site_packages: site_packages_candidates(),
            // Never spawn python3 inside a profiled application (the injected library runs in
            // its cuInit): the CLI passes the folder it found in KREPLAY_CUPTI_DIR instead.
            ask_python: std::env::var_os("CUDA_INJECTION64_PATH").is_none(),
            try_system_loader: true,
            default_cuda_homes: vec![PathBuf::from("/usr/local/cuda")],
        }
    }

    /// Folders that may hold CUPTI, in search order, excluding the python fallback.
    fn candidate_dirs(&self) -> Vec<PathBuf> {
        let mut dirs = Vec::new();
        let homes = self.cuda_home.iter().chain(self.default_cuda_homes.iter());
        for home in homes {
            dirs.push(home.join("lib64"));
            dirs.push(home.join("targets/x86_64-linux/lib"));
        }
        for site in &self.site_packages {
            dirs.push(site.join("nvidia/cu13/lib"));
        }
        dedup_keep_order(dirs)
    }
}

fn dedup_keep_order(dirs: Vec<PathBuf>) -> Vec<PathBuf> {
    let mut seen = std::collections::HashSet::new();
    dirs.into_iter()
        .filter(|d| seen.insert(d.clone()))
        .collect()
}

/// The site-packages folders of the usual Python installations, found without running Python.
fn site_packages_candidates() -> Vec<PathBuf> {
    let mut prefixes: Vec<PathBuf> = Vec::new();
    for var in ["VIRTUAL_ENV", "CONDA_PREFIX"] {
        if let Some(v) = std::env::var_os(var).filter(|v| !v.is_empty()) {
            prefixes.push(PathBuf::from(v));
        }
    }
    if let Some(home) = std::env::var_os("HOME").filter(|v| !v.is_empty()) {
        prefixes.push(PathBuf::from(home).join(".local"));
    }
    prefixes.push(PathBuf::from("/usr/local"));
    prefixes.push(PathBuf::from("/usr"));
    prefixes.push(PathBuf::from("/opt/conda"));

    let mut sites: Vec<PathBuf> = Vec::new();
    if let Some(pythonpath) = std::env::var_os("PYTHONPATH") {
        sites.extend(std::env::split_paths(&pythonpath));
    }
    for prefix in prefixes {
        for lib in ["lib", "lib64"] {
            let lib_dir = prefix.join(lib);
            let Ok(entries) = std::fs::read_dir(&lib_dir) else {
                continue;
            };
            let mut pythons: Vec<PathBuf> = entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().starts_with("python3"))
                .map(|e| e.path())
                .collect();
            // Newest Python first (python3.12 before python3.9 needs a numeric sort).
            pythons.sort_by_key(|p| std::cmp::Reverse(python_minor(p)));
            for python in pythons {
                sites.push(python.join("site-packages"));
                sites.push(python.join("dist-packages"));
            }
            // Debian's system packages live in the unversioned folder.
            sites.push(lib_dir.join("python3/dist-packages"));
        }
    }
    // Only folders that exist, so that the "not found" message stays readable.
    dedup_keep_order(sites)
        .into_iter()
        .filter(|site| site.is_dir())
        .collect()
}

fn python_minor(dir: &Path) -> u32 {
    dir.file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("python3."))
        .and_then(|minor| minor.parse().ok())
        .unwrap_or(0)
}

/// `sys.path` as `python3` reports it; empty when there is no python3.
fn python_sys_path() -> Vec<PathBuf> {
    let output = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print('\\n'.join(p for p in sys.path if p))",
        ])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output();
    match output {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(PathBuf::from)
            .collect(),
        _ => Vec::new(),
    }
}

/// The CUPTI library file in `dir`: `libcupti.so.13`, else `libcupti.so`, else any `libcupti.so.*`.
fn cupti_file_in(dir: &Path) -> Option<PathBuf> {
    for name in [CUPTI_SONAME, "libcupti.so"] {
        let path = dir.join(name);
        if path.is_file() {
            return Some(path);
        }
    }
    let mut versioned: Vec<PathBuf> = std::fs::read_dir(dir)
        .ok()?
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("libcupti.so."))
        })
        .collect();
    versioned.sort();
    versioned.pop()
}

/// Where CUPTI was found: a folder holding it, or nowhere (with the folders looked at).
fn find_cupti_dir(env: &SearchEnv) -> Result<Option<PathBuf>, LoadError> {
    if let Some(dir) = &env.cupti_dir {
        return match cupti_file_in(dir) {
            Some(_) => Ok(Some(dir.clone())),
            None => Err(LoadError::BadCuptiDir {
                dir: dir.clone(),
                what: "libcupti.so*".to_string(),
            }),
        };
    }
    let mut searched = Vec::new();
    for dir in env.candidate_dirs() {
        if cupti_file_in(&dir).is_some() {
            return Ok(Some(dir));
        }
        searched.push(dir);
    }
    if env.ask_python {
        for site in python_sys_path() {
            let dir = site.join("nvidia/cu13/lib");
            if !searched.contains(&dir) {
                if cupti_file_in(&dir).is_some() {
                    return Ok(Some(dir));
                }
                searched.push(dir);
            }
        }
    }
    if env.try_system_loader {
        return Ok(None);
    }
    Err(LoadError::CuptiNotFound { searched })
}

fn load_cupti(env: &SearchEnv) -> Result<LoadedCupti, LoadError> {
    match find_cupti_dir(env)? {
        Some(dir) => load_cupti_from(&dir),
        None => {
            // SAFETY: CUPTI's initialisers have no preconditions; symbols are only resolved here.
            let cupti = unsafe { Cupti::new(CUPTI_SONAME) }.map_err(|_| {
                // Report the folders searched, not dlopen's terse "cannot open shared object".
                let mut searched = env.candidate_dirs();
                searched.push(PathBuf::from(format!(
                    "the system loader path ({CUPTI_SONAME})"
                )));
                LoadError::CuptiNotFound { searched }
            })?;
            Ok(LoadedCupti {
                cupti,
                dir: None,
                _nvperf_host: None,
            })
        }
    }
}

/// Loads `libnvperf_host.so` (global) and then CUPTI from `dir`.
fn load_cupti_from(dir: &Path) -> Result<LoadedCupti, LoadError> {
    let nvperf_path = dir.join(NVPERF_HOST);
    if !nvperf_path.is_file() {
        return Err(LoadError::BadCuptiDir {
            dir: dir.to_path_buf(),
            what: NVPERF_HOST.to_string(),
        });
    }
    let nvperf = open_global(&nvperf_path)?;
    let cupti_path = cupti_file_in(dir).ok_or_else(|| LoadError::BadCuptiDir {
        dir: dir.to_path_buf(),
        what: "libcupti.so*".to_string(),
    })?;
    // SAFETY: CUPTI's initialisers have no preconditions; symbols are only resolved here.
    let cupti = unsafe { Cupti::new(&cupti_path) }.map_err(|e| LoadError::Open {
        path: cupti_path.clone(),
        reason: reason(&e),
    })?;
    tracing::debug!(dir = %dir.display(), "loaded CUPTI");
    Ok(LoadedCupti {
        cupti,
        dir: Some(dir.to_path_buf()),
        _nvperf_host: Some(nvperf),
    })
}

fn open_global(path: &Path) -> Result<UnixLibrary, LoadError> {
    // SAFETY: libnvperf_host's initialisers have no preconditions.
    unsafe { UnixLibrary::open(Some(OsStr::new(path)), RTLD_NOW | RTLD_GLOBAL) }.map_err(|e| {
        LoadError::Open {
            path: path.to_path_buf(),
            reason: reason(&e),
        }
    })
}

#[cfg(test)]
mod tests {

    #[test]
    fn other_cupti_copies_are_those_outside_kreplays_folder() {
        let maps = "\
7f00-7f10 r-xp 00000000 08:01 11 /usr/local/cuda/lib64/libcupti.so.13
7f10-7f20 r--p 00010000 08:01 11 /usr/local/cuda/lib64/libcupti.so.13
7f20-7f30 r-xp 00000000 08:01 12 /opt/py/site-packages/nvidia/cu13/lib/libcupti.so.13
7f30-7f40 r-xp 00000000 08:01 13 /opt/py/torch/lib/libtorch_cuda.so
7f40-7f50 rw-p 00000000 00:00 0 
7f50-7f60 r-xp 00000000 08:01 14 /opt/my dir/libcupti.so.2025.3
";
        assert_eq!(
            cupti_copies_besides(maps, Some(Path::new("/usr/local/cuda/lib64"))),
            vec![
                PathBuf::from("/opt/py/site-packages/nvidia/cu13/lib/libcupti.so.13"),
                PathBuf::from("/opt/my dir/libcupti.so.2025.3"),
            ]
        );
        // From the system loader path: the first mapped is kreplay's.
        assert_eq!(cupti_copies_besides(maps, None).len(), 2);
        let alone = "7f00-7f10 r-xp 00000000 08:01 11 /usr/local/cuda/lib64/libcupti.so.13\n";
        assert!(cupti_copies_besides(alone, None).is_empty());
        assert!(cupti_copies_besides(alone, Some(Path::new("/usr/local/cuda/lib64"))).is_empty());
    }

    use super::*;

    fn isolated_env() -> SearchEnv {
        SearchEnv {
            cupti_dir: None,
            cuda_home: None,
            site_packages: Vec::new(),
            ask_python: false,
            try_system_loader: false,
            default_cuda_homes: Vec::new(),
        }
    }

    /// A folder of the test's own, removed when the returned guard drops.
    fn temp_dir(name: &str) -> (tempfile::TempDir, PathBuf) {
        let guard = tempfile::Builder::new()
            .prefix(&format!("kreplay-loader-{name}-"))
            .tempdir()
            .unwrap();
        let dir = guard.path().to_path_buf();
        (guard, dir)
    }

    #[test]
    fn cupti_dir_variable_without_the_library_is_a_clear_error() {
        let (_dir, dir) = temp_dir("empty");
        let env = SearchEnv {
            cupti_dir: Some(dir.clone()),
            try_system_loader: true,
            ..isolated_env()
        };
        let message = load_cupti(&env).err().unwrap().to_string();
        assert!(message.contains(ENV_CUPTI_DIR), "{message}");
        assert!(message.contains("libcupti.so"), "{message}");
        assert!(message.contains(&dir.display().to_string()), "{message}");
    }

    #[test]
    fn nothing_found_names_every_folder_searched_and_the_fix() {
        let (_home, home) = temp_dir("home");
        std::fs::create_dir_all(home.join("lib64")).unwrap();
        let env = SearchEnv {
            cuda_home: Some(home.clone()),
            ..isolated_env()
        };
        let message = load_cupti(&env).err().unwrap().to_string();
        assert!(
            message.contains(&home.join("lib64").display().to_string()),
            "{message}"
        );
        assert!(message.contains("nvidia-cuda-cupti"), "{message}");
        assert!(!message.contains('\n'), "one line: {message}");
    }

    #[test]
    fn search_order_is_cuda_home_then_default_toolkit_then_wheels() {
        let env = SearchEnv {
            cuda_home: Some("/opt/cuda".into()),
            default_cuda_homes: vec!["/usr/local/cuda".into()],
            site_packages: vec!["/venv/lib/python3.12/site-packages".into()],
            ..isolated_env()
        };
        let dirs: Vec<String> = env
            .candidate_dirs()
            .iter()
            .map(|d| d.display().to_string())
            .collect();
        assert_eq!(
            dirs,
            [
                "/opt/cuda/lib64",
                "/opt/cuda/targets/x86_64-linux/lib",
                "/usr/local/cuda/lib64",
                "/usr/local/cuda/targets/x86_64-linux/lib",
                "/venv/lib/python3.12/site-packages/nvidia/cu13/lib",
            ]
        );
    }

    #[test]
    fn a_folder_with_cupti_is_chosen_over_later_ones() {
        let (_first, first) = temp_dir("first");
        let (_second, second) = temp_dir("second");
        for dir in [&first, &second] {
            std::fs::create_dir_all(dir.join("nvidia/cu13/lib")).unwrap();
        }
        std::fs::write(second.join("nvidia/cu13/lib").join(CUPTI_SONAME), b"").unwrap();
        let env = SearchEnv {
            site_packages: vec![first.clone(), second.clone()],
            ..isolated_env()
        };
        assert_eq!(
            find_cupti_dir(&env).unwrap(),
            Some(second.join("nvidia/cu13/lib"))
        );
    }

    #[test]
    fn versioned_library_names_are_recognised() {
        let (_dir, dir) = temp_dir("versioned");
        std::fs::write(dir.join("libcupti.so.2025.3.1"), b"").unwrap();
        assert_eq!(cupti_file_in(&dir), Some(dir.join("libcupti.so.2025.3.1")));
        std::fs::write(dir.join(CUPTI_SONAME), b"").unwrap();
        assert_eq!(cupti_file_in(&dir), Some(dir.join(CUPTI_SONAME)));
    }

    #[test]
    fn a_library_that_cannot_be_opened_says_why() {
        let (_dir, dir) = temp_dir("broken");
        std::fs::write(dir.join(NVPERF_HOST), b"not an ELF file").unwrap();
        std::fs::write(dir.join(CUPTI_SONAME), b"not an ELF file").unwrap();
        let message = load_cupti_from(&dir).err().unwrap().to_string();
        assert!(message.contains(NVPERF_HOST), "{message}");
        // dlerror's text, not only libloading's "dlopen failed".
        assert!(
            message.contains("invalid ELF header") || message.contains("too short"),
            "{message}"
        );
    }

    #[test]
    fn python_versions_sort_numerically() {
        assert!(
            python_minor(Path::new("/usr/lib/python3.12"))
                > python_minor(Path::new("/usr/lib/python3.9"))
        );
    }

    /// Loads the real library named by `KREPLAY_CUPTI_DIR` (set by .ci/run).
    #[test]
    fn loads_the_real_cupti_from_kreplay_cupti_dir() {
        let dir = std::env::var_os(ENV_CUPTI_DIR).unwrap_or_else(|| {
            panic!("{ENV_CUPTI_DIR} is not set: run the tests through .ci/run, which installs the nvidia-cuda-cupti wheel and sets it")
        });
        let loaded = loaded_cupti().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(loaded.dir.as_deref(), Some(Path::new(&dir)));
        let get_version = loaded
            .cupti
            .cuptiGetVersion
            .as_ref()
            .expect("cuptiGetVersion");
        let mut version = 0u32;
        // SAFETY: cuptiGetVersion writes one u32.
        let result = unsafe { get_version(&mut version) };
        assert_eq!(result, kreplay_cupti_sys::types::CUptiResult_CUPTI_SUCCESS);
        assert!(
            version >= 130000,
            "CUPTI API version {version} predates CUDA 13"
        );
    }
}
