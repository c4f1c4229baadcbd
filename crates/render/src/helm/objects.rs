//! The Go objects Helm hands to templates: `.Capabilities` (with `KubeVersion`, `APIVersions.Has`,
//! `HelmVersion`), `.Chart` (Chart.yaml with Go field names) and `.Files` (`Get`, `GetBytes`,
//! `Glob`, `Lines`, `AsConfig`, `AsSecrets`), printed the way Go prints them.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use base64::Engine as _;
use gotmpl::{Object, Value};

use super::chart::{Dependency, Maintainer, Metadata};

message_error! {
    /// A `--kube-version` that is not a Kubernetes version.
    KubeVersionError
}

/// Converts Helm values to template values, keeping Go's float64/int64 distinction: an
/// `f64`-backed JSON number is a `float64`, an integer-backed one an `int64` (from `--set`).
pub fn to_tmpl(v: &serde_json::Value) -> Value {
    match v {
        serde_json::Value::Null => Value::Nil,
        serde_json::Value::Bool(b) => Value::Bool(*b),
        serde_json::Value::Number(n) => {
            if n.is_f64() {
                Value::Float(n.as_f64().unwrap_or(0.0))
            } else if let Some(i) = n.as_i64() {
                // Only `--set` produces integers, and strvals makes them Go int64s.
                Value::Int64(i)
            } else {
                Value::Float(n.as_f64().unwrap_or(0.0))
            }
        }
        serde_json::Value::String(s) => Value::String(Arc::from(s.as_str())),
        serde_json::Value::Array(a) => Value::List(Arc::new(a.iter().map(to_tmpl).collect())),
        serde_json::Value::Object(m) => Value::Map(Arc::new(
            m.iter().map(|(k, v)| (k.clone(), to_tmpl(v))).collect(),
        )),
    }
}

/// [`to_tmpl`] for a values table.
pub fn to_tmpl_map(m: &serde_json::Map<String, serde_json::Value>) -> Value {
    Value::Map(Arc::new(
        m.iter().map(|(k, v)| (k.clone(), to_tmpl(v))).collect(),
    ))
}

fn s(v: &str) -> Value {
    Value::String(Arc::from(v))
}

fn str_list(v: &[String]) -> Value {
    Value::List(Arc::new(v.iter().map(|x| s(x)).collect()))
}

fn go_list(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

/// Helm's built-in API version list (`chartutil.DefaultVersionSet` of helm 3.6.2), in its order.
pub const DEFAULT_API_VERSIONS: &[&str] = &[
    "v1",
    "admissionregistration.k8s.io/v1",
    "admissionregistration.k8s.io/v1beta1",
    "internal.apiserver.k8s.io/v1alpha1",
    "apps/v1",
    "apps/v1beta1",
    "apps/v1beta2",
    "authentication.k8s.io/v1",
    "authentication.k8s.io/v1beta1",
    "authorization.k8s.io/v1",
    "authorization.k8s.io/v1beta1",
    "autoscaling/v1",
    "autoscaling/v2beta1",
    "autoscaling/v2beta2",
    "batch/v1",
    "batch/v1beta1",
    "certificates.k8s.io/v1",
    "certificates.k8s.io/v1beta1",
    "coordination.k8s.io/v1beta1",
    "coordination.k8s.io/v1",
    "discovery.k8s.io/v1",
    "discovery.k8s.io/v1beta1",
    "events.k8s.io/v1",
    "events.k8s.io/v1beta1",
    "extensions/v1beta1",
    "flowcontrol.apiserver.k8s.io/v1alpha1",
    "flowcontrol.apiserver.k8s.io/v1beta1",
    "networking.k8s.io/v1",
    "networking.k8s.io/v1beta1",
    "node.k8s.io/v1",
    "node.k8s.io/v1alpha1",
    "node.k8s.io/v1beta1",
    "policy/v1",
    "policy/v1beta1",
    "rbac.authorization.k8s.io/v1",
    "rbac.authorization.k8s.io/v1beta1",
    "rbac.authorization.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1alpha1",
    "scheduling.k8s.io/v1beta1",
    "scheduling.k8s.io/v1",
    "storage.k8s.io/v1beta1",
    "storage.k8s.io/v1",
    "storage.k8s.io/v1alpha1",
    "apiextensions.k8s.io/v1beta1",
    "apiextensions.k8s.io/v1",
];

/// `.Capabilities.KubeVersion`.
#[derive(Debug, Clone)]
pub struct KubeVersion {
    /// `v1.30.0`.
    pub version: String,
    /// `1`.
    pub major: String,
    /// `30`.
    pub minor: String,
}

impl KubeVersion {
    /// Helm's `ParseKubeVersion`: lenient semver, printed back with a `v` prefix.
    pub fn parse(v: &str) -> Result<KubeVersion, KubeVersionError> {
        let sv = gotmpl::semver::Version::parse(v)
            .map_err(|e| format!("invalid kube version '{v}': {e}"))?;
        Ok(KubeVersion {
            version: format!("v{sv}"),
            major: sv.major().to_string(),
            minor: sv.minor().to_string(),
        })
    }

    /// Helm 3.6.2's default when `--kube-version` is not given.
    pub fn default_version() -> KubeVersion {
        KubeVersion {
            version: "v1.20.0".into(),
            major: "1".into(),
            minor: "20".into(),
        }
    }
}

impl Object for KubeVersion {
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Version" => Some(s(&self.version)),
            "Major" => Some(s(&self.major)),
            "Minor" => Some(s(&self.minor)),
            _ => None,
        }
    }
    fn call(&self, method: &str, _args: &[Value]) -> Option<Result<Value, String>> {
        match method {
            "String" | "GitVersion" => Some(Ok(s(&self.version))),
            _ => None,
        }
    }
    fn display(&self) -> String {
        self.version.clone()
    }
}

