//! Records of numpy structured dtypes (each stored packed, every field in its stored byte
//! order) served as netCDF compound values (each field at its place in the C layout the
//! caller gives, in native order): the first codec of a chain (the last to decode), in no
//! array's metadata, so the codecs after it see whole stored records. A [`RecordPlan`] says
//! what moves where; this file knows nothing of fields' names, types or variables.

use super::{Codec, Config, failed, past_limit};
use crate::error::Result;
use half::f16;
use serde_json::Value;
use std::sync::Arc;

const ID: &str = "records";

/// One move of field values between a stored record and a compound value in memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Move {
    /// Byte offset in the stored record.
    pub stored: usize,
    /// Byte offset in the compound value.
    pub memory: usize,
    /// Values moved (a field's subarray elements).
    pub count: usize,
    pub op: FieldOp,
}

/// How one value is moved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    /// Bytes copied as they are (`size` each: one-byte values, or values in native order).
    Copy { size: usize },
    /// A value of `size` bytes in the other byte order, reversed.
    Swap { size: usize },
    /// A 16-bit float stored in big-endian order when `big`, served as a native 32-bit float.
    Half { big: bool },
    /// A numpy unicode string of `chars` UTF-32 code points (big-endian when `big`), served as
    /// its UTF-8 text, NUL padded to `4 * chars` bytes.
    Ucs4 { chars: usize, big: bool },
}

impl FieldOp {
    /// Bytes of one stored value.
    pub fn stored_size(self) -> usize {
        match self {
            FieldOp::Copy { size } | FieldOp::Swap { size } => size,
            FieldOp::Half { .. } => 2,
            FieldOp::Ucs4 { chars, .. } => 4 * chars,
        }
    }

    /// Bytes of one value in memory.
    pub fn memory_size(self) -> usize {
        match self {
            FieldOp::Copy { size } | FieldOp::Swap { size } => size,
            FieldOp::Half { .. } => 4,
            FieldOp::Ucs4 { chars, .. } => 4 * chars,
        }
    }
}

/// Where every value of a record goes, and the sizes of a record stored and in memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordPlan {
    pub stored_size: usize,
    pub memory_size: usize,
    pub moves: Vec<Move>,
}

impl RecordPlan {
    /// Whether a stored record and its value in memory are the same bytes (raw bytes, moved
    /// as they are), so that nothing needs to move them.
    pub fn is_identity(&self) -> bool {
        let whole = FieldOp::Copy {
            size: self.stored_size,
        };
        self.stored_size == self.memory_size
            && matches!(self.moves.as_slice(), [m] if m.stored == 0 && m.memory == 0 && m.count == 1 && m.op == whole)
    }

    /// Checks that compound values `memory` can be stored: the text of every numpy unicode
    /// field is UTF-8 and fits it (nothing else can fail to narrow). Reads only those fields.
    pub fn check_text(&self, memory: &[u8]) -> Result<()> {
        let texts: Vec<&Move> = self
            .moves
            .iter()
            .filter(|m| matches!(m.op, FieldOp::Ucs4 { .. }))
            .collect();
        if texts.is_empty() || self.memory_size == 0 {
            return Ok(());
        }
        for value in memory.chunks_exact(self.memory_size) {
            for m in &texts {
                let FieldOp::Ucs4 { chars, .. } = m.op else {
                    continue;
                };
                let field = &value[m.memory..m.memory + 4 * chars * m.count];
                for slot in field.chunks_exact(4 * chars) {
                    field_text(slot, chars)?;
                }
            }
        }
        Ok(())
    }

    /// True when some 16-bit float field of the compound values `memory` holds a finite value
    /// that rounds past the largest 16-bit float, so is stored as an infinity.
    pub fn past_half_range(&self, memory: &[u8]) -> bool {
        let halves: Vec<&Move> = self
            .moves
            .iter()
            .filter(|m| matches!(m.op, FieldOp::Half { .. }))
            .collect();
        if halves.is_empty() || self.memory_size == 0 {
            return false;
        }
        memory.chunks_exact(self.memory_size).any(|value| {
            halves.iter().any(|m| {
                value
                    .get(m.memory..m.memory + 4 * m.count)
                    .is_some_and(super::past_half_range)
            })
        })
    }

