//! `kustomize build` of strings and keys holding line breaks go-yaml knows but YAML 1.2 does
//! not (U+2028, U+2029, U+0085), against what kustomize 4.5.4 printed. The expected texts were
//! produced with
//!
//!     printf 'resources: [res.yaml]\n' > kustomization.yaml   # res.yaml = RESOURCE below
//!     ~/.cache/fleet-tools/bin/kustomize build .
//!
//! and the output fed back as the resource printed itself again (kustomize reads its own
//! output back identically). U+2028/U+2029 are written raw, in single quotes or literal
//! blocks, with the indentation that follows them not part of the value; U+0085 is folded
//! away by kustomize's JSON re-read (`sigs.k8s.io/yaml.JSONToYAML`), and fails the build in a
//! key or before a document marker.

use fleet_render::kustomize::{self, MemFs, goyaml};
use std::path::Path;

const RESOURCE: &str = r#"apiVersion: x/v1
kind: Foo
metadata:
  name: c
spec:
  "": {"\u20280": null}
  a: "x\u2028y"
  b: "\u2028"
  c: "x\u2029y"
  e: "l1\nl2\u2028l3"
  f: "x\r\u2028y"
  g: "x \u2028 y"
  h: "\u2028x\n"
  k: ["a\u2029\u2028b", {"\u2029k\u2028": "v\u2028\n\u2029w"}]
  "k\u2028y": 1
  "\u2028": 4
  "\u2029\n": 5
  nel: ["x\u0085y", "a\u0085\u0085b", "a \u0085  \u0085 \u0085b", "\u0085\u0085", "a\u0085---b", "a\n\u0085b\u2028\u0085c", "x\u0085"]
"#;

/// `kustomize build` of RESOURCE (kustomize 4.5.4, byte for byte).
const EXPECTED: &str = concat!(
    "apiVersion: x/v1\n",
    "kind: Foo\n",
    "metadata:\n",
    "  name: c\n",
    "spec:\n",
    "  \"\":\n",
    "    ? '\u{2028}      0'\n",
    "    : null\n",
    "  ? '\u{2028}'\n",
    "  : 4\n",
    "  ? |2+\n",
    "\u{2029}\n",
    "  : 5\n",
    "  a: 'x\u{2028}    y'\n",
    "  b: '\u{2028}'\n",
    "  c: 'x\u{2029}    y'\n",
    "  e: |-\n",
    "    l1\n",
    "    l2\u{2028}    l3\n",
    "  f: \"x\\r\\Ly\"\n",
    "  g: \"x \\L y\"\n",
    "  h: |2\n",
    "\u{2028}    x\n",
    "  k:\n",
    "  - 'a\u{2029}\u{2028}    b'\n",
    "  - ? '\u{2029}      k\u{2028}'\n",
    "    : |-\n",
    "      v\u{2028}\n",
    "\u{2029}      w\n",
    "  ? 'k\u{2028}    y'\n",
    "  : 1\n",
    "  nel:\n",
    "  - x y\n",
    "  - |-\n",
    "    a\n",
    "    b\n",
    "  - |-\n",
    "    a\n",
    "\n",
    "    b\n",
    "  - |2+\n",
    "\n",
    "  - a ---b\n",
    "  - |-\n",
    "    a\n",
    "     b\u{2028}     c\n",
    "  - 'x '\n",
);

fn build(resource: &str) -> Result<String, String> {
    let mut fs = MemFs::new();
    fs.insert("/b/kustomization.yaml", b"resources: [res.yaml]\n".to_vec());
    fs.insert("/b/res.yaml", resource.as_bytes().to_vec());
    kustomize::build_with(&fs, Path::new("/b"))
        .map(|objs| goyaml::to_yaml_stream(objs.iter()))
        .map_err(|e| e.to_string())
}

#[test]
fn separators_and_next_lines_print_as_kustomize_does() {
    assert_eq!(build(RESOURCE).unwrap(), EXPECTED);
}

#[test]
fn kustomize_output_reads_back_identically() {
    assert_eq!(build(EXPECTED).unwrap(), EXPECTED);
}

/// The proptest case of issue 11: a single-quoted key broken after U+2028 read back with
/// its indentation as content.
#[test]
fn separator_key_in_a_nested_map() {
    let v = serde_json::json!({"": {"\u{2028}0": null}});
    let text = goyaml::to_yaml(&v);
    assert_eq!(text, "\"\":\n  ? '\u{2028}    0'\n  : null\n");
    let docs = kustomize::yamlin::parse_documents(&text, kustomize::yamlin::Schema::V3).unwrap();
    assert_eq!(docs[0].to_json(), v);
}

#[test]
fn next_line_in_a_key_fails_the_build() {
    // kustomize 4.5.4: Error: map[string]interface {}{...}: yaml: line 1: did not find expected ',' or '}'
    let e = build("apiVersion: x/v1\nkind: Foo\nmetadata:\n  name: c\nspec:\n  \"k\\u0085y\": 2\n")
        .unwrap_err();
    assert!(
        e.contains("yaml: line 1: did not find expected ',' or '}'"),
        "{e}"
    );
    // A key removed by a patch never reaches the output, and kustomize prints the rest.
    let mut fs = MemFs::new();
    fs.insert(
        "/b/kustomization.yaml",
        b"resources: [res.yaml]\npatches:\n- target: {kind: Foo}\n  patch: |\n    - op: remove\n      path: /spec\n".to_vec(),
    );
    fs.insert(
        "/b/res.yaml",
        b"apiVersion: x/v1\nkind: Foo\nmetadata:\n  name: c\nspec:\n  \"k\\u0085\": 1\n".to_vec(),
    );
    let objs = kustomize::build_with(&fs, Path::new("/b")).unwrap();
    assert_eq!(
        goyaml::to_yaml_stream(objs.iter()),
        "apiVersion: x/v1\nkind: Foo\nmetadata:\n  name: c\n"
    );
}

#[test]
fn document_marker_after_next_line_fails_the_build() {
    // kustomize 4.5.4: Error: map[...]: yaml: line 2: found unexpected document indicator
    let e =
        build("apiVersion: x/v1\nkind: Foo\nmetadata:\n  name: c\nspec:\n  d: \"a\\u0085--- b\"\n")
            .unwrap_err();
    assert!(
        e.contains("yaml: line 2: found unexpected document indicator"),
        "{e}"
    );
}

#[test]
fn literal_ending_in_a_separator_ends_the_resource() {
    // kustomize 4.5.4 prints no line break after the final U+2028 (go-yaml reads it as one).
    let out =
        build("apiVersion: x/v1\nkind: Foo\nmetadata:\n  name: c\nspec:\n  \"\": \"\\n\\u2028\"\n")
            .unwrap();
    assert_eq!(
        out,
        "apiVersion: x/v1\nkind: Foo\nmetadata:\n  name: c\nspec:\n  \"\": |2+\n\n\u{2028}"
    );
    assert_eq!(build(&out).unwrap(), out);
}