/// `.Capabilities.APIVersions` (a `[]string` with a `Has` method).
#[derive(Debug, Clone)]
pub struct VersionSet(pub Vec<String>);

impl Object for VersionSet {
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>> {
        match method {
            "Has" => Some(match args {
                [Value::String(x)] => Ok(Value::Bool(self.0.iter().any(|v| **v == **x))),
                [other] => Err(format!(
                    "wrong type for value; expected string; got {}",
                    other.type_name()
                )),
                _ => Err(format!(
                    "wrong number of args for Has: want 1 got {}",
                    args.len()
                )),
            }),
            _ => None,
        }
    }
    fn display(&self) -> String {
        go_list(&self.0)
    }
}

/// `.Capabilities.HelmVersion`.
#[derive(Debug, Clone)]
pub struct HelmVersion;

const HELM_VERSION: [&str; 4] = [
    "v3.6.2",
    "ee407bdf364942bcb8e8c665f82e15aa28009b71",
    "clean",
    "go1.16.5",
];

impl Object for HelmVersion {
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Version" => Some(s(HELM_VERSION[0])),
            "GitCommit" => Some(s(HELM_VERSION[1])),
            "GitTreeState" => Some(s(HELM_VERSION[2])),
            "GoVersion" => Some(s(HELM_VERSION[3])),
            _ => None,
        }
    }
    fn call(&self, _method: &str, _args: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        format!("{{{}}}", HELM_VERSION.join(" "))
    }
}

/// `.Capabilities`.
#[derive(Debug, Clone)]
pub struct Capabilities {
    /// Kubernetes version.
    pub kube_version: Arc<KubeVersion>,
    /// Known API versions.
    pub api_versions: Arc<VersionSet>,
}

impl Capabilities {
    /// Helm's client-only capabilities: its default list plus `extra` API versions.
    pub fn new(kube_version: KubeVersion, extra: &[String]) -> Capabilities {
        // Helm's list alone is built once per process: an agent renders every bundle it
        // deploys, and this list is most of what a small bundle's render allocates.
        static DEFAULTS: std::sync::LazyLock<Arc<VersionSet>> =
            std::sync::LazyLock::new(|| Arc::new(VersionSet(default_api_versions())));
        let api_versions = if extra.is_empty() {
            DEFAULTS.clone()
        } else {
            let mut v = default_api_versions();
            v.extend(extra.iter().cloned());
            Arc::new(VersionSet(v))
        };
        Capabilities {
            kube_version: Arc::new(kube_version),
            api_versions,
        }
    }
}

/// [`DEFAULT_API_VERSIONS`] as owned strings.
fn default_api_versions() -> Vec<String> {
    DEFAULT_API_VERSIONS.iter().map(|x| x.to_string()).collect()
}

