//! The fingerprint of a device's identity and the warning that names a stale one.

/// Start of the warning the injected library records when the image it read in the application
/// is not the one the CLI checked the groups with.
pub const STALE_WARNING: &str = "the device identity the counter groups were checked with";

/// A short fingerprint of a chip and its counter-availability image (FNV-1a, 64 bits, hex),
/// which the CLI hands to the injected library with the groups it checked.
pub fn digest(chip: &str, image: &[u8]) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in chip.bytes().chain([0]).chain(image.iter().copied()) {
        hash ^= u64::from(byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    format!("{hash:016x}")
}

/// The warning for a device whose identity (`actual`, read in the application) is not the one
/// the groups were checked with (`checked`).
pub fn stale_warning(checked: &str, actual: &str) -> String {
    format!(
        "{STALE_WARNING} ({checked}) is not CUDA device 0's ({actual}, read in the application); the identity cached by kreplay is dropped, so the next run reads the device again"
    )
}

/// The digest a [`stale_warning`] names as checked, if `warning` is one.
pub fn stale_digest(warning: &str) -> Option<&str> {
    let rest = warning.strip_prefix(STALE_WARNING)?.trim_start();
    let (digest, _) = rest.strip_prefix('(')?.split_once(')')?;
    Some(digest)
}
