//! Chain behaviour and fuzz-style robustness of every decoder.

use super::*;
use serde_json::json;

const CTX: Context = Context { elem_size: 4 };

fn cfg(v: serde_json::Value) -> Config {
    v.as_object().cloned().unwrap()
}

fn every_codec() -> Vec<Config> {
    [
        json!({"id": "zlib", "level": 5}),
        json!({"id": "gzip", "level": 3}),
        json!({"id": "zstd", "level": 3}),
        json!({"id": "zstd", "level": 1, "checksum": true}),
        json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}),
        json!({"id": "blosc", "cname": "zstd", "clevel": 3, "shuffle": 2, "blocksize": 0}),
        json!({"id": "blosc", "cname": "blosclz", "clevel": 9, "shuffle": 0, "blocksize": 256}),
        json!({"id": "blosc", "cname": "lz4hc", "clevel": 1, "shuffle": -1, "blocksize": 0}),
        json!({"id": "blosc", "cname": "zlib", "clevel": 4, "shuffle": 1, "blocksize": 0}),
        json!({"id": "lz4", "acceleration": 1}),
        json!({"id": "bz2", "level": 9}),
        json!({"id": "shuffle", "elementsize": 4}),
        json!({"id": "delta", "dtype": "<i4", "astype": "<i4"}),
        json!({"id": "fletcher32"}),
    ]
    .into_iter()
    .map(cfg)
    .collect()
}

fn sample() -> Vec<u8> {
    (0..4096i32)
        .flat_map(|i| (i * i / 17).to_le_bytes())
        .collect()
}

#[test]
fn every_codec_round_trips_and_its_config_round_trips() {
    let data = sample();
    for c in every_codec() {
        let codec = from_config(&c, CTX).unwrap();
        let back = codec
            .decode(&codec.encode(&data).unwrap(), data.len() + 4)
            .unwrap();
        assert_eq!(back, data, "{c:?}");
        let again = from_config(&codec.config(), CTX).unwrap();
        assert_eq!(again.config(), codec.config(), "{c:?}");
        if let Some((id, params)) = codec.hdf5() {
            assert!(hdf5_available(id));
            let via_hdf5 = from_hdf5(id, &params, CTX).unwrap();
            assert_eq!(via_hdf5.hdf5(), Some((id, params)), "{c:?}");
        }
    }
}

/// Decoding in place gives what decoding to a new buffer gives, with room to spare or none,
/// and refuses a buffer one byte too small, for every codec alone and in a chain.
#[test]
fn decoding_in_place_matches_decoding() {
    let data = sample();
    for c in every_codec() {
        let codec = from_config(&c, CTX).unwrap();
        let enc = codec.encode(&data).unwrap();
        let mut exact = vec![0u8; data.len()];
        assert_eq!(
            codec.decode_into(&enc, &mut exact).unwrap(),
            data.len(),
            "{c:?}"
        );
        assert_eq!(exact, data, "{c:?}");
        let mut roomy = vec![0xAAu8; data.len() + 9];
        assert_eq!(
            codec.decode_into(&enc, &mut roomy).unwrap(),
            data.len(),
            "{c:?}"
        );
        assert_eq!(roomy[..data.len()], data[..], "{c:?}");
        let mut small = vec![0u8; data.len() - 1];
        assert!(codec.decode_into(&enc, &mut small).is_err(), "{c:?}");
    }
    let chain = Chain::from_configs(
        "v",
        &[
            cfg(serde_json::json!({"id": "shuffle", "elementsize": 4})),
            cfg(serde_json::json!({"id": "zlib", "level": 1})),
        ],
        CTX,
    )
    .unwrap();
    let stored = chain.encode(data.clone()).unwrap();
    let mut out = vec![0u8; data.len()];
    assert_eq!(
        chain.decode_into(stored.clone(), &mut out).unwrap(),
        data.len()
    );
    assert_eq!(out, data);
    assert_eq!(chain.decode(stored, data.len()).unwrap(), data);
}

