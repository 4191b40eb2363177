//! The page headers of a record file's column chunks, checked before the Parquet decoder sees
//! them: the decoder takes the sizes a header declares (a page's decompressed size, a
//! dictionary's number of values) and allocates that much, so a file of a few hundred bytes
//! could otherwise ask for gigabytes.
//!
//! Owns reading Parquet's `PageHeader` in Thrift's compact protocol, as far as these checks
//! need: the page's type and sizes and its values count, every other field skipped. It must
//! not know what the columns mean.

/// A page's header, as far as it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageHeader {
    /// Parquet's `PageType`: 0 data, 1 index, 2 dictionary, 3 data (version 2).
    pub kind: i32,
    pub uncompressed: i32,
    pub compressed: i32,
    /// The values a data page holds or a dictionary page defines (`None`: not given).
    pub values: Option<i32>,
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
                for _ in 0..self.count(n)? {
                    // Booleans in a list take a byte each.
                    if matches!(element, TRUE | FALSE) {
                        self.byte()?;
                    } else {
                        self.skip(element, depth + 1)?;
                    }
                }
                Ok(())
            }
            MAP => {
                let n = self.varint()?;
                if n == 0 {
                    return Ok(());
                }
                let types = self.byte()?;
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

    /// The first field (an i32: `num_values`) of a nested page header struct.
    fn values_of(&mut self, depth: usize) -> Parsed<Option<i32>> {
        let mut values = None;
        self.each_field(depth, &mut |r, id, kind| match (id, kind) {
            (1, I32) => {
                values = Some(r.i32()?);
                Ok(())
            }
            _ => r.skip(kind, depth),
        })?;
        Ok(values)
    }
}

/// The page header at the start of `bytes`.
pub fn header(bytes: &[u8]) -> Parsed<PageHeader> {
    let mut r = Reader { bytes, at: 0 };
    let (mut kind, mut uncompressed, mut compressed, mut values) = (None, None, None, None);
    r.each_field(0, &mut |r, id, field_kind| {
        match (id, field_kind) {
            (1, I32) => kind = Some(r.i32()?),
            (2, I32) => uncompressed = Some(r.i32()?),
            (3, I32) => compressed = Some(r.i32()?),
            // The data, dictionary and version 2 data page headers: their values first.
            (5 | 7 | 8, STRUCT) => values = r.values_of(1)?,
            (_, other) => r.skip(other, 0)?,
        }
        Ok(())
    })?;
    match (kind, uncompressed, compressed) {
        (Some(kind), Some(uncompressed), Some(compressed)) => Ok(PageHeader {
            kind,
            uncompressed,
            compressed,
            values,
            len: r.at,
        }),
        _ => Err("a page header lacks its type or sizes".into()),
    }
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

    /// A compact-protocol page header: type, sizes, and a nested header with `values`.
    fn encoded(kind: i32, uncompressed: i32, compressed: i32, values: i32) -> Vec<u8> {
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
        let mut out = Vec::new();
        for (delta, v) in [(1, kind), (1, uncompressed), (1, compressed)] {
            out.push((delta << 4) | I32);
            zigzag(v, &mut out);
        }
        // Field 7 (dictionary page header) or 5 (data page header): a struct.
        let nested = if kind == 2 { 7 } else { 5 };
        out.push(((nested - 3) << 4) | STRUCT);
        out.push((1 << 4) | I32);
        zigzag(values, &mut out);
        // An unknown binary field and a list of booleans, skipped.
        out.push((1 << 4) | BINARY);
        out.extend([3, b'a', b'b', b'c']);
        out.push((1 << 4) | LIST);
        out.push((2 << 4) | TRUE);
        out.extend([1, 2]);
        out.push(STOP);
        out.push(STOP);
        out
    }

    #[test]
    fn headers_are_read_and_unknown_fields_skipped() {
        let bytes = encoded(2, 1000, 300, 17);
        let page = header(&bytes).unwrap();
        assert_eq!(
            page,
            PageHeader {
                kind: 2,
                uncompressed: 1000,
                compressed: 300,
                values: Some(17),
                len: bytes.len()
            }
        );
        for cut_at in 0..bytes.len() {
            assert!(header(&bytes[..cut_at]).is_err(), "cut at {cut_at}");
        }
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
        ] {
            let got = check_chunk(&bad, &bounds);
            assert!(
                matches!(&got, Err(why) if why.contains(says)),
                "{says}: {got:?}"
            );
        }
        // A header that says its page is longer than the chunk ends the walk past it.
        let long = encoded(0, 10, 1_000_000, 1);
        assert_eq!(check_chunk(&long, &bounds), Ok(10));
    }
}
