//! numcodecs' variable-length items (`vlen-utf8`, `vlen-bytes`, `vlen-array`): the object
//! codec of numpy `|O` arrays of strings or of arrays of numbers, between fixed-width slots and
//! stored items.
//!
//! Stored: a little-endian `u32` item count, then each item as a `u32` length and its bytes.
//! Decoded: one slot of fixed width per item ([`SLOT_HEADER`] bytes of length, then room for
//! the item, zero padded), so the chunk engine serves these like fixed-width elements and an
//! item keeps every byte, NULs included, when its chunk is written again. An item longer than
//! its slot's room fails decoding with [`Error::StringSlots`] naming the room it needs. The
//! items of `vlen-array` are arrays of its `dtype`'s numbers, in the slots in native byte
//! order. Knows nothing of variables or stores.

use super::{Codec, Config, Context, failed, past_limit};
use crate::error::{Error, Result};
use serde_json::Value;

/// numcodecs' id of UTF-8 strings (xarray's and zarr-python's default for `str` objects).
pub const UTF8: &str = "vlen-utf8";
/// numcodecs' id of byte strings.
pub const BYTES: &str = "vlen-bytes";
/// numcodecs' id of arrays of numbers of one `dtype` (each a numpy array of any length).
pub const ARRAY: &str = "vlen-array";

/// Bytes of an item count or length.
const LEN: usize = 4;

/// Bytes of a decoded slot before its item: the item's length, a little-endian `u32`.
pub const SLOT_HEADER: usize = LEN;

/// The item a decoded slot holds (its length cut to the slot's room).
pub fn slot_item(slot: &[u8]) -> &[u8] {
    let room = &slot[SLOT_HEADER.min(slot.len())..];
    let len = slot
        .first_chunk::<LEN>()
        .and_then(|b| usize::try_from(u32::from_le_bytes(*b)).ok())
        .unwrap_or(0);
    &room[..len.min(room.len())]
}

/// Fills a decoded slot with `item` (cut to the slot's room), zero padded.
pub fn put_slot_item(slot: &mut [u8], item: &[u8]) {
    let (header, room) = slot.split_at_mut(SLOT_HEADER.min(slot.len()));
    let len = item.len().min(room.len());
    // A slot's room is a chunk's bytes at most; one of 4 GiB is refused before it is made.
    let stored = u32::try_from(len).unwrap_or(u32::MAX);
    header.copy_from_slice(&stored.to_le_bytes()[..header.len()]);
    room[..len].copy_from_slice(&item[..len]);
    room[len..].fill(0);
}

/// One configured variable-length string codec.
#[derive(Debug)]
pub struct Vlen {
    id: &'static str,
    /// Bytes per decoded slot.
    width: usize,
    /// `vlen-array`: its `dtype` as configured, and the bytes of one number when they are
    /// stored in the other byte order than this machine's (swapped each way).
    array: Option<(String, Option<usize>)>,
}

/// The bytes of one number of a numpy dtype (`<i4`, `>f8`, `|u1`) and whether they are stored
/// in the other byte order than this machine's; `None` for a dtype that is not of numbers.
pub fn array_dtype(dtype: &str) -> Option<(usize, bool)> {
    let mut chars = dtype.chars();
    let order = chars.next()?;
    let kind = chars.next()?;
    let size: usize = chars.as_str().parse().ok()?;
    if !matches!(kind, 'i' | 'u' | 'f' | 'b') || ![1, 2, 4, 8].contains(&size) {
        return None;
    }
    let swapped = match order {
        '<' => cfg!(target_endian = "big"),
        '>' => cfg!(target_endian = "little"),
        '|' | '=' => false,
        _ => return None,
    };
    Some((size, swapped && size > 1))
}

