//! Differential tests with Debian's stock `ncgen`/`ncdump`/`nccopy`: every CDL file in tests/cdl
//! goes through our store and must come back exactly as the oracles say.
//!
//! Oracles (DESIGN.md §9): the CDL written by stock `ncgen -4` to netCDF-4/HDF5 and dumped by stock
//! `ncdump` is the ground truth; netcdf-c's own NCZarr (4.9.0 built in, 4.10.1 via
//! `with-netcdf-4.10`) is a second oracle where it can write the CDL, with its documented bugs
//! waived line by line (`REFERENCE_BUGS`), never wholesale.
//!
//! Every test runs all CDL files and reports every failing case with a diff before failing. The
//! ground-truth checks run for NCZarr stored both as Zarr v2 and as Zarr v3 (`mode=...,v3`),
//! for which netcdf-c has no writer to compare with.

mod common;

use common::diff::{self, Rule, Waiver, compare_with_waivers};
use common::dump::{self, VarDecl};
use common::{Host, Report, case_name, cdl_files, hdf5_truth, ncdump, ncgen, run, scratch, url};
use std::fs;
use std::path::Path;

const NCZARR: &str = "nczarr,file";
/// NCZarr stored as Zarr v3 (`zarr.json`).
const NCZARR_V3: &str = "nczarr,v3,file";

/// Writes `cdl` with our library into `<dir>/<case>.zarr` in the given mode; returns the URL.
fn write_ours(dir: &Path, cdl: &Path, mode: &str) -> Result<String, String> {
    let store = dir.join(format!(
        "{}.{}.zarr",
        case_name(cdl),
        mode.replace(',', "_")
    ));
    let u = url(&store, mode);
    ncgen(Host::Ours, cdl, &u).map_err(|e| format!("writing with ours failed: {e}"))?;
    Ok(u)
}

/// (a)+(b): ours write + ours read equals the HDF5 ground truth, in default and full precision.
#[test]
fn ncdump_matches_hdf5_ground_truth() {
    let mut report = Report::new("ncdump_matches_hdf5");
    let dir = scratch("truth");
    for mode in [NCZARR, NCZARR_V3] {
        for cdl in cdl_files() {
            let name = case_name(&cdl);
            let store = write_ours(dir.path(), &cdl, mode);
            // `-p 9,17` prints floats and doubles with round-trip precision, so lost digits show.
            for (variant, opts) in [("default", &[][..]), ("p9,17", &["-p", "9,17"][..])] {
                let outcome = store.clone().and_then(|u| {
                    let truth = dump::normalise_name(&hdf5_truth(dir.path(), &cdl, opts));
                    let ours = dump::normalise_name(&ncdump(Host::Ours, opts, &u)?);
                    diff::compare(&truth, &ours, "ncdump of our store vs HDF5")
                });
                report.case(&format!("{name} [{mode}] [{variant}]"), outcome);
            }
        }
    }
    report.finish(40);
}

