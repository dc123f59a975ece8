//! The bound on a snapshot staged in pinned host memory (`--host-staging-max`).
//!
//! A snapshot that device memory cannot hold crosses PCIe once to the host and back once per
//! later execution of its dispatch. On the H100 host that is ≈ 55 GB/s each way: JAX's default
//! pool (63.8 GB in one allocation) cost 4.7 s a dispatch under three hardware passes
//! (docs/kernel-replay.md, "Staging"). Above the bound a dispatch runs once instead, said in
//! every output.

/// The default bound: 8 GiB, about 0.6 s of copies a dispatch under three hardware passes.
pub const DEFAULT_HOST_STAGING_MAX_BYTES: u64 = 8 << 30;

/// A size as `--host-staging-max` takes it: a whole number of bytes, or one followed by a
/// binary unit (`K`, `M`, `G`, `T`, also written `KiB`, `MiB`, `GiB`, `TiB`; any case).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "{text:?} is not a size; give bytes or a number with a unit, e.g. 8G, 512MiB, 0 (never stage on the host)"
        )
    };
    let trimmed = text.trim();
    let split = trimmed
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(trimmed.len());
    let (digits, unit) = trimmed.split_at(split);
    let number: u64 = digits.parse().map_err(|_| bad())?;
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kib" => 10,
        "m" | "mib" => 20,
        "g" | "gib" => 30,
        "t" | "tib" => 40,
        _ => return Err(bad()),
    };
    number.checked_mul(1u64 << shift).ok_or_else(bad)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_binary_units_and_refuse_the_rest() {
        assert_eq!(parse_size("0"), Ok(0));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("8G"), Ok(8 << 30));
        assert_eq!(parse_size("8gib"), Ok(8 << 30));
        assert_eq!(parse_size("512MiB"), Ok(512 << 20));
        assert_eq!(parse_size(" 3 k "), Ok(3 << 10));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        for bad in [
            "",
            "G",
            "8GB",
            "8.5G",
            "-1",
            "99999999999999999999",
            "16777216T",
        ] {
            let error = parse_size(bad).unwrap_err();
            assert!(error.contains("is not a size"), "{bad}: {error}");
        }
    }
}
