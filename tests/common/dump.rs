//! Understanding `ncdump` text: the normalisations the comparisons allow, the per-variable special
//! attributes of `ncdump -s`, and an order-insensitive form for pure Zarr (which stores no order).

use std::collections::BTreeMap;

/// True when a line of `dump`, trimmed, is `line`.
pub fn has_line(dump: &str, line: &str) -> bool {
    dump.lines().any(|l| l.trim() == line)
}

/// Replaces the first line `netcdf NAME {` (the name comes from the file name) with `netcdf _ {`.
pub fn normalise_name(dump: &str) -> String {
    let mut lines = dump.lines();
    let first = lines.next().unwrap_or("");
    assert!(
        first.starts_with("netcdf ") && first.ends_with(" {"),
        "not an ncdump text: {first}"
    );
    let mut out = String::from("netcdf _ {\n");
    for l in lines {
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Global special attributes that describe the storage library rather than the data, printed by
/// `ncdump -s`. `_Format` is not among them: it must be `"netCDF-4"` for us too.
const LIBRARY_GLOBALS: [&str; 3] = ["_NCProperties", "_SuperblockVersion", "_IsNetcdf4"];

/// `normalise_name` plus removal of the library-describing global attributes of `ncdump -s`.
pub fn normalise_s(dump: &str) -> String {
    let text = normalise_name(dump);
    let mut out = String::new();
    for l in text.lines() {
        let t = l.trim_start();
        if LIBRARY_GLOBALS
            .iter()
            .any(|g| t.starts_with(&format!(":{g} = ")))
        {
            continue;
        }
        out.push_str(l);
        out.push('\n');
    }
    out
}

/// Per-variable special attributes `ncdump -s` prints.
pub const VAR_SPECIALS: [&str; 9] = [
    "_Storage",
    "_ChunkSizes",
    "_Endianness",
    "_NoFill",
    "_DeflateLevel",
    "_Shuffle",
    "_Fletcher32",
    "_Filter",
    "_Codecs",
];

/// A variable as declared in a dump: group path, type, name (as escaped in CDL), dimension lengths.
#[derive(Clone, Debug, PartialEq)]
pub struct VarDecl {
    pub group: String,
    pub name: String,
    pub dims: Vec<u64>,
    /// Per dimension: declared UNLIMITED.
    pub unlimited: Vec<bool>,
    /// The special attributes printed for it (attribute name -> value text without ` ;`).
    pub specials: BTreeMap<String, String>,
}

/// Dimensions declared in one group: name -> (length, unlimited).
type Dims = BTreeMap<String, (u64, bool)>;

/// Splits an `ncdump -s` text into (text without per-variable special attribute lines, the
/// variables in order with their specials). Dimension lengths are resolved through enclosing groups.
pub fn split_specials(dump: &str) -> (String, Vec<VarDecl>) {
    let mut rest = String::new();
    let mut vars: Vec<VarDecl> = Vec::new();
    let mut scopes: Vec<(String, Dims)> = vec![(String::new(), BTreeMap::new())];
    let mut section = "";
    for line in dump.lines() {
        let t = line.trim();
        if let Some(g) = t.strip_prefix("group: ").and_then(|g| g.strip_suffix(" {")) {
            let path = format!("{}/{}", scopes.last().unwrap().0, g);
            scopes.push((path, BTreeMap::new()));
            section = "";
        } else if t.starts_with("} // group ") {
            scopes.pop();
            section = "";
        } else if t == "dimensions:" || t == "variables:" || t == "data:" {
            section = if t == "dimensions:" {
                "dims"
            } else if t == "variables:" {
                "vars"
            } else {
                "data"
            };
        } else if t.starts_with("// ") {
            section = "atts";
        } else if section == "dims" {
            if let Some((name, len, unlimited)) = parse_dim(t) {
                scopes.last_mut().unwrap().1.insert(name, (len, unlimited));
            }
        } else if section == "vars" {
            if let Some((var, att, value)) = parse_special(t) {
                if let Some(v) = vars.iter_mut().rev().find(|v| v.name == var) {
                    v.specials.insert(att, value);
                    continue;
                }
            } else if let Some((name, dimnames)) = parse_decl(line) {
                let (dims, unlimited) = dimnames
                    .iter()
                    .map(|d| {
                        scopes
                            .iter()
                            .rev()
                            .find_map(|(_, m)| m.get(d).copied())
                            .unwrap_or_else(|| panic!("dimension {d} of {name} not declared"))
                    })
                    .unzip();
                let group = scopes.last().unwrap().0.clone();
                vars.push(VarDecl {
                    group,
                    name,
                    dims,
                    unlimited,
                    specials: BTreeMap::new(),
                });
            }
        }
        rest.push_str(line);
        rest.push('\n');
    }
    (rest, vars)
}

fn parse_dim(t: &str) -> Option<(String, u64, bool)> {
    let (name, rest) = t.split_once(" = ")?;
    let unlimited = rest.starts_with("UNLIMITED");
    let len = if unlimited {
        let cur = rest.split("// (").nth(1)?;
        cur.split(' ').next()?.parse().ok()?
    } else {
        rest.trim_end_matches(" ;").parse().ok()?
    };
    Some((name.to_string(), len, unlimited))
}

/// `name:_Special = value ;` -> (name, _Special, value).
fn parse_special(t: &str) -> Option<(String, String, String)> {
    for s in VAR_SPECIALS {
        let pat = format!(":{s} = ");
        if let Some(pos) = t.find(&pat) {
            let name = &t[..pos];
            if name.is_empty() || name.replace("\\ ", "").contains(' ') {
                continue;
            }
            let value = t[pos + pat.len()..]
                .trim_end_matches(" ;")
                .trim_end_matches(';')
                .trim();
            return Some((name.to_string(), s.to_string(), value.to_string()));
        }
    }
    None
}

const TYPES: [&str; 12] = [
    "byte", "ubyte", "char", "short", "ushort", "int", "uint", "int64", "uint64", "float",
    "double", "string",
];

/// A declaration line: one tab (after group indentation) then `type name(dims) ;` or `type name ;`.
fn parse_decl(line: &str) -> Option<(String, Vec<String>)> {
    let t = line.trim_start();
    if line.len() - t.len() == 0 || line.trim_start_matches(' ').starts_with("\t\t") {
        return None;
    }
    let (ty, rest) = t.split_once(' ')?;
    if !TYPES.contains(&ty) {
        return None;
    }
    let rest = rest.strip_suffix(" ;")?;
    // The name ends at the first unescaped '('.
    let mut escaped = false;
    for (i, c) in rest.char_indices() {
        match c {
            '\\' if !escaped => escaped = true,
            '(' if !escaped => {
                let dims = rest[i + 1..].strip_suffix(')')?;
                let names = split_unescaped(dims);
                return Some((rest[..i].to_string(), names));
            }
            _ => escaped = false,
        }
    }
    Some((rest.to_string(), Vec::new()))
}

fn split_unescaped(s: &str) -> Vec<String> {
    let mut out = vec![String::new()];
    let mut escaped = false;
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if escaped {
            out.last_mut().unwrap().push(c);
            escaped = false;
        } else if c == '\\' {
            out.last_mut().unwrap().push(c);
            escaped = true;
        } else if c == ',' {
            out.push(String::new());
            if chars.peek() == Some(&' ') {
                chars.next();
            }
        } else {
            out.last_mut().unwrap().push(c);
        }
    }
    out
}

/// An order-insensitive form of a dump: within each group, dimension lines, variable declarations
/// (each with its attribute lines, whose order is kept) and data entries are sorted; blank lines are
/// dropped. Used for pure Zarr, which records no creation order.
pub fn canonical_order(dump: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut run: Vec<String> = Vec::new();
    let mut section = "";
    let mut decl_indent = 0usize;
    let flush = |run: &mut Vec<String>, out: &mut Vec<String>, sort: bool| {
        if sort {
            run.sort();
        }
        out.append(run);
    };
    for line in dump.lines() {
        let t = line.trim();
        if t.is_empty() {
            continue;
        }
        let header = t == "dimensions:"
            || t == "variables:"
            || t == "data:"
            || t.starts_with("// global attributes:")
            || t.starts_with("// group attributes:")
            || t.starts_with("group: ")
            || t.starts_with("} // group ")
            || t == "}";
        if header {
            flush(&mut run, &mut out, section != "atts");
            out.push(line.to_string());
            section = match t {
                "dimensions:" => "dims",
                "variables:" => "vars",
                "data:" => "data",
                _ if t.starts_with("//") => "atts",
                _ => "",
            };
            decl_indent = 0;
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        match section {
            "vars" => {
                if decl_indent == 0 {
                    decl_indent = indent;
                }
                if indent > decl_indent && !run.is_empty() {
                    let last = run.last_mut().unwrap();
                    last.push('\n');
                    last.push_str(line);
                } else {
                    run.push(line.to_string());
                }
            }
            "data" => match run.last_mut() {
                Some(last) if !last.ends_with(" ;") => {
                    last.push('\n');
                    last.push_str(line);
                }
                _ => run.push(line.to_string()),
            },
            "dims" | "atts" => run.push(line.to_string()),
            _ => out.push(line.to_string()),
        }
    }
    flush(&mut run, &mut out, section != "atts");
    let mut s = out.join("\n");
    s.push('\n');
    s
}

/// The data lines of a dump, without record braces: data lines start with spaces, while
/// declarations (also indented with spaces inside groups) continue with a tab, and section
/// keywords, comments and group brackets are not data.
pub fn data_lines(dump: &str) -> String {
    dump.lines()
        .filter(|l| l.starts_with(' '))
        .map(|l| l.trim_start_matches(' '))
        .filter(|l| {
            !l.is_empty()
                && !l.starts_with('\t')
                && !l.starts_with("//")
                && !l.starts_with("group:")
                && !l.starts_with('}')
                && !matches!(*l, "dimensions:" | "variables:" | "data:" | "types:")
        })
        .map(|l| format!("{}\n", l.replace(['{', '}'], "")))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specials_are_split_per_variable() {
        let dump = "netcdf _ {\ndimensions:\n\tx = 3 ;\n\tt = UNLIMITED ; // (2 currently)\nvariables:\n\tint a\\ b(t, x) ;\n\t\ta\\ b:units = \"m\" ;\n\t\ta\\ b:_Storage = \"chunked\" ;\n\t\ta\\ b:_ChunkSizes = 1, 3 ;\n\tdouble s ;\n\t\ts:_Storage = \"contiguous\" ;\n}\n";
        let (rest, vars) = split_specials(dump);
        assert!(!rest.contains("_Storage") && rest.contains("units"));
        assert_eq!(vars.len(), 2);
        assert_eq!(vars[0].name, "a\\ b");
        assert_eq!(vars[0].dims, vec![2, 3]);
        assert_eq!(vars[0].unlimited, vec![true, false]);
        assert_eq!(vars[0].specials["_ChunkSizes"], "1, 3");
        assert!(vars[1].dims.is_empty());
    }

    #[test]
    fn canonical_order_ignores_order_only() {
        let a = "netcdf _ {\ndimensions:\n\ta = 1 ;\n\tb = 2 ;\nvariables:\n\tint y(b) ;\n\t\ty:z = 1 ;\n\t\ty:a = 2 ;\n\tint x(a) ;\ndata:\n\n x = 1 ;\n\n y = 1, 2 ;\n}\n";
        let b = "netcdf _ {\ndimensions:\n\tb = 2 ;\n\ta = 1 ;\nvariables:\n\tint x(a) ;\n\tint y(b) ;\n\t\ty:z = 1 ;\n\t\ty:a = 2 ;\ndata:\n\n y = 1, 2 ;\n\n x = 1 ;\n}\n";
        assert_eq!(canonical_order(a), canonical_order(b));
        let c = b.replace("y:z = 1 ;\n\t\ty:a = 2", "y:a = 2 ;\n\t\ty:z = 1");
        assert_ne!(canonical_order(a), canonical_order(&c));
    }
}
