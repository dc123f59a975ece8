//! CUPTI's failures as the catalog reports them.

use super::host::{supported_chips, CuptiCallError};
use kreplay_core::catalog::CatalogError;
use kreplay_cuda::cupti::Cupti;

/// A CUPTI failure as the catalog reports it: the counters held by another process, or the
/// library unable to answer.
pub(super) fn unavailable(error: CuptiCallError) -> CatalogError {
    if error.code == kreplay_cuda::cupti::HARDWARE_BUSY {
        CatalogError::CountersBusy(error.to_string())
    } else {
        CatalogError::Unavailable(error.to_string())
    }
}

/// The error for a chip CUPTI refused: the list of chips it knows, when it can tell.
pub(super) fn unknown_chip(cupti: &Cupti, chip: &str, error: CuptiCallError) -> CatalogError {
    if error.code != kreplay_cuda::cupti::INVALID_CHIP_NAME {
        return unavailable(error);
    }
    match supported_chips(cupti) {
        Ok(chips) if !chips.is_empty() => CatalogError::Unavailable(format!(
            "unknown chip '{chip}'; this CUPTI knows {}; pass one of them to --chip",
            chips.join(", ")
        )),
        _ => CatalogError::Unavailable(format!(
            "unknown chip '{chip}' ({error}); pass a chip such as GH100 to --chip"
        )),
    }
}
