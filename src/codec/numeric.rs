//! The numpy numeric dtypes numcodecs filters name in their configurations (`"<f8"`, `"|u1"`,
//! `">i2"`): parsing them, and reading and writing one element of such a type.

use super::{Result, bad_config, failed, past_limit};

/// The kind of a numeric element.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Int,
    Uint,
    Float,
}

/// A numeric numpy dtype.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Numeric {
    /// As the configuration gave it.
    pub text: String,
    pub kind: Kind,
    /// Bytes per element: 1, 2, 4 or 8 (floats: 4 or 8).
    pub size: usize,
    pub big: bool,
}

impl Numeric {
    /// The dtype `text`, an error of `codec` when it is no numeric dtype served here.
    pub fn parse(codec: &str, text: &str) -> Result<Numeric> {
        let bytes = text.as_bytes();
        let (order, rest) = match bytes.first() {
            Some(b'<' | b'>' | b'|' | b'=') => (bytes[0], &text[1..]),
            _ => (b'<', text),
        };
        let kind = match rest.as_bytes().first() {
            Some(b'i') => Kind::Int,
            Some(b'u') => Kind::Uint,
            Some(b'f') => Kind::Float,
            _ => return Err(bad_config(codec, format!("dtype {text} is not numeric"))),
        };
        let size: usize = rest[1..]
            .parse()
            .map_err(|_| bad_config(codec, format!("dtype {text} has no size")))?;
        let ok = match kind {
            Kind::Float => matches!(size, 4 | 8),
            _ => matches!(size, 1 | 2 | 4 | 8),
        };
        if !ok {
            return Err(bad_config(codec, format!("dtype {text} is not supported")));
        }
        Ok(Numeric {
            text: text.to_string(),
            kind,
            size,
            big: order == b'>',
        })
    }

    /// The bits of the element `b` (`size` bytes), in the low bits.
    pub fn read(&self, b: &[u8]) -> u64 {
        let mut w = [0u8; 8];
        if self.big {
            w[8 - self.size..].copy_from_slice(b);
            u64::from_be_bytes(w)
        } else {
            w[..self.size].copy_from_slice(b);
            u64::from_le_bytes(w)
        }
    }

    /// Writes the low `size` bytes of `v` into `out`.
    pub fn write(&self, v: u64, out: &mut [u8]) {
        if self.big {
            out.copy_from_slice(&v.to_be_bytes()[8 - self.size..]);
        } else {
            out.copy_from_slice(&v.to_le_bytes()[..self.size]);
        }
    }

    /// The value of the element with bits `v`.
    pub fn value(&self, v: u64) -> f64 {
        let shift = 64 - 8 * self.size as u32;
        match (self.kind, self.size) {
            (Kind::Float, 4) => f64::from(f32::from_bits(v as u32)),
            (Kind::Float, _) => f64::from_bits(v),
            (Kind::Int, _) => (((v << shift) as i64) >> shift) as f64,
            (Kind::Uint, _) => v as f64,
        }
    }

    /// The bits of `x` cast to this type (an integer type takes the integer part, saturating
    /// at its bounds; NaN is 0).
    pub fn bits(&self, x: f64) -> u64 {
        let mask = if self.size == 8 {
            u64::MAX
        } else {
            (1u64 << (8 * self.size)) - 1
        };
        match (self.kind, self.size) {
            (Kind::Float, 4) => u64::from((x as f32).to_bits()),
            (Kind::Float, _) => x.to_bits(),
            (Kind::Int, 1) => x as i8 as u64 & mask,
            (Kind::Int, 2) => x as i16 as u64 & mask,
            (Kind::Int, 4) => x as i32 as u64 & mask,
            (Kind::Int, _) => x as i64 as u64,
            (Kind::Uint, 1) => u64::from(x as u8),
            (Kind::Uint, 2) => u64::from(x as u16),
            (Kind::Uint, 4) => u64::from(x as u32),
            (Kind::Uint, _) => x as u64,
        }
    }
}

/// How many elements of `dtype` `n` bytes hold, an error of `codec` when not a whole number.
fn count(codec: &str, n: usize, dtype: &Numeric) -> Result<usize> {
    if n.is_multiple_of(dtype.size) {
        Ok(n / dtype.size)
    } else {
        Err(failed(
            codec,
            format!("{n} bytes is not a whole number of {}", dtype.text),
        ))
    }
}

/// Each element of `input` (of type `from`) through `f`, written as `to` into `out`.
fn convert(input: &[u8], from: &Numeric, to: &Numeric, out: &mut [u8], f: impl Fn(f64) -> f64) {
    for (i, o) in input
        .chunks_exact(from.size)
        .zip(out.chunks_exact_mut(to.size))
    {
        to.write(to.bits(f(from.value(from.read(i)))), o);
    }
}

/// Encoding by codec `codec`: each element of `input` (of type `from`) through `f`, as `to`,
/// into `out` (replacing what it held).
pub fn recode_into(
    codec: &str,
    input: &[u8],
    (from, to): (&Numeric, &Numeric),
    out: &mut Vec<u8>,
    f: impl Fn(f64) -> f64,
) -> Result<()> {
    let n = count(codec, input.len(), from)?;
    out.clear();
    out.resize(n * to.size, 0);
    convert(input, from, to, out, f);
    Ok(())
}

/// Decoding by codec `codec`: [`recode_into`] a new buffer, refused when it would pass
/// `limit` bytes.
pub fn recoded(
    codec: &str,
    input: &[u8],
    (from, to): (&Numeric, &Numeric),
    limit: usize,
    f: impl Fn(f64) -> f64,
) -> Result<Vec<u8>> {
    let bytes = count(codec, input.len(), from)?.saturating_mul(to.size);
    if bytes > limit {
        return Err(past_limit(
            codec,
            format!("{bytes} bytes, more than the expected {limit}"),
        ));
    }
    let mut out = vec![0u8; bytes];
    convert(input, from, to, &mut out, f);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_read_and_write_in_their_order() {
        let i2 = Numeric::parse("t", ">i2").unwrap();
        assert_eq!(i2.read(&[0xff, 0xfe]), 0xfffe);
        assert_eq!(i2.value(0xfffe), -2.0);
        assert_eq!(i2.bits(-2.7), 0xfffe);
        let mut out = [0u8; 2];
        i2.write(0xfffe, &mut out);
        assert_eq!(out, [0xff, 0xfe]);
        let u1 = Numeric::parse("t", "|u1").unwrap();
        assert_eq!(u1.bits(300.0), 255);
        assert_eq!(u1.bits(f64::NAN), 0);
        let f4 = Numeric::parse("t", "<f4").unwrap();
        assert_eq!(f4.value(f4.bits(1.5)), 1.5);
        assert!(Numeric::parse("t", "<U4").is_err());
        assert!(Numeric::parse("t", "<f2").is_err());
        assert!(Numeric::parse("t", "<i").is_err());
    }
}
