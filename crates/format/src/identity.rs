//! The stable identity of a profiled process, the same in every database that holds it.

use crate::records::ProcessInfo;

/// The stable identity of a process in a database: derived from host, pid and start time, so that
/// the same process read twice is recognised, and two processes never share one.
pub(crate) fn guid_for(process: &ProcessInfo) -> String {
    // FNV-1a, twice with different offsets: stable across Rust versions, unlike `DefaultHasher`.
    fn fnv1a(seed: u64, bytes: &[u8]) -> u64 {
        bytes.iter().fold(seed, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    }
    let key = format!(
        "{}\0{}\0{}",
        process.hostname, process.pid, process.start_ns
    );
    let high = fnv1a(0xcbf2_9ce4_8422_2325, key.as_bytes());
    let low = fnv1a(0x8422_2325_cbf2_9ce4, key.as_bytes());
    format!(
        "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
        high >> 32,
        (high >> 16) & 0xffff,
        high & 0xffff,
        low >> 48,
        low & 0xffff_ffff_ffff
    )
}
