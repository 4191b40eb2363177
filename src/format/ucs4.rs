//! numpy's fixed-width unicode strings (`<U<n>`, `>U<n>`): `n` UTF-32 code units each, NUL
//! padded, as netCDF strings (UTF-8).
//!
//! Owns only this encoding; it must not know where the strings are stored.

use crate::model::Endian;

/// Bytes of one code unit.
pub const UNIT: usize = 4;

/// The code units of `text` (no padding).
pub fn encode(text: &str, endian: Endian) -> Vec<u8> {
    text.chars()
        .flat_map(|c| match endian {
            Endian::Little => (c as u32).to_le_bytes(),
            Endian::Big => (c as u32).to_be_bytes(),
        })
        .collect()
}

/// One element (code units, NUL padded) as UTF-8: up to its first NUL, each invalid code point
/// as U+FFFD.
pub fn decode(element: &[u8], endian: Endian) -> Vec<u8> {
    element
        .chunks_exact(UNIT)
        .map(|b| {
            let b = [b[0], b[1], b[2], b[3]];
            match endian {
                Endian::Little => u32::from_le_bytes(b),
                Endian::Big => u32::from_be_bytes(b),
            }
        })
        .take_while(|c| *c != 0)
        .map(|c| char::from_u32(c).unwrap_or(char::REPLACEMENT_CHARACTER))
        .collect::<String>()
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_goes_through_both_orders() {
        for endian in [Endian::Little, Endian::Big] {
            let units = encode("aé😀", endian);
            assert_eq!(units.len(), 3 * UNIT);
            let mut padded = units.clone();
            padded.resize(5 * UNIT, 0);
            assert_eq!(decode(&padded, endian), "aé😀".as_bytes());
        }
        assert_eq!(encode("a", Endian::Big), [0, 0, 0, b'a']);
        assert_eq!(
            decode(&[0, 0, 0xd8, 0, b'b', 0, 0, 0], Endian::Little),
            "\u{fffd}b".as_bytes()
        );
    }
}
