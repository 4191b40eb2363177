//! A variable's codec chain: 16-bit floats widened inside the shards of an array sharded by
//! its first codec, and only there.

use super::codec_chain;
use crate::model::{Endian, Filter, NcType, Var};

fn floats(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_ne_bytes()).collect()
}

/// A float variable of 4 elements in one shard of two inner chunks, its sharding configuration
/// given the `extra` keys.
fn sharded(half_floats: Option<Endian>, extra: &[(&str, serde_json::Value)]) -> Var {
    let mut var = Var::new("v", NcType::Float, Vec::new());
    var.chunks = vec![4];
    var.half_floats = half_floats;
    var.endian = Endian::native();
    let mut codec = crate::codec::new_sharding_config(&[4], &[2], Vec::new());
    for (k, v) in extra {
        codec.insert((*k).to_string(), v.clone());
    }
    var.filters.push(Filter {
        id: 0,
        params: Vec::new(),
        codec,
    });
    var
}

#[test]
fn shards_of_half_floats_hold_two_bytes_an_element() {
    let chain = codec_chain(&sharded(Some(Endian::Little), &[])).unwrap();
    let values = floats(&[1.5, -2.0, 0.1, 65504.0]);
    let stored = chain.encode(values.clone()).unwrap();
    // Two inner chunks of two 16-bit floats, and the index (two 16-byte entries, a checksum).
    assert_eq!(stored.len(), 2 * 2 * 2 + 2 * 16 + 4, "{stored:?}");
    let back = chain.decode(stored, values.len()).unwrap();
    assert_eq!(back, floats(&[1.5, -2.0, 0.099975586, 65504.0]));
}

#[test]
fn a_stored_configuration_cannot_ask_for_half_floats() {
    let var = sharded(None, &[("half_floats", serde_json::Value::Bool(false))]);
    let chain = codec_chain(&var).unwrap();
    let values = floats(&[1.5, -2.0, 0.1, 65504.0]);
    let stored = chain.encode(values.clone()).unwrap();
    assert_eq!(chain.decode(stored, values.len()).unwrap(), values);
}
