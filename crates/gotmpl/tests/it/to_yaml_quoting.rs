//! `toYaml` quotes a string only when go-yaml v2 would read it back as something else; numbers
//! that overflow 64 bits are strings to go-yaml, so they print plain. Expected text observed
//! with helm 3.6.2: a chart whose template is `a: {{ toYaml .Values | b64enc }}` and
//! `helm template <chart> -f values.yaml`, values.yaml holding these strings double-quoted.
//! kustomize 4.5.4 prints the same for them (same go-yaml v2 path).

use gotmpl::Value;

#[test]
fn overflowing_numbers_print_plain() {
    let f = format!("0b{}", "1".repeat(69));
    let v = Value::from_json_float(serde_json::json!({
        "a": "0xFFFFFFFFFFFFFFFFFF",
        "b": "99999999999999999999",
        "c": "0o777777777777777777777777",
        "d": "1:20:30",
        "e": "-0b11",
        "f": f,
    }));
    assert_eq!(
        gotmpl::yaml::to_yaml(&v),
        format!(
            "a: 0xFFFFFFFFFFFFFFFFFF\nb: \"99999999999999999999\"\nc: 0o777777777777777777777777\nd: \"1:20:30\"\ne: \"-0b11\"\nf: {f}\n"
        )
    );
    // -2^63 fits an int64, -(2^63 + 1) does not.
    let g = format!("-0b1{}", "0".repeat(63));
    let h = format!("-0b1{}1", "0".repeat(62));
    let v = Value::from_json_float(serde_json::json!({"g": g, "h": h}));
    assert_eq!(gotmpl::yaml::to_yaml(&v), format!("g: \"{g}\"\nh: {h}\n"));
}

#[test]
fn underscores_in_floats_follow_go() {
    // Go's ParseFloat takes `.5_0` (0.5) but not `._0`; fromYaml reads them the same way.
    let v = Value::from_json_float(serde_json::json!({"b": ".5_0", "c": "._0", "d": "1_0.5"}));
    let y = gotmpl::yaml::to_yaml(&v);
    assert_eq!(y, "b: \".5_0\"\nc: ._0\nd: \"1_0.5\"\n");
    assert_eq!(gotmpl::yaml::from_yaml(&y).unwrap().to_json(), v.to_json());
    let plain = gotmpl::yaml::from_yaml("b: .5_0\nc: ._0\n")
        .unwrap()
        .to_json();
    assert_eq!(plain, serde_json::json!({"b": 0.5, "c": "._0"}));
}