#[test]
fn a_chain_decodes_in_reverse_with_exact_bounds() {
    let chain = Chain::from_configs(
        "v",
        &[
            cfg(json!({"id": "shuffle", "elementsize": 4})),
            cfg(json!({"id": "fletcher32"})),
            cfg(json!({"id": "zlib", "level": 1})),
        ],
        CTX,
    )
    .unwrap();
    let data = sample();
    let stored = chain.encode(data.clone()).unwrap();
    assert_eq!(chain.decode(stored.clone(), data.len()).unwrap(), data);
    // The zlib stage may produce only data + checksum; a smaller expectation fails there.
    assert_eq!(
        chain
            .decode(stored, data.len() - 8)
            .unwrap_err()
            .to_string(),
        format!(
            "codec zlib failed: decompresses to more than the expected {} bytes",
            data.len() - 4
        )
    );
}

#[test]
fn unknown_codecs_name_themselves() {
    let e = Chain::from_configs("temp", &[cfg(json!({"id": "jpeg2000"}))], CTX).unwrap_err();
    assert_eq!(
        e.to_string(),
        "variable temp uses unsupported codec jpeg2000"
    );
    assert_eq!(
        from_hdf5(32004, &[], CTX).unwrap_err().to_string(),
        "variable  uses unsupported codec HDF5 filter 32004"
    );
    assert!(!hdf5_available(4));
    assert_eq!(
        from_config(&cfg(json!({"level": 1})), CTX)
            .unwrap_err()
            .to_string(),
        "invalid ? configuration: codec configuration without an id"
    );
}

/// Deterministic xorshift bytes.
fn noise(seed: u64, n: usize) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

#[test]
fn decoders_survive_truncated_corrupt_and_random_input() {
    let data = sample();
    for c in every_codec() {
        let codec = from_config(&c, CTX).unwrap();
        let enc = codec.encode(&data).unwrap();
        let limit = data.len() + 4;
        for cut in [
            0,
            1,
            3,
            4,
            9,
            16,
            enc.len() / 2,
            enc.len().saturating_sub(1),
        ] {
            if let Ok(out) = codec.decode(&enc[..cut], limit) {
                assert!(out.len() <= limit, "{c:?} cut {cut}");
            }
            let mut out = vec![0u8; limit];
            if let Ok(n) = codec.decode_into(&enc[..cut], &mut out) {
                assert!(n <= limit, "{c:?} cut {cut} in place");
            }
        }
        for seed in 0..64u64 {
            let mut bad = enc.clone();
            let pos = (seed as usize * 7919) % bad.len();
            bad[pos] ^= 1 << (seed % 8);
            if let Ok(out) = codec.decode(&bad, limit) {
                assert!(out.len() <= limit, "{c:?} flip {seed}");
            }
            let junk = noise(seed, (seed as usize * 37) % 600);
            if let Ok(out) = codec.decode(&junk, limit) {
                assert!(out.len() <= limit, "{c:?} noise {seed}");
            }
            let mut out = vec![0u8; limit];
            for input in [&bad, &junk] {
                if let Ok(n) = codec.decode_into(input, &mut out) {
                    assert!(n <= limit, "{c:?} seed {seed} in place");
                }
            }
        }
    }
}

#[test]
fn a_decompression_bomb_is_refused() {
    let zeros = vec![0u8; 8 << 20];
    for c in every_codec()
        .into_iter()
        .filter(|c| !matches!(c["id"].as_str(), Some("shuffle" | "delta" | "fletcher32")))
    {
        let codec = from_config(&c, CTX).unwrap();
        let enc = codec.encode(&zeros).unwrap();
        assert!(codec.decode(&enc, 4096).is_err(), "{c:?}");
        assert!(
            codec.decode_into(&enc, &mut [0u8; 4096]).is_err(),
            "{c:?} in place"
        );
    }
}
