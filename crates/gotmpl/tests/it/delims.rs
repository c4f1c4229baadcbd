//! Custom action delimiters (Go's `Template.Delims`). Expected outputs and error texts are what Go's
//! text/template gives: trim markers and comments follow the chosen delimiters, the default `{{ }}`
//! become plain text, and errors keep Go's `template: NAME:LINE: ...` shape.

use gotmpl::{MissingKey, Templates, Value};

fn vals(yaml: &str) -> Value {
    gotmpl::yaml::from_yaml(yaml).expect("test yaml")
}

fn run(left: &str, right: &str, text: &str, yaml: &str) -> Result<String, String> {
    let mut t = Templates::new();
    t.delims(left, right).missing_key(MissingKey::Error);
    t.parse("values", text).map_err(|e| e.to_string())?;
    t.execute("values", &vals(yaml)).map_err(|e| e.to_string())
}

fn ok(text: &str, yaml: &str) -> String {
    run("${", "}", text, yaml).unwrap_or_else(|e| format!("ERR: {e}"))
}

fn err(text: &str, yaml: &str) -> String {
    match run("${", "}", text, yaml) {
        Ok(s) => format!("unexpected success: {s:?}"),
        Err(e) => e,
    }
}

#[test]
fn dollar_brace_actions() {
    assert_eq!(ok("name: ${ .ClusterName }", "ClusterName: c1"), "name: c1");
    assert_eq!(ok("${.a}${.b}", "{a: x, b: z}"), "xz");
    assert_eq!(ok("${ .m.k }", "m: {k: v}"), "v");
    assert_eq!(ok(r#"${ index .m "a/b" }"#, "m: {a/b: v}"), "v");
    assert_eq!(
        ok(
            r#"${ if hasKey .m "x" }${ .m.x }${ else }none${ end }"#,
            "m: {}"
        ),
        "none"
    );
    assert_eq!(ok(r#"${ list 1 2 3 | toJson }"#, ""), "[1,2,3]");
    assert_eq!(ok(r#"${ dict "a" 1 | toJson }"#, ""), r#"{"a":1}"#);
    assert_eq!(ok(r#"${ .s | upper }_x"#, "s: ab"), "AB_x");
}

#[test]
fn default_delims_are_text() {
    assert_eq!(ok("a {{ .x }} b", "x: 1"), "a {{ .x }} b");
    assert_eq!(ok("{ } $ $x {x}", ""), "{ } $ $x {x}");
    // A right delimiter in text is just text.
    assert_eq!(ok("${ .x }}", "x: 1"), "1}");
    // And default delimiters still work on a fresh set.
    assert_eq!(run("", "", "{{ .x }}", "x: 1").unwrap(), "1");
}

#[test]
fn trim_markers() {
    assert_eq!(ok("a \n ${- .x -} \n b", "x: 1"), "a1b");
    assert_eq!(ok("a ${- .x } b", "x: 1"), "a1 b");
    assert_eq!(ok("a ${ .x -} b", "x: 1"), "a 1b");
    assert_eq!(
        ok(
            "items:\n  ${- range $k := .l }\n  - ${ $k }\n  ${- end }\n",
            "l: [a, b]"
        ),
        "items:\n  - a\n  - b\n"
    );
    // `-` without a following space is a number sign, not a trim marker.
    assert_eq!(ok("${-3}", ""), "-3");
    assert_eq!(ok("${ 3 -}x", ""), "3x");
}

#[test]
fn comments() {
    assert_eq!(ok("a${/* c */}b", ""), "ab");
    assert_eq!(ok("a  ${- /* c */ -}  b", ""), "ab");
    assert_eq!(ok("${/* } */}x", ""), "x");
    assert_eq!(
        err("${/* c */ x}", ""),
        "template: values:1: comment ends before closing delimiter"
    );
    assert_eq!(err("${/* c", ""), "template: values:1: unclosed comment");
}

#[test]
fn go_errors() {
    assert_eq!(
        err("a ${ .x ", "x: 1"),
        "template: values:1: unclosed action"
    );
    assert_eq!(
        err("${ .x }", "y: 1"),
        r#"template: values:1:3: executing "values" at <.x>: map has no entry for key "x""#
    );
    assert_eq!(
        err("line1\n${ nope }", ""),
        r#"template: values:2: function "nope" not defined"#
    );
    assert_eq!(
        err("${ if .x }", "x: 1"),
        "template: values:1: unexpected EOF"
    );
    // The right delimiter ends an operand: `.x}` is the field x.
    assert_eq!(ok("${.x}", "x: 2"), "2");
    // With `}}`, a single `}` after an operand is a bad character, as in Go.
    assert_eq!(
        run("", "", "{{ .x} }}", "x: 1").unwrap_err(),
        "template: values:1: bad character U+007D '}'"
    );
}

#[test]
fn other_delimiter_pairs() {
    for (l, r) in [("<<", ">>"), ("|", "|"), ("(日)", "(本)"), ("[[", "]]")] {
        let text = format!("hello {l}.s{r} {l}- .s -{r} !");
        assert_eq!(
            run(l, r, &text, "s: w").unwrap(),
            "hello ww!",
            "delims {l} {r}"
        );
        let c = format!("a{l}/* x */{r}b");
        assert_eq!(run(l, r, &c, "").unwrap(), "ab", "comment with {l} {r}");
    }
}

#[test]
fn removed_functions_are_not_defined() {
    let mut t = Templates::new();
    t.delims("${", "}").remove_func("env");
    assert_eq!(
        t.parse("values", "${ env \"HOME\" }")
            .unwrap_err()
            .to_string(),
        r#"template: values:1: function "env" not defined"#
    );
}

mod props {
    use super::*;
    use proptest::prelude::*;

    /// Small actions that mean the same under `{{ }}` and `${ }`.
    fn action() -> impl Strategy<Value = (String, String)> {
        let body = prop_oneof![
            Just(".a".to_string()),
            Just(".m.k".to_string()),
            Just("len .l".to_string()),
            Just("upper .a".to_string()),
            Just(r#"printf "%v-%v" .a 3"#.to_string()),
            Just("/* note */".to_string()),
            Just("if .a".to_string()),
            Just("end".to_string()),
        ];
        (body, any::<bool>(), any::<bool>()).prop_map(|(b, lt, rt)| {
            let (l, r) = (if lt { "- " } else { "" }, if rt { " -" } else { "" });
            (format!("{{{{{l}{b}{r}}}}}"), format!("${{{l}{b}{r}}}"))
        })
    }

    proptest! {
        /// Any text parses or fails with an error; it never panics.
        #[test]
        fn arbitrary_text_never_panics(text in "[ -~\n]{0,60}") {
            let _ = run("${", "}", &text, "a: x");
        }

        /// Text without `$` has no actions under `${ }` and renders unchanged.
        #[test]
        fn text_without_dollar_is_unchanged(text in "[ -#%-~\n]{0,60}") {
            prop_assert_eq!(run("${", "}", &text, "a: x"), Ok(text));
        }

        /// A template written with `{{ }}` and the same one with `${ }` behave identically
        /// (same output or the same error), trim markers and comments included.
        #[test]
        fn delimiters_do_not_change_meaning(
            parts in prop::collection::vec((action(), "[ a-z\n]{0,4}"), 0..6)
        ) {
            let mut curly = String::new();
            let mut dollar = String::new();
            for ((c, d), text) in &parts {
                curly.push_str(c);
                curly.push_str(text);
                dollar.push_str(d);
                dollar.push_str(text);
            }
            let data = "a: x\nm: {k: v}\nl: [1, 2]";
            prop_assert_eq!(run("", "", &curly, data), run("${", "}", &dollar, data));
        }
    }
}
