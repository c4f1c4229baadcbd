//! Property tests: no input makes the parser, executor, printf or YAML code panic, and toYaml
//! output reads back to the same value.

use std::collections::BTreeMap;
use std::sync::Arc;

use gotmpl::{MissingKey, Templates, Value};
use proptest::prelude::*;

/// Template-ish text: fragments of real syntax glued together at random, so generated inputs
/// reach deep into the parser and executor instead of stopping at the first character.
fn template_text() -> impl Strategy<Value = String> {
    let frag = prop_oneof![
        Just("{{".to_string()),
        Just("}}".to_string()),
        Just("{{- ".to_string()),
        Just(" -}}".to_string()),
        Just("{{/* c */}}".to_string()),
        Just(" ".to_string()),
        Just("\n".to_string()),
        Just(".Values".to_string()),
        Just(".a".to_string()),
        Just(".b.c".to_string()),
        Just("$".to_string()),
        Just("$x".to_string()),
        Just(" := ".to_string()),
        Just(" = ".to_string()),
        Just("|".to_string()),
        Just("(".to_string()),
        Just(")".to_string()),
        Just("if".to_string()),
        Just("else".to_string()),
        Just("end".to_string()),
        Just("range".to_string()),
        Just("with".to_string()),
        Just("break".to_string()),
        Just("continue".to_string()),
        Just("define \"t\"".to_string()),
        Just("template \"t\" .".to_string()),
        Just("block \"b\" .".to_string()),
        Just("include \"t\" .".to_string()),
        Just("tpl \"{{ .a }}\" .".to_string()),
        Just("printf \"%v %d %s %q %x %5.2f\"".to_string()),
        Just("toYaml".to_string()),
        Just("fromYaml".to_string()),
        Just("default".to_string()),
        Just("index".to_string()),
        Just("slice".to_string()),
        Just("len".to_string()),
        Just("eq".to_string()),
        Just("lt".to_string()),
        Just("and".to_string()),
        Just("or".to_string()),
        Just("not".to_string()),
        Just("list 1 2".to_string()),
        Just("dict \"k\" 1".to_string()),
        Just("set".to_string()),
        Just("nindent 2".to_string()),
        Just("quote".to_string()),
        Just("required \"x\"".to_string()),
        Just("nil".to_string()),
        Just("true".to_string()),
        Just("1".to_string()),
        Just("-1.5e3".to_string()),
        Just("0x1F".to_string()),
        Just("'a'".to_string()),
        Just("\"str\"".to_string()),
        Just("`raw`".to_string()),
        Just(",".to_string()),
        "[a-z{}$.|()\"'` -]{0,4}".prop_map(|s| s),
    ];
    prop::collection::vec(frag, 0..40).prop_map(|v| v.concat())
}

fn data() -> Value {
    gotmpl::yaml::from_yaml("Values: {a: 1, b: {c: [1, x, null]}, s: str}\na: [1, 2]\nb: {c: d}\n")
        .unwrap_or(Value::Nil)
}