impl Object for Capabilities {
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "KubeVersion" => Some(Value::Object(self.kube_version.clone())),
            "APIVersions" => Some(Value::Object(self.api_versions.clone())),
            "HelmVersion" => Some(Value::Object(Arc::new(HelmVersion))),
            _ => None,
        }
    }
    fn call(&self, _method: &str, _args: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        let kv = &self.kube_version;
        format!(
            "{{{{{} {} {}}} {} {}}}",
            kv.version,
            kv.major,
            kv.minor,
            self.api_versions.display(),
            HelmVersion.display()
        )
    }
}

/// `.Chart`: Chart.yaml under Go's field names.
#[derive(Debug, Clone)]
pub struct ChartObject(pub Metadata);

#[derive(Debug, Clone)]
struct MaintainerObject(Maintainer);

impl Object for MaintainerObject {
    fn field(&self, name: &str) -> Option<Value> {
        match name {
            "Name" => Some(s(&self.0.name)),
            "Email" => Some(s(&self.0.email)),
            "URL" => Some(s(&self.0.url)),
            _ => None,
        }
    }
    fn call(&self, _m: &str, _a: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        format!("&{{{} {} {}}}", self.0.name, self.0.email, self.0.url)
    }
}

#[derive(Debug, Clone)]
struct DependencyObject(Dependency);

impl Object for DependencyObject {
    fn field(&self, name: &str) -> Option<Value> {
        let d = &self.0;
        match name {
            "Name" => Some(s(&d.name)),
            "Version" => Some(s(&d.version)),
            "Repository" => Some(s(&d.repository)),
            "Condition" => Some(s(&d.condition)),
            "Tags" => Some(str_list(&d.tags)),
            "Enabled" => Some(Value::Bool(d.enabled)),
            "ImportValues" => Some(Value::List(Arc::new(
                d.import_values.iter().map(to_tmpl).collect(),
            ))),
            "Alias" => Some(s(&d.alias)),
            _ => None,
        }
    }
    fn call(&self, _m: &str, _a: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        let d = &self.0;
        let iv: Vec<String> = d
            .import_values
            .iter()
            .map(|v| to_tmpl(v).to_go_string())
            .collect();
        format!(
            "&{{{} {} {} {} {} {} {} {}}}",
            d.name,
            d.version,
            d.repository,
            d.condition,
            go_list(&d.tags),
            d.enabled,
            go_list(&iv),
            d.alias
        )
    }
}

impl Object for ChartObject {
    fn field(&self, name: &str) -> Option<Value> {
        let m = &self.0;
        match name {
            "Name" => Some(s(&m.name)),
            "Home" => Some(s(&m.home)),
            "Sources" => Some(str_list(&m.sources)),
            "Version" => Some(s(&m.version)),
            "Description" => Some(s(&m.description)),
            "Keywords" => Some(str_list(&m.keywords)),
            "Maintainers" => Some(Value::List(Arc::new(
                m.maintainers
                    .iter()
                    .map(|x| Value::Object(Arc::new(MaintainerObject(x.clone()))))
                    .collect(),
            ))),
            "Icon" => Some(s(&m.icon)),
            "APIVersion" => Some(s(&m.api_version)),
            "Condition" => Some(s(&m.condition)),
            "Tags" => Some(s(&m.tags)),
            "AppVersion" => Some(s(&m.app_version)),
            "Deprecated" => Some(Value::Bool(m.deprecated)),
            "Annotations" => Some(Value::Map(Arc::new(
                m.annotations
                    .iter()
                    .map(|(k, v)| (k.clone(), s(v)))
                    .collect(),
            ))),
            "KubeVersion" => Some(s(&m.kube_version)),
            "Dependencies" => Some(Value::List(Arc::new(
                m.dependencies
                    .iter()
                    .map(|x| Value::Object(Arc::new(DependencyObject(x.clone()))))
                    .collect(),
            ))),
            "Type" => Some(s(&m.chart_type)),
            _ => None,
        }
    }
    fn call(&self, _m: &str, _a: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        let m = &self.0;
        let ann: Vec<String> = m
            .annotations
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        let maint: Vec<String> = m
            .maintainers
            .iter()
            .map(|x| MaintainerObject(x.clone()).display())
            .collect();
        let deps: Vec<String> = m
            .dependencies
            .iter()
            .map(|x| DependencyObject(x.clone()).display())
            .collect();
        format!(
            "{{{} {} {} {} {} {} {} {} {} {} {} {} {} map[{}] {} {} {}}}",
            m.name,
            m.home,
            go_list(&m.sources),
            m.version,
            m.description,
            go_list(&m.keywords),
            go_list(&maint),
            m.icon,
            m.api_version,
            m.condition,
            m.tags,
            m.app_version,
            m.deprecated,
            ann.join(" "),
            m.kube_version,
            go_list(&deps),
            m.chart_type
        )
    }
}

