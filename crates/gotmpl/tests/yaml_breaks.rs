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
