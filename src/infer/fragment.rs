//! How libnetcdf reads a URL's parameters into mode words (`ncuri.c` and `dinfermodel.c`, the
//! same in 4.9.0 and 4.10.1 up to the inference step), and the fragment to give it instead
//! where 4.9.0's inference would never end.
//!
//! libnetcdf takes the words its protocol implies (`s3://` implies `mode=s3`), then the
//! parameters of a `[k=v]` prefix and of the fragment, of which it drops any later one whose
//! key repeats (4.9.0 when its value differs, 4.10.1 when it is the same). It replaces each stand-alone macro key (`zarr`, `xarray`,
//! `s3`, ...) by `mode` and the macro's words: a macro of two words shifts every parameter after
//! it by one place, so that what followed as keys is read as values and the reverse. It then
//! joins the values of each key. 4.9.0 infers mode words from mode words (`zarr` implies
//! `nczarr`, `xarray` implies `zarr`, `noxarray` implies `nczarr`) in a loop that ends only when
//! the *last* word of the `mode` value implies nothing, allocating until the process dies;
//! 4.10.1 infers them to a fixed point. Where 4.9.0 would loop, the fragment becomes the
//! parameters as libnetcdf joined them, with the mode words 4.10.1 infers from them ordered so
//! that the last implies nothing: both libraries read from it the words 4.10.1 reads from the
//! original. Every other path is left as it is.
//!
//! Owns only this text; it must not know how a dataset is read.

/// Mode words that imply another in 4.9.0 (`modeinferences`; compared without case).
const INFERENCES: &[(&str, &str)] = &[
    ("zarr", "nczarr"),
    ("xarray", "zarr"),
    ("noxarray", "nczarr"),
];

/// The inference 4.10.1 adds.
const NOXARRAY_ZARR: (&str, &str) = ("noxarray", "zarr");

/// The inferences of 4.10.1 (`true`) or 4.9.0.
fn inferences(of_410: bool) -> impl Iterator<Item = &'static (&'static str, &'static str)> {
    INFERENCES.iter().chain(of_410.then_some(&NOXARRAY_ZARR))
}

/// Mode words that remove others (`modenegations`; compared without case).
const NEGATIONS: [(&str, &str); 3] = [
    ("bytes", "nczarr"),
    ("bytes", "zarr"),
    ("noxarray", "xarray"),
];

/// A stand-alone key and the `mode` words it stands for (`macrodefs`; compared with case).
type Macro = (&'static str, &'static [&'static str]);

/// The macros of 4.9.0.
const MACROS: &[Macro] = &[
    ("zarr", &["nczarr", "zarr"]),
    ("dap2", &["dap2"]),
    ("dap4", &["dap4"]),
    ("s3", &["s3", "nczarr"]),
    ("bytes", &["bytes"]),
    ("xarray", &["zarr"]),
    ("noxarray", &["nczarr", "noxarray"]),
];

/// The macro 4.10.1 adds: Google's S3.
const GS3: Macro = ("gs3", &["gs3", "nczarr"]);

/// The macros of 4.10.1 (`true`) or 4.9.0.
fn macros(of_410: bool) -> impl Iterator<Item = &'static Macro> {
    MACROS.iter().chain(of_410.then_some(&GS3))
}

/// A `key=value` parameter; a key alone has the empty value.
type Param = (String, String);

/// What becomes of a name whose fragment sends libnetcdf 4.9.0 into its endless loop.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Looping {
    /// Its fragment, rewritten.
    Fragment(String),
    /// Refused: the rewrite could not be written so that libnetcdf reads it back as it is
    /// (backslashes that libnetcdf's own clean-up would take away).
    Refused,
}