/// Checks one variable's special attributes against the HDF5 file's. The expectations encode the
/// deliberate, documented differences between NCZarr storage and HDF5:
/// - NCZarr has no contiguous or compact storage: such variables are stored as one chunk. A
///   variable the CDL declares contiguous or compact is reported as declared, like HDF5 (the
///   reference says "chunked"). HDF5's *default* contiguous layout is reported as
///   `_Storage = "chunked"` with `_ChunkSizes` equal to the variable's shape: the corpus variables
///   are far below the default chunk size, so the default chunk is the whole variable.
/// - Scalars are reported as contiguous, like HDF5. (The reference reports chunked with zero chunk
///   sizes, which makes stock ncdump print a broken `_ChunkSizes = ` line: reference notes §1.9.)
/// - Explicit `_ChunkSizes` from the CDL must be kept exactly. Where HDF5 chose a default chunk
///   shape (variables with unlimited dimensions), we may choose another one: it must have one entry
///   per dimension, each at least 1 and no larger than a fixed dimension's length.
/// - `_Endianness`, `_NoFill` and any filter attributes must be exactly HDF5's.
/// - `_Codecs` (NCZarr's own, absent from HDF5) must be the numcodecs chain the HDF5 filter
///   attributes describe: shuffle with the real element size, zlib (gzip in Zarr v3) with
///   `_DeflateLevel`, fletcher32.
fn check_specials(
    ours: &VarDecl,
    truth: &VarDecl,
    explicit_chunks: bool,
    asked_storage: bool,
    deflate: &str,
) -> Vec<String> {
    let mut problems = Vec::new();
    let mut ours = ours.clone();
    let codecs = ours.specials.remove("_Codecs");
    problems.extend(check_codecs(&ours.name, codecs.as_deref(), truth, deflate));
    let ours = &ours;
    let mut expect = truth.specials.clone();
    let shape = |v: &VarDecl| {
        v.dims
            .iter()
            .map(u64::to_string)
            .collect::<Vec<_>>()
            .join(", ")
    };
    let storage = truth.specials.get("_Storage").map(String::as_str);
    if truth.dims.is_empty() {
        expect.insert("_Storage".into(), "\"contiguous\"".into());
        expect.remove("_ChunkSizes");
    } else if asked_storage {
        // Stored as one chunk, but reported as the user asked, like HDF5 (the reference
        // reports "chunked" here).
    } else if matches!(storage, Some("\"contiguous\"") | Some("\"compact\"")) {
        expect.insert("_Storage".into(), "\"chunked\"".into());
        expect.insert("_ChunkSizes".into(), shape(truth));
    } else if storage == Some("\"chunked\"") && !explicit_chunks {
        let got = ours
            .specials
            .get("_ChunkSizes")
            .cloned()
            .unwrap_or_default();
        let sizes: Vec<Option<u64>> = got.split(", ").map(|s| s.parse().ok()).collect();
        let fixed = fixed_dims(truth);
        let valid = sizes.len() == truth.dims.len()
            && sizes.iter().zip(&fixed).all(|(s, f)| match (s, f) {
                (Some(s), Some(f)) => *s >= 1 && s <= f,
                (Some(s), None) => *s >= 1,
                _ => false,
            });
        if !valid {
            problems.push(format!(
                "{}: default _ChunkSizes = {got} is not a valid chunk shape for dimensions ({})",
                ours.name,
                shape(truth)
            ));
        }
        expect.remove("_ChunkSizes");
        let mut ours_rest = ours.specials.clone();
        ours_rest.remove("_ChunkSizes");
        return compare_special_maps(&ours.name, &ours_rest, &expect, problems);
    }
    compare_special_maps(&ours.name, &ours.specials, &expect, problems)
}

/// Checks `_Codecs` against the HDF5 filter specials of the same variable.
/// `deflate`: the codec netCDF's deflate is stored as (`zlib`; `gzip` in Zarr v3, which has no
/// zlib).
fn check_codecs(name: &str, codecs: Option<&str>, truth: &VarDecl, deflate: &str) -> Vec<String> {
    let has = |k: &str| truth.specials.contains_key(k);
    let wanted = has("_Shuffle") || has("_DeflateLevel") || has("_Fletcher32");
    let Some(text) = codecs else {
        return if wanted {
            vec![format!("{name}: _Codecs missing")]
        } else {
            Vec::new()
        };
    };
    let json = text.trim_matches('"').replace("\\\"", "\"");
    let list: Vec<serde_json::Value> = match serde_json::from_str(&json) {
        Ok(l) => l,
        Err(e) => return vec![format!("{name}: _Codecs {text} is not a JSON list: {e}")],
    };
    let ids: Vec<&str> = list.iter().filter_map(|c| c["id"].as_str()).collect();
    let mut problems = Vec::new();
    if has("_Shuffle") != ids.contains(&"shuffle")
        || has("_Fletcher32") != ids.contains(&"fletcher32")
    {
        problems.push(format!(
            "{name}: _Codecs {text} does not match {:?}",
            truth.specials
        ));
    }
    if let Some(level) = truth.specials.get("_DeflateLevel") {
        let zlib = list.iter().find(|c| c["id"] == deflate);
        if zlib.map(|c| c["level"].to_string()) != Some(level.clone()) {
            problems.push(format!(
                "{name}: _Codecs {text} lacks {deflate} level {level}"
            ));
        }
    }
    if let Some(s) = list.iter().find(|c| c["id"] == "shuffle")
        && s["elementsize"].as_u64().unwrap_or(0) == 0
    {
        problems.push(format!(
            "{name}: _Codecs {text} has no real shuffle element size"
        ));
    }
    problems
}

