"""Prints, as JSON, what the installed zarr-python (2 or 3) or xarray reads from a Zarr v2
store: every array's shape, flat C-order values, _ARRAY_DIMENSIONS and attributes. Used by
tests/golden.rs and tests/interop_python.rs to compare against what we read.

    python read_zarr.py zarr|xarray <store>

Values: numbers as JSON numbers (NaN/Infinity as the strings "NaN"/"Infinity"/"-Infinity"),
bytes and str elements as text. An array zarr-python cannot read gets {"error": "..."}.
"""
import json
import warnings
import math
import sys

import numpy as np
import zarr


def plain(v):
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    if isinstance(v, (np.bool_, bool)):
        return int(v)
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        f = float(v)
        if math.isnan(f):
            return "NaN"
        if math.isinf(f):
            return "Infinity" if f > 0 else "-Infinity"
        return f
    if isinstance(v, np.str_):
        return str(v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    if isinstance(v, np.ndarray):
        return [plain(x) for x in v.tolist()]
    return v


def walk_zarr(store):
    """Every array found on disk, opened one by one (one unreadable array must not hide the
    others: zarr-python 3 fails a whole group listing on one unknown dtype)."""
    import os
    kw = {"zarr_format": 2} if zarr.__version__[0] == "3" else {}
    out = {}
    for dirpath, _, files in sorted(os.walk(store)):
        if ".zarray" not in files:
            continue
        path = os.path.relpath(dirpath, store).replace(os.sep, "/")
        entry = {}
        try:
            a = zarr.open_array(store, path=path, mode="r", **kw)
            entry["attrs"] = dict(a.attrs)
            data = np.asarray(a[...])
            entry["shape"] = list(data.shape)
            entry["values"] = [plain(x) for x in data.reshape(-1).tolist()]
        except Exception as e:  # noqa: BLE001 - reported, the test decides
            entry["error"] = f"{type(e).__name__}: {e}"
        out[path] = entry
    root = zarr.open_group(store, mode="r", **kw)
    return {"arrays": out, "root_attrs": dict(root.attrs)}


def walk_xarray(store):
    warnings.simplefilter("ignore")
    import xarray as xr
    ds = xr.open_zarr(store, consolidated=None, mask_and_scale=False, decode_times=False, concat_characters=False,
                      zarr_format=2) if zarr.__version__[0] == "3" else \
        xr.open_zarr(store, consolidated=None, mask_and_scale=False, decode_times=False, concat_characters=False)
    out = {}
    for name, v in ds.variables.items():
        data = v.values
        out[name] = {"shape": list(data.shape), "dims": list(v.dims),
                     "values": [plain(x) for x in np.asarray(data).reshape(-1).tolist()],
                     "attrs": {k: a for k, a in v.attrs.items()},
                     "fill": plain(v.encoding.get("_FillValue"))
                     if v.encoding.get("_FillValue") is not None else None}
    return {"arrays": out, "root_attrs": dict(ds.attrs)}


if __name__ == "__main__":
    kind, store = sys.argv[1], sys.argv[2]
    try:
        result = {"zarr": walk_zarr, "xarray": walk_xarray}[kind](store)
    except Exception as e:  # noqa: BLE001 - reported, the test decides
        result = {"arrays": {}, "open_error": f"{type(e).__name__}: {e}"}
    print(json.dumps(plain(result), allow_nan=False))
