//! SQLite's file format, the parts `db::btree` reads and writes (<https://sqlite.org/fileformat.html>):
//! its big-endian varints, a record's serial types, the header of a b-tree page and the most
//! payload a cell keeps on its page.

use super::Unsupported;

/// A b-tree page's type (its first byte).
pub(super) const INTERIOR_INDEX: u8 = 2;
pub(super) const INTERIOR_TABLE: u8 = 5;
pub(super) const LEAF_INDEX: u8 = 10;
pub(super) const LEAF_TABLE: u8 = 13;

/// The header of a leaf page, and of an interior one (which adds its right-most child).
pub(super) const LEAF_HEADER: usize = 8;
pub(super) const INTERIOR_HEADER: usize = 12;

/// The varint at the start of `bytes` and its length: up to eight bytes of seven bits, high bit
/// set where another follows, and a ninth of eight bits.
#[inline]
pub(super) fn get_varint(bytes: &[u8]) -> Result<(u64, usize), Unsupported> {
    if let Some(&byte) = bytes.first().filter(|b| **b < 0x80) {
        return Ok((u64::from(byte), 1));
    }
    let mut value = 0u64;
    for (i, &byte) in bytes.iter().enumerate().take(9) {
        if i == 8 {
            return Ok((value << 8 | u64::from(byte), 9));
        }
        value = value << 7 | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Ok((value, i + 1));
        }
    }
    Err(Unsupported("a varint runs past its page"))
}

/// Appends `value` as a varint.
#[inline]
pub(super) fn put_varint(out: &mut Vec<u8>, value: u64) {
    let mut bytes = [0u8; 9];
    let len = put_varint_at(&mut bytes, value);
    out.extend_from_slice(&bytes[..len]);
}

/// Writes `value` as a varint at the start of `out` (nine bytes at least) and returns its length.
#[inline]
pub(super) fn put_varint_at(out: &mut [u8], value: u64) -> usize {
    if value < 0x80 {
        out[0] = value as u8;
        return 1;
    }
    if value > 0x00ff_ffff_ffff_ffff {
        // Nine bytes: the low eight bits in the last, seven in each before.
        let high = value >> 8;
        for (i, byte) in out[..8].iter_mut().enumerate() {
            *byte = ((high >> (7 * (7 - i))) & 0x7f) as u8 | 0x80;
        }
        out[8] = value as u8;
        return 9;
    }
    let len = varint_len(value);
    for (i, byte) in out[..len].iter_mut().enumerate() {
        let group = len - 1 - i;
        let more = if group == 0 { 0 } else { 0x80 };
        *byte = ((value >> (7 * group)) & 0x7f) as u8 | more;
    }
    len
}

/// How many bytes [`put_varint`] writes for `value`.
pub(super) fn varint_len(value: u64) -> usize {
    if value > 0x00ff_ffff_ffff_ffff {
        9
    } else {
        (64 - (value | 1).leading_zeros() as usize).div_ceil(7)
    }
}

/// How many bytes of a record's body a value of serial type `serial` takes.
pub(super) fn serial_len(serial: u64) -> Result<usize, Unsupported> {
    Ok(match serial {
        0 | 8 | 9 => 0,
        1..=4 => serial as usize,
        5 => 6,
        6 | 7 => 8,
        10 | 11 => return Err(Unsupported("a record has a reserved serial type")),
        n => ((n - 12) / 2) as usize,
    })
}

/// The integer of serial type `serial` held in `body` (None: NULL), where the type is one of
/// an integer (the constants 0 and 1 included).
#[inline]
pub(super) fn get_integer(serial: u64, body: &[u8]) -> Result<Option<i64>, Unsupported> {
    Ok(match serial {
        0 => None,
        8 => Some(0),
        9 => Some(1),
        1..=6 => {
            let start = if body.first().is_some_and(|b| b & 0x80 != 0) {
                -1i64
            } else {
                0
            };
            Some(
                body.iter()
                    .fold(start, |value, &byte| value << 8 | i64::from(byte)),
            )
        }
        _ => return Err(Unsupported("an id that is not an integer")),
    })
}

/// The serial type SQLite gives `value` (a file of schema format 4: 0 and 1 take no bytes).
pub(super) fn integer_serial(value: i64) -> u64 {
    let magnitude = if value < 0 { !value } else { value } as u64;
    match magnitude {
        _ if value == 0 || value == 1 => 8 + value as u64,
        0..=0x7f => 1,
        0x80..=0x7fff => 2,
        0x8000..=0x7f_ffff => 3,
        0x80_0000..=0x7fff_ffff => 4,
        0x8000_0000..=0x7fff_ffff_ffff => 5,
        _ => 6,
    }
}

