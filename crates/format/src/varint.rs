//! Protobuf's varints (LEB128, through prost) and zigzag differences: the compact integers of
//! the JSON writer's spool (`json_out::spool`) and of the databases' record blocks
//! (`db::blocks`).

/// A signed difference (wrapping `u64` subtraction) as an unsigned integer small when the
/// difference is small.
pub(crate) fn zigzag(difference: u64) -> u64 {
    let signed = difference as i64;
    ((signed << 1) ^ (signed >> 63)) as u64
}

/// [`zigzag`]'s inverse: the difference to add (wrapping).
pub(crate) fn unzigzag(value: u64) -> u64 {
    (value >> 1) ^ (value & 1).wrapping_neg()
}

pub(crate) fn put(b: &mut Vec<u8>, value: u64) {
    prost::encoding::encode_varint(value, b);
}

/// The varint at the start of `b`, which then starts after it; none where `b` ends first.
pub(crate) fn take(b: &mut &[u8]) -> Option<u64> {
    prost::encoding::decode_varint(b).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_and_zigzag_round_trip() {
        let values = [
            0u64,
            1,
            127,
            128,
            300,
            u32::MAX as u64,
            u64::MAX - 1,
            u64::MAX,
        ];
        let mut b = Vec::new();
        for &v in &values {
            put(&mut b, v);
            put(&mut b, zigzag(v));
        }
        let mut s = &b[..];
        for &v in &values {
            assert_eq!(take(&mut s), Some(v));
            assert_eq!(unzigzag(take(&mut s).unwrap()), v);
        }
        assert!(s.is_empty());
        assert_eq!(take(&mut s), None);
        // Small differences either way stay small.
        assert_eq!(zigzag(5u64.wrapping_sub(6)), 1);
        assert_eq!(zigzag(1), 2);
    }
}
