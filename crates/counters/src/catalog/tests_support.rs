//! The GH100 catalog the tests of this crate use.

use super::cupti_catalog::CuptiCatalog;

/// The GH100 catalog from the wheel `.ci/run` installs; fails (never skips) without it.
pub fn gh100() -> CuptiCatalog {
    if std::env::var_os(kreplay_cuda::loader::ENV_CUPTI_DIR).is_none() {
        panic!(
            "{} is not set: run the tests through .ci/run, which installs the nvidia-cuda-cupti wheel and points it there",
            kreplay_cuda::loader::ENV_CUPTI_DIR
        );
    }
    CuptiCatalog::for_chip("GH100").unwrap_or_else(|e| panic!("{e}"))
}
