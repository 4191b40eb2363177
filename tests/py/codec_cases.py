"""Codec interoperability cases for tests/codec_interop.rs, run with zarr-python 2 or 3.

  codec_cases.py write STORE   writes one pure Zarr v2 array per codec/parameter set and prints
                               {"array": [values, C order]} as JSON
  codec_cases.py read STORE NAME...
                               prints {"NAME": [values, C order]} read with zarr-python
"""
import json
import sys

import numcodecs
import numpy as np
import zarr

ZARR3 = zarr.__version__.startswith("3")
SHAPE = (20, 7)
CHUNKS = (8, 4)


def data(dtype):
    i, j = np.indices(SHAPE)
    v = i * 7 - j * 3 + (i * j % 5) * 1000
    if np.dtype(dtype).kind == "f":
        return (v * 0.37 + 1e-3).astype(dtype)
    return v.astype(dtype)


def cases():
    c = numcodecs
    B = c.Blosc
    return [
        ("zlib1", "<i4", c.Zlib(level=1), None),
        ("zlib9", "<i4", c.Zlib(level=9), None),
        ("gzip5", "<i4", c.GZip(level=5), None),
        ("zstd0", "<i4", c.Zstd(level=0), None),
        ("zstd5_checksum", "<f8", c.Zstd(level=5, checksum=True), None),
        ("zstd_neg", "<i4", c.Zstd(level=-3), None),
        ("blosc_lz4_shuffle", "<i4", B(cname="lz4", clevel=5, shuffle=B.SHUFFLE), None),
        ("blosc_lz4hc_noshuffle", "<i4", B(cname="lz4hc", clevel=9, shuffle=B.NOSHUFFLE), None),
        ("blosc_blosclz_bitshuffle", "<i4", B(cname="blosclz", clevel=3, shuffle=B.BITSHUFFLE), None),
        ("blosc_zlib_shuffle", "<f8", B(cname="zlib", clevel=4, shuffle=B.SHUFFLE), None),
        ("blosc_zstd_bitshuffle_bs", "<i2", B(cname="zstd", clevel=7, shuffle=B.BITSHUFFLE, blocksize=256), None),
        ("blosc_autoshuffle", "|u1", B(cname="lz4", clevel=5, shuffle=B.AUTOSHUFFLE), None),
        ("lz4", "<i4", c.LZ4(), None),
        ("lz4_accel", "<f4", c.LZ4(acceleration=10), None),
        ("bz2", "<i4", c.BZ2(level=9), None),
        ("shuffle_zlib", "<i4", c.Zlib(level=5), [c.Shuffle(elementsize=4)]),
        ("shuffle2_bz2", "<i2", c.BZ2(level=1), [c.Shuffle(elementsize=2)]),
        ("delta_zlib", "<i4", c.Zlib(level=1), [c.Delta(dtype="<i4")]),
        ("delta_f8", "<f8", None, [c.Delta(dtype="<f8")]),
        ("fletcher32", "<i4", None, [c.Fletcher32()]),
        ("fletcher32_zstd", "<i8", c.Zstd(level=1), [c.Fletcher32()]),
        ("big_endian_zlib", ">i4", c.Zlib(level=3), [c.Shuffle(elementsize=4)]),
        ("fixedscaleoffset_i2_zlib", "<f8", c.Zlib(level=1),
         [c.FixedScaleOffset(offset=-100, scale=10, dtype="<f8", astype="<i2")]),
        ("fixedscaleoffset_f4_u2_shuffle", "<f4", c.Zlib(level=1),
         [c.FixedScaleOffset(offset=-10, scale=20, dtype="<f4", astype="<u2"),
          c.Shuffle(elementsize=2)]),
        ("quantize_f8_as_f4_zlib", "<f8", c.Zlib(level=1),
         [c.Quantize(digits=3, dtype="<f8", astype="<f4")]),
        ("quantize_f4", "<f4", None, [c.Quantize(digits=2, dtype="<f4")]),
    ]


def write(store):
    if ZARR3:
        root = zarr.open_group(store, mode="w", zarr_format=2)
    else:
        root = zarr.open_group(store, mode="w")
    expected = {}
    for name, dtype, compressor, filters in cases():
        if ZARR3:
            a = root.create_array(
                name, shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                compressors=compressor, filters=filters, fill_value=0,
            )
        else:
            a = root.create_dataset(
                name, shape=SHAPE, chunks=CHUNKS, dtype=dtype,
                compressor=compressor, filters=filters, fill_value=0,
            )
        a.attrs["_ARRAY_DIMENSIONS"] = ["rows", "cols"]
        values = data(dtype)
        a[...] = values
        # What zarr-python itself reads back (float deltas are not exact).
        expected[name] = np.asarray(a[...]).astype("f8").ravel().tolist()
    print(json.dumps(expected))


def read(store, names):
    if ZARR3:
        root = zarr.open_group(store, mode="r", zarr_format=2)
    else:
        root = zarr.open_group(store, mode="r")
    out = {}
    for n in names:
        out[n] = np.asarray(root[n][...]).astype("f8").ravel().tolist()
    print(json.dumps(out))


if __name__ == "__main__":
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        read(sys.argv[2], sys.argv[3:])
