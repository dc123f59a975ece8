//! NVTX's injection, forwarded to CUPTI's. Under `--marker-trace` the command line points
//! `NVTX_INJECTION64_PATH` at kreplay's injection library, whose `InitializeInjectionNvtx2`
//! calls this: the application's first NVTX call loads CUPTI (the copy kreplay uses, wherever it
//! was found) and hands NVTX to CUPTI's own `InitializeInjectionNvtx2`, after which every NVTX
//! call reaches CUPTI's NVTX callback domain. Pointing the variable at `libcupti.so` would do the
//! same only when it names the very file kreplay loads (two copies of CUPTI in one process do
//! not share a subscriber).

use crate::loader::{self, LoadError};
use std::ffi::{c_int, c_void};

/// CUPTI's NVTX entry point (NVTX v3's `NvtxInitializeInjectionNvtxFunc_t`).
type InitializeInjectionNvtx2 = unsafe extern "C" fn(*const c_void) -> c_int;

/// Hands NVTX's `get_export_table` to CUPTI's `InitializeInjectionNvtx2`; returns what it returns
/// (0: NVTX goes on without an injection).
///
/// # Safety
/// `get_export_table` is the argument NVTX passed to `InitializeInjectionNvtx2`.
pub unsafe fn forward_to_cupti(get_export_table: *const c_void) -> Result<c_int, LoadError> {
    let path = loader::cupti_library()?;
    // SAFETY: CUPTI is loaded already (same file: the handle is shared); opening it again runs
    // no initialiser.
    let library = unsafe { libloading::Library::new(&path) }.map_err(|e| LoadError::Open {
        path: path.clone(),
        reason: e.to_string(),
    })?;
    // SAFETY: the symbol has NVTX's injection signature in every CUPTI that exports it.
    let initialize =
        unsafe { library.get::<InitializeInjectionNvtx2>(b"InitializeInjectionNvtx2\0") }.map_err(
            |e| LoadError::Open {
                path: path.clone(),
                reason: format!("no InitializeInjectionNvtx2 ({e})"),
            },
        )?;
    // SAFETY: NVTX's own argument, passed on as NVTX would pass it.
    let result = unsafe { initialize(get_export_table) };
    // CUPTI stays loaded for the process (the loader holds it); this handle may go.
    Ok(result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// NVTX's `getExportTable` giving no table: CUPTI declines the injection.
    unsafe extern "C" fn no_table(_id: u32) -> *const c_void {
        std::ptr::null()
    }

    /// The forwarding reaches the `InitializeInjectionNvtx2` of the CUPTI the loader found
    /// (`KREPLAY_CUPTI_DIR`, as `.ci/run` sets it) and CUPTI answers (CUPTI 13.0 answers 1 even
    /// without a table: it asks for them later). What it does with NVTX's real table is for a
    /// GPU run to show.
    #[test]
    fn reaches_cuptis_nvtx_entry_point() {
        if std::env::var_os(loader::ENV_CUPTI_DIR).is_none() {
            panic!(
                "{} is not set: run the tests through .ci/run",
                loader::ENV_CUPTI_DIR
            );
        }
        let table = no_table as unsafe extern "C" fn(u32) -> *const c_void;
        // SAFETY: a getExportTable that answers every id with no table.
        let result = unsafe { forward_to_cupti(table as *const c_void) };
        let answer = result.unwrap_or_else(|e| panic!("{e}"));
        assert!(answer == 0 || answer == 1, "{answer}");
    }
}
