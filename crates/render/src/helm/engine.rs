//! Helm's rendering engine on `gotmpl`: every template of the chart tree is parsed into one set
//! (deepest paths first, so a parent's `define` wins), each non-partial is executed with its
//! chart-scoped data, and errors are reworded like Helm's `cleanupParseError`/`cleanupExecError`.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use gotmpl::{ErrorKind, MissingKey, Templates, Value};

use super::chart::Chart;
use super::objects::{Capabilities, ChartObject, Files, to_tmpl_map};
use super::values::{Values, table};

/// One template to parse (and, unless a partial, render).
pub struct Renderable {
    /// Full name, e.g. `parent/charts/sub/templates/x.yaml`.
    pub name: String,
    /// Template text (UTF-8 bytes).
    pub text: Arc<[u8]>,
    /// The data map handed to it (without `Template`).
    pub data: Arc<BTreeMap<String, Value>>,
    /// `parent/charts/sub/templates`.
    pub base_path: String,
}

/// Helm's `allTemplates`/`recAllTpls`: collects the chart tree's templates with their data.
pub fn all_templates(
    chart: &Chart,
    values: &Values,
    release: &Value,
    caps: &Arc<Capabilities>,
) -> Vec<Renderable> {
    let mut out = Vec::new();
    rec_all_tpls(chart, values, true, chart.name(), release, caps, &mut out);
    out
}

fn rec_all_tpls(
    c: &Chart,
    vals: &Values,
    is_root: bool,
    full_path: &str,
    release: &Value,
    caps: &Arc<Capabilities>,
    out: &mut Vec<Renderable>,
) {
    let empty = Values::new();
    let next_values: &Values = if is_root {
        vals
    } else {
        table(vals, c.name()).unwrap_or(&empty)
    };
    let mut data = BTreeMap::new();
    data.insert(
        "Chart".to_string(),
        Value::Object(Arc::new(ChartObject(c.metadata.clone()))),
    );
    data.insert(
        "Files".to_string(),
        Value::Object(Arc::new(Files::new(&c.files))),
    );
    data.insert("Release".to_string(), release.clone());
    data.insert("Capabilities".to_string(), Value::Object(caps.clone()));
    data.insert("Values".to_string(), to_tmpl_map(next_values));
    let data = Arc::new(data);
    for child in &c.dependencies {
        let child_path = format!("{full_path}/charts/{}", child.name());
        rec_all_tpls(child, next_values, false, &child_path, release, caps, out);
    }
    let library = c.metadata.chart_type.eq_ignore_ascii_case("library");
    for t in &c.templates {
        let base = t.name.rsplit('/').next().unwrap_or(&t.name);
        if library && !base.starts_with('_') {
            continue;
        }
        out.push(Renderable {
            name: format!("{full_path}/{}", t.name),
            text: t.data.clone(),
            data: data.clone(),
            base_path: format!("{full_path}/templates"),
        });
    }
}

/// Helm's parse order: deeper paths first; within a depth, reverse lexical order.
pub fn sort_templates(names: &mut [&Renderable]) {
    names.sort_by(|a, b| {
        let ca = a.name.matches('/').count();
        let cb = b.name.matches('/').count();
        cb.cmp(&ca).then_with(|| b.name.cmp(&a.name))
    });
}

/// A template set with Helm's options, created once and cloned per render.
fn base_set() -> &'static Templates {
    static T: OnceLock<Templates> = OnceLock::new();
    T.get_or_init(|| {
        let mut t = Templates::new();
        t.missing_key(MissingKey::Zero);
        t.set_name("gotpl");
        t
    })
}

/// Parses (or takes from `cache`) and executes all templates; returns (name, output) for every
/// non-partial.
pub fn render(
    tpls: &[Renderable],
    cache: &super::chart::ParseCache,
) -> Result<Vec<(String, String)>, String> {
    let mut order: Vec<&Renderable> = tpls.iter().collect();
    sort_templates(&mut order);
    let key: String = order
        .iter()
        .map(|r| r.name.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let cached = cache.0.lock().ok().and_then(|m| m.get(&key).cloned());
    let set = match cached {
        Some(set) => set,
        None => {
            let mut set = base_set().clone();
            for r in &order {
                set.parse(&r.name, &String::from_utf8_lossy(&r.text))
                    .map_err(|e| cleanup_parse_error(&r.name, &e.to_string()))?;
            }
            if let Ok(mut m) = cache.0.lock() {
                m.insert(key, set.clone());
            }
            set
        }
    };
    let mut out = Vec::with_capacity(order.len());
    for r in &order {
        let base = r.name.rsplit('/').next().unwrap_or(&r.name);
        if base.starts_with('_') {
            continue;
        }
        let mut data = (*r.data).clone();
        let mut tmpl = BTreeMap::new();
        tmpl.insert("Name".to_string(), Value::from(r.name.as_str()));
        tmpl.insert("BasePath".to_string(), Value::from(r.base_path.as_str()));
        data.insert("Template".to_string(), Value::Map(Arc::new(tmpl)));
        let s = set
            .execute(&r.name, &Value::Map(Arc::new(data)))
            .map_err(|e| cleanup_exec_error(&r.name, e.kind, &e.to_string()))?;
        out.push((r.name.clone(), s.replace("<no value>", "")));
    }
    Ok(out)
}

/// Helm's `cleanupParseError`.
pub fn cleanup_parse_error(filename: &str, err: &str) -> String {
    let tokens: Vec<&str> = err.split(": ").collect();
    if tokens.len() == 1 {
        return format!("parse error in ({filename}): {err}");
    }
    let location = tokens[1];
    let msg = tokens[tokens.len() - 1];
    format!("parse error at ({location}): {msg}")
}

/// Helm's `cleanupExecError`: `required` failures become `execution error at (LOC): MSG`;
/// other execution errors keep Go's full text.
pub fn cleanup_exec_error(filename: &str, kind: ErrorKind, err: &str) -> String {
    if kind != ErrorKind::Exec {
        return err.to_string();
    }
    let tokens: Vec<&str> = err.splitn(3, ": ").collect();
    if tokens.len() != 3 {
        return format!("execution error in ({filename}): {err}");
    }
    let location = tokens[1];
    if let Some(start) = tokens[2].find("HELM_ERR_START") {
        let rest = &tokens[2][start + "HELM_ERR_START".len()..];
        if let Some(end) = rest.rfind("HELM_ERR_END") {
            return format!("execution error at ({location}): {}", &rest[..end]);
        }
    }
    const REQ: &str = "error calling required: ";
    if let Some(i) = tokens[2].rfind(REQ) {
        return format!(
            "execution error at ({location}): {}",
            &tokens[2][i + REQ.len()..]
        );
    }
    err.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn helm_error_rewording() {
        assert_eq!(
            cleanup_parse_error(
                "c/templates/x.yaml",
                "template: c/templates/x.yaml:1: function \"nofunc\" not defined"
            ),
            "parse error at (c/templates/x.yaml:1): function \"nofunc\" not defined"
        );
        assert_eq!(
            cleanup_exec_error(
                "c/templates/x.yaml",
                ErrorKind::Exec,
                "template: c/templates/x.yaml:1:6: executing \"c/templates/x.yaml\" at <required \"need a\" .Values.a>: error calling required: need a"
            ),
            "execution error at (c/templates/x.yaml:1:6): need a"
        );
        let fail = "template: c/templates/x.yaml:1:5: executing \"c/templates/x.yaml\" at <fail \"boom\">: error calling fail: boom";
        assert_eq!(
            cleanup_exec_error("c/templates/x.yaml", ErrorKind::Exec, fail),
            fail
        );
    }
}
