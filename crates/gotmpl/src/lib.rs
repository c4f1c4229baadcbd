//! Go `text/template` with sprig and Helm's functions. Knows nothing of Fleet or Kubernetes.
//!
//! The engine mirrors Go's parser and executor closely (including error texts), because Helm
//! charts are judged by what real Helm renders and which errors it reports.

#![warn(missing_docs)]

mod error;
mod exec;
mod fmt;
mod funcs;
pub mod helm;
pub mod json;
mod lex;
mod parse;
pub mod toml;
mod value;
pub mod yaml;

use std::collections::HashMap;
use std::sync::Arc;

pub use error::{Error, ErrorKind};
pub use exec::Ctx;
pub use funcs::{FuncFn, Ty};
pub use value::{Object, Value, map_of};

/// Go's `missingkey` option: what a missing map key evaluates to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MissingKey {
    /// `missingkey=default`/`invalid`: the "no value" (prints `<no value>`).
    #[default]
    Default,
    /// `missingkey=zero`: the zero value (nil interface) — what Helm uses.
    Zero,
    /// `missingkey=error`: execution stops with an error (Helm's strict mode).
    Error,
}

/// A set of named templates sharing `define`s, like Go's *template.Template with its associated templates.
#[derive(Clone)]
pub struct Templates {
    pub(crate) trees: HashMap<String, Arc<parse::Tree>>,
    pub(crate) funcs: Arc<HashMap<String, funcs::Func>>,
    pub(crate) missing: MissingKey,
    pub(crate) set_name: String,
}

impl Default for Templates {
    fn default() -> Self {
        Templates::new()
    }
}

impl std::fmt::Debug for Templates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Templates")
            .field("names", &self.names())
            .field("missing", &self.missing)
            .finish()
    }
}

impl Templates {
    /// An empty set with Go's builtins, all of sprig v3 (env/expandenv disabled) and Helm's functions
    /// (include, tpl, required, fail, toYaml, fromYaml, toJson, lookup, ...).
    pub fn new() -> Templates {
        Templates {
            trees: HashMap::new(),
            funcs: funcs::default_funcs(),
            missing: MissingKey::Default,
            set_name: "gotpl".to_string(),
        }
    }

    /// Go's Option("missingkey=zero|error|default"). Helm uses "missingkey=zero" (and error for strict).
    pub fn missing_key(&mut self, mode: MissingKey) -> &mut Self {
        self.missing = mode;
        self
    }

    /// Names the set itself (Go's root template name; Helm uses "gotpl"). `tpl` parses under
    /// this name and "no template associated with" errors mention it.
    pub fn set_name(&mut self, name: &str) -> &mut Self {
        self.set_name = name.to_string();
        self
    }

    /// Adds or replaces a template function (e.g. Helm's `lookup` when online). `params` are Go's
    /// parameter types; `variadic` the type of a trailing `...` parameter.
    pub fn add_func(
        &mut self,
        name: &str,
        params: Vec<Ty>,
        variadic: Option<Ty>,
        f: FuncFn,
    ) -> &mut Self {
        Arc::make_mut(&mut self.funcs).insert(
            name.to_string(),
            funcs::Func {
                params,
                variadic,
                f,
                special: funcs::Special::None,
            },
        );
        self
    }

    /// Whether a function of that name exists.
    pub fn has_func(&self, name: &str) -> bool {
        self.funcs.contains_key(name)
    }

    /// Parses `text` as template `name`, adding any `define`/`block` it contains to the set.
    /// Errors look like Go's: `template: NAME:LINE: message` / `template: NAME:LINE:COL: ...`.
    pub fn parse(&mut self, name: &str, text: &str) -> Result<(), Error> {
        let funcs = self.funcs.clone();
        let has = move |n: &str| funcs.contains_key(n);
        let trees = stacker::maybe_grow(64 * 1024, 4 * 1024 * 1024, || {
            parse::parse(name, text, &has)
        })?;
        for t in trees {
            // Go's associate: an empty redefinition never replaces an existing template.
            if t.is_empty()
                && let Some(old) = self.trees.get(&t.name)
                && t.name != name
            {
                let _ = old;
                continue;
            }
            self.trees.insert(t.name.clone(), Arc::new(t));
        }
        Ok(())
    }

    /// Executes template `name` with `data` as dot. Go's execution errors:
    /// `template: NAME:LINE:COL: executing "NAME" at <.Values.x>: message`.
    pub fn execute(&self, name: &str, data: &Value) -> Result<String, Error> {
        let shared = std::cell::RefCell::new(exec::Shared::default());
        self.execute_shared(name, data, &shared, 0)
    }

    pub(crate) fn execute_shared(
        &self,
        name: &str,
        data: &Value,
        shared: &std::cell::RefCell<exec::Shared>,
        depth: usize,
    ) -> Result<String, Error> {
        let Some(tree) = self.trees.get(name).cloned() else {
            return Err(Error::other(
                name,
                format!(
                    "template: no template {} associated with template {}",
                    lex::go_quote(name),
                    lex::go_quote(&self.set_name)
                ),
            ));
        };
        let mut st = exec::State {
            set: self,
            tree: tree.clone(),
            vars: vec![("$".into(), data.clone(), false)],
            depth,
            shared,
            applied: shared.borrow().mutations.len(),
        };
        let mut out = String::new();
        st.walk_list(data, false, &tree.root, &mut out)?;
        Ok(out)
    }

    /// Names of all templates in the set (for iterating chart files).
    pub fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.trees.keys().cloned().collect();
        v.sort();
        v
    }

    /// Whether template `name` exists in the set.
    pub fn has_template(&self, name: &str) -> bool {
        self.trees.contains_key(name)
    }
}
