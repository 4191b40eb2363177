#!/usr/bin/env bash
# Regenerates the golden datasets of tests/data from their sources (run from anywhere):
#   netcdf/nc490.zarr    netcdf-c 4.9.0 (Debian ncgen)              from netcdf/nc490.cdl
#   netcdf/nc4101.zarr   netcdf-c 4.10.1 (ncgen on the 4.10.1 lib)   from netcdf/nc4101.cdl
#   netcdf/nc4912.zarr   4.9.1-4.9.2 lower-case keys, derived        (derive_older_nczarr.py)
#   netcdf/ncv1.zarr     NCZarr 1.0.0 (4.8.x) objects, derived       (derive_older_nczarr.py)
#   zarr2/pure.zarr, zarr3/pure.zarr   zarr-python 2.18.7 / 3.1.6   (generate_zarr.py zarr)
#   xarray2/ds.zarr, xarray3/ds.zarr   xarray with zarr 2 / 3       (generate_zarr.py xarray)
# The expected dumps (*.cdl next to each store, *.expected.cdl) are NOT regenerated here: they
# are reviewed text; tests/golden.rs prints the new text when a store changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cd "$here"
unset LD_PRELOAD
rm -rf netcdf/nc490.zarr netcdf/nc4101.zarr
ncgen -4 -o "file://$here/netcdf/nc490.zarr#mode=nczarr,file" netcdf/nc490.cdl
"${NCZARR_RS_SHARED:-$root/../../shared}/tools/with-netcdf-4.10" ncgen -4 -o "file://$here/netcdf/nc4101.zarr#mode=nczarr,file" netcdf/nc4101.cdl
py3=$("$root/scripts/pyenv" zarr3)
py2=$("$root/scripts/pyenv" zarr2)
"$py3" derive_older_nczarr.py netcdf/nc490.zarr v4912 netcdf/nc4912.zarr
"$py3" derive_older_nczarr.py netcdf/nc490.zarr v1 netcdf/ncv1.zarr
"$py2" generate_zarr.py zarr zarr2/pure.zarr
"$py3" generate_zarr.py zarr zarr3/pure.zarr
"$py2" generate_zarr.py xarray xarray2/ds.zarr
"$py3" generate_zarr.py xarray xarray3/ds.zarr
