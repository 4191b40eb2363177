"""Reads reference documents through netCDF4-python (with the library under test preloaded)
and compares every array and attribute with two oracles: zarr-python reading the same document
through fsspec's ReferenceFileSystem, and the netCDF files the document points into, read
directly (HDF5 or netCDF-3). Prints {"checked": {<array>: <documents it was compared in>}, "faults": [...]} as JSON.

usage: check_references.py DIR DOC[=ORIGINAL[,ORIGINAL...]] ...
DOC: a JSON reference document, or a directory holding a Parquet reference set.
ORIGINAL: the file the document describes; several: parts concatenated along the first
dimension of every variable that has it ("time").
"""

import json
import os
import sys
import warnings

from collections import Counter

import fsspec
import netCDF4
import numpy as np
import zarr
from fsspec.implementations.reference import LazyReferenceMapper
from zarr.storage import FsspecStore

top = sys.argv[1]
os.chdir(top)  # fsspec finds relative targets from the working directory
warnings.simplefilter("ignore")  # zarr-python on a synchronous fsspec filesystem
faults = []
checked = Counter()  # each array's name: in how many documents it was compared


def same(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape:
        return False
    if a.dtype.kind == "f" or b.dtype.kind == "f":
        return np.array_equal(a.astype("f8"), b.astype("f8"), equal_nan=True)
    return a.tolist() == b.tolist()


def ours_of(ds, path):
    var = ds[path]
    var.set_auto_maskandscale(False)
    var.set_auto_chartostring(False)
    return var


def zarr_arrays(group, fs):
    # By the document's keys: zarr-python lists no arrays in a subgroup of a reference set
    # (and fsspec cannot list a Parquet set's keys when it has groups: its metadata's, then).
    for key in sorted(getattr(fs.references, "zmetadata", fs.references)):
        if key.endswith("/.zarray"):
            path = key[: -len("/.zarray")]
            yield path, group[path]
        elif key.endswith("/zarr.json") and json.loads(fs.cat(key))["node_type"] == "array":
            path = key[: -len("/zarr.json")]
            yield path, group[path]


def dimension_names(arr):
    if arr.metadata.zarr_format == 3:
        names = arr.metadata.dimension_names
        return None if names is None else list(names)
    return arr.attrs.get("_ARRAY_DIMENSIONS")


def originals_value(files, path):
    values = []
    for f in files:
        with netCDF4.Dataset(f) as d:
            v = d[path]
            v.set_auto_maskandscale(False)
            v.set_auto_chartostring(False)
            values.append((v[...], "time" in v.dimensions))
    if len(values) == 1 or not values[0][1]:
        return values[0][0]
    return np.concatenate([v for v, _ in values])


for spec in sys.argv[2:]:
    doc, _, originals = spec.partition("=")
    originals = [o for o in originals.split(",") if o]
    url = f"file://{os.path.abspath(doc)}#mode=zarr,reference"
    # Generators are rendered (with jinja2) only when simple templates are turned off. A
    # Parquet set is read with pyarrow (fsspec reads a column pyarrow wrote with nothing but
    # nulls wrongly through fastparquet), its target protocol named (fsspec guesses it from a
    # first reference that may have no URL).
    if os.path.isdir(doc):
        lazy = LazyReferenceMapper(doc, fs=fsspec.filesystem("file"), engine="pyarrow")
        fs = fsspec.filesystem("reference", fo=lazy, remote_protocol="file")
    else:
        fs = fsspec.filesystem("reference", fo=doc, simple_templates=False)
    version = 3 if fs.exists("zarr.json") else 2
    oracle = zarr.open_group(store=FsspecStore(fs, read_only=True), mode="r", zarr_format=version)
    with netCDF4.Dataset(url) as ds:
        for path, arr in zarr_arrays(oracle, fs):
            where = f"{doc}:{path}"
            try:
                var = ours_of(ds, path)
            except (KeyError, IndexError) as e:
                faults.append(f"{where}: not found by netCDF ({e})")
                continue
            got = var[...]
            want = arr[...]
            checked[path] += 1
            if not same(got, want):
                faults.append(f"{where}: {got!r} but zarr-python reads {want!r}")
            # One element alone: a read that need not decode whole chunks.
            if arr.ndim and not same(var[(0,) * arr.ndim], want[(0,) * arr.ndim]):
                faults.append(f"{where}: the first element alone differs")
            if originals and not same(got, originals_value(originals, path)):
                faults.append(f"{where}: {got!r} differs from the file it points into")
            dims = dimension_names(arr)
            if dims is not None and list(var.dimensions) != dims:
                faults.append(f"{where}: dimensions {var.dimensions} but {dims}")
            for name, value in arr.attrs.items():
                if name == "_ARRAY_DIMENSIONS":
                    continue
                if name not in var.ncattrs() or not same(var.getncattr(name), value):
                    faults.append(f"{where}: attribute {name} = {value!r} missing or different")
            if version == 3:
                continue  # a v3 fill_value is what was never written, not a _FillValue
            fill = json.loads(fs.cat(f"{path}/.zarray"))["fill_value"]
            # netCDF's default fill is the fill of a variable without the attribute.
            default = netCDF4.default_fillvals.get(arr.dtype.str[1:])
            if fill is not None and arr.dtype.kind in "iuf" and not same(fill, default):
                if "_FillValue" not in var.ncattrs() or not same(var.getncattr("_FillValue"), fill):
                    faults.append(f"{where}: _FillValue is not {fill!r}")
        for name, value in oracle.attrs.items():
            if name not in ds.ncattrs() or not same(ds.getncattr(name), value):
                faults.append(f"{doc}: global attribute {name} = {value!r} missing or different")

print(json.dumps({"checked": checked, "faults": faults}))