    /// Widens stored records into compound values (`out` holds as many, zeroed padding).
    fn widen(&self, stored: &[u8], out: &mut [u8]) {
        out.fill(0);
        let records = stored
            .chunks_exact(self.stored_size)
            .zip(out.chunks_exact_mut(self.memory_size));
        for (from, to) in records {
            for m in &self.moves {
                widen_values(*m, from, to);
            }
        }
    }

    /// Narrows compound values into stored records (`out` holds as many); text that is not
    /// UTF-8 or has more characters than its field holds is an error, never cut.
    fn narrow(&self, memory: &[u8], out: &mut [u8]) -> Result<()> {
        out.fill(0);
        let records = memory
            .chunks_exact(self.memory_size)
            .zip(out.chunks_exact_mut(self.stored_size));
        for (from, to) in records {
            for m in &self.moves {
                narrow_values(*m, from, to)?;
            }
        }
        Ok(())
    }
}

/// Copies values that only move (in either direction), reversing the bytes of each for a
/// swap.
fn copy_or_swap(op: FieldOp, src: &[u8], dst: &mut [u8]) {
    match op {
        FieldOp::Swap { size } => {
            for (s, d) in src.chunks_exact(size).zip(dst.chunks_exact_mut(size)) {
                d.iter_mut().zip(s.iter().rev()).for_each(|(d, s)| *d = *s);
            }
        }
        _ => dst.copy_from_slice(src),
    }
}

fn widen_values(m: Move, from: &[u8], to: &mut [u8]) {
    let (ss, ms) = (m.op.stored_size(), m.op.memory_size());
    let src = &from[m.stored..m.stored + ss * m.count];
    let dst = &mut to[m.memory..m.memory + ms * m.count];
    match m.op {
        FieldOp::Copy { .. } | FieldOp::Swap { .. } => copy_or_swap(m.op, src, dst),
        FieldOp::Half { big } => {
            for (s, d) in src.chunks_exact(2).zip(dst.chunks_exact_mut(4)) {
                let bits = [s[0], s[1]];
                let bits = if big {
                    u16::from_be_bytes(bits)
                } else {
                    u16::from_le_bytes(bits)
                };
                d.copy_from_slice(&f16::from_bits(bits).to_f32().to_ne_bytes());
            }
        }
        FieldOp::Ucs4 { chars, big } => {
            for (s, d) in src
                .chunks_exact(4 * chars)
                .zip(dst.chunks_exact_mut(4 * chars))
            {
                let mut at = 0;
                for unit in s.chunks_exact(4) {
                    let unit = [unit[0], unit[1], unit[2], unit[3]];
                    let code = if big {
                        u32::from_be_bytes(unit)
                    } else {
                        u32::from_le_bytes(unit)
                    };
                    if code == 0 {
                        break;
                    }
                    let c = char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER);
                    // Never past the slot: `chars` code points take at most `4 * chars` bytes.
                    if at + c.len_utf8() > d.len() {
                        break;
                    }
                    at += c.encode_utf8(&mut d[at..]).len();
                }
            }
        }
    }
}

/// The text of a numpy unicode field's UTF-8 slot (up to its first NUL), or the error of
/// text that is not UTF-8 or has more than the `chars` characters the field stores.
fn field_text(slot: &[u8], chars: usize) -> Result<&str> {
    let end = slot.iter().position(|&b| b == 0).unwrap_or(slot.len());
    let text = std::str::from_utf8(&slot[..end])
        .map_err(|_| failed(ID, "text of a numpy unicode field is not UTF-8"))?;
    if text.chars().count() > chars {
        return Err(failed(
            ID,
            format!("text {text:?} is longer than its field's {chars} characters"),
        ));
    }
    Ok(text)
}