/// Lengths of the fixed dimensions (None for unlimited ones, whose chunk size is unbounded).
fn fixed_dims(v: &VarDecl) -> Vec<Option<u64>> {
    v.dims
        .iter()
        .zip(&v.unlimited)
        .map(|(&d, &u)| if u { None } else { Some(d) })
        .collect()
}

fn compare_special_maps(
    name: &str,
    ours: &std::collections::BTreeMap<String, String>,
    expect: &std::collections::BTreeMap<String, String>,
    mut problems: Vec<String>,
) -> Vec<String> {
    for k in expect.keys().chain(ours.keys()) {
        let (e, o) = (expect.get(k), ours.get(k));
        if e != o
            && !problems
                .iter()
                .any(|p| p.starts_with(&format!("{name}:{k} ")))
        {
            problems.push(format!(
                "{name}:{k} expected {}, got {}",
                e.map_or("(absent)", String::as_str),
                o.map_or("(absent)", String::as_str)
            ));
        }
    }
    problems
}

/// `ncdump -s`: everything but the per-variable special attributes must equal the HDF5 dump (with the
/// library-describing globals removed; `_Format` stays); the special attributes follow `check_specials`.
#[test]
fn ncdump_s_special_attributes() {
    let mut report = Report::new("ncdump_s");
    let dir = scratch("special");
    for (mode, cdl) in [NCZARR, NCZARR_V3]
        .into_iter()
        .flat_map(|m| cdl_files().into_iter().map(move |c| (m, c)))
    {
        let name = format!("{} [{mode}]", case_name(&cdl));
        let cdl_text = fs::read_to_string(&cdl).unwrap();
        let outcome = write_ours(dir.path(), &cdl, mode).and_then(|u| {
            let truth = dump::normalise_s(&hdf5_truth(dir.path(), &cdl, &["-s"]));
            let ours = dump::normalise_s(&ncdump(Host::Ours, &["-s"], &u)?);
            let (truth_rest, truth_vars) = dump::split_specials(&truth);
            let (ours_rest, ours_vars) = dump::split_specials(&ours);
            let mut problems = Vec::new();
            if let Some(d) = diff::diff(&truth_rest, &ours_rest) {
                problems.push(format!(
                    "text apart from special attributes (- HDF5, + ours)\n{d}"
                ));
            }
            for t in &truth_vars {
                let Some(o) = ours_vars
                    .iter()
                    .find(|o| o.name == t.name && o.group == t.group)
                else {
                    problems.push(format!("variable {}/{} missing", t.group, t.name));
                    continue;
                };
                let explicit = cdl_text.contains(&format!("{}:_ChunkSizes", t.name));
                let asked_storage = cdl_text
                    .contains(&format!("{}:_Storage = \"contiguous\"", t.name))
                    || cdl_text.contains(&format!("{}:_Storage = \"compact\"", t.name));
                let deflate = if mode == NCZARR_V3 { "gzip" } else { "zlib" };
                problems.extend(check_specials(o, t, explicit, asked_storage, deflate));
            }
            if problems.is_empty() {
                Ok(())
            } else {
                Err(problems.join("\n"))
            }
        });
        report.case(&name, outcome);
    }
    report.finish(20);
}

