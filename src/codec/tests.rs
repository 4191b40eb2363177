//! Chain behaviour and fuzz-style robustness of every decoder.
// A list of one byte range is a common argument of `decode_parts`, not a mistaken range vector.
#![allow(clippy::single_range_in_vec_init)]

use super::*;
use serde_json::json;
use std::ops::Range;

const CTX: Context = Context { elem_size: 4 };

fn cfg(v: serde_json::Value) -> Config {
    v.as_object().cloned().unwrap()
}

fn every_codec() -> Vec<Config> {
    [
        json!({"id": "zlib", "level": 5}),
        json!({"id": "zlib", "level": 0}),
        json!({"id": "zlib", "level": 9}),
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
    assert_eq!(chain.decode_into(&stored, &mut out).unwrap(), data.len());
    assert_eq!(out, data);
    assert_eq!(chain.decode(stored, data.len()).unwrap(), data);
}

/// Codecs that decode parts give exactly the bytes asked for: zstd without a checksum decodes
/// up to the last one, blosc the blocks that hold them. They decline when that would decode
/// everything, and so do the other codecs and any buffer that does not declare the expected
/// size (or holds more than one zstd frame, or none whole): the work is left to a whole decode.
#[test]
fn decoding_parts_matches_decoding_or_declines() {
    let data: Vec<u8> = (0..120_000i32)
        .flat_map(|i| (i * 7 / 3).to_le_bytes())
        .collect();
    let len = data.len();
    let wanted_sets: Vec<Vec<Range<usize>>> = vec![
        vec![],
        vec![0..4],
        vec![0..4000],
        vec![0..300_000],
        vec![0..len - 4],
        vec![8..12, 250_000..250_040, len - 4..len],
        vec![0..len],
    ];
    let mut partly_decoded_blosc = 0;
    for c in every_codec() {
        let codec = from_config(&c, CTX).unwrap();
        let enc = codec.encode(&data).unwrap();
        for wanted in &wanted_sets {
            let end = wanted.iter().map(|r| r.end).max().unwrap_or(0);
            let expected = match c["id"].as_str().unwrap() {
                "zstd" => c.get("checksum").is_none() && end < len,
                "blosc" => {
                    let block = u32::from_le_bytes([enc[8], enc[9], enc[10], enc[11]]) as usize;
                    let mut touched = vec![false; len.div_ceil(block)];
                    for r in wanted {
                        for at in r.clone().step_by(block).chain(r.end.checked_sub(1)) {
                            touched[at / block] = true;
                        }
                    }
                    touched.contains(&false)
                }
                _ => false,
            };
            let mut out = vec![0xAAu8; len];
            let done = codec.decode_parts(&enc, &mut out, wanted).unwrap();
            assert_eq!(done, expected, "{c:?} {wanted:?}");
            if done {
                for r in wanted {
                    assert_eq!(out[r.clone()], data[r.clone()], "{c:?} {r:?}");
                }
                partly_decoded_blosc += usize::from(c["id"] == "blosc" && !wanted.is_empty());
            }
        }
        for wrong in [len - 4, len + 4] {
            let mut out = vec![0u8; wrong];
            assert!(
                !codec.decode_parts(&enc, &mut out, &[0..16]).unwrap(),
                "{c:?}"
            );
        }
    }
    assert!(partly_decoded_blosc >= 5, "{partly_decoded_blosc}");
    let zstd = from_config(&cfg(json!({"id": "zstd", "level": 3})), CTX).unwrap();
    let frame = zstd.encode(&data).unwrap();
    let mut out = vec![0u8; len];
    let two_frames = [frame.clone(), frame.clone()].concat();
    let truncated = &frame[..frame.len() - 1];
    let no_size = ::zstd::stream::encode_all(&data[..], 3).unwrap();
    assert!(matches!(
        ::zstd::zstd_safe::get_frame_content_size(&no_size),
        Ok(None)
    ));
    let mut twice = vec![0u8; 2 * len];
    for declined in [&two_frames[..], truncated, &no_size[..]] {
        assert!(!zstd.decode_parts(declined, &mut out, &[0..64]).unwrap());
        assert!(!zstd.decode_parts(declined, &mut twice, &[0..64]).unwrap());
    }
    // A first block the stream refuses (its literals claim more than a block holds) is left
    // to the whole decode, which reports it.
    let mut refused = frame.clone();
    let fhd = refused[4];
    let fcs_len = [usize::from(fhd & 0x20 != 0), 2, 4, 8][usize::from(fhd >> 6)];
    let first_block =
        5 + usize::from(fhd & 0x20 == 0) + [0, 1, 2, 4][usize::from(fhd & 3)] + fcs_len;
    assert_eq!(
        (refused[first_block] >> 1) & 3,
        2,
        "a compressed first block"
    );
    refused[first_block + 3..first_block + 6].copy_from_slice(&[0xFC, 0xFF, 0xFF]);
    assert!(!zstd.decode_parts(&refused, &mut out, &[0..64]).unwrap());
    assert!(zstd.decode(&refused, len).is_err());
    let blosc = from_config(
        &cfg(json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 4096})),
        CTX,
    )
    .unwrap();
    let mut reserved = blosc.encode(&data).unwrap();
    assert!(blosc.decode_parts(&reserved, &mut out, &[0..64]).unwrap());
    reserved[2] |= 0x08;
    assert!(!blosc.decode_parts(&reserved, &mut out, &[0..64]).unwrap());
    let single = Chain(vec![zstd.clone()]);
    out.fill(0);
    assert!(single.decode_parts(&frame, &mut out, &[0..64]).unwrap());
    assert_eq!(out[..64], data[..64]);
    assert!(!single.decode_parts(&frame, &mut out, &[0..len]).unwrap());
    let shuffle = from_config(&cfg(json!({"id": "shuffle", "elementsize": 4})), CTX).unwrap();
    let chained = Chain(vec![shuffle, zstd]);
    let stored = chained.encode(data.clone()).unwrap();
    assert!(!chained.decode_parts(&stored, &mut out, &[0..64]).unwrap());
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