impl Vlen {
    pub fn from_config(id: &str, cfg: &Config, ctx: Context) -> Result<Vlen> {
        let array = if id == ARRAY {
            let dtype = cfg.get("dtype").and_then(Value::as_str).unwrap_or("");
            let (size, swapped) = array_dtype(dtype)
                .ok_or_else(|| failed(ARRAY, format!("dtype {dtype:?} is not of numbers")))?;
            Some((dtype.to_string(), swapped.then_some(size)))
        } else {
            None
        };
        Ok(Vlen {
            id: match id {
                BYTES => BYTES,
                ARRAY => ARRAY,
                _ => UTF8,
            },
            width: ctx.elem_size.max(SLOT_HEADER + 1),
            array,
        })
    }

    /// The bytes of one value of an item: a `vlen-array` number's, else 1.
    fn number_size(&self) -> usize {
        self.array
            .as_ref()
            .and_then(|(dtype, _)| array_dtype(dtype))
            .map_or(1, |(size, _)| size)
    }

    /// The bytes of one number to swap, for `vlen-array` items stored in the other byte order.
    fn swapped_size(&self) -> Option<usize> {
        self.array.as_ref().and_then(|(_, swapped)| *swapped)
    }

    /// The most bytes one item of a slot can hold.
    fn room(&self) -> usize {
        self.width - SLOT_HEADER
    }

    /// The items of a stored buffer (checked to lie within it) and the longest one's length.
    fn items<'a>(&self, encoded: &'a [u8]) -> Result<(Vec<&'a [u8]>, usize)> {
        let truncated = || failed(self.id, "truncated: the items run past the buffer");
        let number = self.number_size();
        let mut rest = encoded;
        let count = take_len(&mut rest).ok_or_else(truncated)?;
        // Every item takes at least its length's bytes: a count beyond that is damage.
        if count > rest.len() / LEN {
            return Err(truncated());
        }
        let mut items = Vec::with_capacity(count);
        let mut longest = 0;
        for _ in 0..count {
            let len = take_len(&mut rest).ok_or_else(truncated)?;
            let item = rest.get(..len).ok_or_else(truncated)?;
            if !len.is_multiple_of(number) {
                return Err(failed(
                    self.id,
                    format!("an item of {len} bytes is no whole number of {number}-byte values"),
                ));
            }
            rest = &rest[len..];
            longest = longest.max(len);
            items.push(item);
        }
        Ok((items, longest))
    }
}

fn too_many(id: &str, items: usize, limit: usize) -> Error {
    past_limit(
        id,
        format!("{items} strings, more than the expected {limit} bytes hold"),
    )
}

/// Reverses the bytes of each `size`-byte number of `bytes`.
fn swap_each(bytes: &mut [u8], size: usize) {
    for number in bytes.chunks_exact_mut(size) {
        number.reverse();
    }
}

/// Reads a little-endian `u32` length from the front of `rest`.
fn take_len(rest: &mut &[u8]) -> Option<usize> {
    let (head, tail) = rest.split_first_chunk::<LEN>()?;
    *rest = tail;
    usize::try_from(u32::from_le_bytes(*head)).ok()
}