/// Known bugs of the reference implementations, with where they are documented
/// (../shared/reference/netcdf-c-nczarr.md). Used only when the reference's own reading or
/// writing is part of the comparison; our output must be the correct text in every case.
fn reference_bugs() -> Vec<Waiver> {
    vec![
        Waiver {
            name: "six-digit doubles",
            bug: "§5.3: attribute values and fill_value printed with %lg (6 significant digits)",
            rule: Rule::Token(diff::six_digits),
        },
        Waiver {
            name: "fill not recognised",
            bug: "§1.6: a rounded fill_value no longer equals _FillValue, so fill cells print as numbers",
            rule: Rule::Token(diff::fill_not_recognised),
        },
        Waiver {
            name: "negative zero",
            bug: "reference reads the JSON number -0 as the integer 0 and drops the sign",
            rule: Rule::Token(diff::lost_zero_sign),
        },
        Waiver {
            name: "JSON-looking text",
            bug: "§5.5: 4.10.1 writes JSON-looking text attributes as JSON and reads them back lossily",
            rule: Rule::Line {
                case: "json_text",
                contains: " = \"",
            },
        },
        Waiver {
            name: "non-ASCII short text",
            bug: "4.10.1 writes the attribute \"°C\" as \"C\" (verified on disk)",
            rule: Rule::Line {
                case: "names",
                contains: "température:units = \"°C\"",
            },
        },
        Waiver {
            name: "quantize attribute typed byte",
            bug: "§1.17: 4.9.0 stores the _Quantize* attribute without its type; it reads back \
                  as the smallest integer type (byte)",
            rule: Rule::Line {
                case: "quantize",
                contains: ":_Quantize",
            },
        },
        Waiver {
            name: "empty string as NIL",
            bug: "4.10.1 returns a NULL pointer for an empty NC_STRING element",
            rule: Rule::Token(|ours, reference| {
                (ours == "_" && reference == "NIL") || (ours == "NIL" && reference == "_")
            }),
        },
    ]
}

/// Reference writes + reference reads vs ours writes + ours reads, for each CDL the reference can
/// write and read back without crashing.
fn reference_oracle(check: &str, reference: Host, min_available: usize) {
    let mut report = Report::new(check);
    let dir = scratch(check);
    let waivers = reference_bugs();
    let mut available = 0;
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let ref_url = url(&dir.path().join(format!("{name}.ref.zarr")), NCZARR);
        let expected = match ncgen(reference, &cdl, &ref_url)
            .and_then(|()| ncdump(reference, &["-p", "9,17"], &ref_url))
        {
            Ok(t) => dump::normalise_name(&t),
            Err(e) => {
                report.note(format!("{name}: reference cannot serve as oracle: {e}"));
                continue;
            }
        };
        available += 1;
        let outcome = write_ours(dir.path(), &cdl, NCZARR).and_then(|u| {
            let ours = dump::normalise_name(&ncdump(Host::Ours, &["-p", "9,17"], &u)?);
            let used = compare_with_waivers(&name, &ours, &expected, &waivers)?;
            if !used.is_empty() {
                eprintln!("      {name}: reference bugs waived: {}", used.join(", "));
            }
            Ok(())
        });
        report.case(&name, outcome);
    }
    assert!(
        available >= min_available,
        "{check}: the reference could serve only {available} CDL files (expected {min_available})"
    );
    report.finish(min_available);
}

/// (c) netcdf-c 4.9.0's built-in NCZarr (it writes neither unlimited dimensions nor strings, and
/// its ncdump crashes on its own scalars: those files are reported as unavailable).
#[test]
fn builtin_nczarr_490_oracle() {
    reference_oracle("oracle_4.9.0", Host::Stock, 8);
}

/// (c) netcdf-c 4.10.1's NCZarr, which writes today's layout and supports the whole corpus.
#[test]
fn nczarr_4101_oracle() {
    reference_oracle("oracle_4.10.1", Host::Ref410, 12);
}

