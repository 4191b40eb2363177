//! Standard base64 (RFC 4648, padded), the encoding Zarr v2 uses for the `fill_value` of
//! byte-string dtypes (`|S<n>`) in pure Zarr; zarr-python encodes and decodes it so. NCZarr stores
//! the text itself, so only pure Zarr uses this.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// Encodes bytes as padded base64 text.
pub fn encode(bytes: &[u8]) -> String {
    STANDARD.encode(bytes)
}

/// Decodes padded base64 text; `None` when it is not valid base64.
pub fn decode(text: &str) -> Option<Vec<u8>> {
    STANDARD.decode(text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_rejects_invalid_text() {
        for bytes in [&b""[..], b"N", b"NA", b"N/A", b"\x00\xff\x10 text"] {
            assert_eq!(decode(&encode(bytes)).as_deref(), Some(bytes));
        }
        assert_eq!(encode(b"N/A"), "Ti9B");
        assert_eq!(decode("N/A"), None);
        assert_eq!(decode("Ti9"), None);
    }
}