impl Codec for Vlen {
    fn id(&self) -> &'static str {
        self.id
    }

    fn config(&self) -> Config {
        let mut cfg = Config::new();
        cfg.insert("id".into(), Value::from(self.id));
        if let Some((dtype, _)) = &self.array {
            cfg.insert("dtype".into(), Value::from(dtype.as_str()));
        }
        cfg
    }

    fn hdf5(&self) -> Option<(u32, Vec<u32>)> {
        None
    }

    fn encode_into(&self, raw: &[u8], out: &mut Vec<u8>) -> Result<()> {
        if !raw.len().is_multiple_of(self.width) {
            return Err(failed(
                self.id,
                format!("{} bytes are not slots of {}", raw.len(), self.width),
            ));
        }
        let slots = raw.chunks_exact(self.width);
        let count = u32::try_from(slots.len())
            .map_err(|_| failed(self.id, format!("{} strings are too many", slots.len())))?;
        out.clear();
        out.extend_from_slice(&count.to_le_bytes());
        for slot in slots {
            let item = slot_item(slot);
            let len = u32::try_from(item.len())
                .map_err(|_| failed(self.id, "a string of 4 GiB or more"))?;
            if !item.len().is_multiple_of(self.number_size()) {
                return Err(failed(
                    self.id,
                    format!(
                        "an item of {} bytes is no whole number of values",
                        item.len()
                    ),
                ));
            }
            out.extend_from_slice(&len.to_le_bytes());
            let at = out.len();
            out.extend_from_slice(item);
            if let Some(size) = self.swapped_size() {
                swap_each(&mut out[at..], size);
            }
        }
        Ok(())
    }

    fn decode(&self, encoded: &[u8], limit: usize) -> Result<Vec<u8>> {
        let (items, _) = self.items(encoded)?;
        let bytes = items
            .len()
            .checked_mul(self.width)
            .filter(|&n| n <= limit)
            .ok_or_else(|| too_many(self.id, items.len(), limit))?;
        let mut out = vec![0u8; bytes];
        self.decode_into(encoded, &mut out)?;
        Ok(out)
    }

    fn decode_into(&self, encoded: &[u8], out: &mut [u8]) -> Result<usize> {
        let (items, longest) = self.items(encoded)?;
        if longest > self.room() {
            return Err(Error::StringSlots { width: longest });
        }
        let room = out.len();
        let (slots, bytes) = items
            .len()
            .checked_mul(self.width)
            .and_then(|bytes| Some((out.get_mut(..bytes)?, bytes)))
            .ok_or_else(|| too_many(self.id, items.len(), room))?;
        for (slot, item) in slots.chunks_exact_mut(self.width).zip(items) {
            put_slot_item(slot, item);
            if let Some(size) = self.swapped_size() {
                let len = item.len();
                swap_each(&mut slot[SLOT_HEADER..SLOT_HEADER + len], size);
            }
        }
        Ok(bytes)
    }

    fn writes_in_place(&self) -> bool {
        true
    }

    fn decodes_at_copy_speed(&self) -> bool {
        true
    }

    /// Each item takes its length's bytes and at most the slot's room: the slot's bytes.
    fn encoded_bound(&self, n: usize) -> Option<usize> {
        (n / self.width)
            .checked_mul(self.width)
            .and_then(|b| b.checked_add(LEN))
    }

    /// Stages before this one decoding past [`Codec::encoded_bound`] hold items longer than
    /// the slots' room on average: twice the room may hold them (the decode then names the
    /// exact room).
    fn input_failed(&self, e: Error) -> Error {
        match e {
            Error::PastLimit { .. } => Error::StringSlots {
                width: self.room().saturating_mul(2),
            },
            other => other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A codec whose slots have `room` bytes for an item.
    fn codec(room: usize) -> Vlen {
        let ctx = Context {
            elem_size: SLOT_HEADER + room,
        };
        Vlen::from_config(UTF8, &Config::new(), ctx).unwrap()
    }

    /// The stored form numcodecs writes for these items.
    fn stored(items: &[&[u8]]) -> Vec<u8> {
        let mut out = (items.len() as u32).to_le_bytes().to_vec();
        for item in items {
            out.extend_from_slice(&(item.len() as u32).to_le_bytes());
            out.extend_from_slice(item);
        }
        out
    }

    /// Decoded slots of `room` bytes holding `items`.
    fn slots(room: usize, items: &[&[u8]]) -> Vec<u8> {
        let mut out = vec![0xAAu8; items.len() * (SLOT_HEADER + room)];
        for (slot, item) in out.chunks_exact_mut(SLOT_HEADER + room).zip(items) {
            put_slot_item(slot, item);
        }
        out
    }

    #[test]
    fn decodes_items_into_slots_and_back_nuls_included() {
        let items: [&[u8]; 4] = [b"ab", b"", "h\u{e9}".as_bytes(), b"a\0b\0"];
        let encoded = stored(&items);
        let c = codec(5);
        let mut out = vec![0xAAu8; 4 * 9];
        assert_eq!(c.decode_into(&encoded, &mut out).unwrap(), 36);
        assert_eq!(out, slots(5, &items));
        let read: Vec<&[u8]> = out.chunks_exact(9).map(slot_item).collect();
        assert_eq!(read, items);
        assert_eq!(c.decode(&encoded, 36).unwrap(), out);
        assert_eq!(c.encode(&out).unwrap(), encoded);
    }

    #[test]
    fn a_longer_item_asks_for_its_room() {
        let encoded = stored(&[b"a", b"abcdefg"]);
        match codec(4).decode_into(&encoded, &mut [0; 16]) {
            Err(Error::StringSlots { width: 7 }) => {}
            other => panic!("{other:?}"),
        }
        assert_eq!(
            codec(7).decode(&encoded, 22).unwrap(),
            slots(7, &[b"a", b"abcdefg"])
        );
    }

    #[test]
    fn damaged_buffers_are_errors() {
        let c = codec(4);
        let good = stored(&[b"ab", b"cd"]);
        for cut in 0..good.len() {
            let err = c.decode_into(&good[..cut], &mut [0; 16]).unwrap_err();
            assert!(matches!(err, Error::Filter { .. }), "{cut}: {err:?}");
        }
        // A count that the buffer cannot hold, and more items than the chunk has slots.
        let absurd = [0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0];
        assert!(matches!(
            c.decode(&absurd, 1 << 40),
            Err(Error::Filter { .. })
        ));
        assert!(matches!(
            c.decode_into(&good, &mut [0; 8]),
            Err(Error::PastLimit { .. })
        ));
        assert!(matches!(c.decode(&good, 8), Err(Error::PastLimit { .. })));
    }

    #[test]
    fn arrays_of_numbers_are_swapped_to_this_machines_order_and_back() {
        let config = |dtype: &str| {
            let mut cfg = Config::new();
            cfg.insert("dtype".into(), Value::from(dtype));
            cfg
        };
        let ctx = Context {
            elem_size: SLOT_HEADER + 8,
        };
        let big = Vlen::from_config(ARRAY, &config(">i2"), ctx).unwrap();
        let encoded = stored(&[&[0x01, 0x2C, 0xFF, 0xFE], b""]);
        let mut out = vec![0u8; 2 * 12];
        big.decode_into(&encoded, &mut out).unwrap();
        let values: Vec<i16> = slot_item(&out[..12])
            .chunks_exact(2)
            .map(|b| i16::from_ne_bytes([b[0], b[1]]))
            .collect();
        assert_eq!(values, [300, -2]);
        assert_eq!(big.encode(&out).unwrap(), encoded);
        assert_eq!(big.config()["dtype"], ">i2");
        // An item that is no whole number of values, and a dtype that is not of numbers.
        let odd = stored(&[&[1, 2, 3]]);
        assert!(matches!(
            big.decode_into(&odd, &mut out),
            Err(Error::Filter { .. })
        ));
        for dtype in ["<U4", "|O", "<i3", "i4", ""] {
            assert!(
                Vlen::from_config(ARRAY, &config(dtype), ctx).is_err(),
                "{dtype}"
            );
        }
        assert_eq!(array_dtype("|u1"), Some((1, false)));
        assert_eq!(array_dtype("<f8"), Some((8, cfg!(target_endian = "big"))));
    }

    #[test]
    fn slots_never_read_or_write_past_themselves() {
        let mut slot = [0u8; 7];
        put_slot_item(&mut slot, b"toolong");
        assert_eq!(slot_item(&slot), b"too");
        // A length past the room, as damaged memory could hold, is cut to the room.
        assert_eq!(slot_item(&[9, 0, 0, 0, b'x']), b"x");
        assert_eq!(slot_item(&[1, 0]), b"");
        put_slot_item(&mut [0u8; 2], b"x");
    }

    #[test]
    fn the_bound_holds_full_slots_and_overflow_asks_for_wider_ones() {
        let c = codec(3);
        let full = c.encode(&slots(3, &[b"abc", b"def", b"ghi"])).unwrap();
        assert_eq!(c.encoded_bound(21), Some(full.len()));
        let past = past_limit("zlib", "decompresses to more than the expected 10 bytes");
        assert!(matches!(
            c.input_failed(past),
            Error::StringSlots { width: 6 }
        ));
        let other = failed("zlib", "corrupt");
        assert!(matches!(c.input_failed(other), Error::Filter { .. }));
    }
}