/// (d) `nccopy x.nc URL` then `nccopy URL y.nc` (both through us): `ncdump y.nc` == `ncdump x.nc`.
#[test]
fn nccopy_round_trip_is_lossless() {
    let mut report = Report::new("nccopy_round_trip");
    let dir = scratch("nccopy");
    for (mode, cdl) in [NCZARR, NCZARR_V3]
        .into_iter()
        .flat_map(|m| cdl_files().into_iter().map(move |c| (m, c)))
    {
        let name = case_name(&cdl);
        let label = format!("{name} [{mode}]");
        let outcome = (|| {
            let truth = dump::normalise_name(&hdf5_truth(dir.path(), &cdl, &["-p", "9,17"]));
            let x = dir.path().join(format!("{name}.nc"));
            let store = format!("{name}.{}.zarr", mode.replace(',', "_"));
            let u = url(&dir.path().join(store), mode);
            let y = dir
                .path()
                .join(format!("{name}.{}.back.nc", mode.replace(',', "_")));
            run(Host::Ours, "nccopy", &[x.to_str().unwrap(), &u]).output()?;
            run(Host::Ours, "nccopy", &[&u, y.to_str().unwrap()]).output()?;
            let back =
                dump::normalise_name(&ncdump(Host::Stock, &["-p", "9,17"], y.to_str().unwrap())?);
            diff::compare(&truth, &back, "HDF5 -> our store -> HDF5")
        })();
        report.case(&label, outcome);
    }
    report.finish(20);
}

/// Stores a reference writes that we are not expected to read as the ground truth says, and why.
const UNREADABLE_REFERENCE_STORES: [(&str, &str, &str); 2] = [
    (
        "4.10.1",
        "json_text",
        "§5.5: 4.10.1 writes \"0x10\" as the invalid JSON 0x10 into .zattrs",
    ),
    (
        "4.9.0",
        "storage",
        "§1.7: 4.9.0 declares >i2 etc. but writes the data little-endian",
    ),
];

/// (d) Stores written by netcdf-c's NCZarr, read through us with `nccopy URL y.nc`: `ncdump y.nc`
/// must equal the ground truth, except for what the writer itself got wrong (waived as above).
fn read_reference_store(check: &str, writer: Host, label: &str, min_cases: usize) {
    let mut report = Report::new(check);
    let dir = scratch(check);
    let waivers = reference_bugs();
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        if let Some((_, _, why)) = UNREADABLE_REFERENCE_STORES
            .iter()
            .find(|(l, c, _)| *l == label && *c == name)
        {
            report.note(format!("{name}: skipped: {why}"));
            continue;
        }
        let ref_url = url(&dir.path().join(format!("{name}.ref.zarr")), NCZARR);
        if let Err(e) = ncgen(writer, &cdl, &ref_url) {
            report.note(format!("{name}: {label} cannot write it: {e}"));
            continue;
        }
        let outcome = (|| {
            let truth = dump::normalise_name(&hdf5_truth(dir.path(), &cdl, &["-p", "9,17"]));
            let y = dir.path().join(format!("{name}.copy.nc"));
            run(Host::Ours, "nccopy", &[&ref_url, y.to_str().unwrap()]).output()?;
            let copy =
                dump::normalise_name(&ncdump(Host::Stock, &["-p", "9,17"], y.to_str().unwrap())?);
            compare_with_waivers(&name, &copy, &truth, &waivers).map(|_| ())
        })();
        report.case(&name, outcome);
    }
    report.finish(min_cases);
}

#[test]
fn reads_stores_written_by_4101() {
    read_reference_store("read_4.10.1_store", Host::Ref410, "4.10.1", 12);
}

#[test]
fn reads_stores_written_by_490() {
    read_reference_store("read_4.9.0_store", Host::Stock, "4.9.0", 8);
}

/// The data sections (in canonical order) of the HDF5 ground truth of `cdl` and of our dump of
/// the store at `u`, both at full precision.
fn data_sections(dir: &Path, cdl: &Path, u: &str) -> Result<(String, String), String> {
    let data = |dump_text: &str| {
        dump::data_lines(&dump::canonical_order(&dump::normalise_name(dump_text)))
    };
    let truth = hdf5_truth(dir, cdl, &["-p", "9,17"]);
    let ours = ncdump(Host::Ours, &["-p", "9,17"], u)?;
    Ok((data(&truth), data(&ours)))
}

