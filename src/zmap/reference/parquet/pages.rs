//! The page headers of a record file's column chunks, checked before the Parquet decoder sees
//! them: the decoder takes the sizes a header declares (a page's decompressed size, a
//! dictionary's number of values) and allocates that much, so a file of a few hundred bytes
//! could otherwise ask for gigabytes.
//!
//! Owns reading Parquet's `PageHeader` in Thrift's compact protocol, as far as these checks
//! need: the page's type and sizes, and its values count and encoding, every other field
//! skipped. A header the decoder could read otherwise than this reader does is refused: one
//! that repeats a field read here or gives it another type, or that holds a collection of
//! booleans (whose elements this reader and the decoder's skip differently). It must not know
//! what the columns mean.

/// A page's header, as far as it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Parquet's `PageType`: 0 data, 1 index, 2 dictionary, 3 data (version 2).
    pub kind: i32,
    pub uncompressed: i32,
    pub compressed: i32,
    /// The values a data page holds or a dictionary page defines (`None`: not given).
    pub values: Option<i32>,
    /// Parquet's `Encoding` of those values (`None`: not given).
    pub encoding: Option<i32>,
    /// The header's own length in bytes.
    pub len: usize,
}

/// Structs nested deeper than this are refused (Parquet's page headers nest two deep).
const DEEPEST: usize = 16;

/// Compact-protocol types.
const STOP: u8 = 0;
const TRUE: u8 = 1;
const FALSE: u8 = 2;
const BYTE: u8 = 3;
const I16: u8 = 4;
const I32: u8 = 5;
const I64: u8 = 6;
const DOUBLE: u8 = 7;
const BINARY: u8 = 8;
const LIST: u8 = 9;
const SET: u8 = 10;
const MAP: u8 = 11;
const STRUCT: u8 = 12;

/// A cursor over compact-protocol bytes.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

type Parsed<T> = Result<T, String>;

fn cut() -> String {
    "a page header is cut short".into()
}

