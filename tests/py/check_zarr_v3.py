"""Compares a Zarr v3 store with what tests/py/netcdf_truth.py printed of the netCDF-4 file it
was made from, as zarr-python 3 and xarray read the store: every variable an array at its path
with the netCDF dimension names, a dtype of the same kind and size, the same raw values and
attributes (the `_FillValue` in xarray's encoding, decoded as xarray decodes it), and the same
values as xarray decodes them from the netCDF file. A char or string variable's `_FillValue` is
the array's `fill_value` alone (xarray opens no such Zarr v3 array with the attribute), so xarray
does not mask it. Prints {"compared": N, "problems": [...]}.

usage: check_zarr_v3.py STORE TRUTH.json
STORE: a directory, or a zip archive holding the dataset below its own name (as netcdf-c
writes them)
"""

import json
import os
import sys
import warnings

import numpy as np
import xarray as xr
import zarr
from xarray.backends.zarr import FillValueCoder

from flat_text import flat, text

warnings.simplefilter("ignore")

# NCZarr's own records, which are attributes of the store but not of the netCDF variables.
RESERVED = ("_nczarr_", "_NCProperties")


def typed(value, dtype):
    if np.dtype(dtype).kind in "US":
        value = value if isinstance(value, list) else [value]
        return [str(v) for v in value]
    return flat(np.asarray(value, dtype=dtype))


def same_kind(truth, array):
    if truth == "string":
        return array.kind in "TOU"
    t = np.dtype(truth)
    return (t.kind, t.itemsize) == (array.kind, array.itemsize)


def main():
    store, truth_path = sys.argv[1], sys.argv[2]
    top = ""
    if store.endswith(".zip"):
        top = os.path.basename(store)[: -len(".zip")]
        store = zarr.storage.ZipStore(store, mode="r")
    with open(truth_path) as f:
        truth = json.load(f)
    root = zarr.open_group(store, path=top, mode="r", zarr_format=3)
    problems = []
    compared = 0
    unmasked = set()
    for key, want in truth["variables"].items():
        try:
            a = root[key]
        except KeyError:
            problems.append(f"{key}: no such array")
            continue
        compared += 1
        names = list(a.metadata.dimension_names or [])
        if names != want["dims"]:
            problems.append(f"{key}: dimension_names {names} != {want['dims']}")
        if not same_kind(want["dtype"], a.dtype):
            problems.append(f"{key}: dtype {a.dtype} for netCDF's {want['dtype']}")
        got = flat(a[...])
        if got != want["values"]:
            problems.append(f"{key}: values {got} != {want['values']}")
        attrs = dict(a.attrs)
        for name, att in want["attrs"].items():
            if name == "_FillValue" and a.dtype.kind in "STOU":
                unmasked.add(key)
                got = [text(a.fill_value)]
                if name in attrs:
                    problems.append(f"{key}: a _FillValue attribute xarray cannot open")
                if got != att["values"]:
                    problems.append(f"{key}: fill_value {got} != {att['values']}")
                continue
            if name not in attrs:
                problems.append(f"{key}: attribute {name} missing")
                continue
            value = attrs.pop(name)
            if name == "_FillValue":
                value = FillValueCoder.decode(value, a.dtype)
            got = typed(value, att["dtype"])
            if got != att["values"]:
                problems.append(f"{key}: attribute {name} {got} != {att['values']}")
        extra = [n for n in attrs if not n.startswith(RESERVED)]
        if extra:
            problems.append(f"{key}: attributes {extra} not in the netCDF file")
    groups = {k.rpartition("/")[0] for k in truth["decoded"]}
    for group in sorted(groups):
        path = "/".join(p for p in (top, group) if p) or None
        with xr.open_zarr(store, group=path, consolidated=False, zarr_format=3) as x:
            for name, v in x.variables.items():
                key = f"{group}/{name}" if group else name
                want = truth["decoded"].get(key)
                got = flat(v.values)
                if key in unmasked:
                    continue
                if want is None:
                    problems.append(f"{key}: xarray finds a variable the netCDF file lacks")
                elif got != want:
                    problems.append(f"{key}: xarray decodes {got}, from netCDF {want}")
    print(json.dumps({"compared": compared, "problems": problems}))


main()