/// `.Files`: the chart's non-template files, keyed by path.
#[derive(Debug, Clone, Default)]
pub struct Files(pub Arc<BTreeMap<String, Arc<[u8]>>>);

impl Files {
    /// Builds the object from chart files.
    pub fn new(files: &[super::chart::File]) -> Files {
        Files(Arc::new(
            files
                .iter()
                .map(|f| (f.name.clone(), f.data.clone()))
                .collect(),
        ))
    }

    fn glob(&self, pattern: &str) -> Files {
        let re = glob_regex(pattern);
        Files(Arc::new(
            self.0
                .iter()
                .filter(|(k, _)| re.as_ref().is_none_or(|r| r.is_match(k)))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
        ))
    }

    fn as_map_yaml(&self, f: impl Fn(&[u8]) -> String) -> Result<Value, String> {
        let m: BTreeMap<String, Value> = self
            .0
            .iter()
            .map(|(k, v)| {
                let base = k.rsplit('/').next().unwrap_or(k).to_string();
                (base, s(&f(v)))
            })
            .collect();
        to_yaml(&Value::Map(Arc::new(m))).map(|y| s(&y))
    }
}

/// Helm's `toYAML` (go-yaml v2 through sigs.k8s.io/yaml, trailing newline removed), done by
/// the template engine's own `toYaml` so both agree byte for byte.
fn to_yaml(v: &Value) -> Result<String, String> {
    static T: OnceLock<Option<gotmpl::Templates>> = OnceLock::new();
    let t = T.get_or_init(|| {
        let mut t = gotmpl::Templates::new();
        t.parse("toYaml", "{{ toYaml . }}").ok().map(|_| t)
    });
    match t {
        Some(t) => t.execute("toYaml", v).map_err(|e| e.to_string()),
        None => Err("toYaml is unavailable".into()),
    }
}

fn arg_str<'a>(method: &str, args: &'a [Value]) -> Result<&'a str, String> {
    match args {
        [Value::String(x)] => Ok(x),
        [other] => Err(format!(
            "wrong type for value; expected string; got {}",
            other.type_name()
        )),
        _ => Err(format!(
            "wrong number of args for {method}: want 1 got {}",
            args.len()
        )),
    }
}

fn no_args(method: &str, args: &[Value]) -> Result<(), String> {
    if args.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "wrong number of args for {method}: want 0 got {}",
            args.len()
        ))
    }
}

fn bytes_value(b: &[u8]) -> Value {
    Value::List(Arc::new(
        b.iter().map(|x| Value::Int(i64::from(*x))).collect(),
    ))
}

impl Object for Files {
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn call(&self, method: &str, args: &[Value]) -> Option<Result<Value, String>> {
        let r = match method {
            "Get" => arg_str(method, args).map(|n| {
                s(&self
                    .0
                    .get(n)
                    .map(|b| String::from_utf8_lossy(b).into_owned())
                    .unwrap_or_default())
            }),
            "GetBytes" => arg_str(method, args)
                .map(|n| bytes_value(self.0.get(n).map(|b| &b[..]).unwrap_or(&[]))),
            "Glob" => arg_str(method, args).map(|p| Value::Object(Arc::new(self.glob(p)))),
            "Lines" => arg_str(method, args).map(|n| match self.0.get(n) {
                None => Value::List(Arc::new(Vec::new())),
                Some(b) => Value::List(Arc::new(
                    String::from_utf8_lossy(b).split('\n').map(s).collect(),
                )),
            }),
            "AsConfig" => no_args(method, args)
                .and_then(|_| self.as_map_yaml(|b| String::from_utf8_lossy(b).into_owned())),
            "AsSecrets" => no_args(method, args).and_then(|_| {
                self.as_map_yaml(|b| base64::engine::general_purpose::STANDARD.encode(b))
            }),
            _ => return None,
        };
        Some(r)
    }
    fn display(&self) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(k, v)| format!("{k}:{}", bytes_value(v).to_go_string()))
            .collect();
        format!("map[{}]", parts.join(" "))
    }
    fn type_name(&self) -> String {
        "engine.files".into()
    }
    fn entries(&self) -> Option<Vec<(String, Value)>> {
        Some(
            self.0
                .iter()
                .map(|(k, v)| (k.clone(), bytes_value(v)))
                .collect(),
        )
    }
    fn entry_count(&self) -> Option<usize> {
        Some(self.0.len())
    }
    fn to_json(&self) -> serde_json::Value {
        serde_json::Value::Object(
            self.0
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        serde_json::Value::String(
                            base64::engine::general_purpose::STANDARD.encode(v),
                        ),
                    )
                })
                .collect(),
        )
    }
}

