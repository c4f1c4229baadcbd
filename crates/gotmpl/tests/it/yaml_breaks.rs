//! `toYaml` of strings holding line-break characters other than `\n`: libyaml writes the
//! character itself and starts a new line, so the bytes below are what Helm 3.6.2 prints
//! (checked with `helm template` on values holding these strings).

use gotmpl::Value;

fn to_yaml(s: &str) -> String {
    let m = gotmpl::map_of([("v".to_string(), Value::from(s.to_string()))]);
    gotmpl::yaml::to_yaml(&m)
}

#[test]
fn line_separator_in_single_quotes() {
    assert_eq!(to_yaml("x\u{2028}y"), "v: 'x\u{2028}  y'\n");
    assert_eq!(to_yaml("\u{2028}"), "v: '\u{2028}'\n");
}

#[test]
fn line_separator_in_literal_block() {
    assert_eq!(
        to_yaml("l1\nl2\u{2028}l3"),
        "v: |-\n  l1\n  l2\u{2028}  l3\n"
    );
}

#[test]
fn carriage_return_is_escaped() {
    assert_eq!(to_yaml("m\rn"), "v: \"m\\rn\"\n");
}

/// Helm 3.6.2's `toYaml` of the values below (after its trailing-newline trim), produced with
/// a chart whose template is `a: {{ toYaml .Values | b64enc }}` (base64 so Helm's own parse
/// of the output cannot interfere) and `helm template <chart> -f values.yaml`, where
/// values.yaml held these strings as double-quoted escapes.
const HELM_VALUES_JSON: &str = r#"{"": {"\u20280": null}, "a": "x\u2028y", "b": "\u2028", "c": "x\u2029y", "e": "l1\nl2\u2028l3", "f": "x\r\u2028y", "g": "x \u2028 y", "h": "\u2028x\n", "k": ["a\u2029\u2028b", {"\u2029k\u2028": "v\u2028\n\u2029w"}], "k\u2028y": 1, "nel": ["x\u0085y", "a\u0085\u0085b", "a \u0085  \u0085 \u0085b", "\u0085\u0085", "a\u0085---b", "a\n\u0085b\u2028\u0085c", "x\u0085"], "\u2028": 4, "\u2029\n": 5}"#;

const HELM_TO_YAML: &str = concat!(
    "\"\":\n",
    "  ? '\u{2028}    0'\n",
    "  : null\n",
    "? '\u{2028}'\n",
    ": 4\n",
    "? |2+\n",
    "\u{2029}\n",
    ": 5\n",
    "a: 'x\u{2028}  y'\n",
    "b: '\u{2028}'\n",
    "c: 'x\u{2029}  y'\n",
    "e: |-\n",
    "  l1\n",
    "  l2\u{2028}  l3\n",
    "f: \"x\\r\\Ly\"\n",
    "g: \"x \\L y\"\n",
    "h: |2\n",
    "\u{2028}  x\n",
    "k:\n",
    "- 'a\u{2029}\u{2028}  b'\n",
    "- ? '\u{2029}    k\u{2028}'\n",
    "  : |-\n",
    "    v\u{2028}\n",
    "\u{2029}    w\n",
    "? 'k\u{2028}  y'\n",
    ": 1\n",
    "nel:\n",
    "- x y\n",
    "- |-\n",
    "  a\n",
    "  b\n",
    "- |-\n",
    "  a\n",
    "\n",
    "  b\n",
    "- |2+\n",
    "\n",
    "- a ---b\n",
    "- |-\n",
    "  a\n",
    "   b\u{2028}   c\n",
    "- 'x '",
);

fn helm_values() -> Value {
    let json: serde_json::Value = serde_json::from_str(HELM_VALUES_JSON).unwrap();
    Value::from_json_float(json)
}

#[test]
fn separators_and_next_lines_print_as_helm_does() {
    let y = gotmpl::yaml::to_yaml(&helm_values());
    assert_eq!(y.strip_suffix('\n').unwrap_or(&y), HELM_TO_YAML);
}