/// The most payload a cell keeps on its page (`usable` bytes a page): more spills to overflow
/// pages, which this module does not write.
pub(super) fn max_local(usable: usize, index: bool) -> usize {
    if index {
        (usable - 12) * 64 / 255 - 23
    } else {
        usable - 35
    }
}

/// A record's columns: the serial type of each and where its bytes are in the record.
pub(super) struct Columns<'a> {
    header: &'a [u8],
    /// Where the next column's bytes begin, and the record's length.
    at: usize,
    len: usize,
}

impl<'a> Columns<'a> {
    pub(super) fn of(record: &'a [u8]) -> Result<Columns<'a>, Unsupported> {
        let (size, len) = get_varint(record)?;
        let size = usize::try_from(size).map_err(|_| Unsupported("a record's header"))?;
        if size < len || size > record.len() {
            return Err(Unsupported("a record's header runs past the record"));
        }
        Ok(Columns {
            header: &record[len..size],
            at: size,
            len: record.len(),
        })
    }
}

impl Iterator for Columns<'_> {
    type Item = Result<(u64, std::ops::Range<usize>), Unsupported>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.header.is_empty() {
            return None;
        }
        let column = (|| {
            let (serial, len) = get_varint(self.header)?;
            self.header = &self.header[len..];
            let bytes = self.at..self.at + serial_len(serial)?;
            if bytes.end > self.len {
                return Err(Unsupported("a record's body is shorter than its header"));
            }
            self.at = bytes.end;
            Ok((serial, bytes))
        })();
        if column.is_err() {
            self.header = &[];
        }
        Some(column)
    }
}

/// The size of a record's header whose serial types take `types` bytes: they and the varint
/// that gives the size, counted in it.
pub(super) fn header_size(types: usize) -> usize {
    match types + 1 {
        size if size < 0x80 => size,
        _ => types + varint_len((types + 2) as u64),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_read_back_what_was_written() {
        for value in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            (1 << 56) - 1,
            1 << 56,
            u64::MAX - 1,
            u64::MAX,
        ] {
            let mut out = Vec::new();
            put_varint(&mut out, value);
            assert_eq!(out.len(), varint_len(value), "{value}");
            assert_eq!(get_varint(&out).unwrap(), (value, out.len()), "{value}");
            let mut at = [0u8; 9];
            let len = put_varint_at(&mut at, value);
            assert_eq!(&at[..len], &out[..], "{value}");
        }
        assert!(get_varint(&[0x80, 0x80]).is_err());
    }

    #[test]
    fn integers_read_back_in_the_smallest_serial_type() {
        assert_eq!(get_integer(0, &[]), Ok(None));
        assert!(get_integer(7, &[0; 8]).is_err());
        for (value, serial) in [
            (0, 8),
            (1, 9),
            (2, 1),
            (-1, 1),
            (127, 1),
            (-128, 1),
            (128, 2),
            (-129, 2),
            (1 << 23, 4),
            (-(1 << 23), 3),
            (1 << 40, 5),
            (i64::MAX, 6),
            (i64::MIN, 6),
        ] {
            assert_eq!(integer_serial(value), serial, "{value}");
            let len = serial_len(serial).unwrap();
            let bytes = &value.to_be_bytes()[8 - len..];
            assert_eq!(get_integer(serial, bytes), Ok(Some(value)));
        }
    }

    #[test]
    fn a_record_reads_back_its_columns() {
        let columns: Vec<(u64, &[u8])> = vec![(0, &[]), (1, &[5]), (13 + 2 * 3, b"abc"), (9, &[])];
        let record = record_of(&columns);
        let read: Vec<(u64, &[u8])> = Columns::of(&record)
            .unwrap()
            .map(|c| c.map(|(serial, bytes)| (serial, &record[bytes])))
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(read, columns);
        // A header of more than 127 bytes takes two bytes to give its size.
        let many: Vec<(u64, &[u8])> = vec![(8, &[]); 200];
        let record = record_of(&many);
        assert_eq!(get_varint(&record).unwrap(), (202, 2));
        assert_eq!(Columns::of(&record).unwrap().count(), 200);
        assert!(Columns::of(&[5, 1, 1]).is_err());
        assert!(Columns::of(&[2, 2]).unwrap().next().unwrap().is_err());
    }

    /// A record of `columns` (serial type and bytes of each).
    fn record_of(columns: &[(u64, &[u8])]) -> Vec<u8> {
        let mut record = Vec::new();
        let types = columns.iter().map(|(s, _)| varint_len(*s)).sum();
        put_varint(&mut record, header_size(types) as u64);
        for (serial, _) in columns {
            put_varint(&mut record, *serial);
        }
        for (_, bytes) in columns {
            record.extend_from_slice(bytes);
        }
        record
    }
}
