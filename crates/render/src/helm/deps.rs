//! Chart dependencies as Helm processes them before rendering: aliases, `condition`, `tags`,
//! `import-values`, and values coalescing across the chart tree (with `global` flowing down).

use serde_json::Value;

use super::chart::Chart;
use super::values::{
    Values, coalesce_chart_values, coalesce_globals, coalesce_tables, path_value, table,
};
use gotmpl::semver::is_compatible_range;

message_error! {
    /// Subchart handling that failed (conditions, tags, import-values, coalescing), worded as Helm.
    DependencyError
}

/// Helm's `CoalesceValues`: the user's values `vals` over the chart's defaults, recursively
/// into subcharts (each subchart's values live under its name; globals are copied down).
pub fn coalesce_values(c: &Chart, vals: &Values) -> Result<Values, DependencyError> {
    let mut dest = vals.clone();
    coalesce(c, &mut dest)?;
    Ok(dest)
}

fn coalesce(c: &Chart, dest: &mut Values) -> Result<(), DependencyError> {
    coalesce_chart_values(&c.values, dest);
    for sub in &c.dependencies {
        let name = sub.name().to_string();
        match dest.get(&name) {
            None => {
                dest.insert(name.clone(), Value::Object(Values::new()));
            }
            Some(Value::Object(_)) => {}
            Some(other) => {
                return Err(format!(
                    "type mismatch on {name}: %!t({}={})",
                    go_type(other),
                    go_print(other)
                )
                .into());
            }
        }
        let mut dv = match dest.remove(&name) {
            Some(Value::Object(m)) => m,
            _ => Values::new(),
        };
        coalesce_globals(&mut dv, dest);
        coalesce(sub, &mut dv)?;
        dest.insert(name, Value::Object(dv));
    }
    Ok(())
}

fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        _ => "<nil>",
    }
}

fn go_print(v: &Value) -> String {
    super::objects::to_tmpl(v).to_go_string()
}

/// Helm's `ProcessDependencies`: drops disabled subcharts and applies `import-values`.
pub fn process_dependencies(c: &mut Chart, v: &Values) -> Result<(), DependencyError> {
    process_dependency_enabled(c, v, "")?;
    process_dependency_import_values(c)
}

fn get_alias_dependency(charts: &[Chart], dep: &super::chart::Dependency) -> Option<Chart> {
    for c in charts {
        if c.name() != dep.name {
            continue;
        }
        if !is_compatible_range(&dep.version, &c.metadata.version) {
            continue;
        }
        let mut out = c.clone();
        if !dep.alias.is_empty() {
            out.metadata.name = dep.alias.clone();
        }
        return Some(out);
    }
    None
}

fn process_dependency_enabled(
    c: &mut Chart,
    v: &Values,
    path: &str,
) -> Result<(), DependencyError> {
    if !c.has_dependencies_field {
        return Ok(());
    }
    let existing = std::mem::take(&mut c.dependencies);
    let mut chart_deps: Vec<Chart> = Vec::new();
    for e in &existing {
        let listed = c.metadata.dependencies.iter().any(|req| {
            e.name() == req.name && is_compatible_range(&req.version, &e.metadata.version)
        });
        if !listed {
            chart_deps.push(e.clone());
        }
    }
    for req in &mut c.metadata.dependencies {
        if let Some(cd) = get_alias_dependency(&existing, req) {
            chart_deps.push(cd);
        }
        if !req.alias.is_empty() {
            req.name = req.alias.clone();
        }
    }
    c.dependencies = chart_deps;
    for d in &mut c.metadata.dependencies {
        d.enabled = true;
    }
    let cvals = coalesce_values(c, v)?;
    process_dependency_tags(c, &cvals);
    process_dependency_conditions(c, &cvals, path);
    let rm: Vec<String> = c
        .metadata
        .dependencies
        .iter()
        .filter(|r| !r.enabled)
        .map(|r| r.name.clone())
        .collect();
    let mut cd: Vec<Chart> = std::mem::take(&mut c.dependencies)
        .into_iter()
        .filter(|n| !rm.contains(&n.metadata.name))
        .collect();
    let cd_meta: Vec<_> = std::mem::take(&mut c.metadata.dependencies)
        .into_iter()
        .filter(|n| !rm.contains(&n.name))
        .collect();
    for t in &mut cd {
        let subpath = format!("{path}{}.", t.metadata.name);
        process_dependency_enabled(t, &cvals, &subpath)?;
    }
    c.has_dependencies_field = !cd_meta.is_empty();
    c.metadata.dependencies = cd_meta;
    c.dependencies = cd;
    Ok(())
}

fn process_dependency_tags(c: &mut Chart, cvals: &Values) {
    let Some(vt) = table(cvals, "tags") else {
        return;
    };
    for r in &mut c.metadata.dependencies {
        let mut has_true = false;
        let mut has_false = false;
        for k in &r.tags {
            if let Some(Value::Bool(b)) = vt.get(k) {
                if *b {
                    has_true = true;
                } else {
                    has_false = true;
                }
            }
        }
        // Helm: disabled only when some tag is false and none is true.
        r.enabled = has_true || !has_false;
    }
}

fn process_dependency_conditions(c: &mut Chart, cvals: &Values, cpath: &str) {
    for r in &mut c.metadata.dependencies {
        for cond in r.condition.trim().split(',') {
            if cond.is_empty() {
                continue;
            }
            if let Some(Value::Bool(b)) = path_value(cvals, &format!("{cpath}{cond}")) {
                r.enabled = *b;
                break;
            }
        }
    }
}

