//! 16-bit floats, which netCDF has no type for (numpy `<f2`/`>f2` in Zarr v2, `float16` in
//! Zarr v3), written by zarr-python plain, compressed, shuffled and in shards: stock `ncdump`
//! and netCDF4-python read them as `float` with the values zarr-python reads; netCDF4-python
//! writes floats into them, which zarr-python then reads as numpy rounds them to 16 bits, the
//! arrays keeping their dtype; a value past the largest 16-bit float is stored as an infinity,
//! as numpy stores it, and reported as netCDF reports values out of a type's range
//! (`NC_ERANGE`).

mod common;

use common::dump::has_line;
use common::{Host, ncdump, scratch, url};
use serde_json::Value;

/// Writes argv[1] in Zarr format argv[2] with zarr-python and prints each array's values (as
/// float64) and dtype as JSON.
const WRITE: &str = r#"
import json, sys, numcodecs, numpy as np, zarr
fmt = int(sys.argv[2])
g = zarr.open_group(sys.argv[1], mode="w", zarr_format=fmt)
def named(*names):
    return {"dimension_names": list(names)} if fmt == 3 else {}
def dims(a, *names):
    if fmt == 2:
        a.attrs["_ARRAY_DIMENSIONS"] = list(names)
    return a
a = dims(g.create_array("plain", shape=(3, 4), chunks=(2, 3), dtype="<f2", fill_value=np.nan,
                        compressors=None, **named("y", "x")), "y", "x")
a[:] = np.arange(12, dtype="f4").reshape(3, 4) / 3
b = dims(g.create_array("big", shape=(5,), chunks=(2,), dtype=">f2" if fmt == 2 else "f2",
                        fill_value=-1, **named("n")), "n")
b[:3] = [1.5, 65504, -0.000061]
if fmt == 2:
    c = g.create_array("coded", shape=(4, 4), chunks=(2, 2), dtype="f2", fill_value=0,
                       filters=[numcodecs.Shuffle(elementsize=2)], compressors=numcodecs.Zlib(1))
    dims(c, "y2", "x2")
else:
    c = g.create_array("coded", shape=(4, 4), chunks=(2, 2), shards=(4, 4), dtype="f2",
                       fill_value=0, compressors=zarr.codecs.ZstdCodec(), **named("y2", "x2"))
c[:] = np.arange(16).reshape(4, 4) * 0.5 - 1
print(json.dumps({k: {"values": g[k][...].astype("f8").ravel().tolist(), "dtype": str(g[k].dtype)}
                  for k in ("plain", "big", "coded")}))
"#;

/// Reads the arrays argv[2] of argv[1] with netCDF4-python (values unmasked, as float64),
/// writes argv[2]'s floats into row 0 of `plain` and into `big[3:5]`, then 70000 into
/// `coded[0, 0]`; prints what it read, its types and the error of the last write.
const READ_AND_WRITE: &str = r#"
import json, sys, numpy as np, netCDF4
out = {}
with netCDF4.Dataset(sys.argv[1], "a") as ds:
    ds.set_auto_mask(False)
    for n in ("plain", "big", "coded"):
        out[n] = {"values": np.asarray(ds[n][...]).astype("f8").ravel().tolist(),
                  "type": str(ds[n].dtype)}
    out["coded[1:3, 2]"] = np.asarray(ds["coded"][1:3, 2]).astype("f8").tolist()
    new = json.loads(sys.argv[2])
    ds["plain"][0, :] = new[:4]
    ds["big"][3:5] = new[4:6]
    try:
        ds["coded"][0, 0] = 70000.0
        out["too large"] = None
    except Exception as e:
        out["too large"] = str(e)
print(json.dumps(out))
"#;

/// Prints, as JSON, what zarr-python reads of the arrays of argv[1]: values (an infinity as
/// the text `inf`) and dtypes.
const READ_BACK: &str = r#"
import json, math, sys, zarr
g = zarr.open_group(sys.argv[1], mode="r")
def values(a):
    return [v if math.isfinite(v) else str(v) for v in a[...].astype("f8").ravel().tolist()]
print(json.dumps({k: {"values": values(g[k]), "dtype": str(g[k].dtype)}
                  for k in ("plain", "big", "coded")}))
"#;

#[test]
fn half_floats_read_and_write_as_floats() {
    if common::reference_only() {
        return;
    }
    // Exactly representable, rounded (1.0004883 -> 1.0, 0.1 -> 0.099975586), the largest.
    let new = [10.5f64, 1.0004883, 0.1, 65504.0, -0.25, 0.1];
    let rounded = [
        10.5f64,
        1.0,
        0.0999755859375,
        65504.0,
        -0.25,
        0.0999755859375,
    ];
    for format in ["2", "3"] {
        let dir = scratch("half-floats");
        let store = dir.path().join("half.zarr");
        let path = store.to_str().unwrap();
        let written = common::python::run_script("zarr3", WRITE, &[path, format])
            .unwrap_or_else(|e| panic!("v{format}: {e}"));
        let written: Value = serde_json::from_str(&written).unwrap();
        let dump = ncdump(Host::Ours, &[], &url(&store, "zarr,file"))
            .unwrap_or_else(|e| panic!("v{format}: {e}"));
        // Zarr v3's `fill_value` is no `_FillValue`: unwritten values print as themselves.
        let unwritten = if format == "2" { "_, _" } else { "-1, -1" };
        let big = format!("big = 1.5, 65504, -6.097555e-05, {unwritten} ;");
        for line in [
            "float plain(y, x) ;",
            "float big(n) ;",
            "float coded(y2, x2) ;",
            big.as_str(),
        ] {
            assert!(has_line(&dump, line), "v{format}: no {line:?} in\n{dump}");
        }
        let args = [path, &serde_json::to_string(&new).unwrap()];
        let read = common::python::netcdf4_json(READ_AND_WRITE, &args);
        for name in ["plain", "big", "coded"] {
            assert_eq!(
                read[name]["values"], written[name]["values"],
                "v{format} {name}"
            );
            assert_eq!(read[name]["type"], "float32", "v{format} {name}");
        }
        let coded = &written["coded"]["values"];
        assert_eq!(
            read["coded[1:3, 2]"],
            serde_json::json!([coded[6], coded[10]]),
            "v{format}: part of a shard"
        );
        let too_large = read["too large"].as_str().unwrap_or_default();
        assert!(
            too_large.contains("not representable"),
            "v{format}: {}",
            read["too large"]
        );
        let back = common::python::run_script("zarr3", READ_BACK, &[path])
            .unwrap_or_else(|e| panic!("v{format}: {e}"));
        let back: Value = serde_json::from_str(&back).unwrap();
        for name in ["plain", "big", "coded"] {
            assert_eq!(
                back[name]["dtype"], written[name]["dtype"],
                "v{format} {name}"
            );
        }
        let values = |name: &str| -> Vec<f64> {
            serde_json::from_value(back[name]["values"].clone()).unwrap()
        };
        assert_eq!(values("plain")[..4], rounded[..4], "v{format}");
        assert_eq!(values("big")[3..], rounded[4..], "v{format}");
        let coded = back["coded"]["values"].as_array().unwrap();
        assert_eq!(coded[0], "inf", "v{format}");
        assert_eq!(
            coded[1..],
            written["coded"]["values"].as_array().unwrap()[1..],
            "v{format}"
        );
    }
}