/// What becomes of the fragment of a URL of `protocol` whose prefix (`[...]`) parameters are
/// `prefix` and whose fragment is `fragment` (both as libnetcdf cleaned them: no control
/// characters, `\\` as `\`); `None` where libnetcdf 4.9.0 does not loop.
pub(super) fn repaired(protocol: &str, prefix: &str, fragment: &str) -> Option<Looping> {
    let implied = match protocol {
        "http" | "https" | "file" => None,
        "dods" => Some("mode=dap2"),
        "dap4" => Some("mode=dap4"),
        "s3" => Some("mode=s3"),
        // libnetcdf 4.9.0 refuses other protocols before it infers anything.
        _ => return None,
    };
    let mut given = parsed(prefix);
    given.extend(parsed(fragment));
    let read = |kept: Vec<Param>, of_410: bool| {
        let mut params = implied.map(parsed).unwrap_or_default();
        params.extend(kept);
        joined(&expanded(params, of_410))
    };
    let as_490 = read(without_later(&given, |same_value| !same_value), false);
    let mode_490 = as_490
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("mode"))?;
    let last = mode_490.1.rsplit(',').next().unwrap_or("");
    if !implies(false, last) {
        return None;
    }
    if format!("{prefix}{fragment}").contains("\\\\") {
        return Some(Looping::Refused);
    }
    let mut joined = read(without_later(&given, |same_value| same_value), true);
    let mode = joined
        .iter_mut()
        .find(|(k, _)| k.eq_ignore_ascii_case("mode"))?;
    mode.1 = inferred(&mode.1).join(",");
    let kept: Vec<String> = joined
        .into_iter()
        // A macro's name as a key alone would be expanded again, and a key holding `=` read
        // as a key and a value; as keys they mean nothing.
        .filter(|(k, v)| {
            let expands_again = v.is_empty() && macros(true).any(|(m, _)| m == k);
            !(k.is_empty() || k.contains('=') || expands_again)
        })
        .map(|(k, v)| if v.is_empty() { k } else { format!("{k}={v}") })
        .collect();
    Some(Looping::Fragment(kept.join("&")))
}

/// Keys a dataset URL's fragment may carry besides its mode (compared without case).
const DATASET_KEYS: [&str; 4] = ["log", "show", "aws.profile", "aws.region"];

/// True when every parameter of `fragment` (after the `#`) is one of [`DATASET_KEYS`].
pub(super) fn only_dataset_keys(fragment: &str) -> bool {
    parsed(fragment)
        .iter()
        .all(|(k, _)| DATASET_KEYS.iter().any(|d| d.eq_ignore_ascii_case(k)))
}

/// True when `word` implies another mode word (in 4.10.1, or in 4.9.0).
fn implies(of_410: bool, word: &str) -> bool {
    inferences(of_410).any(|(w, _)| w.eq_ignore_ascii_case(word))
}

/// `text` split at each `separator` that no backslash escapes (`nclocate`).
pub(super) fn split_unescaped(text: &str, separator: char) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in text.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == separator {
            pieces.push(&text[start..i]);
            start = i + c.len_utf8();
        }
    }
    pieces.push(&text[start..]);
    pieces
}

/// `parselist`: the `&`-separated parameters of `text` (a final empty one is not one).
fn parsed(text: &str) -> Vec<Param> {
    let mut pieces = split_unescaped(text, '&');
    if pieces.last() == Some(&"") {
        pieces.pop();
    }
    pieces
        .into_iter()
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (p.to_string(), String::new()),
        })
        .collect()
}

/// `removedups`: `params` without each later parameter whose key repeats (without case) and
/// whose value `drops` (told whether it is the same, without case): 4.9.0 drops those of
/// another value, 4.10.1 those of the same value.
fn without_later(params: &[Param], drops: impl Fn(bool) -> bool) -> Vec<Param> {
    let mut kept: Vec<Param> = Vec::with_capacity(params.len());
    for (k, v) in params {
        let dropped = kept
            .iter()
            .any(|(k0, v0)| k0.eq_ignore_ascii_case(k) && drops(v0.eq_ignore_ascii_case(v)));
        if !dropped {
            kept.push((k.clone(), v.clone()));
        }
    }
    kept
}

