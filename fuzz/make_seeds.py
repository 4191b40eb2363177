"""Writes the fuzz target's starting corpus: every Zarr store under tests/data (the golden
datasets of netcdf-c, zarr-python and xarray) and small arrays written by zarr-python 2 with
each codec family and dtype the library reads, each turned into one input (`session.rs`
describes the format: `@@ <key>` lines, each followed by the object's bytes).

The same stores are also written as zip archives, in netcdf-c's layout (one top-level
directory) and zarr-python's (objects at the top), stored and deflated, for the `zip` target.

Run with the zarr2 environment: `$(scripts/pyenv zarr2) fuzz/make_seeds.py fuzz/corpus`.
"""

import os
import sys
import tempfile
import zipfile

import numcodecs
import numpy as np
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "..", "tests", "data")


def as_input(root):
    parts = []
    for top, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files):
            path = os.path.join(top, name)
            key = os.path.relpath(path, root).replace(os.sep, "/")
            with open(path, "rb") as f:
                parts.append(b"@@ " + key.encode() + b"\n" + f.read())
    return b"\n".join(parts)


def golden_stores():
    for top, dirs, _ in os.walk(DATA):
        for d in sorted(dirs):
            if d.endswith(".zarr"):
                yield os.path.join(top, d)


def codec_stores(scratch):
    codecs = {
        "none": None,
        "zlib": numcodecs.Zlib(level=1),
        "gzip": numcodecs.GZip(level=1),
        "zstd": numcodecs.Zstd(level=3),
        "bz2": numcodecs.BZ2(level=1),
        "lz4": numcodecs.LZ4(),
        "blosc-lz4": numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE),
        "blosc-zstd-bit": numcodecs.Blosc(cname="zstd", clevel=3, shuffle=numcodecs.Blosc.BITSHUFFLE),
        "blosc-blosclz": numcodecs.Blosc(cname="blosclz", clevel=9, shuffle=numcodecs.Blosc.NOSHUFFLE),
    }
    filters = {
        "nofilter": None,
        "shuffle": [numcodecs.Shuffle(elementsize=4)],
        "delta": [numcodecs.Delta(dtype="<f4")],
        "fletcher": [numcodecs.Fletcher32()],
    }
    values = (np.arange(6 * 10, dtype="<f4") * 0.25).reshape(6, 10)
    for cname, compressor in codecs.items():
        for fname, chain in filters.items():
            path = os.path.join(scratch, f"{cname}-{fname}.zarr")
            g = zarr.open_group(path, mode="w")
            a = g.create_dataset("v", shape=values.shape, chunks=(4, 4), dtype="<f4",
                                 compressor=compressor, filters=chain, fill_value=-1.0)
            a[...] = values
            a.attrs["_ARRAY_DIMENSIONS"] = ["y", "x"]
            yield path
    for dtype in ["|b1", "|u1", "<i2", ">u4", "<i8", "<f8", "|S3", "<U2"]:
        path = os.path.join(scratch, f"dtype-{dtype[1:]}.zarr")
        g = zarr.open_group(path, mode="w")
        a = g.create_dataset("v", shape=(5,), chunks=(2,), dtype=dtype)
        a.attrs["_ARRAY_DIMENSIONS"] = ["n"]
        g.attrs["title"] = "seed"
        yield path


def as_zip(root, path, top, method):
    with zipfile.ZipFile(path, "w", compression=method) as z:
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(d, name)
                z.write(full, os.path.join(top, os.path.relpath(full, root)))


def main(out):
    objects, zips = os.path.join(out, "open"), os.path.join(out, "zip")
    os.makedirs(objects, exist_ok=True)
    os.makedirs(zips, exist_ok=True)
    with tempfile.TemporaryDirectory() as scratch:
        stores = list(golden_stores()) + list(codec_stores(scratch))
        for n, store in enumerate(stores):
            name = f"{n:03d}-{os.path.basename(store)}"
            with open(os.path.join(objects, name), "wb") as f:
                f.write(as_input(store))
            top, method = [("x", zipfile.ZIP_STORED), ("", zipfile.ZIP_DEFLATED)][n % 2]
            as_zip(store, os.path.join(zips, name + ".zip"), top, method)
    print(f"{len(stores)} seeds in each of {objects} and {zips}")


if __name__ == "__main__":
    main(sys.argv[1])