/// (e) Pure Zarr (`mode=zarr`, in Zarr v2 and v3) and `mode=nczarr,noxarray` (which netcdf-c
/// also treats as pure Zarr, without `_ARRAY_DIMENSIONS`). Pure Zarr cannot keep all of netCDF's header (attribute
/// types are inferred on read, unlimited dimensions of non-zero length become fixed, noxarray
/// loses dimension names), but every value must survive: the data sections of what we write and
/// read back must equal the HDF5 ground truth's. Deliberate differences from netcdf-c 4.10.1 that
/// this exposes: we read `|S1` arrays as char (4.10.1: one-character strings) and write netCDF
/// scalars as 0-d arrays (as netcdf-c after 4.10.1 does), so both round-trip unchanged.
#[test]
fn pure_zarr_keeps_every_value() {
    let mut report = Report::new("pure_zarr");
    let dir = scratch("pure");
    for mode in ["zarr,file", "nczarr,noxarray,file", "zarr,v3,file"] {
        for cdl in cdl_files() {
            let name = case_name(&cdl);
            let outcome = write_ours(dir.path(), &cdl, mode).and_then(|u| {
                let (expected, ours) = data_sections(dir.path(), &cdl, &u)?;
                match diff::diff(&expected, &ours) {
                    None => Ok(()),
                    Some(d) => Err(format!("data differ (- HDF5, + ours)\n{d}")),
                }
            });
            report.case(&format!("{name} [{mode}]"), outcome);
        }
    }
    report.finish(30);
}

/// (e') Pure Zarr written by netcdf-c 4.10.1 (`ncgen` with `mode=zarr`): every value we read
/// must equal the HDF5 ground truth's, fill values shown as fill, but where its writer itself
/// lost them (waived as above). Its writer records netCDF's default double fill to six digits
/// (`9.96921e+36`), leaves a `_FillValue` an untyped JSON number when `"fill_value"` is null,
/// and writes JSON-looking text bare (`0x10`, `[0.,1.]`); netcdf-c reads all of these, and so
/// must we.
#[test]
fn pure_zarr_written_by_4101_keeps_every_value() {
    let mut report = Report::new("pure_zarr_by_4.10.1");
    let dir = scratch("pure410");
    let waivers = reference_bugs();
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let u = url(&dir.path().join(format!("{name}.zarr")), "zarr,file");
        if let Err(e) = ncgen(Host::Ref410, &cdl, &u) {
            report.note(format!("{name}: 4.10.1 cannot write it: {e}"));
            continue;
        }
        let outcome = data_sections(dir.path(), &cdl, &u).and_then(|(expected, ours)| {
            compare_with_waivers(&name, &ours, &expected, &waivers).map(|_| ())
        });
        report.case(&name, outcome);
    }
    report.finish(16);
}

/// Fill values in pure Zarr as netcdf-c 4.10.1 writes them, read as it reads them (no waiver):
/// `ncgen` records netCDF's default double fill as `9.96921e+36`, and `nccopy` from a netCDF-4
/// file leaves `"fill_value": null` beside a `_FillValue` of `-9999` for a float (and of
/// `"NaN"` for a double). All dump exactly as on 4.10.1, fill cells as fill and the attributes
/// in their variables' types.
#[test]
fn pure_zarr_fill_values_written_by_4101_read_as_it_reads_them() {
    let dir = scratch("pure410-fills");
    let cdl = dir.path().join("fills.cdl");
    fs::write(
        &cdl,
        "netcdf fills {\ndimensions: x = UNLIMITED ; n = 3 ;\nvariables:\n int i(x) ;\n \
         float f(x) ;\n  f:_FillValue = -9999.f ;\n double d(n) ;\n double dnan(n) ;\n  \
         dnan:_FillValue = NaN ;\ndata:\n i = 1, 2, 3 ;\n d = 2.5, _, _ ;\n dnan = 1, _, 3 ;\n}\n",
    )
    .unwrap();
    let nc = dir.path().join("fills.nc");
    ncgen(Host::Stock, &cdl, nc.to_str().unwrap()).expect("ncgen of the netCDF-4 file");
    let by_ncgen = url(&dir.path().join("by-ncgen.zarr"), "zarr,file");
    ncgen(Host::Ref410, &cdl, &by_ncgen).expect("ncgen on 4.10.1");
    let by_nccopy = url(&dir.path().join("by-nccopy.zarr"), "zarr,file");
    run(Host::Ref410, "nccopy", &[nc.to_str().unwrap(), &by_nccopy])
        .output()
        .expect("nccopy on 4.10.1");
    for (u, want) in [
        (&by_ncgen, "d = 2.5, _, _ ;"),
        (&by_nccopy, "f = _, _, _ ;"),
        (&by_nccopy, "dnan = 1, _, 3 ;"),
    ] {
        let ours = ncdump(Host::Ours, &[], u).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(ours, ncdump(Host::Ref410, &[], u).unwrap(), "{u}");
        assert!(
            ours.lines().any(|l| l.trim() == want),
            "{want:?} in\n{ours}"
        );
    }
    let copied = ncdump(Host::Ours, &["-h"], &by_nccopy).unwrap();
    assert!(copied.contains("f:_FillValue = -9999.f ;"), "{copied}");
    assert!(copied.contains("dnan:_FillValue = NaN ;"), "{copied}");
}