/// `processmacros` (of 4.10.1 or 4.9.0): the keys and values in one list, each stand-alone
/// macro key replaced by `mode` and its words (so a macro of two words shifts the pairing of
/// everything after it).
fn expanded(params: Vec<Param>, of_410: bool) -> Vec<String> {
    let mut flat = Vec::with_capacity(params.len() * 2);
    for (k, v) in params {
        match macros(of_410).find(|(m, _)| v.is_empty() && *m == k) {
            Some((_, words)) => {
                flat.push("mode".to_string());
                flat.extend(words.iter().map(|w| w.to_string()));
            }
            None => flat.extend([k, v]),
        }
    }
    flat
}

/// `cleanfragments`: the list read again as pairs (a final key without a value has none), the
/// values of each key (without case) joined by commas, keys in their first order.
fn joined(flat: &[String]) -> Vec<Param> {
    let mut out: Vec<Param> = Vec::new();
    for key in flat.iter().step_by(2) {
        if out.iter().any(|(k, _)| k.eq_ignore_ascii_case(key)) {
            continue;
        }
        let values: Vec<Option<&String>> = (0..flat.len())
            .step_by(2)
            .filter(|&i| flat[i].eq_ignore_ascii_case(key))
            .map(|i| flat.get(i + 1))
            .collect();
        // `list2string`: empty values are skipped, but a comma goes before every later one.
        let mut value = String::new();
        for (i, v) in values.iter().enumerate() {
            if let Some(v) = v.filter(|v| !v.is_empty()) {
                if i > 0 {
                    value.push(',');
                }
                value.push_str(v);
            }
        }
        out.push((key.clone(), value));
    }
    out
}

