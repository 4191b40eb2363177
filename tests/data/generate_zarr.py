"""Writes the pure-Zarr golden stores of tests/data with zarr-python 2 or 3 (zarr_format=2) and
xarray, no compression, a few KB each.

    python generate_zarr.py zarr <outdir>     # the zarr-python of this interpreter (2.x or 3.x)
    python generate_zarr.py xarray <outdir>   # xarray.Dataset.to_zarr, consolidated

Run by generate.sh with scripts/pyenv zarr2 and zarr3. Every store exercises one feature per
array so a failure names the feature.
"""
import json
import os
import shutil
import sys

import numpy as np
import zarr

ZARR3 = int(zarr.__version__.split(".")[0]) >= 3


def array(g, name, data=None, *, shape=None, dtype=None, chunks=None, fill_value=0,
          order="C", separator=".", dims=None, attrs=None):
    """One uncompressed Zarr v2 array, written through the installed zarr-python's own API."""
    if data is not None:
        data = np.asarray(data, dtype=dtype)
        shape, dtype = data.shape, data.dtype
    chunks = chunks or shape
    if ZARR3:
        a = g.create_array(name, shape=shape, dtype=dtype, chunks=chunks, fill_value=fill_value,
                           order=order, compressors=None, filters=None,
                           chunk_key_encoding={"name": "v2", "separator": separator})
    else:
        a = g.create_dataset(name, shape=shape, dtype=dtype, chunks=chunks,
                             fill_value=fill_value, order=order, compressor=None,
                             dimension_separator=separator)
    if data is not None:
        a[...] = data
    if dims is not None:
        a.attrs["_ARRAY_DIMENSIONS"] = dims
    for k, v in (attrs or {}).items():
        a.attrs[k] = v
    return a


def strings(g, name, data, *, chunks, fill_value=None, dims=None, codec="vlen-utf8"):
    """numpy object strings (`|O`) through a variable-length codec, as zarr-python stores `str`
    objects (`vlen-bytes`: `bytes` objects, zarr-python 2 only)."""
    import numcodecs
    shape = (len(data),)
    if ZARR3:
        a = g.create_array(name, shape=shape, dtype=str, chunks=chunks, fill_value=fill_value,
                           compressors=None)
    else:
        a = g.create_dataset(name, shape=shape, dtype=object, chunks=chunks,
                             fill_value=fill_value, compressor=None,
                             object_codec={"vlen-utf8": numcodecs.VLenUTF8(),
                                           "vlen-bytes": numcodecs.VLenBytes()}[codec])
    a[...] = np.array(data, dtype=object)
    if dims is not None:
        a.attrs["_ARRAY_DIMENSIONS"] = dims
    return a


