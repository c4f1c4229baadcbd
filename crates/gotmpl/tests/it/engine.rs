//! Behaviour tests for the template language (expected outputs are Go's).

use gotmpl::{MissingKey, Templates, Value};

fn vals(yaml: &str) -> Value {
    gotmpl::yaml::from_yaml(yaml).expect("test yaml")
}

fn run_with(text: &str, data: &Value, mode: MissingKey) -> Result<String, String> {
    let mut t = Templates::new();
    t.missing_key(mode);
    t.parse("x", text).map_err(|e| e.to_string())?;
    t.execute("x", data).map_err(|e| e.to_string())
}

fn run(text: &str, yaml: &str) -> String {
    match run_with(text, &vals(yaml), MissingKey::Zero) {
        Ok(s) => s,
        Err(e) => format!("ERR: {e}"),
    }
}

#[test]
fn basics() {
    assert_eq!(run("a{{ .x }}b", "x: 1"), "a1b");
    assert_eq!(run("{{ .x }}", "x: 1000000"), "1e+06");
    assert_eq!(run("{{ .m }}", "m: {b: 2, a: 1}"), "map[a:1 b:2]");
    assert_eq!(run("{{ .missing }}", "x: 1"), "<no value>");
    assert_eq!(run("{{- /* c */ -}}  {{ 1 }}", ""), "1");
    assert_eq!(run("a  {{- 1 -}}  b", ""), "a1b");
    assert_eq!(run("{{ $x := 3 }}{{ $x }}{{ $x = 4 }}{{ $x }}", ""), "34");
    assert_eq!(
        run(
            "{{ if .a }}A{{ else if .b }}B{{ else }}C{{ end }}",
            "b: true"
        ),
        "B"
    );
    assert_eq!(
        run(
            "{{ range $k, $v := .m }}{{ $k }}={{ $v }};{{ end }}",
            "m: {b: 2, a: 1}"
        ),
        "a=1;b=2;"
    );
    assert_eq!(
        run(
            "{{ range list 1 2 3 4 5 }}{{ if eq . 2 }}{{ continue }}{{ end }}{{ if eq . 4 }}{{ break }}{{ end }}{{ . }}{{ end }}",
            ""
        ),
        "13"
    );
    assert_eq!(run("{{ range 3 }}{{ . }}{{ end }}", ""), "012");
    assert_eq!(
        run("{{ range .e }}x{{ else }}empty{{ end }}", "e: []"),
        "empty"
    );
    assert_eq!(
        run(
            "{{ with .a }}{{ . }}{{ else with .b }}b{{ . }}{{ end }}",
            "b: 2"
        ),
        "b2"
    );
    assert_eq!(
        run(
            r#"{{ define "t" }}T{{ . }}{{ end }}{{ template "t" 5 }}"#,
            ""
        ),
        "T5"
    );
    assert_eq!(run(r#"{{ block "b" . }}B{{ .x }}{{ end }}"#, "x: 1"), "B1");
    assert_eq!(
        run(
            r#"{{ printf "%d %s %v %q %5.2f" 3 "s" .l "q" 3.14159 }}"#,
            "l: [1, a]"
        ),
        r#"3 s [1 a] "q"  3.14"#
    );
    assert_eq!(
        run(r#"{{ and 1 0 }} {{ or 0 "" 3 }} {{ not 1 }}"#, ""),
        "0 3 false"
    );
    assert_eq!(run(r#"{{ and false (fail "x") }}"#, ""), "false");
    assert_eq!(
        run(
            r#"{{ len .l }} {{ index .l 1 }} {{ index .m "a" }} {{ slice .l 1 2 }}"#,
            "l: [1,2,3]\nm: {a: z}"
        ),
        "3 2 z [2]"
    );
    assert_eq!(
        run(
            r#"{{ html "<a&'\"" }} {{ js "a'b<" }} {{ urlquery "a b&c" }}"#,
            ""
        ),
        r#"&lt;a&amp;&#39;&#34; a\'b\u003C a+b%26c"#
    );
    assert_eq!(
        run(r#"{{ print 1 2 "a" 3 }}|{{ println 1 "a" }}"#, ""),
        "1 2a3|1 a\n"
    );
    assert_eq!(
        run(
            r#"{{ lt 1 2 }} {{ ge "b" "a" }} {{ eq 1 2 3 1 }} {{ ne "a" "b" }}"#,
            ""
        ),
        "true true true true"
    );
    assert_eq!(run(r#"{{ "x" | printf "%s-%s" "y" }}"#, ""), "y-x");
    assert_eq!(run("{{ (.m).a }}", "m: {a: 7}"), "7");
    assert_eq!(
        run(
            "{{ $.x }}{{ range .l }}{{ $.x }}{{ end }}",
            "x: X\nl: [1,2]"
        ),
        "XXX"
    );
}

#[test]
fn exec_errors() {
    assert_eq!(
        run("a: {{ .Values.a.b }}", "Values: {}"),
        "ERR: template: x:1:13: executing \"x\" at <.Values.a.b>: nil pointer evaluating interface {}.b"
    );
    assert_eq!(
        run("\n {{ eq .x 1 }}", "x: 1"),
        "ERR: template: x:2:4: executing \"x\" at <eq .x 1>: error calling eq: incompatible types for comparison"
    );
    assert_eq!(
        run(r#"{{ fail "boom" }}"#, ""),
        "ERR: template: x:1:3: executing \"x\" at <fail \"boom\">: error calling fail: boom"
    );
    assert_eq!(
        run(r#"{{ template "nope" }}"#, ""),
        "ERR: template: x:1:12: executing \"x\" at <{{template \"nope\"}}>: template \"nope\" not defined"
    );
    assert_eq!(
        run_with("{{ .a }}", &vals("b: 1"), MissingKey::Error).unwrap_err(),
        "template: x:1:3: executing \"x\" at <.a>: map has no entry for key \"a\""
    );
    assert_eq!(
        run("{{ upper .num }}", "num: 1"),
        "ERR: template: x:1:9: executing \"x\" at <.num>: wrong type for value; expected string; got float64"
    );
}

#[test]
fn parse_errors() {
    let p = |t: &str| {
        let mut ts = Templates::new();
        ts.parse("x", t).map(|_| ()).map_err(|e| e.to_string())
    };
    assert_eq!(
        p("{{ .a } }}").unwrap_err(),
        "template: x:1: unexpected \"}\" in operand"
    );
    assert_eq!(
        p("{{ if .a }}").unwrap_err(),
        "template: x:1: unexpected EOF"
    );
    assert_eq!(
        p("\n{{ end }}").unwrap_err(),
        "template: x:2: unexpected {{end}}"
    );
    assert_eq!(
        p("{{ nope 1 }}").unwrap_err(),
        "template: x:1: function \"nope\" not defined"
    );
    assert_eq!(
        p("{{ $x }}").unwrap_err(),
        "template: x:1: undefined variable \"$x\""
    );
    assert_eq!(p("{{ .a ").unwrap_err(), "template: x:1: unclosed action");
    assert_eq!(
        p("{{ \"abc }}").unwrap_err(),
        "template: x:1: unterminated quoted string"
    );
    assert_eq!(
        p("{{ break }}").unwrap_err(),
        "template: x:1: {{break}} outside {{range}}"
    );
    assert_eq!(
        p("{{ }}").unwrap_err(),
        "template: x:1: missing value for command"
    );
    assert_eq!(
        p("{{ 3x }}").unwrap_err(),
        "template: x:1: bad number syntax: \"3x\""
    );
}

#[test]
fn engine_types_are_thread_safe() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Templates>();
    assert_send_sync::<Value>();
    assert_send_sync::<gotmpl::Error>();
    // a parsed set can render from several threads at once
    let mut t = Templates::new();
    t.parse(
        "x",
        "{{ .a }}-{{ include \"d\" . }}{{ define \"d\" }}D{{ end }}",
    )
    .expect("parse");
    let t = std::sync::Arc::new(t);
    let handles: Vec<_> = (0..4)
        .map(|i| {
            let t = t.clone();
            std::thread::spawn(move || {
                let d = gotmpl::map_of([("a".to_string(), Value::Int(i))]);
                t.execute("x", &d).expect("execute")
            })
        })
        .collect();
    for (i, h) in handles.into_iter().enumerate() {
        assert_eq!(h.join().expect("thread"), format!("{i}-D"));
    }
}

#[test]
fn modern_go_semantics_and_limits() {
    // eq of a missing value is false (Go >= 1.18), and/or short-circuit
    assert_eq!(run(r#"{{ eq .missing "x" }}"#, "a: 1"), "false");
    assert_eq!(run(r#"{{ or 1 (fail "not evaluated") }}"#, ""), "1");
    // hostile sizes fail loudly instead of exhausting memory
    assert!(
        run("{{ len (until 100000000) }}", "").contains("sequence longer than 1000000 elements")
    );
    assert!(run(r#"{{ indent 100000000 "a\nb" }}"#, "").contains("indent output too large"));
    assert!(run(r#"{{ repeat 100000000 "abc" }}"#, "").contains("Repeat output length overflow"));
    // deep recursion is an error, not a stack overflow
    let deep = run(
        r#"{{ define "r" }}{{ template "r" . }}{{ end }}{{ template "r" . }}"#,
        "",
    );
    assert!(deep.contains("exceeded maximum template depth"), "{deep}");
    let inc = run(
        r#"{{ define "r" }}{{ include "r" . }}{{ end }}{{ include "r" . }}"#,
        "",
    );
    assert!(
        inc.contains("rendering template has a nested reference name: r"),
        "{inc}"
    );
}

#[test]
fn json_conversions() {
    let j: serde_json::Value = serde_json::json!({"i": 1, "f": 1.5, "l": [1, "a", null]});
    assert_eq!(
        Value::from(j.clone()).to_go_string(),
        "map[f:1.5 i:1 l:[1 a <nil>]]"
    );
    let f = Value::from_json_float(serde_json::json!({"n": 1000000}));
    assert_eq!(f.to_go_string(), "map[n:1e+06]");
    assert_eq!(f.to_json(), serde_json::json!({"n": 1000000}));
}

/// A host object that is a Go map with methods, with an optional cheap count.
#[derive(Debug)]
struct MapLike(Vec<(String, Value)>);

impl gotmpl::Object for MapLike {
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn call(&self, method: &str, _args: &[Value]) -> Option<Result<Value, String>> {
        (method == "Size").then(|| Ok(Value::Int(self.0.len() as i64)))
    }
    fn display(&self) -> String {
        "maplike".into()
    }
    fn entries(&self) -> Option<Vec<(String, Value)>> {
        Some(self.0.clone())
    }
}

/// A struct-like object: no entries.
#[derive(Debug)]
struct Plain;

impl gotmpl::Object for Plain {
    fn field(&self, _name: &str) -> Option<Value> {
        None
    }
    fn call(&self, _method: &str, _args: &[Value]) -> Option<Result<Value, String>> {
        None
    }
    fn display(&self) -> String {
        "plain".into()
    }
}

#[test]
fn map_like_objects_range_index_len_truth() {
    use std::sync::Arc;
    let full = Value::Object(Arc::new(MapLike(vec![
        ("a".into(), Value::str("1")),
        ("b".into(), Value::str("2")),
    ])));
    let empty = Value::Object(Arc::new(MapLike(Vec::new())));
    let plain = Value::Object(Arc::new(Plain));
    let data = gotmpl::map_of([("M".into(), full), ("E".into(), empty), ("P".into(), plain)]);
    let r = |t: &str| run_with(t, &data, MissingKey::Zero).unwrap_or_else(|e| format!("ERR: {e}"));
    assert_eq!(
        r("{{ range $k, $v := .M }}{{ $k }}={{ $v }} {{ end }}"),
        "a=1 b=2 "
    );
    assert_eq!(r("{{ range .M }}{{ . }}{{ end }}"), "12");
    assert_eq!(r("{{ range .M }}{{ break }}{{ end }}x"), "x");
    assert_eq!(r("{{ range .E }}x{{ else }}none{{ end }}"), "none");
    assert_eq!(r("{{ len .M }} {{ len .E }} {{ .M.Size }}"), "2 0 2");
    assert_eq!(
        r("{{ index .M \"b\" }} {{ index .M \"zz\" }}"),
        "2 <no value>"
    );
    assert_eq!(
        r("{{ if .M }}y{{ end }}{{ if .E }}n{{ else }}e{{ end }} {{ empty .E }} {{ empty .M }}"),
        "ye true false"
    );
    assert_eq!(
        r("{{ default \"d\" .E }} {{ with .E }}w{{ else }}no{{ end }}"),
        "d no"
    );
    assert_eq!(r("{{ kindOf .M }} {{ kindOf .P }}"), "map struct");
    // Struct-like objects keep their old behaviour.
    assert_eq!(r("{{ if .P }}t{{ end }} {{ empty .P }}"), "t false");
    assert!(r("{{ range .P }}{{ end }}").contains("range can't iterate over plain"));
    assert!(r("{{ len .P }}").contains("len of type struct"));
}

#[test]
fn int_and_int64_are_distinct_go_types() {
    let data = gotmpl::map_of([("n".into(), Value::int64(3)), ("i".into(), Value::Int(3))]);
    let r = |t: &str| run_with(t, &data, MissingKey::Zero).unwrap_or_else(|e| format!("ERR: {e}"));
    assert_eq!(
        r("{{ typeOf .n }} {{ typeOf .i }} {{ kindOf .n }}"),
        "int64 int int64"
    );
    assert_eq!(
        r("{{ printf \"%T %T %v\" .n (len \"a\") .n }}"),
        "int64 int 3"
    );
    assert_eq!(
        r("{{ eq .n .i }} {{ lt .n 4 }} {{ eq .n 3 }}"),
        "true true true"
    );
    assert_eq!(
        r("{{ typeOf (add .i 1) }} {{ typeOf (int .n) }}"),
        "int64 int"
    );
    assert_eq!(
        r("{{ range .n }}{{ typeOf . }}{{ end }}"),
        "int64int64int64"
    );
    assert_eq!(r("{{ duration .n }} {{ duration .i }}"), "3s 0s");
    assert_eq!(r("{{ index (list 1 2 3 4) .n }} {{ toJson .n }}"), "4 3");
    assert_eq!(
        r("{{ until .n }}"),
        "ERR: template: x:1:9: executing \"x\" at <.n>: wrong type for value; expected int; got int64"
    );
    assert_eq!(Value::int64(3).as_int(), Some(3));
    assert_ne!(Value::int64(3), Value::Int(3));
}
