"""Derives the NCZarr layouts no installable netcdf-c writes any more from the store that
netcdf-c 4.9.0 wrote (netcdf/nc490.zarr). Both are transformations of the same JSON:

  v4912: netcdf-c 4.9.1-4.9.2 kept the 2.0.0 keys inside .zgroup/.zarray/.zattrs but spelled
         them in lower case: _nczarr_superblock, _nczarr_group, _nczarr_array, _nczarr_attr
         (reference notes 1.3; netcdf-c docs/nczarr.md, "NCZarr Format Inference" and the
         run_oldkeys.sh test data). The inner keys ("dims", "vars", "dimrefs") are unchanged.

  v1:    netcdf-c 4.8.x (NCZarr 1.0.0) stored the same content in separate objects beside the
         Zarr ones (spec/nczarr-older-revision-notes.md, Appendix F "NCZarr Version 1 Meta-Data
         Representation"): /.nczarr {"zarr_format": 2, "nczarr_version": "1.0.0"},
         <group>/.nczgroup = the _NCZARR_GROUP value, <array>/.nczarray = the _NCZARR_ARRAY
         value, <object>/.nczattrs = the _NCZARR_ATTR value; .zgroup/.zarray/.zattrs carry no
         NCZarr keys. 4.8.x is not installable here, so this store is built by hand.

    python derive_older_nczarr.py netcdf/nc490.zarr v4912 netcdf/nc4912.zarr
    python derive_older_nczarr.py netcdf/nc490.zarr v1 netcdf/ncv1.zarr
"""
import json
import os
import shutil
import sys

UPPER = ["_NCZARR_SUPERBLOCK", "_NCZARR_GROUP", "_NCZARR_ARRAY", "_NCZARR_ATTR"]
V1_OBJECT = {"_NCZARR_GROUP": ".nczgroup", "_NCZARR_ARRAY": ".nczarray",
             "_NCZARR_ATTR": ".nczattrs"}


def dump(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f)


def transform(src, kind, dst):
    if os.path.exists(dst):
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
    for dirpath, _, files in os.walk(dst):
        for name in files:
            if name not in (".zgroup", ".zarray", ".zattrs"):
                continue
            path = os.path.join(dirpath, name)
            with open(path) as f:
                obj = json.load(f)
            for key in UPPER:
                if key not in obj:
                    continue
                value = obj.pop(key)
                if kind == "v4912":
                    obj[key.lower()] = value
                elif key == "_NCZARR_SUPERBLOCK":
                    dump(os.path.join(dirpath, ".nczarr"),
                         {"zarr_format": 2, "nczarr_version": "1.0.0"})
                else:
                    dump(os.path.join(dirpath, V1_OBJECT[key]), value)
            dump(path, obj)


if __name__ == "__main__":
    transform(sys.argv[1], sys.argv[2], sys.argv[3])