fn narrow_values(m: Move, from: &[u8], to: &mut [u8]) -> Result<()> {
    let (ss, ms) = (m.op.stored_size(), m.op.memory_size());
    let src = &from[m.memory..m.memory + ms * m.count];
    let dst = &mut to[m.stored..m.stored + ss * m.count];
    match m.op {
        FieldOp::Copy { .. } | FieldOp::Swap { .. } => copy_or_swap(m.op, src, dst),
        FieldOp::Half { big } => {
            for (s, d) in src.chunks_exact(4).zip(dst.chunks_exact_mut(2)) {
                let bits = f16::from_f32(f32::from_ne_bytes([s[0], s[1], s[2], s[3]])).to_bits();
                d.copy_from_slice(&if big {
                    bits.to_be_bytes()
                } else {
                    bits.to_le_bytes()
                });
            }
        }
        FieldOp::Ucs4 { chars, big } => {
            for (s, d) in src
                .chunks_exact(4 * chars)
                .zip(dst.chunks_exact_mut(4 * chars))
            {
                for (c, unit) in field_text(s, chars)?.chars().zip(d.chunks_exact_mut(4)) {
                    let code = u32::from(c);
                    unit.copy_from_slice(&if big {
                        code.to_be_bytes()
                    } else {
                        code.to_le_bytes()
                    });
                }
            }
        }
    }
    Ok(())
}

/// Records stored as [`RecordPlan`] says, served as compound values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Records {
    pub plan: Arc<RecordPlan>,
}

impl Records {
    /// Records in `n` bytes of this size, or the error of a buffer of no whole records.
    fn whole(&self, n: usize, size: usize, what: &str) -> Result<usize> {
        if size == 0 || !n.is_multiple_of(size) {
            return Err(failed(
                ID,
                format!("{n} bytes are no whole {what} of {size} bytes"),
            ));
        }
        Ok(n / size)
    }
}

