"""Writes netCDF files and kerchunk reference documents for them into sys.argv[1].

Files (by netCDF4-python, whose wheel bundles netcdf-c 4.10.1 and HDF5; netCDF-3 by the same):
- hdf.nc: netCDF-4 with an unlimited dimension, zlib + shuffle chunks, contiguous and
  big-endian variables, a variable-length string, characters, a scalar, 8 numeric types,
  attributes, and a group;
- classic.nc: netCDF-3 (64-bit offsets) with fixed and record variables;
- part0.nc .. part2.nc: three days of one time series, combined along time.

Reference documents (kerchunk):
- hdf.json: version 1, targets by absolute path; small chunks inlined (as text or base64);
- hdf-v0.json: the same as version 0, metadata as JSON objects rather than text;
- hdf-templated.json: version 1, the target named once by a template;
- classic.json: netCDF-3 through kerchunk's netCDF3 reader, the target relative ("classic.nc");
- combined.json: the three parts combined along time (MultiZarrToZarr), three targets;
- generated.json: written here, version 1 with a generator (Jinja arithmetic) for the record
  variable of classic.nc, a template called with an argument, and whole-file references: raw
  little-endian integers and a small blosc-compressed chunk.

Parquet reference sets (fsspec's LazyReferenceMapper layout), a few chunks per record so that
arrays span several records:
- hdf.parq: hdf.json by kerchunk's refs_to_dataframe (fastparquet), 5 references a record,
  paths dictionary-encoded (here and below);
- classic.parq: classic.json the same way, 3 a record, its target relative;
- combined.parq: combined.json through LazyReferenceMapper with pyarrow, 4 a record (its
  inlined chunks make `path` columns of nothing but nulls, which pyarrow types as null);
- holes.parq: hdf.parq without one record file of `v` (those chunks were never written).

Zarr v3 inside a reference set:
- v3.json: version 1, the store v3store/ that zarr-python 3 writes (a plain array, a sharded
  one with an inner chunk never written, a group), its `zarr.json` objects inline as JSON and
  every chunk and shard a whole-file reference relative to the document.
"""

import json
import os
import shutil
import sys

import netCDF4
import numcodecs
import numpy as np
import zarr
from fsspec.implementations.reference import LazyReferenceMapper
from kerchunk.combine import MultiZarrToZarr
from kerchunk.df import refs_to_dataframe
from kerchunk.hdf import SingleHdf5ToZarr
from kerchunk.netCDF3 import NetCDF3ToZarr

top = sys.argv[1]
os.chdir(top)


def hdf(path):
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("time", None)
        d.createDimension("y", 30)
        d.createDimension("x", 41)
        d.createDimension("n", 7)
        d.title = "kerchunked"
        d.version = 3
        d.setncattr("scale", 0.5)
        t = d.createVariable("time", "f8", ("time",))
        t.units = "days since 2000-01-01"
        t[:] = [0.0, 1.0, 2.0]
        v = d.createVariable(
            "v", "f4", ("time", "y", "x"), zlib=True, shuffle=True,
            chunksizes=(1, 16, 16), fill_value=-999.0,
        )
        v.long_name = "a field"
        v.valid_range = np.array([-10, 10], "f4")
        data = np.sin(np.arange(3 * 30 * 41, dtype="f4")).reshape(3, 30, 41)
        data[1, 2, 3] = np.nan
        v[:] = data
        w = d.createVariable("w", "i2", ("y", "x"), contiguous=True)
        w[:] = (np.arange(30 * 41) - 600).reshape(30, 41)
        be = d.createVariable("be", "i4", ("y",), endian="big")
        be[:] = np.arange(30) * -70000
        for name, dtype in [("u1", "u1"), ("i1", "i1"), ("u2", "u2"), ("u4", "u4"),
                            ("i8", "i8"), ("u8", "u8"), ("f8", "f8")]:
            var = d.createVariable("t_" + name, dtype, ("n",), zlib=True, complevel=1)
            var[:] = np.array([0, 1, 2, 3, 4, 5, 6], dtype) * (1 if dtype[0] in "uf" else -1)
        s = d.createVariable("s", str, ("n",))
        s[:] = np.array(["a", "bb", "", "d d", "e\u00e9", "ffffff", "g"], dtype=object)
        c = d.createVariable("c", "S1", ("n", "n"))
        c[:] = netCDF4.stringtochar(np.array(["abcdefg"] * 7, "S7"))
        sc = d.createVariable("scalar", "f8", ())
        sc[...] = 42.5
        g = d.createGroup("sub")
        g.note = "in a group"
        gv = g.createVariable("gv", "i4", ("x",), zlib=True)
        gv[:] = np.arange(41) * 3


def classic(path):
    with netCDF4.Dataset(path, "w", format="NETCDF3_64BIT_OFFSET") as d:
        d.createDimension("rec", None)
        d.createDimension("z", 5)
        d.history = "netCDF-3"
        f = d.createVariable("fixed", "f4", ("z",))
        f.units = "m"
        f[:] = [1.5, 2.5, 3.5, 4.5, 5.5]
        r = d.createVariable("r", "i4", ("rec", "z"))
        r[:] = np.arange(20).reshape(4, 5)
        q = d.createVariable("q", "f8", ("rec",))
        q[:] = [0.25, 0.5, 0.75, 1.0]