/// Inner stages decode into a buffer each thread reuses, whether the last stage writes into
/// the caller's buffer or a new one: chains of every mix of in-place and copying stages, run
/// one after another on one thread with chunks of different sizes (and a failing chunk between
/// them), give what decoding afresh gives.
#[test]
fn reused_stage_buffers_never_leak_between_chunks() {
    let chains = [
        vec![
            json!({"id": "shuffle", "elementsize": 4}),
            json!({"id": "zlib", "level": 1}),
        ],
        vec![
            json!({"id": "shuffle", "elementsize": 4}),
            json!({"id": "fletcher32"}),
            json!({"id": "zlib", "level": 1}),
        ],
        vec![
            json!({"id": "shuffle", "elementsize": 2}),
            json!({"id": "zstd", "level": 1}),
            json!({"id": "lz4", "acceleration": 1}),
        ],
    ];
    let big = sample();
    let small: Vec<u8> = noise(7, 4000);
    for round in 0..2 {
        for (i, cfgs) in chains.iter().enumerate() {
            let cfgs: Vec<Config> = cfgs.iter().cloned().map(cfg).collect();
            let chain = Chain::from_configs("v", &cfgs, CTX).unwrap();
            for data in [&big, &small, &big] {
                let stored = chain.encode(data.clone()).unwrap();
                let mut out = vec![0xEEu8; data.len()];
                let n = chain.decode_into(&stored, &mut out).unwrap();
                assert_eq!((n, &out), (data.len(), data), "chain {i} round {round}");
                let decoded = chain.decode(stored.clone(), data.len()).unwrap();
                assert_eq!(&decoded, data, "chain {i} round {round}, whole");
                let cut = stored[..stored.len() / 2].to_vec();
                assert!(chain.decode_into(&cut, &mut out).is_err(), "chain {i}");
            }
        }
    }
}