/// One build serves every netcdf-c with dispatch table version 5 (DESIGN.md §1): the same
/// write/read as the first test, with stock tools running on netcdf-c 4.10.1 plus our library.
#[test]
fn ours_on_netcdf_4101_host() {
    let mut report = Report::new("ours_on_4.10.1");
    let dir = scratch("host410");
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let outcome = (|| {
            let truth = dump::normalise_name(&hdf5_truth(dir.path(), &cdl, &["-p", "9,17"]));
            let u = url(&dir.path().join(format!("{name}.zarr")), NCZARR);
            ncgen(Host::OursOn410, &cdl, &u)?;
            let ours = dump::normalise_name(&ncdump(Host::OursOn410, &["-p", "9,17"], &u)?);
            diff::compare(&truth, &ours, "ncdump on 4.10.1 host vs HDF5")
        })();
        report.case(&name, outcome);
    }
    report.finish(10);
}

/// The preload really replaces the built-in NCZarr: a store we write has the current layout
/// (DESIGN.md §4: `_nczarr_superblock` in the root `.zattrs`), not Debian 4.9.0's (`_NCZARR_*` keys
/// inside `.zgroup`). Without this, every other test could silently be testing the built-in code.
#[test]
fn preload_takes_over_nczarr() {
    if common::reference_only() {
        eprintln!("reference-only mode: nothing to take over");
        return;
    }
    let dir = scratch("takeover");
    let cdl = common::repo_root().join("tests/cdl/atomic_vars.cdl");
    let u = write_ours(dir.path(), &cdl, NCZARR).unwrap();
    let store = dir.path().join("atomic_vars.nczarr_file.zarr");
    let zattrs = fs::read_to_string(store.join(".zattrs")).unwrap_or_default();
    let zgroup = fs::read_to_string(store.join(".zgroup")).unwrap_or_default();
    assert!(
        zattrs.contains("_nczarr_superblock") && !zgroup.contains("_NCZARR_"),
        "{u} was not written by the library under test\n.zgroup: {zgroup}\n.zattrs: {zattrs}"
    );
}

/// netCDF users on netcdf-c 4.10.1 (netCDF4-python bundles it) must read what we write: stock
/// ncdump on the 4.10.1 library, *without* our library, dumps our NCZarr stores like the HDF5
/// truth, with 4.10.1's own reading bugs waived (they are in `reference_bugs`).
#[test]
fn netcdf_4101_reads_our_stores() {
    let mut report = Report::new("4.10.1_reads_ours");
    let dir = scratch("ref410reads");
    let waivers = reference_bugs();
    for cdl in cdl_files() {
        let name = case_name(&cdl);
        let outcome = write_ours(dir.path(), &cdl, NCZARR).and_then(|u| {
            let truth = dump::normalise_name(&hdf5_truth(dir.path(), &cdl, &["-p", "9,17"]));
            let theirs = dump::normalise_name(&ncdump(Host::Ref410, &["-p", "9,17"], &u)?);
            compare_with_waivers(&name, &theirs, &truth, &waivers).map(|_| ())
        });
        report.case(&name, outcome);
    }
    report.finish(15);
}

