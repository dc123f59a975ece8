//! The device addresses a driver call names, for the devices it may touch.

use super::effects::{classify_call, CallKind};
use kreplay_cuda::callback::calls::CallParams;

/// The device addresses a copy, memset or free names (its destination and, for a copy from
/// device memory, its source; what a free releases), by `name` and its decoded parameters
/// (as [`classify_call`] takes them); empty for every other call. The engine's scope of the
/// call comes from them: a call naming another device's memory holds off replays there too.
pub fn call_addresses(name: &str, params: Option<CallParams>) -> Vec<u64> {
    // What it writes, as the classification reads it; then what it reads or frees.
    let written = match classify_call(name, params) {
        CallKind::Writes { dst, .. } => Some(dst),
        _ => None,
    };
    let other = match params {
        Some(CallParams::Free { address }) => Some(address),
        Some(CallParams::CopyToHost { src })
        | Some(CallParams::CopyOnDevice { src, .. })
        | Some(CallParams::CopyUnified { src, .. }) => Some(src),
        Some(CallParams::Copy2D(copy)) => {
            copy.and_then(|copy| copy.src.memory.by_address().then(|| copy.src.first_byte()))
        }
        _ => None,
    };
    written.into_iter().chain(other).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_calls_addresses_are_its_destination_source_or_what_it_frees() {
        // The blocks these come from are read in kreplay_cuda::callback::calls.
        let at = |name: &str, p: CallParams| call_addresses(name, Some(p));
        let dtoh = CallParams::CopyToHost { src: 0x1000 };
        let dtod = CallParams::CopyOnDevice {
            dst: 0x2000,
            src: 0x3000,
            bytes: 8,
        };
        let memset = CallParams::Memset {
            dst: 0x4000,
            bytes: 8,
        };
        let free = CallParams::Free { address: 0x5000 };
        let unmap = CallParams::Free { address: 0x6000 };
        assert_eq!(at("cuMemcpyDtoH_v2", dtoh), vec![0x1000]);
        assert_eq!(at("cuMemcpyDtoHAsync_v2_ptsz", dtoh), vec![0x1000]);
        assert_eq!(at("cuMemcpyDtoD_v2", dtod), vec![0x2000, 0x3000]);
        assert_eq!(at("cuMemsetD32_v2", memset), vec![0x4000]);
        assert_eq!(at("cuMemFree_v2", free), vec![0x5000]);
        assert_eq!(at("cuMemUnmap", unmap), vec![0x6000]);
        assert!(call_addresses("cuCtxSynchronize", None).is_empty());
        assert!(call_addresses("cuMemFree_v2", None).is_empty());
    }
}
