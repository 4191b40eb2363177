//! Standard base64 (RFC 4648, with padding), the encoding Zarr v2 uses for the `fill_value` of
//! byte-string dtypes (`|S<n>`) in pure Zarr (zarr-python encodes and decodes it so). NCZarr
//! stores the text itself, so this is only used for pure Zarr.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Encodes bytes as padded base64 text.
pub fn encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for group in bytes.chunks(3) {
        let b = [
            group[0],
            *group.get(1).unwrap_or(&0),
            *group.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= group.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes padded base64 text; `None` when it is not valid base64.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    let t = text.as_bytes();
    if t.len() % 4 != 0 {
        return None;
    }
    let mut out = Vec::with_capacity(t.len() / 4 * 3);
    for (gi, group) in t.chunks(4).enumerate() {
        let last = gi + 1 == t.len() / 4;
        let pad = group.iter().rev().take_while(|c| **c == b'=').count();
        if pad > 2 || (pad > 0 && !last) {
            return None;
        }
        let mut n = 0u32;
        for c in &group[..4 - pad] {
            let v = ALPHABET.iter().position(|a| a == c)? as u32;
            n = (n << 6) | v;
        }
        n <<= 6 * pad as u32;
        let bytes = [(n >> 16) as u8, (n >> 8) as u8, n as u8];
        out.extend_from_slice(&bytes[..3 - pad]);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_python_base64() {
        // base64.standard_b64encode(...) in Python.
        assert_eq!(encode(b""), "");
        assert_eq!(encode(b"N/A"), "Ti9B");
        assert_eq!(encode(b"*"), "Kg==");
        assert_eq!(encode(b"ab"), "YWI=");
        for s in [&b""[..], b"N/A", b"*", b"ab", b"\x00\xff\x10"] {
            assert_eq!(decode(&encode(s)).as_deref(), Some(s));
        }
        assert_eq!(decode("x"), None);
        assert_eq!(decode("Kg=a"), None);
        assert_eq!(decode("N/A!"), None);
    }
}