/// `ZARR.DIMENSION_SEPARATOR=/` in a `.ncrc` makes new variables' chunk keys use `/`, with the
/// same objects, keys and `.zarray` separator as the built-in NCZarr of netcdf-c 4.9.0 writes
/// under the same file; each reads the other's store; without the key both write `.`.
#[test]
fn ncrc_dimension_separator_matches_the_reference() {
    let dir = scratch("ncrc-separator");
    let rc_home = dir.path().join("rc-home");
    fs::create_dir(&rc_home).unwrap();
    fs::write(rc_home.join(".ncrc"), "ZARR.DIMENSION_SEPARATOR=/\n").unwrap();
    let cdl = dir.path().join("sep.cdl");
    fs::write(
        &cdl,
        "netcdf sep {\ndimensions:\n  y = 4 ;\n  x = 6 ;\nvariables:\n  int v(y, x) ;\n    \
         v:_ChunkSizes = 2, 3 ;\ndata:\n  v = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, \
         15, 16, 17, 18, 19, 20, 21, 22, 23 ;\n}\n",
    )
    .unwrap();
    let cdl = cdl.to_str().unwrap();
    let rc_home = rc_home.to_str().unwrap();
    let with_rc = [("NCRCENV_HOME", Some(rc_home)), ("NCRCENV_RC", None)];
    let without_rc = [("NCRCENV_IGNORE", Some("1"))];
    let chunk_keys = |store: &Path| -> Vec<String> {
        common::directory_objects(store)
            .into_keys()
            .filter(|k| k.starts_with("v/") && !k.ends_with(".zarray") && !k.ends_with(".zattrs"))
            .collect()
    };
    for (label, env, separator) in [("rc", &with_rc[..], "/"), ("no-rc", &without_rc[..], ".")] {
        let mut stores = Vec::new();
        for host in [Host::Stock, Host::Ours] {
            let store = dir.path().join(format!("{label}-{host:?}.zarr"));
            let target = url(&store, NCZARR);
            let r = common::run_env(host, "ncgen", &["-4", "-o", &target, cdl], env);
            assert!(r.success(), "{label} {host:?}: {}", r.describe());
            let zarray = fs::read_to_string(store.join("v/.zarray")).unwrap();
            let json: serde_json::Value = serde_json::from_str(&zarray).unwrap();
            let written = json["dimension_separator"].as_str().unwrap_or(".");
            assert_eq!(written, separator, "{label} {host:?}: {zarray}");
            stores.push((host, store, target));
        }
        let keys: Vec<Vec<String>> = stores.iter().map(|(_, s, _)| chunk_keys(s)).collect();
        assert_eq!(keys[0], keys[1], "{label}: chunk keys, reference then ours");
        assert_eq!(keys[1].len(), 4, "{label}: {:?}", keys[1]);
        let dumps: Vec<String> = [
            (Host::Stock, &stores[1].2),
            (Host::Ours, &stores[0].2),
            (Host::Ours, &stores[1].2),
        ]
        .into_iter()
        .map(|(host, target)| {
            let r = common::run_env(host, "ncdump", &[target], env);
            assert!(
                r.success(),
                "{label} {host:?} reading {target}: {}",
                r.describe()
            );
            // The data only: netcdf-c 4.9.0 shows the newer NCZarr attributes as its own.
            let dumped = dump::normalise_name(&r.stdout);
            dumped
                .split_once("data:")
                .map_or(dumped.clone(), |(_, data)| data.to_string())
        })
        .collect();
        assert!(
            dumps
                .iter()
                .all(|d| d == &dumps[0] && d.contains("18, 19, 20, 21, 22, 23")),
            "{label}: {dumps:?}"
        );
    }
}