impl Reader<'_> {
    fn byte(&mut self) -> Parsed<u8> {
        let b = *self.bytes.get(self.at).ok_or_else(cut)?;
        self.at += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Parsed<u64> {
        let mut value = 0u64;
        for shift in (0..64).step_by(7) {
            let b = self.byte()?;
            value |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err("a page header holds a number too long".into())
    }

    fn zigzag(&mut self) -> Parsed<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn i32(&mut self) -> Parsed<i32> {
        i32::try_from(self.zigzag()?).map_err(|_| "a page header's i32 is out of range".into())
    }

    fn skip_bytes(&mut self, n: u64) -> Parsed<()> {
        let n = usize::try_from(n).map_err(|_| cut())?;
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        self.at = end.ok_or_else(cut)?;
        Ok(())
    }

    /// The size of a list or set, checked against the bytes left (every element takes one).
    fn count(&mut self, n: u64) -> Parsed<u64> {
        if n > (self.bytes.len() - self.at) as u64 {
            return Err(cut());
        }
        Ok(n)
    }

    /// Skips one value of compact type `kind`.
    fn skip(&mut self, kind: u8, depth: usize) -> Parsed<()> {
        if depth > DEEPEST {
            return Err("a page header nests too deep".into());
        }
        match kind {
            TRUE | FALSE => Ok(()),
            BYTE => self.byte().map(drop),
            I16 | I32 | I64 => self.varint().map(drop),
            DOUBLE => self.skip_bytes(8),
            BINARY => {
                let n = self.varint()?;
                self.skip_bytes(n)
            }
            LIST | SET => {
                let head = self.byte()?;
                let n = match head >> 4 {
                    15 => self.varint()?,
                    n => u64::from(n),
                };
                let element = head & 0x0f;
                if matches!(element, TRUE | FALSE) {
                    return Err("a page header holds a list of booleans".into());
                }
                for _ in 0..self.count(n)? {
                    self.skip(element, depth + 1)?;
                }
                Ok(())
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
                if [types >> 4, types & 0x0f]
                    .iter()
                    .any(|t| matches!(*t, TRUE | FALSE))
                {
                    return Err("a page header holds a map of booleans".into());
                }
                for _ in 0..self.count(n)? {
                    self.skip(types >> 4, depth + 1)?;
                    self.skip(types & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            STRUCT => self.each_field(depth + 1, &mut |r, _, kind| r.skip(kind, depth + 1)),
            other => Err(format!("a page header holds an unknown type {other}")),
        }
    }

    /// Reads the fields of a struct up to its end, handing each (its id and type) to `field`,
    /// which must consume its value.
    fn each_field(
        &mut self,
        depth: usize,
        field: &mut dyn FnMut(&mut Self, i16, u8) -> Parsed<()>,
    ) -> Parsed<()> {
        if depth > DEEPEST {
            return Err("a page header nests too deep".into());
        }
        let mut id: i16 = 0;
        loop {
            let head = self.byte()?;
            let kind = head & 0x0f;
            if kind == STOP {
                return Ok(());
            }
            id = match head >> 4 {
                0 => i16::try_from(self.zigzag()?).map_err(|_| cut())?,
                delta => id.checked_add(i16::from(delta)).ok_or_else(cut)?,
            };
            field(self, id, kind)?;
        }
    }

    /// The values count and encoding of a nested page header struct: the i32 fields `values`
    /// and `encoding` name (by id).
    fn nested(&mut self, values: i16, encoding: i16, depth: usize) -> Parsed<Nested> {
        let mut out = Nested::default();
        let mut seen = Vec::new();
        self.each_field(depth, &mut |r, id, kind| {
            if id != values && id != encoding {
                return r.skip(kind, depth);
            }
            if kind != I32 || seen.contains(&id) {
                return Err(format!("a page header repeats or mistypes its field {id}"));
            }
            seen.push(id);
            let v = Some(r.i32()?);
            if id == values {
                out.values = v;
            } else {
                out.encoding = v;
            }
            Ok(())
        })?;
        Ok(out)
    }
}

/// What a nested page header says of its values.
#[derive(Debug, Default, Clone, Copy)]
struct Nested {
    values: Option<i32>,
    encoding: Option<i32>,
}

/// The page header at the start of `bytes`.
pub fn header(bytes: &[u8]) -> Parsed<PageHeader> {
    let mut r = Reader { bytes, at: 0 };
    let (mut kind, mut uncompressed, mut compressed) = (None, None, None);
    // The data (5), dictionary (7) and version 2 data (8) page headers.
    let mut nested: [Option<Nested>; 3] = [None; 3];
    let mut seen = Vec::new();
    r.each_field(0, &mut |r, id, field_kind| {
        let expected = match id {
            1..=3 => I32,
            5 | 7 | 8 => STRUCT,
            _ => return r.skip(field_kind, 0),
        };
        if field_kind != expected || seen.contains(&id) {
            return Err(format!("a page header repeats or mistypes its field {id}"));
        }
        seen.push(id);
        match id {
            1 => kind = Some(r.i32()?),
            2 => uncompressed = Some(r.i32()?),
            3 => compressed = Some(r.i32()?),
            5 => nested[0] = Some(r.nested(1, 2, 1)?),
            7 => nested[1] = Some(r.nested(1, 2, 1)?),
            _ => nested[2] = Some(r.nested(1, 4, 1)?),
        }
        Ok(())
    })?;
    let (Some(kind), Some(uncompressed), Some(compressed)) = (kind, uncompressed, compressed)
    else {
        return Err("a page header lacks its type or sizes".into());
    };
    // The nested header the decoder reads for a page of this kind.
    let own = match kind {
        0 => nested[0],
        2 => nested[1],
        3 => nested[2],
        _ => None,
    }
    .unwrap_or_default();
    Ok(PageHeader {
        kind,
        uncompressed,
        compressed,
        values: own.values,
        encoding: own.encoding,
        len: r.at,
    })
}

/// What a column chunk may declare.
pub struct Bounds {
    /// Bytes all its pages may decompress to, together.
    pub decompressed: u64,
    /// Values a dictionary may define.
    pub dictionary_values: u64,
    /// The fewest bytes one value takes in a dictionary page.
    pub value_width: u64,
}

/// Walks the pages of the column chunk `chunk` (its bytes, from its first page), checking each
/// header against `bounds`; returns the bytes they decompress to.
pub fn check_chunk(chunk: &[u8], bounds: &Bounds) -> Parsed<u64> {
    let mut at = 0usize;
    let mut decompressed = 0u64;
    while at < chunk.len() {
        let page = header(&chunk[at..])?;
        let (Ok(size), Ok(stored)) = (
            u64::try_from(page.uncompressed),
            usize::try_from(page.compressed),
        ) else {
            return Err("a page declares a negative size".into());
        };
        decompressed += size;
        if decompressed > bounds.decompressed {
            return Err(format!(
                "its pages decompress to more than {} bytes",
                bounds.decompressed
            ));
        }
        let encoding = page.encoding.unwrap_or(0);
        let allowed = match page.kind {
            // Values plain or dictionary-indexed; booleans run-length encoded; the delta and
            // byte-stream-split encodings of numbers.
            0 | 3 => matches!(encoding, 0 | 2 | 3 | 5 | 8 | 9),
            // A dictionary's values are plain.
            2 => matches!(encoding, 0 | 2),
            // An index page is skipped.
            1 => true,
            _ => false,
        };
        if !allowed {
            return Err(format!(
                "a page of kind {} with values in encoding {encoding} is not read",
                page.kind
            ));
        }
        if page.kind == 2 {
            let values = u64::try_from(page.values.unwrap_or(0)).unwrap_or(u64::MAX);
            if values > bounds.dictionary_values || values * bounds.value_width > size {
                return Err(format!(
                    "a dictionary page declares {values} values in {size} bytes"
                ));
            }
        }
        at = at
            .checked_add(page.len)
            .and_then(|a| a.checked_add(stored))
            .ok_or_else(cut)?;
    }
    Ok(decompressed)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zigzag(v: i32, out: &mut Vec<u8>) {
        let mut z = ((v << 1) ^ (v >> 31)) as u32;
        loop {
            let b = (z & 0x7f) as u8;
            z >>= 7;
            if z == 0 {
                out.push(b);
                break;
            }
            out.push(b | 0x80);
        }
    }

    /// A compact-protocol page header: type, sizes, and the nested header of its kind with
    /// `values` and `encoding`, an unknown binary field and a list of i16 in it; `tail` before
    /// the header's end.
    fn encoded_with(
        kind: i32,
        sizes: (i32, i32),
        values: i32,
        encoding: i32,
        tail: &[u8],
    ) -> Vec<u8> {
        let mut out = Vec::new();
        for v in [kind, sizes.0, sizes.1] {
            out.push((1 << 4) | I32);
            zigzag(v, &mut out);
        }
        // Field 7 (dictionary page header), 5 (data page header) or 8 (version 2).
        let (nested, encoding_id) = match kind {
            2 => (7, 2),
            3 => (8, 4),
            _ => (5, 2),
        };
        out.push(((nested - 3) << 4) | STRUCT);
        out.push((1 << 4) | I32);
        zigzag(values, &mut out);
        out.push(((encoding_id - 1) << 4) | I32);
        zigzag(encoding, &mut out);
        out.push((1 << 4) | BINARY);
        out.extend([3, b'a', b'b', b'c']);
        out.push((1 << 4) | LIST);
        out.push((2 << 4) | I16);
        out.extend([1, 2]);
        out.push(STOP);
        out.extend(tail);
        out.push(STOP);
        out
    }

    fn encoded(kind: i32, uncompressed: i32, compressed: i32, values: i32) -> Vec<u8> {
        encoded_with(kind, (uncompressed, compressed), values, 0, &[])
    }

    #[test]
    fn headers_are_read_and_unknown_fields_skipped() {
        let bytes = encoded_with(2, (1000, 300), 17, 2, &[]);
        let page = header(&bytes).unwrap();
        assert_eq!(
            page,
            PageHeader {
                kind: 2,
                uncompressed: 1000,
                compressed: 300,
                values: Some(17),
                encoding: Some(2),
                len: bytes.len()
            }
        );
        for cut_at in 0..bytes.len() {
            assert!(header(&bytes[..cut_at]).is_err(), "cut at {cut_at}");
        }
        let v2 = header(&encoded_with(3, (10, 10), 5, 8, &[])).unwrap();
        assert_eq!((v2.values, v2.encoding), (Some(5), Some(8)));
    }

    #[test]
    fn headers_the_decoder_could_read_otherwise_are_refused() {
        let mut huge = Vec::new();
        zigzag(i32::MAX, &mut huge);
        // Field 2 again (id delta 0: written in full), as an i32 and as an i64.
        let again = [[0x05u8].as_slice(), &[4], &huge].concat();
        let as_i64 = [[0x06u8].as_slice(), &[4], &huge].concat();
        // A list of booleans, which the decoder's skip reads without a byte per element.
        let bools = [(1u8 << 4) | LIST, (3 << 4) | TRUE, 1, 1, 1];
        // Field 7 after field 5 in a data page: the data page's own header counts.
        let other_nested = [(2u8 << 4) | STRUCT, (1 << 4) | I32, 4, STOP];
        for (tail, says) in [
            (again.as_slice(), "repeats or mistypes its field 2"),
            (&as_i64, "repeats or mistypes its field 2"),
            (&bools, "list of booleans"),
        ] {
            let got = header(&encoded_with(0, (10, 10), 1, 0, tail));
            assert!(
                matches!(&got, Err(why) if why.contains(says)),
                "{says}: {got:?}"
            );
        }
        let data = header(&encoded_with(0, (10, 10), 1, 0, &other_nested)).unwrap();
        assert_eq!(data.values, Some(1));
    }

    #[test]
    fn chunks_declaring_too_much_are_refused() {
        let bounds = Bounds {
            decompressed: 10_000,
            dictionary_values: 100,
            value_width: 4,
        };
        let page = |kind, uncompressed, values, stored: usize| {
            let mut out = encoded(kind, uncompressed, stored as i32, values);
            out.resize(out.len() + stored, 0);
            out
        };
        let good = [page(2, 400, 100, 10), page(0, 5000, 100, 20)].concat();
        assert_eq!(check_chunk(&good, &bounds), Ok(5400));
        for (bad, says) in [
            (page(0, 20_000, 1, 5), "decompress to more than"),
            (
                [page(0, 6000, 1, 5), page(0, 6000, 1, 5)].concat(),
                "more than",
            ),
            (page(2, 100, 1000, 5), "dictionary page declares 1000"),
            (page(2, 100, 30, 5), "declares 30 values in 100"),
            (page(0, -1, 1, 5), "negative"),
            (page(0, 10, 1, 5)[..12].to_vec(), "cut short"),
            (page(7, 10, 1, 5), "kind 7"),
        ] {
            let got = check_chunk(&bad, &bounds);
            assert!(
                matches!(&got, Err(why) if why.contains(says)),
                "{says}: {got:?}"
            );
        }
        // Values in an encoding whose decoder sizes itself by numbers in the data.
        let delta_length = encoded_with(0, (10, 0), 1, 6, &[]);
        let got = check_chunk(&delta_length, &bounds);
        assert!(
            matches!(&got, Err(why) if why.contains("encoding 6")),
            "{got:?}"
        );
        // A header that says its page is longer than the chunk ends the walk past it.
        let long = encoded(0, 10, 1_000_000, 1);
        assert_eq!(check_chunk(&long, &bounds), Ok(10));
    }
}
