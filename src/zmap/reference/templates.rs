//! Version 1's templates: `{{ name }}` placeholders in reference URLs, and the Jinja of
//! generators and of templates that take arguments, rendered by minijinja within one budget of
//! work per document.
//!
//! Owns the rendering rules. A placeholder that names a template without placeholders of its own
//! is substituted directly (nearly every document). Anything else is Jinja: an undefined name is
//! an error, each rendering is bounded by minijinja's fuel, all of a document's renderings
//! (template functions included) by one budget, and template functions may nest only a few
//! deep. It must not know what the rendered text names.

use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, State, Template, UndefinedBehavior};
use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Work one rendering may take (minijinja's fuel: about one per instruction, and per 64 bytes
/// produced): far more than any URL or offset needs.
const FUEL_PER_RENDERING: u64 = 100_000;

/// Work all of one document's renderings may take: room for millions of generated keys, and
/// a bound of seconds on what a hostile document can ask for (about 3 s here).
pub const FUEL_PER_DOCUMENT: u64 = 200_000_000;

/// How deep template functions may call one another.
const MOST_NESTED_CALLS: usize = 8;

/// The longest text one rendering may make: URLs, keys and numbers are far shorter.
pub const LONGEST_RENDERING: usize = 4096;

/// Bytes all of one document's renderings may make, as the document itself may hold.
const MOST_RENDERED_BYTES: u64 = super::super::LARGEST_OBJECT_AT_FIRST;

/// Fuel charged for compiling `text` (compiling costs about what reading it does).
fn compile_fuel(text: &str) -> u64 {
    text.len() as u64 / 64 + 1
}

/// The templates of one document, and the work spent rendering them.
pub struct Templates {
    plain: BTreeMap<String, String>,
    /// The plain templates, as the values of a Jinja context.
    values: Value,
    env: Environment<'static>,
    spent: Cell<u64>,
    rendered_bytes: Cell<u64>,
    budget: u64,
    rendered: RefCell<HashMap<String, String>>,
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("plain", &self.plain)
            .field("spent", &self.spent.get())
            .finish_non_exhaustive()
    }
}

impl Templates {
    /// The document's templates: those holding placeholders are functions of keyword
    /// arguments (as fsspec makes them), rendered with those arguments.
    pub fn new(all: &BTreeMap<String, String>) -> Templates {
        Templates::with_budget(all, FUEL_PER_DOCUMENT)
    }

    /// [`Templates::new`] with a budget of `budget` fuel for the document's renderings.
    fn with_budget(all: &BTreeMap<String, String>, budget: u64) -> Templates {
        let mut env = Environment::new();
        env.set_fuel(Some(FUEL_PER_RENDERING));
        env.set_undefined_behavior(UndefinedBehavior::Strict);
        let depth = Arc::new(AtomicUsize::new(0));
        for (name, text) in all.iter().filter(|(_, t)| t.contains("{{")) {
            let (text, depth) = (text.clone(), depth.clone());
            env.add_function(name.clone(), move |state: &State, kwargs: Kwargs| {
                call_template(state, &text, kwargs, &depth)
            });
        }
        let plain: BTreeMap<String, String> = all
            .iter()
            .filter(|(_, t)| !t.contains("{{"))
            .map(|(k, t)| (k.clone(), t.clone()))
            .collect();
        Templates {
            values: Value::from(plain.clone()),
            plain,
            env,
            spent: Cell::new(0),
            rendered_bytes: Cell::new(0),
            budget,
            rendered: RefCell::default(),
        }
    }

    /// A reference's URL `text`, its placeholders rendered (each distinct text once).
    pub fn url(&self, text: &str) -> Result<String, String> {
        if !text.contains("{{") {
            return Ok(text.to_string());
        }
        if let Some(done) = self.rendered.borrow().get(text) {
            return Ok(done.clone());
        }
        let done = match substituted(text, &self.plain) {
            Some(done) => done,
            None => self.run(&self.compile(text)?, Value::UNDEFINED)?,
        };
        self.rendered
            .borrow_mut()
            .insert(text.to_string(), done.clone());
        Ok(done)
    }

    /// `text` compiled, for rendering many times ([`Templates::run`]).
    pub fn compile<'s>(&'s self, text: &'s str) -> Result<Template<'s, 's>, String> {
        self.charge(compile_fuel(text))?;
        self.env
            .template_from_str(text)
            .map_err(|e| format!("template {text:?}: {e}"))
    }

    /// Charges `fuel` to the document's budget; an error once it is spent.
    fn charge(&self, fuel: u64) -> Result<(), String> {
        if self.spent.get() >= self.budget {
            return Err(format!(
                "its templates take more work than a document may ({} fuel)",
                self.budget
            ));
        }
        self.spent.set(self.spent.get().saturating_add(fuel));
        Ok(())
    }

    /// `template` rendered with `vars` and the plain templates in scope, its work charged to
    /// the document's budget.
    pub fn run(&self, template: &Template<'_, '_>, vars: Value) -> Result<String, String> {
        self.charge(0)?;
        let failed = |e: minijinja::Error| format!("template {:?}: {e}", template.source());
        let captured = template
            .render_captured(minijinja::context! { ..vars, ..self.values.clone() })
            .map_err(failed)?;
        let consumed = captured.state().fuel_levels().map_or(0, |(used, _)| used);
        self.charge(consumed)?;
        let output = captured.output();
        if output.len() > LONGEST_RENDERING {
            return Err(format!(
                "template {:?} makes {} bytes; a rendering may make {LONGEST_RENDERING}",
                template.source(),
                output.len()
            ));
        }
        let made = self.rendered_bytes.get() + output.len() as u64;
        if made > MOST_RENDERED_BYTES {
            return Err(format!(
                "its templates make more than {MOST_RENDERED_BYTES} bytes"
            ));
        }
        self.rendered_bytes.set(made);
        Ok(output.to_string())
    }
}