/// The mode words 4.10.1 makes of `value` (what each implies, to a fixed point, without
/// repeats, less what others remove), those that imply another first.
fn inferred(value: &str) -> Vec<String> {
    let same = |a: &str, b: &str| a.eq_ignore_ascii_case(b);
    let mut words: Vec<String> = Vec::new();
    let mut current: Vec<String> = value
        .split(',')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    while !current.is_empty() {
        let mut next: Vec<String> = Vec::new();
        for word in &current {
            for (w, implied) in inferences(true) {
                if same(w, word) && !next.iter().any(|n| same(n, implied)) {
                    next.push(implied.to_string());
                }
            }
        }
        for word in current {
            if !words.iter().any(|w| same(w, &word)) {
                words.push(word);
            }
        }
        current = next;
    }
    let removed: Vec<&str> = NEGATIONS
        .iter()
        .filter(|(w, _)| words.iter().any(|x| same(x, w)))
        .map(|(_, gone)| *gone)
        .collect();
    words.retain(|w| !removed.iter().any(|gone| same(gone, w)));
    let (implying, rest): (Vec<String>, Vec<String>) = words
        .into_iter()
        // What 4.9.0 infers from must not be last.
        .partition(|w| implies(false, w));
    implying.into_iter().chain(rest).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rewritten fragment, or `<refused>`.
    fn text(protocol: &str, prefix: &str, fragment: &str) -> Option<String> {
        repaired(protocol, prefix, fragment).map(|l| match l {
            Looping::Fragment(f) => f,
            Looping::Refused => "<refused>".to_string(),
        })
    }

    fn file(fragment: &str) -> Option<String> {
        text("file", "", fragment)
    }

    #[test]
    fn looping_fragments_get_the_words_4_10_infers_ending_in_one_that_infers_nothing() {
        for (given, wanted) in [
            ("mode=zarr", "mode=zarr,nczarr"),
            ("mode=nczarr,zarr", "mode=zarr,nczarr"),
            ("mode=xarray", "mode=xarray,zarr,nczarr"),
            // 4.10.1 has `noxarray` imply `zarr` too.
            ("mode=nczarr,noxarray", "mode=noxarray,zarr,nczarr"),
            // 4.10.1 expands a stand-alone `gs3`; 4.9.0 does not.
            ("mode=zarr&gs3", "mode=zarr,gs3,nczarr&nczarr"),
            ("log&MODE=ZARR&", "log&MODE=ZARR,nczarr"),
            ("xarray", "mode=zarr,nczarr"),
            ("xarray&log", "mode=zarr,nczarr&log"),
            // 4.9.0 drops a later `mode` of another value (and would loop on `zarr` alone);
            // 4.10.1 joins the two.
            ("mode=zarr&mode=file", "mode=zarr,file,nczarr"),
            ("mode=zarr&mode=zarr", "mode=zarr,nczarr"),
            // A mode key with stand-alone macros.
            ("mode=zarr&xarray", "mode=zarr,nczarr"),
            ("mode=nczarr,file&xarray", "mode=zarr,nczarr,file"),
            ("mode=zarr,file&xarray&log", "mode=zarr,file,nczarr&log"),
            // Two-word macros shift the pairs after them: `zarr=mode` and `nczarr=zarr` are
            // what libnetcdf makes of these, and it keeps them.
            (
                "noxarray&zarr&mode=zarr",
                "mode=zarr,nczarr&noxarray=mode&nczarr=zarr",
            ),
            // 4.10.1 drops the repeated `zarr` first, and so reads `mode=nczarr` only.
            ("zarr&zarr&mode=zarr", "mode=nczarr&zarr=mode"),
            (
                "noxarray&zarr&xarray",
                "mode=zarr,nczarr&noxarray=mode&nczarr=zarr",
            ),
            // `bytes` removes `zarr` and `nczarr`; `xarray` is then the only word implying one.
            ("mode=bytes,xarray", "mode=xarray,bytes"),
        ] {
            assert_eq!(file(given).as_deref(), Some(wanted), "{given}");
        }
    }

    #[test]
    fn shifted_keys_holding_a_value_are_dropped() {
        // Shifted, `x=mode=s3` makes a key `mode=s3`: written out, it would be read as a mode.
        let got = file("zarr&zarr&mode=xarray&x=mode=s3").unwrap();
        assert!(got.split('&').all(|p| p.matches('=').count() <= 1), "{got}");
        assert!(!got.contains("s3"), "{got}");
    }

    #[test]
    fn escaped_separators_and_doubled_backslashes() {
        assert_eq!(file("x=a\\&mode=zarr"), None, "an escaped & joins the two");
        assert_eq!(
            file("mode=zarr&x=a\\b").as_deref(),
            Some("mode=zarr,nczarr&x=a\\b")
        );
        assert_eq!(file("mode=zarr&x=a\\\\b").as_deref(), Some("<refused>"));
    }

    #[test]
    fn fragments_4_9_0_reads_without_looping_are_kept() {
        for given in [
            "mode=nczarr,file",
            "mode=zarr,file",
            "mode=zarr,",
            "mode=zarr,consolidated",
            "mode=zarr,nczarr",
            "mode=dap4",
            "",
            "log&show=fetch",
            "zarr",
            "noxarray",
            "XARRAY",
            "log&noxarray&mode=s3",
            "zarr&mode=zarr",
            "mode=nczarr,file&mode=s3",
            "mode=file&mode=zarr",
        ] {
            assert_eq!(file(given), None, "{given}");
        }
    }

    #[test]
    fn the_protocol_and_the_prefix_count() {
        assert_eq!(
            text("s3", "", "mode=zarr").as_deref(),
            Some("mode=zarr,s3,nczarr")
        );
        assert_eq!(text("s3", "", "mode=nczarr"), None);
        assert_eq!(
            text("ftp", "", "mode=zarr"),
            None,
            "refused before inference"
        );
        assert_eq!(
            text("file", "mode=zarr", "").as_deref(),
            Some("mode=zarr,nczarr")
        );
        assert_eq!(
            text("file", "log&mode=zarr", "show=fetch").as_deref(),
            Some("log&mode=zarr,nczarr&show=fetch")
        );
        assert_eq!(
            text("file", "mode=nczarr,file", "mode=zarr"),
            None,
            "the prefix's mode first"
        );
    }
}
