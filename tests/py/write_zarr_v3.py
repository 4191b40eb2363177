"""Writes a Zarr v3 group at argv[1] with zarr-python 3 (consolidated when argv[2] is
"consolidated") and prints, as JSON, each array's flat values as zarr-python reads them back.
Every array exercises one feature (a codec, a data type, a key encoding, sharding). Used by
tests/zarr_v3.rs (values compared with ours) and tests/metadata_fuzz.rs (a seed to damage).
"""
import json, sys, numpy as np, zarr
from zarr.codecs import (BytesCodec, TransposeCodec, GzipCodec, ZstdCodec, BloscCodec,
                         Crc32cCodec, ShardingCodec)
path = sys.argv[1]
root = zarr.open_group(path, mode="w", attributes={"title": "v3 sample", "n": [1, 2]})
grid = np.arange(24, dtype="f4").reshape(4, 6)
def make(name, data, chunks, group=root, **kw):
    a = group.create_array(name, shape=data.shape, chunks=chunks, dtype=data.dtype, **kw)
    a[...] = data
    return a
make("plain", grid, (2, 3), dimension_names=["y", "x"], attributes={"units": "K"})
make("gz", grid.astype("i2"), (3, 4), compressors=GzipCodec(level=5), dimension_names=["y", "x"])
make("blosc", grid.astype("u4"), (2, 2),
     compressors=BloscCodec(cname="lz4", clevel=5, shuffle="bitshuffle"),
     dimension_names=["y", "x"])
make("big", grid.astype(">f8") * 1.5, (4, 6), serializer=BytesCodec(endian="big"),
     compressors=[ZstdCodec(level=3), Crc32cCodec()], dimension_names=["y", None])
make("fortran", grid.astype("i4"), (3, 4), filters=[TransposeCodec(order=(1, 0))],
     dimension_names=["y", "x"])
make("v2keys", grid.astype("i8"), (2, 3), chunk_key_encoding={"name": "v2", "separator": "."},
     dimension_names=["y", "x"])
s = root.create_array("sharded", shape=(12, 6), shards=(4, 6), chunks=(2, 3), dtype="f4",
                      fill_value=-1.0, dimension_names=["t", "x"])
s[0:2, 3:6] = 5.0      # one inner chunk of the first shard
s[4:8, :] = np.arange(24, dtype="f4").reshape(4, 6)   # the third shard is never written
st = root.create_array("start", shape=(4, 6), chunks=(4, 6), dtype="u2", fill_value=7,
                       serializer=ShardingCodec(chunk_shape=(2, 3),
                                                codecs=[BytesCodec(), ZstdCodec()],
                                                index_location="start"),
                       compressors=None, dimension_names=["y", "x"])
st[2:4, 0:3] = 9
make("text", np.array(["a", "bcd", "\u00e9\u00e9"]), (2,), dimension_names=["n"])
make("fixed", np.array(["ab", "c", "de"], dtype="<U2"), (3,), dimension_names=["n"])
make("flags", np.array([True, False, True]), (2,), dimension_names=["n"])
from zarr.core.dtype import VariableLengthBytes
vb = root.create_array("vbytes", shape=(3,), chunks=(2,), dtype=VariableLengthBytes(),
                       dimension_names=["n"])
vb[...] = np.array([b"ab", b"", b"xyz"], dtype=object)
pt = root.create_array("point", shape=(), dtype="i4", fill_value=0)
pt[...] = 42
sub = root.create_group("sub", attributes={"kind": "nested"})
make("deep", np.array([1.5, 2.5], dtype="f8"), (1,), group=sub, dimension_names=["x2"])
sub.create_array("unwritten", shape=(3,), chunks=(2,), dtype="i2", fill_value=-9,
                 dimension_names=["n"])
make("half", np.array([0.5, 1.5], dtype="f2"), (2,), dimension_names=["h"])
# A transpose before sharding (inner chunks of the transposed shard), two that cancel, a
# compressor after sharding whose input is mostly index, complex numbers in shards.
make("tshard", grid.astype("i4"), (4, 6), filters=[TransposeCodec(order=(1, 0))],
     serializer=ShardingCodec(chunk_shape=(2, 1), codecs=[BytesCodec()]), compressors=None,
     dimension_names=["y", "x"])
make("tinner", grid.astype("f8"), (2, 3), shards=(4, 6), filters=[TransposeCodec(order=(1, 0))],
     dimension_names=["y", "x"])
make("twice", grid.astype("i2"), (2, 3),
     filters=[TransposeCodec(order=(1, 0)), TransposeCodec(order=(1, 0))],
     dimension_names=["y", "x"])
make("after", (np.arange(20000) % 251).astype("u1"), (20000,),
     serializer=ShardingCodec(chunk_shape=(1,), codecs=[BytesCodec()]),
     compressors=[ZstdCodec(level=1)], dimension_names=["long"])
make("cshard", np.arange(6) * (1 + 2j), (2,), shards=(4,), dimension_names=["six"])
if len(sys.argv) > 2 and sys.argv[2] == "consolidated":
    zarr.consolidate_metadata(path)
names = ["plain", "gz", "blosc", "big", "fortran", "v2keys", "sharded", "start", "text",
         "fixed", "flags", "vbytes", "point", "sub/deep", "sub/unwritten", "tshard", "tinner", "twice",
         "after", "cshard", "half"]
def flat(v):
    v = np.asarray(v)
    if v.dtype.kind == "c":
        return np.stack([v.real, v.imag], -1).astype("f8").ravel().tolist()
    if v.dtype.kind in "UO":
        return [x.decode() if isinstance(x, bytes) else str(x) for x in v.ravel()]
    return v.astype("f8").ravel().tolist()
r = zarr.open_group(path, mode="r")
out = {n: flat(r[n][...]) for n in names}
# Parts of shards (a few inner chunks each): a strided column and a piece of a row.
out["sharded[1:10:3, 4]"] = flat(r["sharded"][1:10:3, 4])
out["start[3, 1:5]"] = flat(r["start"][3, 1:5])
print(json.dumps(out))