#[test]
fn helm_output_reads_back_identically() {
    // What go-yaml reads back: the values after the JSON re-read folded U+0085.
    let y = gotmpl::yaml::to_yaml(&helm_values());
    let back = gotmpl::yaml::from_yaml(&y).unwrap();
    assert_eq!(gotmpl::yaml::to_yaml(&back), y);
    let expected: serde_json::Value = serde_json::from_str(
        &HELM_VALUES_JSON
            .replace(r#""x\u0085y""#, r#""x y""#)
            .replace(r#""a\u0085\u0085b""#, r#""a\nb""#)
            .replace(r#""a \u0085  \u0085 \u0085b""#, r#""a\n\nb""#)
            .replace(r#""\u0085\u0085""#, r#""\n""#)
            .replace(r#""a\u0085---b""#, r#""a ---b""#)
            .replace(r#""a\n\u0085b\u2028\u0085c""#, r#""a\n b\u2028 c""#)
            .replace(r#""x\u0085""#, r#""x ""#),
    )
    .unwrap();
    assert_eq!(back.to_json(), Value::from_json_float(expected).to_json());
}

#[test]
fn separator_key_in_a_nested_map() {
    // The case of issue 11, as Helm prints it.
    let v = Value::from_json_float(serde_json::json!({"": {"\u{2028}0": null}}));
    let y = gotmpl::yaml::to_yaml(&v);
    assert_eq!(y, "\"\":\n  ? '\u{2028}    0'\n  : null\n");
    assert_eq!(gotmpl::yaml::from_yaml(&y).unwrap().to_json(), v.to_json());
}

#[test]
fn next_line_in_a_key_prints_nothing() {
    // helm 3.6.2: `toYaml` of {"k\u0085y": 2} and of {"d": {"x": "\u0085", "k\u0085\u0085": 1}}
    // is the empty string (sigs.k8s.io/yaml fails, toYaml swallows the error).
    for json in [
        serde_json::json!({"k\u{85}y": 2}),
        serde_json::json!({"d": {"x": "\u{85}", "k\u{85}\u{85}": 1}}),
        serde_json::json!({"d": "a\u{85}--- b"}),
    ] {
        assert_eq!(
            gotmpl::yaml::to_yaml(&Value::from_json_float(json.clone())),
            "",
            "{json}"
        );
    }
    let e = gotmpl::yaml::marshal(&Value::from_json_float(serde_json::json!({"k\u{85}y": 2})));
    assert_eq!(
        e.unwrap_err().to_string(),
        "yaml: line 1: did not find expected ',' or '}'"
    );
}

#[test]
fn multiline_and_long_keys_are_complex_keys() {
    // helm 3.6.2, `toYaml` of {"a\nb": 1} and of {"k"*130: 1, "x": {"k"*130: [1]}} (same chart).
    let v = Value::from_json_float(serde_json::json!({"a\nb": 1}));
    assert_eq!(gotmpl::yaml::to_yaml(&v), "? |-\n  a\n  b\n: 1\n");
    let k = "k".repeat(130);
    let v = Value::from_json_float(serde_json::json!({k.clone(): 1, "x": {k.clone(): [1]}}));
    assert_eq!(
        gotmpl::yaml::to_yaml(&v),
        format!("? {k}\n: 1\nx:\n  ? {k}\n  : - 1\n")
    );
}

#[test]
fn separator_then_newline_in_a_sequence() {
    // helm 3.6.2, `toYaml` of {"root": {"": ["\u2028\n", null]}} (same chart); found by
    // prop.rs's to_yaml_reads_back.
    let v = Value::from_json_float(serde_json::json!({"root": {"": ["\u{2028}\n", null]}}));
    let y = gotmpl::yaml::to_yaml(&v);
    assert_eq!(y, "root:\n  \"\":\n  - |2+\n\u{2028}\n  - null\n");
    assert_eq!(gotmpl::yaml::from_yaml(&y).unwrap().to_json(), v.to_json());
}

#[test]
fn literal_ending_in_a_separator_ends_the_document() {
    // helm 3.6.2, `toYaml` of {"root": {"": "\n\u2028"}} (same chart): no line break after the
    // separator, which go-yaml already reads as the end of a line. Found by prop.rs.
    let v = Value::from_json_float(serde_json::json!({"root": {"": "\n\u{2028}"}}));
    let y = gotmpl::yaml::to_yaml(&v);
    assert_eq!(y, "root:\n  \"\": |2+\n\n\u{2028}");
    assert_eq!(gotmpl::yaml::from_yaml(&y).unwrap().to_json(), v.to_json());
}