fn path_to_map(path: &str, data: Values) -> Values {
    if path == "." {
        return data;
    }
    let mut cur = data;
    for p in path.split('.').rev() {
        let mut m = Values::new();
        m.insert(p.to_string(), Value::Object(cur));
        cur = m;
    }
    cur
}

fn process_import_values(c: &mut Chart) -> Result<(), DependencyError> {
    if !c.has_dependencies_field {
        return Ok(());
    }
    let mut cvals = coalesce_values(c, &Values::new())?;
    // Helm's `b` may alias `cvals` (after a map-form import); model that explicitly.
    let mut b = Values::new();
    let mut b_is_cvals = false;
    for r in &mut c.metadata.dependencies {
        let mut outiv: Vec<Value> = Vec::new();
        for riv in &r.import_values {
            match riv {
                Value::Object(iv) => {
                    let child = match iv.get("child") {
                        Some(Value::String(s)) => s.clone(),
                        _ => {
                            return Err(format!(
                                "dependency {:?}: import-values entry needs string \"child\" and \"parent\"",
                                r.name
                            ).into());
                        }
                    };
                    let parent = match iv.get("parent") {
                        Some(Value::String(s)) => s.clone(),
                        _ => {
                            return Err(format!(
                                "dependency {:?}: import-values entry needs string \"child\" and \"parent\"",
                                r.name
                            ).into());
                        }
                    };
                    let mut o = serde_json::Map::new();
                    o.insert("child".into(), Value::String(child.clone()));
                    o.insert("parent".into(), Value::String(parent.clone()));
                    outiv.push(Value::Object(o));
                    let Some(vv) = table(&cvals, &format!("{}.{child}", r.name)).cloned() else {
                        continue;
                    };
                    let src = path_to_map(&parent, vv);
                    coalesce_tables(&mut cvals, &src);
                    b_is_cvals = true;
                }
                Value::String(iv) => {
                    let child = format!("exports.{iv}");
                    let mut o = serde_json::Map::new();
                    o.insert("child".into(), Value::String(child.clone()));
                    o.insert("parent".into(), Value::String(".".into()));
                    outiv.push(Value::Object(o));
                    let Some(vm) = table(&cvals, &format!("{}.{child}", r.name)).cloned() else {
                        continue;
                    };
                    if b_is_cvals {
                        coalesce_tables(&mut cvals, &vm);
                    } else {
                        coalesce_tables(&mut b, &vm);
                    }
                }
                _ => {}
            }
        }
        r.import_values = outiv;
    }
    if b_is_cvals {
        // CoalesceTables(cvals, cvals): only removes keys whose value is null.
        let snapshot = cvals.clone();
        coalesce_tables(&mut cvals, &snapshot);
        c.values = cvals;
    } else {
        coalesce_tables(&mut b, &cvals);
        c.values = b;
    }
    Ok(())
}

fn process_dependency_import_values(c: &mut Chart) -> Result<(), DependencyError> {
    for d in &mut c.dependencies {
        process_dependency_import_values(d)?;
    }
    process_import_values(c)
}

#[cfg(test)]
mod tests {
    use super::super::chart::{File, load_files};
    use super::*;
    use serde_json::json;

    fn f(name: &str, data: &str) -> File {
        File {
            name: name.into(),
            data: data.as_bytes().into(),
        }
    }

    fn parent() -> Chart {
        load_files(vec![
            f(
                "Chart.yaml",
                "apiVersion: v2\nname: p\nversion: 1.0.0\ndependencies:\n- name: sub\n  version: ~0.1.0\n  condition: sub.enabled\n  import-values: [data]\n- name: sub\n  alias: other\n  version: 0.1.x\n  tags: [extra]\n",
            ),
            f("values.yaml", "global:\n  g: 1\nsub:\n  enabled: true\n"),
            f("charts/sub/Chart.yaml", "apiVersion: v2\nname: sub\nversion: 0.1.2\n"),
            f("charts/sub/values.yaml", "x: 1\nexports:\n  data:\n    imported: yes\n"),
        ])
        .unwrap()
    }

    #[test]
    fn aliases_conditions_tags_imports() {
        let mut c = parent();
        process_dependencies(&mut c, &Values::new()).unwrap();
        let names: Vec<&str> = c.dependencies.iter().map(|d| d.name()).collect();
        assert_eq!(names, vec!["sub", "other"]);
        assert_eq!(c.values["imported"], json!(true));

        let mut c = parent();
        let user = json!({"sub": {"enabled": false}, "tags": {"extra": false}});
        let Value::Object(user) = user else {
            unreachable!()
        };
        process_dependencies(&mut c, &user).unwrap();
        assert!(c.dependencies.is_empty());
    }

    #[test]
    fn globals_reach_subcharts() {
        let mut c = parent();
        process_dependencies(&mut c, &Values::new()).unwrap();
        let v = coalesce_values(&c, &Values::new()).unwrap();
        assert_eq!(v["sub"]["global"]["g"], json!(1.0));
        assert_eq!(v["other"]["x"], json!(1.0));
    }

    #[test]
    fn type_mismatch_is_an_error() {
        let c = parent();
        let Value::Object(user) = json!({"sub": "x"}) else {
            unreachable!()
        };
        let e = coalesce_values(&c, &user).unwrap_err();
        assert!(e.0.contains("type mismatch on sub"), "{e}");
    }
}
