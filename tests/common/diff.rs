//! Line diffs for failure messages, and comparison against a reference implementation with an
//! explicit list of waived reference bugs.

/// A line-level difference between `expected` and `actual`, printed like `diff -u` (without hunk
/// headers; `-` lines are expected, `+` lines are actual, three lines of context). `None` when equal.
pub fn diff(expected: &str, actual: &str) -> Option<String> {
    if expected == actual {
        return None;
    }
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let ops = lcs_ops(&a, &b);
    let mut out = String::new();
    let keep = 3;
    let changed: Vec<bool> = ops.iter().map(|op| !matches!(op, Op::Same(_))).collect();
    let mut last_printed: Option<usize> = None;
    for (i, op) in ops.iter().enumerate() {
        let near = (i.saturating_sub(keep)..(i + keep + 1).min(ops.len())).any(|j| changed[j]);
        if !near {
            continue;
        }
        if last_printed.is_some_and(|l| l + 1 != i) || (last_printed.is_none() && i > 0) {
            out.push_str("@@\n");
        }
        last_printed = Some(i);
        match op {
            Op::Same(l) => out.push_str(&format!(" {}\n", clip(l))),
            Op::Del(l) => out.push_str(&format!("-{}\n", clip(l))),
            Op::Add(l) => out.push_str(&format!("+{}\n", clip(l))),
        }
    }
    if out.is_empty() {
        // Only a difference in the final newline.
        out.push_str("(texts differ only in trailing newline)\n");
    }
    Some(out)
}

fn clip(l: &str) -> String {
    const MAX: usize = 400;
    if l.chars().count() <= MAX {
        l.to_string()
    } else {
        let head: String = l.chars().take(MAX).collect();
        format!("{head}... ({} chars)", l.chars().count())
    }
}

enum Op<'a> {
    Same(&'a str),
    Del(&'a str),
    Add(&'a str),
}

/// Longest-common-subsequence edit script; inputs here are at most a few hundred lines.
fn lcs_ops<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<Op<'a>> {
    let (n, m) = (a.len(), b.len());
    let mut t = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            t[i][j] = if a[i] == b[j] {
                t[i + 1][j + 1] + 1
            } else {
                t[i + 1][j].max(t[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::new();
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Same(a[i]));
            i += 1;
            j += 1;
        } else if j < m && (i == n || t[i][j + 1] >= t[i + 1][j]) {
            ops.push(Op::Add(b[j]));
            j += 1;
        } else {
            ops.push(Op::Del(a[i]));
            i += 1;
        }
    }
    ops
}

/// A known bug of a reference implementation that makes its output differ from the correct one.
/// Waivers are deliberately narrow: each inspects one differing token (or line) pair.
pub struct Waiver {
    /// Short name, printed when the waiver is used.
    pub name: &'static str,
    /// Where the bug is documented (reference notes section) and what it is.
    pub bug: &'static str,
    pub rule: Rule,
}

pub enum Rule {
    /// `(ours, reference)` tokens of a line pair that differ only in such tokens.
    Token(fn(&str, &str) -> bool),
    /// Any difference on lines of this case whose correct text contains this fragment.
    Line {
        case: &'static str,
        contains: &'static str,
    },
}

/// Compares our text with a reference implementation's, allowing only differences covered by a
/// waiver. Lines must correspond one to one; returns the waivers used, or a diff plus the lines no
/// waiver explains.
pub fn compare_with_waivers(
    case: &str,
    ours: &str,
    reference: &str,
    waivers: &[Waiver],
) -> Result<Vec<&'static str>, String> {
    let Some(d) = diff(reference, ours) else {
        return Ok(Vec::new());
    };
    let a: Vec<&str> = ours.lines().collect();
    let b: Vec<&str> = reference.lines().collect();
    if a.len() != b.len() {
        // ncdump re-wraps data lines when a value's text changes length: compare the whole
        // token streams instead, with the token rules only.
        let whole = waive_line(case, &a.join(" "), &b.join(" "), waivers, false);
        return match whole {
            Some(mut names) => {
                names.sort();
                names.dedup();
                Ok(names)
            }
            None => Err(format!(
                "(- reference, + ours; line counts differ, no waiver applies)\n{d}"
            )),
        };
    }
    let mut used = Vec::new();
    let mut unexplained = Vec::new();
    for (o, r) in a.iter().zip(&b) {
        if o == r {
            continue;
        }
        match waive_line(case, o, r, waivers, true) {
            Some(names) => used.extend(names),
            None => unexplained.push(format!(
                "  ours:      {}\n  reference: {}",
                clip(o),
                clip(r)
            )),
        }
    }
    if unexplained.is_empty() {
        used.sort();
        used.dedup();
        Ok(used)
    } else {
        Err(format!(
            "(- reference, + ours)\n{d}lines no waiver explains:\n{}",
            unexplained.join("\n")
        ))
    }
}