fn arb_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Nil),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|i| Value::Float(i as f64)),
        (-1e6f64..1e6).prop_map(Value::Float),
        // Includes U+2028/U+2029, line breaks to go-yaml that fromYaml reads as go-yaml does
        // (tests/yaml_breaks.rs pins Helm's exact output).
        "\\PC{0,30}".prop_map(Value::from),
        "[a\u{2028}\u{2029} \n]{0,12}".prop_map(Value::from),
        prop_oneof![
            Just("yes"),
            Just("no"),
            Just("on"),
            Just("null"),
            Just("~"),
            Just("1.0"),
            Just("0755"),
            Just(" lead"),
            Just("trail "),
            Just("a: b"),
            Just("# c"),
            Just("- x"),
            Just("a\nb"),
            Just("a\n"),
            Just("\n"),
            Just(""),
            Just("2021-01-02"),
            Just("x\ty"),
            Just("'q'"),
            Just("a  \n b"),
            Just("\"dq\""),
            Just("@at"),
            Just("0x1F"),
            Just("1e3"),
            Just(".inf"),
        ]
        .prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(|v| Value::List(Arc::new(v))),
            prop::collection::btree_map("[a-zA-Z0-9_ .:\u{2028}\u{2029}\n-]{0,12}", inner, 0..5)
                .prop_map(|m: BTreeMap<String, Value>| Value::Map(Arc::new(m))),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4000, .. ProptestConfig::default() })]

    #[test]
    fn parser_and_executor_never_panic(text in template_text()) {
        let mut t = Templates::new();
        t.missing_key(MissingKey::Zero);
        if t.parse("x", &text).is_ok() {
            let _ = t.execute("x", &data());
        }
    }

    #[test]
    fn arbitrary_unicode_never_panics(text in "\\PC{0,80}") {
        let mut t = Templates::new();
        if t.parse("x", &text).is_ok() {
            let _ = t.execute("x", &data());
        }
    }

    #[test]
    fn printf_never_panics(fmt in "[%a-z0-9.+#* \\-\\[\\]]{0,20}", n in any::<i64>(), f in any::<f64>(), s in "\\PC{0,10}") {
        let mut t = Templates::new();
        let text = format!("{{{{ printf {:?} .n .f .s nil (list 1) }}}}", fmt);
        let d = gotmpl::map_of([
            ("n".to_string(), Value::Int(n)),
            ("f".to_string(), Value::Float(f)),
            ("s".to_string(), Value::from(s)),
        ]);
        if t.parse("x", &text).is_ok() {
            let _ = t.execute("x", &d);
        }
    }

    #[test]
    fn to_yaml_reads_back(v in arb_value()) {
        let m = gotmpl::map_of([("root".to_string(), v)]);
        let y = gotmpl::yaml::to_yaml(&m);
        let back = gotmpl::yaml::from_yaml(&y);
        prop_assert!(back.is_ok(), "toYaml output does not parse: {:?}\n{}", back, y);
        let back = back.unwrap_or(Value::Nil);
        // Compare through JSON: numbers are float64 on both sides after Helm's round trip.
        let want = gotmpl::json::to_json(&m, false);
        let got = gotmpl::json::to_json(&back, false);
        prop_assert_eq!(want, got, "yaml was:\n{}", y);
    }

    #[test]
    fn from_yaml_never_panics(text in "\\PC{0,120}") {
        let _ = gotmpl::yaml::from_yaml(&text);
    }

    /// An int64 prints, formats, compares and serialises exactly like an int; only the Go
    /// type name differs (the point of telling them apart).
    #[test]
    fn int64_behaves_like_int_but_for_its_type(n in any::<i64>(), fmt in "%[-+# 0]{0,2}[0-9]{0,2}[vdxXobqcU]") {
        let mut t = Templates::new();
        let text = format!(
            "{{{{ . }}}}|{{{{ printf {:?} . }}}}|{{{{ toJson . }}}}|{{{{ toYaml . }}}}|{{{{ eq . 0 }}}}|{{{{ lt . 5 }}}}|{{{{ if . }}}}t{{{{ end }}}}|{{{{ add . 1 }}}}",
            fmt
        );
        prop_assert!(t.parse("x", &text).is_ok());
        let narrow = t.execute("x", &Value::Int(n));
        let wide = t.execute("x", &Value::int64(n));
        prop_assert_eq!(narrow.map_err(|e| e.to_string()), wide.map_err(|e| e.to_string()));
        prop_assert!(t.parse("y", "{{ typeOf . }}").is_ok());
        prop_assert_eq!(t.execute("y", &Value::Int(n)).map_err(|e| e.to_string()), Ok("int".to_string()));
        prop_assert_eq!(t.execute("y", &Value::int64(n)).map_err(|e| e.to_string()), Ok("int64".to_string()));
    }
}