def part(path, day):
    with netCDF4.Dataset(path, "w") as d:
        d.createDimension("time", None)
        d.createDimension("lat", 6)
        t = d.createVariable("time", "i4", ("time",))
        t.units = "hours since 2020-01-01"
        t[:] = np.arange(4) + 24 * day
        lat = d.createVariable("lat", "f4", ("lat",))
        lat[:] = np.linspace(-50, 50, 6)
        temp = d.createVariable("temp", "f4", ("time", "lat"), zlib=True, chunksizes=(2, 6))
        temp.units = "K"
        temp[:] = 270 + np.arange(24, dtype="f4").reshape(4, 6) + day


def write(name, refs):
    with open(name, "w") as f:
        json.dump(refs, f)


hdf("hdf.nc")
classic("classic.nc")
for day in range(3):
    part(f"part{day}.nc", day)

refs = SingleHdf5ToZarr(os.path.abspath("hdf.nc"), inline_threshold=64).translate()
write("hdf.json", refs)
v0 = {}
for key, value in refs["refs"].items():
    if key.endswith((".zarray", ".zattrs", ".zgroup")):
        value = json.loads(value)
    v0[key] = value
write("hdf-v0.json", v0)
templated = {"version": 1, "templates": {"u": os.path.abspath("hdf.nc")}, "refs": {}}
for key, value in refs["refs"].items():
    if isinstance(value, list):
        value = ["{{u}}"] + value[1:]
    templated["refs"][key] = value
write("hdf-templated.json", templated)
write("classic.json", NetCDF3ToZarr("classic.nc", inline_threshold=0).translate())
singles = [SingleHdf5ToZarr(os.path.abspath(f"part{d}.nc"), inline_threshold=0).translate() for d in range(3)]
write("combined.json", MultiZarrToZarr(singles, concat_dims=["time"]).translate())

classic_refs = json.load(open("classic.json"))["refs"]
first, second = classic_refs["r/0.0"], classic_refs["r/1.0"]
with open("raw.bin", "wb") as f:
    f.write(np.arange(10, dtype="<i4").tobytes())
blosc = numcodecs.Blosc(cname="lz4", clevel=5, shuffle=numcodecs.Blosc.SHUFFLE)
with open("packed.bin", "wb") as f:
    f.write(blosc.encode(np.arange(100, dtype="<f8") / 8))


def zarray(shape, dtype, compressor=None):
    return {"zarr_format": 2, "shape": shape, "chunks": shape, "dtype": dtype,
            "compressor": compressor, "fill_value": None, "order": "C", "filters": None}


write("generated.json", {
    "version": 1,
    "templates": {"u": "classic.nc", "f": "{{name}}.bin"},
    "refs": {
        ".zgroup": classic_refs[".zgroup"],
        "r/.zarray": classic_refs["r/.zarray"],
        "r/.zattrs": classic_refs["r/.zattrs"],
        "whole/.zarray": zarray([10], "<i4"),
        "whole/.zattrs": {"_ARRAY_DIMENSIONS": ["ten"]},
        "whole/0": ["{{ f(name='raw') }}"],
        "packed/.zarray": zarray([100], "<f8", blosc.get_config()),
        "packed/.zattrs": {"_ARRAY_DIMENSIONS": ["hundred"]},
        "packed/0": ["packed.bin"],
    },
    "gen": [{
        "key": "r/{{i}}.0",
        "url": "{{u}}",
        "offset": "{{ %d + i * %d }}" % (first[1], second[1] - first[1]),
        "length": str(first[2]),
        "dimensions": {"i": {"stop": 4}},
    }],
})

# Paths dictionary-encoded (categorical) wherever one repeats, as in sets of many chunks.
refs_to_dataframe(refs, "hdf.parq", record_size=5, categorical_threshold=1)
refs_to_dataframe("classic.json", "classic.parq", record_size=3, categorical_threshold=1)
combined = LazyReferenceMapper.create(
    "combined.parq", record_size=4, engine="pyarrow", categorical_threshold=1
)
combined_refs = json.load(open("combined.json"))["refs"]
for key in sorted(combined_refs):  # metadata before the chunks it describes
    combined[key] = combined_refs[key]
combined.flush()
shutil.copytree("hdf.parq", "holes.parq")
os.remove("holes.parq/v/refs.1.parq")

store = zarr.open_group("v3store", mode="w", zarr_format=3)
store.attrs["title"] = "Zarr v3 by reference"
plain = store.create_array("plain", shape=(20, 30), chunks=(8, 16), dtype="f4",
                           dimension_names=["y", "x"], fill_value=-1.0)
plain[:] = np.arange(600, dtype="f4").reshape(20, 30) / 4
plain.attrs["units"] = "m"
sharded = store.create_array("sharded", shape=(40,), chunks=(4,), shards=(16,), dtype="i8",
                             dimension_names=["t"])
sharded[:36] = np.arange(36) * -3  # the last inner chunk is never written
inner = store.create_group("grp")
inner.attrs["note"] = "a v3 group"
in_group = inner.create_array("g", shape=(5,), chunks=(5,), dtype="u2", dimension_names=["x5"])
in_group[:] = [1, 2, 3, 4, 5]
v3 = {"version": 1, "refs": {}}
for root, _, names in os.walk("v3store"):
    for name in names:
        path = os.path.join(root, name)
        key = os.path.relpath(path, "v3store")
        if name == "zarr.json":
            v3["refs"][key] = json.load(open(path))
        else:
            v3["refs"][key] = [path]
write("v3.json", v3)