/// Compiles a gobwas/glob pattern (with `/` as separator) to an anchored regex: `*` stays
/// within a path segment, `**` crosses segments, `?` is one non-separator character, `[...]`/
/// `[!...]` are classes and `{a,b}` alternatives. None when the pattern is malformed, which
/// Helm treats as "match everything".
pub fn glob_regex(pattern: &str) -> Option<regex::Regex> {
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::from("^");
    let mut i = 0;
    let mut depth = 0usize;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '*' => {
                if chars.get(i + 1) == Some(&'*') {
                    out.push_str("(?s:.*)");
                    i += 2;
                    continue;
                }
                out.push_str("[^/]*");
            }
            '?' => out.push_str("[^/]"),
            '[' => {
                let mut j = i + 1;
                let mut class = String::from("[");
                if matches!(chars.get(j), Some('!')) {
                    class.push('^');
                    j += 1;
                }
                let start = j;
                while j < chars.len() && chars[j] != ']' {
                    let ch = chars[j];
                    if ch == '\\' || ch == '[' || ch == '^' || ch == '&' || ch == '~' {
                        class.push('\\');
                    }
                    class.push(ch);
                    j += 1;
                }
                if j >= chars.len() || j == start {
                    return None;
                }
                class.push(']');
                out.push_str(&class);
                i = j + 1;
                continue;
            }
            '{' => {
                depth += 1;
                out.push_str("(?:");
            }
            '}' if depth > 0 => {
                depth -= 1;
                out.push(')');
            }
            ',' if depth > 0 => out.push('|'),
            '\\' => {
                i += 1;
                let e = chars.get(i)?;
                out.push_str(&regex::escape(&e.to_string()));
            }
            _ => out.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    if depth != 0 {
        return None;
    }
    out.push('$');
    regex::Regex::new(&out).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_semantics() {
        let m = |p: &str, n: &str| glob_regex(p).map(|r| r.is_match(n));
        assert_eq!(m("*.txt", "a.txt"), Some(true));
        assert_eq!(m("*.txt", "d/a.txt"), Some(false));
        assert_eq!(m("**.txt", "d/a.txt"), Some(true));
        assert_eq!(m("files/**", "files/a/b"), Some(true));
        assert_eq!(m("{a,b}.txt", "b.txt"), Some(true));
        assert_eq!(m("[ab].txt", "b.txt"), Some(true));
        assert_eq!(m("[!ab].txt", "c.txt"), Some(true));
        assert_eq!(m("?.txt", "/.txt"), Some(false));
        assert_eq!(m("{a,b", "a"), None);
    }

    #[test]
    fn kube_version_parse() {
        let k = KubeVersion::parse("1.30.0").unwrap();
        assert_eq!(
            (k.version.as_str(), k.major.as_str(), k.minor.as_str()),
            ("v1.30.0", "1", "30")
        );
        assert_eq!(KubeVersion::parse("v1.21").unwrap().version, "v1.21.0");
        assert!(KubeVersion::parse("x").is_err());
    }

    #[test]
    fn files_methods() {
        let f = Files::new(&[
            super::super::chart::File {
                name: "conf/a.txt".into(),
                data: b"x\ny"[..].into(),
            },
            super::super::chart::File {
                name: "b.txt".into(),
                data: b"b"[..].into(),
            },
        ]);
        let lines = f
            .call("Lines", &[Value::from("conf/a.txt")])
            .unwrap()
            .unwrap();
        assert_eq!(lines.to_go_string(), "[x y]");
        let g = f.call("Glob", &[Value::from("conf/*")]).unwrap().unwrap();
        match g {
            Value::Object(o) => assert_eq!(o.display(), "map[conf/a.txt:[120 10 121]]"),
            _ => panic!("not an object"),
        }
        assert_eq!(
            f.call("Get", &[Value::from("nope")])
                .unwrap()
                .unwrap()
                .to_go_string(),
            ""
        );
        assert!(f.call("Get", &[]).unwrap().is_err());
    }
}