impl Codec for Records {
    fn id(&self) -> &'static str {
        ID
    }

    fn config(&self) -> Config {
        let mut cfg = Config::new();
        cfg.insert("id".into(), Value::from(ID));
        cfg
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        let n = self.whole(raw.len(), self.plan.memory_size, "compound values")?;
        out.clear();
        out.resize(n * self.plan.stored_size, 0);
        self.plan.narrow(raw, out)
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let n = self.whole(encoded.len(), self.plan.stored_size, "records")?;
        let size = n.saturating_mul(self.plan.memory_size);
        if size > limit {
            return Err(past_limit(
                ID,
                format!("{size} bytes of compound values, more than the expected {limit}"),
            ));
        }
        let mut out = vec![0u8; size];
        self.plan.widen(encoded, &mut out);
        Ok(out)
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        let n = self.whole(encoded.len(), self.plan.stored_size, "records")?;
        let size = n.saturating_mul(self.plan.memory_size);
        if size > out.len() {
            return Err(past_limit(
                ID,
                format!(
                    "{size} bytes of compound values, more than the expected {}",
                    out.len()
                ),
            ));
        }
        self.plan.widen(encoded, &mut out[..size]);
        Ok(size)
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    fn decodes_at_copy_speed(&self) -> bool {
        true
    }

    fn encoded_len(&self, n: usize) -> Option<usize> {
        (n / self.plan.memory_size.max(1)).checked_mul(self.plan.stored_size)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record `<i4`, `>i2`, `<f2`, `<U2` stored packed (4 + 2 + 2 + 8 = 16 bytes), served as
    /// int at 0, short at 4, float at 8, char[8] at 12 (20 bytes).
    fn plan() -> Records {
        let m = |stored, memory, op| Move {
            stored,
            memory,
            count: 1,
            op,
        };
        Records {
            plan: Arc::new(RecordPlan {
                stored_size: 16,
                memory_size: 20,
                moves: vec![
                    m(0, 0, FieldOp::Copy { size: 4 }),
                    m(4, 4, FieldOp::Swap { size: 2 }),
                    m(6, 8, FieldOp::Half { big: false }),
                    m(
                        8,
                        12,
                        FieldOp::Ucs4 {
                            chars: 2,
                            big: false,
                        },
                    ),
                ],
            }),
        }
    }

    fn stored_record(i: i32, s: i16, h: f32, text: &str) -> Vec<u8> {
        let mut r = i.to_le_bytes().to_vec();
        r.extend(s.to_be_bytes());
        r.extend(f16::from_f32(h).to_bits().to_le_bytes());
        let mut units = [0u8; 8];
        for (c, u) in text.chars().zip(units.chunks_exact_mut(4)) {
            u.copy_from_slice(&u32::from(c).to_le_bytes());
        }
        r.extend(units);
        r
    }

    #[test]
    fn records_widen_to_native_fields_and_narrow_back() {
        let codec = plan();
        let mut stored = stored_record(7, -300, 1.5, "é");
        stored.extend(stored_record(-1, 2, -0.25, "ab"));
        let values = codec.decode(&stored, 40).unwrap();
        assert_eq!(values.len(), 40);
        assert_eq!(i32::from_ne_bytes(values[0..4].try_into().unwrap()), 7);
        assert_eq!(i16::from_ne_bytes(values[4..6].try_into().unwrap()), -300);
        assert_eq!(f32::from_ne_bytes(values[8..12].try_into().unwrap()), 1.5);
        assert_eq!(&values[12..20], "é\0\0\0\0\0\0".as_bytes());
        assert_eq!(&values[6..8], &[0, 0], "padding is zero");
        assert_eq!(
            f32::from_ne_bytes(values[28..32].try_into().unwrap()),
            -0.25
        );
        assert_eq!(&values[32..34], b"ab");
        assert_eq!(codec.encode(&values).unwrap(), stored);
    }

    #[test]
    fn partial_records_and_oversized_output_are_errors() {
        let codec = plan();
        assert!(codec.decode(&[0; 17], 1 << 20).is_err());
        assert!(codec.decode(&[0; 32], 39).is_err());
        assert!(codec.decode_into(&[0; 32], &mut [0; 39]).is_err());
        assert!(codec.encode(&[0; 21]).is_err());
    }

    #[test]
    fn half_floats_past_their_range_are_told() {
        let codec = plan();
        let mut values = codec.decode(&stored_record(1, 2, 0.5, "ab"), 20).unwrap();
        assert!(!codec.plan.past_half_range(&values));
        values[8..12].copy_from_slice(&70000f32.to_ne_bytes());
        assert!(codec.plan.past_half_range(&values));
        values[8..12].copy_from_slice(&f32::INFINITY.to_ne_bytes());
        assert!(
            !codec.plan.past_half_range(&values),
            "an infinity is in range"
        );
    }

    #[test]
    fn text_a_field_cannot_hold_is_refused_not_cut() {
        let codec = plan();
        let mut values = codec.decode(&stored_record(1, 2, 0.5, "ab"), 20).unwrap();
        values[12..15].copy_from_slice(b"abc");
        assert!(
            codec.encode(&values).is_err(),
            "three characters in a field of two"
        );
        assert!(codec.plan.check_text(&values).is_err());
        values[12..15].copy_from_slice(&[0xff, 0, 0]);
        assert!(codec.encode(&values).is_err(), "not UTF-8");
        assert!(codec.plan.check_text(&values).is_err());
        values[12..15].copy_from_slice(&[0xc3, 0xa9, 0]);
        assert!(codec.plan.check_text(&values).is_ok());
        let stored = codec.encode(&values).unwrap();
        assert_eq!(&stored[8..12], &0xe9u32.to_le_bytes());
    }

    #[test]
    fn code_points_that_are_no_characters_read_as_replacements() {
        let codec = plan();
        let mut stored = stored_record(0, 0, 0.0, "");
        stored[8..12].copy_from_slice(&0xD800u32.to_le_bytes());
        let values = codec.decode(&stored, 20).unwrap();
        assert_eq!(&values[12..15], "\u{FFFD}".as_bytes());
    }
}
