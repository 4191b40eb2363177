//! numpy datetimes and time spans that zarr-python 2 and 3 write (`<M8[ns]`, `<M8[s]`,
//! `<m8[s]`, with NaT) read as netCDF represents time: 64-bit integers whose CF `units` (and
//! `calendar`) say what they count, holding the very integers numpy stores, with NaT as the
//! `_FillValue` (zarr-python 2's default `fill_value` of 0 is the epoch, not missing); units
//! of no fixed length (`M8[Y]`) leave the variable listed, failing only when its data are read.

mod common;

use common::{Host, ncdump, run, scratch, url};
use serde_json::Value;

/// Writes the arrays at argv[1] (format argv[2]) and prints each one's int64 view as JSON.
const WRITE: &str = r#"
import json, sys, numpy as np, zarr
path, fmt = sys.argv[1], int(sys.argv[2])
arrays = {
    "t_ns": np.array(["2020-01-01T00:00", "2020-01-02T12:00:00.5", "NaT"], dtype="M8[ns]"),
    "t_s": np.array(["1969-12-31T23:59:59", "2262-04-11", "NaT"], dtype="M8[s]"),
    "span": np.array([1, -2, "NaT"], dtype="m8[s]"),
    "years": np.array(["2001", "2002", "2003"], dtype="M8[Y]"),
}
if zarr.__version__.startswith("2"):
    root = zarr.open_group(path, mode="w")
    make = lambda name, a: root.create_dataset(name, data=a, fill_value=None)
else:
    root = zarr.open_group(path, mode="w", zarr_format=fmt)
    make = lambda name, a: root.create_array(name, data=a, fill_value=None)
for name, a in arrays.items():
    make(name, a)
epoch = np.array(["1970-01-01", "NaT"], dtype="M8[s]")
if zarr.__version__.startswith("2"):
    root.create_dataset("t_default", data=epoch)
else:
    root.create_array("t_default", data=epoch)
print(json.dumps({k: a.view("i8").tolist() for k, a in arrays.items()}))
"#;

/// The values of `var` in an `ncdump` dump, as integers (fill, which must be NaT, as NaT).
fn values(dump: &str, var: &str) -> Vec<i64> {
    let start = dump
        .find(&format!("\n {var} = "))
        .unwrap_or_else(|| panic!("{var} in\n{dump}"));
    let text = &dump[start + var.len() + 5..];
    let text = &text[..text.find(';').unwrap()];
    text.split(',')
        .map(|v| match v.trim() {
            "_" => i64::MIN,
            v => v.parse().unwrap_or_else(|_| panic!("{v:?}")),
        })
        .collect()
}

#[test]
fn numpy_datetimes_read_as_counts_with_cf_units() {
    let dir = scratch("datetimes");
    for env in ["zarr2", "zarr3"] {
        let store = dir.path().join(format!("{env}.zarr"));
        let written = common::python::run_script(env, WRITE, &[store.to_str().unwrap(), "2"])
            .unwrap_or_else(|e| panic!("{e}"));
        let written: Value = serde_json::from_str(&written).unwrap();
        let u = url(&store, "zarr,file");
        let dump = ncdump(Host::Ours, &["-v", "t_ns,t_s,span,t_default"], &u)
            .unwrap_or_else(|e| panic!("{env}: {e}"));
        for (var, units, calendar) in [
            ("t_ns", "nanoseconds since 1970-01-01 00:00:00", true),
            ("t_s", "seconds since 1970-01-01 00:00:00", true),
            ("span", "seconds", false),
        ] {
            let header = |line: &str| dump.lines().any(|l| l.trim() == line);
            assert!(
                header(&format!("int64 {var}(_Anonymous_Dim_3) ;")),
                "{dump}"
            );
            assert!(header(&format!("{var}:units = \"{units}\" ;")), "{dump}");
            assert_eq!(
                header(&format!("{var}:calendar = \"proleptic_gregorian\" ;")),
                calendar,
                "{dump}"
            );
            let fill = format!("{var}:_FillValue = -9223372036854775808LL ;");
            assert!(header(&fill), "{dump}");
            let want: Vec<i64> = serde_json::from_value(written[var].clone()).unwrap();
            assert_eq!(values(&dump, var), want, "{env} {var}");
        }
        assert!(
            dump.contains("t_default:_FillValue = -9223372036854775808LL ;")
                && dump.contains("\n t_default = 0, _ ;"),
            "{env}: the epoch is a time, NaT is missing\n{dump}"
        );
        assert!(dump.contains(" years(_Anonymous_Dim_3) ;"), "{dump}");
        let years = run(Host::Ours, "ncdump", &["-v", "years", &u]);
        assert!(
            !years.success() && !years.crashed() && years.stderr.contains("M8[Y]"),
            "{}",
            years.describe()
        );
    }
}