/// A template function's body: `text` rendered with the call's keyword arguments, its work
/// charged to the rendering that called it.
fn call_template(
    state: &State,
    text: &str,
    kwargs: Kwargs,
    depth: &AtomicUsize,
) -> Result<String, minijinja::Error> {
    if depth.fetch_add(1, Ordering::Relaxed) >= MOST_NESTED_CALLS {
        depth.fetch_sub(1, Ordering::Relaxed);
        return Err(minijinja::Error::new(
            minijinja::ErrorKind::InvalidOperation,
            "template functions nest too deep",
        ));
    }
    let rendered = state.consume_fuel(compile_fuel(text)).and_then(|()| {
        state
            .env()
            .template_from_str(text)
            .and_then(|t| t.render_captured(Value::from(kwargs)))
    });
    depth.fetch_sub(1, Ordering::Relaxed);
    let captured = rendered?;
    if let Some((used, _)) = captured.state().fuel_levels() {
        state.consume_fuel(used)?;
    }
    Ok(captured.output().to_string())
}

/// `text` with each `{{ name }}` replaced by the plain template `name`, when every placeholder
/// is one; `None` otherwise.
fn substituted(text: &str, plain: &BTreeMap<String, String>) -> Option<String> {
    let mut out = String::with_capacity(text.len() + 32);
    let mut rest = text;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let close = after.find("}}")?;
        out.push_str(plain.get(after[..close].trim())?);
        rest = &after[close + 2..];
    }
    out.push_str(rest);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn templates(pairs: &[(&str, &str)]) -> Templates {
        Templates::new(
            &pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        )
    }

    #[test]
    fn plain_templates_are_substituted_and_functions_called() {
        let t = templates(&[("u", "s3://b/d"), ("f", "/x{{c}}_{{ d }}.nc")]);
        assert_eq!(t.url("{{u}}/a.nc").unwrap(), "s3://b/d/a.nc");
        assert_eq!(
            t.url("{{ u }}{{f(c='7', d=2)}}").unwrap(),
            "s3://b/d/x7_2.nc"
        );
        assert_eq!(t.url("no placeholder").unwrap(), "no placeholder");
        let g = t.compile("k{{i}}.{{ (j + 1) * 1000 }}").unwrap();
        let vars = Value::from(BTreeMap::from([("i", 3), ("j", 1)]));
        assert_eq!(t.run(&g, vars).unwrap(), "k3.2000");
    }

    #[test]
    fn undefined_names_deep_calls_and_costly_templates_are_errors() {
        let t = templates(&[("f", "{{ f() }}"), ("u", "x")]);
        for bad in [
            "{{uu}}/a.nc",
            "{{ u.x.y }}",
            "{{ f() }}",
            "{{ 'x' * 10000000000 }}",
            "{{ range(10000) | map('string') | join('x' * 100000) }}",
            "{{ 'x' * 5000 }}",
            "{{u",
        ] {
            assert!(t.url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn compiling_template_functions_is_charged_to_the_document() {
        // Cheap to render, costly to compile: each call compiles the function's text again.
        let big = format!(
            "{{{{ 1 }}}}{{% if false %}}{}{{% endif %}}",
            "x".repeat(1 << 20)
        );
        let mut all = BTreeMap::new();
        all.insert("f".to_string(), big);
        let t = Templates::new(&all);
        let calls = t
            .compile("{% for i in range(50) %}{{ f() }}{% endfor %}")
            .unwrap();
        let first = t.run(&calls, Value::UNDEFINED);
        assert!(
            matches!(&first, Err(e) if e.contains("fuel")),
            "50 compilations of 1 MiB fit in one rendering: {first:?}"
        );
    }

    #[test]
    fn a_document_has_one_budget_for_all_its_renderings() {
        let t = Templates::with_budget(&BTreeMap::new(), 5_000_000);
        let costly = t
            .compile("{% for i in range(5000) %}{% set j = i * 2 %}{% endfor %}x")
            .unwrap();
        let mut runs = 0u64;
        let error = loop {
            match t.run(&costly, Value::UNDEFINED) {
                Ok(_) => runs += 1,
                Err(e) => break e,
            }
            assert!(runs < 5_000_000, "never stopped");
        };
        assert!(error.contains("more work than a document may"), "{error}");
        assert!(runs > 100, "stopped after {runs} renderings");
    }
}