/// Encoding into kept buffers (empty, short, long, full of other bytes, reused chunk after
/// chunk of different sizes) gives exactly what encoding afresh stage by stage gives, for every
/// codec alone and for chains of two and three stages (whose middle stages alternate between
/// the two buffers); with no codecs the chunk itself is the result.
#[test]
fn encoding_into_kept_buffers_matches_encoding_afresh() {
    let big = sample();
    let small = noise(3, 1000);
    let afresh = |codecs: &[Arc<dyn Codec>], data: &[u8]| {
        codecs
            .iter()
            .fold(data.to_vec(), |d, c| c.encode(&d).unwrap())
    };
    for c in every_codec() {
        let codec = from_config(&c, CTX).unwrap();
        for held in [Vec::new(), vec![0xEE; 9], vec![0xEE; big.len() * 3]] {
            let mut out = held;
            for data in [&big, &small, &big] {
                codec.encode_into(data, &mut out).unwrap();
                assert_eq!(out, codec.encode(data).unwrap(), "{c:?}");
            }
        }
    }
    let chains = [
        vec![],
        vec![json!({"id": "zstd", "level": 1})],
        vec![
            json!({"id": "shuffle", "elementsize": 4}),
            json!({"id": "zlib", "level": 1}),
        ],
        vec![
            json!({"id": "delta", "dtype": "<i4", "astype": "<i4"}),
            json!({"id": "shuffle", "elementsize": 4}),
            json!({"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 0, "blocksize": 0}),
        ],
    ];
    for cfgs in chains {
        let cfgs: Vec<Config> = cfgs.into_iter().map(cfg).collect();
        let chain = Chain::from_configs("v", &cfgs, CTX).unwrap();
        let (mut out, mut spare) = (vec![0xEE; 5], vec![0xEE; big.len() * 2]);
        for data in [&big, &small, &big] {
            let want = afresh(&chain.0, data);
            let got = chain.encode_into(data, &mut out, &mut spare).unwrap();
            assert_eq!(got, &want[..], "{cfgs:?}");
            if chain.is_empty() {
                assert!(std::ptr::eq(got, &data[..]), "a copy was made");
            }
            assert_eq!(chain.encode(data.to_vec()).unwrap(), want, "{cfgs:?}");
        }
    }
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
            let _ = codec.decode_parts(&enc[..cut], &mut out[..data.len()], &[0..1000, 7000..7004]);
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
                let _ = codec.decode_parts(input, &mut out[..data.len()], &[0..1000, 7000..7004]);
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
        // Past the limit, not corrupt: strings stored as objects widen their slots on this.
        let past = |r: Result<_>| matches!(r, Err(Error::PastLimit { .. }));
        assert!(past(codec.decode(&enc, 4096).map(|_| ())), "{c:?}");
        assert!(
            past(codec.decode_into(&enc, &mut [0u8; 4096]).map(|_| ())),
            "{c:?} in place"
        );
    }
}

/// Strings stored as objects behind every compressor: decoding into slots too narrow asks
/// for wider ones (the compressor passing the slots' bound, or the strings themselves), and
/// a few widenings reach the exact width, which decodes every string whole.
#[test]
fn object_strings_behind_a_compressor_widen_their_slots_to_fit() {
    let long: Vec<&[u8]> = vec![&[b'x'; 300], b"", &[b'y'; 299], "\u{6771}".as_bytes()];
    let slot = |room: usize| OBJECT_SLOT_HEADER + room;
    let slots = |room: usize| {
        let mut out = vec![0u8; long.len() * slot(room)];
        for (s, item) in out.chunks_exact_mut(slot(room)).zip(&long) {
            put_slot_item(s, item);
        }
        out
    };
    let chain = |compressor: &Config, room: usize| {
        let cfgs = [cfg(json!({"id": "vlen-utf8"})), compressor.clone()];
        Chain::from_configs(
            "s",
            &cfgs,
            Context {
                elem_size: slot(room),
            },
        )
        .unwrap()
    };
    for c in every_codec()
        .into_iter()
        .filter(|c| !matches!(c["id"].as_str(), Some("shuffle" | "delta")))
    {
        let stored = chain(&c, 300).encode(slots(300)).unwrap();
        let mut room = 4;
        let mut tries = 0;
        let decoded = loop {
            tries += 1;
            let mut out = vec![0u8; long.len() * slot(room)];
            match chain(&c, room).decode_into(&stored, &mut out) {
                Ok(n) => break out[..n].to_vec(),
                Err(Error::StringSlots { width: wider }) if wider > room => room = wider,
                Err(e) => panic!("{c:?} at room {room}: {e}"),
            }
        };
        assert_eq!((room, decoded), (300, slots(300)), "{c:?}");
        assert!(tries <= 8, "{c:?}: {tries} tries");
    }
}