/// The waivers explaining the difference between line `o` (ours) and `r` (reference); line
/// rules are consulted only for single lines (`line_rules`), never for whole dumps, where their
/// fragment would match somewhere and excuse everything.
fn waive_line(
    case: &str,
    o: &str,
    r: &str,
    waivers: &[Waiver],
    line_rules: bool,
) -> Option<Vec<&'static str>> {
    for w in waivers.iter().filter(|_| line_rules) {
        if let Rule::Line { case: c, contains } = w.rule
            && c == case
            && (o.contains(contains) || r.contains(contains))
        {
            return Some(vec![w.name]);
        }
    }
    let to = tokens(o);
    let tr = tokens(r);
    if to.len() != tr.len() {
        return None;
    }
    let mut used = Vec::new();
    for (x, y) in to.iter().zip(&tr) {
        if x == y {
            continue;
        }
        let w = waivers
            .iter()
            .find(|w| matches!(w.rule, Rule::Token(f) if f(x, y)))?;
        used.push(w.name);
    }
    Some(used)
}

/// Splits a CDL line into value-ish tokens (separators: blanks, commas, `;`, `=`, braces).
pub fn tokens(line: &str) -> Vec<&str> {
    line.split(|c: char| c.is_whitespace() || ",;={}".contains(c))
        .filter(|t| !t.is_empty())
        .collect()
}

/// Parses an ncdump numeric token (`1.5`, `0.`, `-3.4e+38f`, `NaNf`, `7b`, `7UB`, `-Infinity`).
pub fn number(tok: &str) -> Option<f64> {
    let t = tok.trim_end_matches(['f', 'F', 'b', 'B', 's', 'S', 'U', 'L']);
    match t {
        "NaN" => return Some(f64::NAN),
        "Infinity" => return Some(f64::INFINITY),
        "-Infinity" => return Some(f64::NEG_INFINITY),
        _ => {}
    }
    let t = t.strip_suffix('.').unwrap_or(t);
    t.parse::<f64>().ok()
}

/// `reference` is `ours` printed with 6 significant digits (`%lg`), i.e. precision was lost.
pub fn six_digits(ours: &str, reference: &str) -> bool {
    six_digits_of(ours, reference) || six_digits_of(reference, ours)
}

/// `rounded` is `exact` printed with 6 significant digits.
fn six_digits_of(exact: &str, rounded: &str) -> bool {
    match (number(exact), number(rounded)) {
        (Some(o), Some(r)) if o.is_finite() => {
            let rounded: f64 = format!("{o:.5e}").parse().unwrap();
            rounded == r || (rounded as f32) == (r as f32)
        }
        _ => false,
    }
}

/// `ours` is a negative zero and `reference` the same zero without its sign.
pub fn lost_zero_sign(ours: &str, reference: &str) -> bool {
    signed_zero_lost(ours, reference) || signed_zero_lost(reference, ours)
}

fn signed_zero_lost(ours: &str, reference: &str) -> bool {
    match (number(ours), number(reference)) {
        (Some(o), Some(r)) => o == 0.0 && o.is_sign_negative() && r == 0.0 && r.is_sign_positive(),
        _ => false,
    }
}

/// `ours` shows a fill cell (`_`) where the reference prints a number: the reference stored the
/// fill value rounded, so cells holding it no longer match `_FillValue`.
pub fn fill_not_recognised(ours: &str, reference: &str) -> bool {
    (ours == "_" && number(reference).is_some()) || (reference == "_" && number(ours).is_some())
}

/// `Ok` when `actual` equals `expected`, else the diff under the heading `what`.
pub fn compare(expected: &str, actual: &str, what: &str) -> Result<(), String> {
    match diff(expected, actual) {
        None => Ok(()),
        Some(d) => Err(format!("{what} (- expected, + actual)\n{d}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn six_digit_rule() {
        assert!(six_digits("3.14159265358979", "3.14159"));
        assert!(six_digits("-3.402823e+38f", "-3.40282e+38f"));
        assert!(!six_digits("3.14159265358979", "3.1416"));
        assert!(!six_digits("1", "2"));
    }

    #[test]
    fn diff_reports_changes() {
        assert!(diff("a\nb\n", "a\nb\n").is_none());
        let d = diff("a\nb\nc\n", "a\nx\nc\n").unwrap();
        assert!(d.contains("-b") && d.contains("+x"), "{d}");
    }

    #[test]
    fn line_rules_waive_single_lines_only() {
        let waivers = [Waiver {
            name: "text",
            bug: "test",
            rule: Rule::Line {
                case: "c",
                contains: ":t = ",
            },
        }];
        let reference = "a = 1 ;\n:t = \"x\" ;\n";
        assert_eq!(
            compare_with_waivers("c", "a = 1 ;\n:t = \"y\" ;\n", reference, &waivers),
            Ok(vec!["text"])
        );
        // A line more (or less) is not excused by a rule about another line.
        assert!(
            compare_with_waivers("c", "a = 2 ;\nextra ;\n:t = \"x\" ;\n", reference, &waivers)
                .is_err()
        );
    }
}
