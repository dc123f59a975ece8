//! Protobuf's varints (LEB128) and zigzag differences: the compact integers of the JSON
//! writer's spool (`json_out::spool`), of the databases' record blocks (`db::blocks`) and of the
//! Perfetto trace's packets (`pftrace::wire`). By hand rather than through prost's `Buf`-generic
//! functions: millions are read and written per second, most of them one byte.

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

/// `value` as a varint in the low bytes of a `u128` (little-endian), and their count: put
/// together in registers, so that it is stored at once (bytes stored one by one and read back
/// as a block stall the processor).
#[inline]
pub(crate) fn bits(mut value: u64) -> (u128, usize) {
    if value < 1 << 56 {
        // Eight bytes at most: each 7 bits moved to a byte of their own, without a loop, and
        // the high bit set in each byte but the last.
        let spread = (0..8).fold(0u64, |spread, group| {
            spread | (value >> (7 * group) & 0x7f) << (8 * group)
        });
        let len = (64 - (value | 1).leading_zeros() as usize).div_ceil(7);
        let more = 0x8080_8080_8080_8080u64 & ((1u64 << (8 * (len - 1))) - 1);
        return (u128::from(spread | more), len);
    }
    let mut bits = 0u128;
    let mut len = 0;
    while value >= 0x80 {
        bits |= u128::from(value as u8 | 0x80) << (8 * len);
        value >>= 7;
        len += 1;
    }
    (bits | u128::from(value) << (8 * len), len + 1)
}

/// Appends the low `len` (at most 16) bytes of `bits`: all 16 stored, the rest dropped again.
#[inline]
pub(crate) fn put_bits(b: &mut Vec<u8>, bits: u128, len: usize) {
    let at = b.len();
    b.extend_from_slice(&bits.to_le_bytes());
    b.truncate(at + len);
}

/// Appends `value` as a varint.
#[inline]
pub(crate) fn put(b: &mut Vec<u8>, value: u64) {
    if value < 0x80 {
        b.push(value as u8);
    } else {
        let (bits, len) = bits(value);
        put_bits(b, bits, len);
    }
}

/// The varint at the start of `b`, which then starts after it; none where `b` ends first (or
/// the varint is longer than a `u64`'s, as prost's `decode_varint` refuses it).
#[inline]
pub(crate) fn take(b: &mut &[u8]) -> Option<u64> {
    let bytes = *b;
    let first = *bytes.first()?;
    if first < 0x80 {
        *b = &bytes[1..];
        return Some(u64::from(first));
    }
    let mut value = 0u64;
    for (index, &byte) in bytes.iter().enumerate().take(10) {
        value |= u64::from(byte & 0x7f) << (7 * index);
        if byte < 0x80 {
            if index == 9 && byte > 1 {
                return None;
            }
            *b = &bytes[index + 1..];
            return Some(value);
        }
    }
    None
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
        // As prost writes and reads them, a varint of each length and ones cut short.
        for shift in 0..64 {
            for v in [1u64 << shift, (1u64 << shift) - 1, (1u64 << shift) | 0x55] {
                let (mut ours, mut theirs) = (Vec::new(), Vec::new());
                put(&mut ours, v);
                prost::encoding::encode_varint(v, &mut theirs);
                assert_eq!(ours, theirs);
                let (bits, len) = bits(v);
                assert_eq!(&bits.to_le_bytes()[..len], &ours[..]);
                assert_eq!(take(&mut &ours[..]), Some(v));
                assert_eq!(take(&mut &ours[..ours.len() - 1]), None);
            }
        }
        let too_long = [0xffu8; 9].iter().copied().chain([2]).collect::<Vec<_>>();
        assert_eq!(take(&mut &too_long[..]), None);
        assert!(prost::encoding::decode_varint(&mut &too_long[..]).is_err());
        // Small differences either way stay small.
        assert_eq!(zigzag(5u64.wrapping_sub(6)), 1);
        assert_eq!(zigzag(1), 2);
    }
}