def write_zarr(out):
    if os.path.exists(out):
        shutil.rmtree(out)
    root = zarr.open_group(out, mode="w", **({"zarr_format": 2} if ZARR3 else {}))
    root.attrs.update({
        "title": "pure zarr golden",
        "mixed": [1, 2.5],
        "ints": [1, 3000000000],
        "flag": True,
        "names": ["a", "bc"],
        "nested": [[1, 2], [3, 4]],
        "dict": {"a": [1, 2], "b": {"c": "d"}},
        "empty_text": "",
    })
    x = np.arange(4, dtype="<i4")
    array(root, "x", x, dims=["x"], attrs={"units": "m"})
    array(root, "temp", np.arange(12, dtype="<f4").reshape(3, 4) / 4, chunks=(2, 3),
          fill_value=-999.0, dims=["y", "x"], attrs={"_FillValue": -999.0, "scale": 0.5})
    array(root, "anon", np.arange(6, dtype="<i2").reshape(2, 3))
    array(root, "forder", np.arange(24, dtype="<i4").reshape(2, 3, 4), chunks=(2, 2, 3),
          order="F", dims=["t", "y2", "x2"])
    array(root, "slash", np.arange(12, dtype="<u2").reshape(3, 4), chunks=(2, 2),
          separator="/", dims=["y", "x"])
    array(root, "big", np.array([1, -2, 300000, -4], dtype=">i4"), dims=["x"])
    array(root, "bytes_u1", np.array([0, 1, 254, 255], dtype="|u1"), dims=["x"])
    array(root, "bytes_i1", np.array([-128, -1, 0, 127], dtype="|i1"), dims=["x"])
    array(root, "flags", np.array([True, False, True, True]), fill_value=False, dims=["x"])
    array(root, "half", np.array([0.5, 1.5, 2.5, 3.5], dtype="<f2"), dims=["x"])
    array(root, "fixed_bytes", np.array([b"ab", b"cde", b"", b"fghij"], dtype="|S5"),
          fill_value=b"", dims=["x"])
    array(root, "unicode", np.array(["ab", "cdé", "", "xyz"], dtype="<U3"), fill_value="",
          dims=["x"])
    # Variable-length strings: empty, non-ASCII, and longer than the first slot width (64).
    strings(root, "objects", ["ab", "", "h\u00e9 \u6771\u4eac", "w" * 100], chunks=(2,),
            dims=["x"])
    sparse = strings(root, "objects_na", ["s0", "s1", "NA", "NA"], chunks=(2,), fill_value="NA",
                     dims=["x"])
    for key in ("0", "1"):  # zarr-python 3 stores no chunk equal to the fill value
        if os.path.exists(os.path.join(out, "objects_na", key)):
            os.remove(os.path.join(out, "objects_na", key))
    sparse[0:2] = np.array(["s0", "s1"], dtype=object)
    if not ZARR3:
        strings(root, "object_bytes", [b"b0", b"", b"b\x01two", b"z"], chunks=(3,), dims=["x"],
                codec="vlen-bytes")
    array(root, "nan_fill", shape=(4,), dtype="<f8", chunks=(2,), fill_value=float("nan"),
          dims=["x"])[0:2] = [1.0, 2.0]
    array(root, "inf_fill", shape=(4,), dtype="<f4", chunks=(2,), fill_value=float("inf"),
          dims=["x"])[2:4] = [3.0, 4.0]
    array(root, "ninf_fill", shape=(4,), dtype="<f8", chunks=(2,), fill_value=float("-inf"),
          dims=["x"])
    array(root, "null_fill", shape=(4,), dtype="<i4", chunks=(2,), fill_value=None,
          dims=["x"])[0:2] = [7, 8]
    array(root, "missing_chunks", shape=(3, 4), dtype="<i8", chunks=(1, 2), fill_value=-1,
          dims=["y", "x"])[1, 2:4] = [5, 6]
    array(root, "zero_d", np.array(42.5, dtype="<f8"))
    # Same dimension name as temp's "x" with another length: this array's is anonymous.
    array(root, "clash", np.arange(5, dtype="<i4"), dims=["x"])
    g = root.create_group("g")
    g.attrs["where"] = "g"
    array(g, "inner", np.arange(3, dtype="<f8"), dims=["x"])  # its own x of length 3
    array(g, "uses_root", np.arange(4, dtype="<i4") * 10, dims=["x2"])
    h = g.create_group("h")
    array(h, "deep", np.arange(2, dtype="<u4"), dims=["d"])
    # A group without .zgroup (allowed by Zarr v2 readers that walk keys).
    implicit = root.create_group("implicit")
    array(implicit, "v", np.arange(2, dtype="<i4"), dims=["n"])
    os.remove(os.path.join(out, "implicit", ".zgroup"))


def write_xarray(out):
    import xarray as xr
    if os.path.exists(out):
        shutil.rmtree(out)
    ds = xr.Dataset(
        {
            "temp": (("time", "lat"), np.arange(6, dtype="f4").reshape(3, 2) + 0.25,
                     {"units": "K", "valid_range": [0.0, 400.0]}),
            "count": (("lat",), np.array([1, 2], dtype="i8")),
            "mask": (("time",), np.array([True, False, True])),
            "label": (("lat",), np.array(["north", "south"], dtype="S5")),
            "station": (("time",), np.array(["Mauna Loa", "", "S\u00e3o Paulo"], dtype=object)),
        },
        coords={"lat": ("lat", np.array([10.5, -10.5]), {"standard_name": "latitude"}),
                "time": ("time", np.array([0, 1, 2], dtype="i4"))},
        attrs={"history": "made by xarray", "version": 2},
    )
    enc = {v: ({"compressor": None} if not ZARR3 else {"compressors": None})
           for v in list(ds.data_vars) + list(ds.coords)}
    enc["temp"]["_FillValue"] = np.float32(-1.0)
    ds.to_zarr(out, mode="w", consolidated=True, zarr_format=2, encoding=enc)


if __name__ == "__main__":
    kind, out = sys.argv[1], sys.argv[2]
    {"zarr": write_zarr, "xarray": write_xarray}[kind](out)
    print(json.dumps({"zarr": zarr.__version__, "kind": kind, "out": out}))
