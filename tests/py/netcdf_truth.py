"""Prints, as JSON, what a netCDF-4 file holds, for tests/py/check_zarr_v3.py to compare with:
per variable (by path), its dimension names, numpy dtype, raw values and attributes as
netCDF4-python reads them, and the values xarray decodes (masked, scaled, as times).

usage: netcdf_truth.py FILE.nc
"""

import json
import sys

import netCDF4
import numpy as np
import xarray as xr
from flat_text import flat


def groups(node, path=""):
    yield path, node
    for name, child in node.groups.items():
        yield from groups(child, f"{path}/{name}" if path else name)


def main():
    out = {"variables": {}, "decoded": {}}
    with netCDF4.Dataset(sys.argv[1]) as ds:
        for path, g in groups(ds):
            g.set_auto_maskandscale(False)
            g.set_auto_chartostring(False)
            for name, v in g.variables.items():
                key = f"{path}/{name}" if path else name
                attrs = {}
                for a in v.ncattrs():
                    value = v.getncattr(a)
                    attrs[a] = {
                        "dtype": np.asarray(value).dtype.str,
                        "values": flat(value),
                    }
                data = v[...]
                out["variables"][key] = {
                    "dims": list(v.dimensions),
                    "dtype": "string" if v.dtype is str else np.dtype(v.dtype).str,
                    "values": flat(data),
                    "attrs": attrs,
                }
    for path, _ in groups(netCDF4.Dataset(sys.argv[1])):
        with xr.open_dataset(sys.argv[1], group=path or None, engine="netcdf4") as x:
            for name, v in x.variables.items():
                key = f"{path}/{name}" if path else name
                out["decoded"][key] = flat(v.values)
    print(json.dumps(out))


main()
