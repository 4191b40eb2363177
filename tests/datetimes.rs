//! numpy datetimes and time spans that zarr-python 2 and 3 write (`<M8[ns]`, `<M8[s]`,
//! `<m8[s]`, with NaT) read as netCDF represents time: 64-bit integers whose CF `units` (and
//! `calendar`) say what they count, holding the very integers numpy stores. A `fill_value` of
//! NaT is the `_FillValue`; zarr-python 2's default of 0 is the epoch, a time (as xarray reads
//! it), which never-written chunks still read as. Units of no fixed length (`M8[Y]`) leave the
//! variable listed, failing only when its data are read. Such datasets open read-only: writing
//! would store our attributes and lose the numpy dtype.

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
# One element per chunk: a chunk equal to the fill value is not stored.
epoch = np.array(["1970-01-01", "NaT"], dtype="M8[s]")
if zarr.__version__.startswith("2"):
    root.create_dataset("t_default", data=epoch, chunks=(1,))
else:
    root.create_array("t_default", data=epoch, chunks=(1,))
print(json.dumps({k: a.view("i8").tolist() for k, a in arrays.items()}))
"#;

/// The values of `var` in an `ncdump` dump, as integers (fill, which must be NaT, as NaT).
/// Panics on fill where NaT is not the fill value.
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
    if !common::reference_only() {
        // The write probe below writes where nothing forbids it.
        let plain = dir.path().join("plain.zarr");
        std::fs::create_dir(&plain).unwrap();
        std::fs::write(plain.join(".zgroup"), r#"{"zarr_format": 2}"#).unwrap();
        assert_eq!(common::python::netcdf4_writes(&plain), Ok(None));
        let attrs = std::fs::read_to_string(plain.join(".zattrs")).unwrap();
        assert!(attrs.contains("\"note\""), "{attrs}");
    }
    for env in ["zarr2", "zarr3"] {
        let store = dir.path().join(format!("{env}.zarr"));
        let written = common::python::run_script(env, WRITE, &[store.to_str().unwrap(), "2"])
            .unwrap_or_else(|e| panic!("{e}"));
        let written: Value = serde_json::from_str(&written).unwrap();
        if env == "zarr2" {
            // The epoch's chunk equals the fill value: as if never written.
            std::fs::remove_file(store.join("t_default/0")).unwrap();
        }
        let u = url(&store, "zarr,file");
        let dump = ncdump(Host::Ours, &["-v", "t_ns,t_s,span,t_default"], &u)
            .unwrap_or_else(|e| panic!("{env}: {e}"));
        for (var, units, calendar) in [
            ("t_ns", "nanoseconds since 1970-01-01 00:00:00", true),
            ("t_s", "seconds since 1970-01-01 00:00:00", true),
            ("span", "seconds", false),
        ] {
            let header = |line: &str| common::dump::has_line(&dump, line);
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
            assert!(!dump.contains(&format!("{var}:_FillValue")), "{dump}");
            let want: Vec<i64> = serde_json::from_value(written[var].clone()).unwrap();
            assert_eq!(values(&dump, var), want, "{env} {var}");
        }
        // zarr-python 2's default fill is the epoch: no `_FillValue`, and its unstored chunk
        // reads as the epoch; zarr-python 3's is NaT, the `_FillValue`.
        let (fill, values) = match env {
            "zarr2" => (None, "t_default = 0, -9223372036854775808 ;"),
            _ => (
                Some("t_default:_FillValue = -9223372036854775808LL ;"),
                "t_default = 0, _ ;",
            ),
        };
        assert_eq!(
            dump.lines().any(|l| Some(l.trim()) == fill),
            fill.is_some(),
            "{env}\n{dump}"
        );
        assert!(dump.contains(&format!("\n {values}")), "{env}\n{dump}");
        let url = nczarr_rs::url::DatasetUrl::parse(&u).unwrap();
        let opened = nczarr_rs::api::Dataset::open(&url, true).expect("opens for writing");
        let refused = opened.check_writable().unwrap_err().to_string();
        assert!(refused.contains("numpy datetime"), "{refused}");
        if !common::reference_only() {
            // Through libnetcdf: netCDF4-python with the library preloaded.
            let why = common::python::netcdf4_writes(&store).unwrap();
            assert!(
                why.as_deref()
                    .is_some_and(|w| w.contains("Write to read only")),
                "{env}: {why:?}"
            );
        }
        assert!(dump.contains(" years(_Anonymous_Dim_3) ;"), "{dump}");
        let years = run(Host::Ours, "ncdump", &["-v", "years", &u]);
        assert!(years.refused_saying("M8[Y]"), "{}", years.describe());
    }
}
