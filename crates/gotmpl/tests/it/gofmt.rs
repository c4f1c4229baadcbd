//! `gotmpl::gofmt`, the workspace's one copy of Go's `strconv.FormatFloat` and
//! `encoding/json` float text: known Go outputs (including the cases the former copies in
//! Helm rendering and kustomize pinned) and round-trip properties.

use gotmpl::gofmt::{format_float, json_float};
use proptest::prelude::*;

#[test]
fn shortest_g_matches_go() {
    let g = |f: f64| format_float(f, 'g', -1, 64);
    assert_eq!(g(0.0), "0");
    assert_eq!(g(-0.0), "-0");
    assert_eq!(g(1.0), "1");
    assert_eq!(g(-2.5), "-2.5");
    assert_eq!(g(100000.0), "100000");
    assert_eq!(g(1e6), "1e+06");
    assert_eq!(g(123456789.0), "1.23456789e+08");
    assert_eq!(g(0.0001), "0.0001");
    assert_eq!(g(0.00001), "1e-05");
    assert_eq!(g(0.1 + 0.2), "0.30000000000000004");
    assert_eq!(g(1e21), "1e+21");
    assert_eq!(g(1e100), "1e+100");
    assert_eq!(g(5e-324), "5e-324");
    assert_eq!(g(f64::MAX), "1.7976931348623157e+308");
    assert_eq!(g(f64::NAN), "NaN");
    assert_eq!(g(f64::INFINITY), "+Inf");
    assert_eq!(g(f64::NEG_INFINITY), "-Inf");
    assert_eq!(format_float(1e-7, 'G', -1, 64), "1E-07");
}

/// Helm turns YAML floats into strings with float32 precision (sigs.k8s.io/yaml).
#[test]
fn shortest_g_float32_matches_go() {
    let g = |f: f64| format_float(f, 'g', -1, 32);
    assert_eq!(g(1.0), "1");
    assert_eq!(g(1.1), "1.1");
    assert_eq!(g(0.1), "0.1");
    assert_eq!(g(1e6), "1e+06");
    assert_eq!(g(123456.0), "123456");
    assert_eq!(g(0.0001), "0.0001");
    assert_eq!(g(0.00001), "1e-05");
    assert_eq!(g(123.456789), "123.45679");
    assert_eq!(g(-2.5), "-2.5");
    assert_eq!(g(16777217.0), "1.6777216e+07");
    assert_eq!(g(-0.0), "-0");
    assert_eq!(g(1e39), "+Inf");
}

#[test]
fn e_and_f_match_go() {
    assert_eq!(format_float(1234.5678, 'e', -1, 64), "1.2345678e+03");
    assert_eq!(format_float(1234.5678, 'e', 6, 64), "1.234568e+03");
    assert_eq!(format_float(1234.5678, 'E', 2, 64), "1.23E+03");
    assert_eq!(format_float(0.0, 'e', -1, 64), "0e+00");
    assert_eq!(format_float(0.0, 'e', 2, 64), "0.00e+00");
    assert_eq!(format_float(1e21, 'f', -1, 64), "1000000000000000000000");
    assert_eq!(format_float(1.5e-7, 'f', -1, 64), "0.00000015");
    assert_eq!(format_float(2.46913, 'f', 2, 64), "2.47");
    assert_eq!(format_float(-1.0, 'f', 3, 64), "-1.000");
    assert_eq!(format_float(2.46913, 'g', 3, 64), "2.47");
    assert_eq!(format_float(1e6, 'g', 3, 64), "1e+06");
    assert_eq!(format_float(0.1, 'f', -1, 32), "0.1");
    assert_eq!(format_float(0.1, 'f', 10, 32), "0.1000000015");
}

#[test]
fn json_matches_go_encoding_json() {
    assert_eq!(json_float(1e6).as_deref(), Some("1000000"));
    assert_eq!(json_float(1.5).as_deref(), Some("1.5"));
    assert_eq!(json_float(1e21).as_deref(), Some("1e+21"));
    assert_eq!(json_float(1e-7).as_deref(), Some("1e-7"));
    assert_eq!(json_float(1.5e-10).as_deref(), Some("1.5e-10"));
    assert_eq!(json_float(0.000001).as_deref(), Some("0.000001"));
    assert_eq!(json_float(-0.0).as_deref(), Some("-0"));
    assert_eq!(
        json_float(123456789012345680000.0).as_deref(),
        Some("123456789012345680000")
    );
    assert_eq!(json_float(f64::NAN), None);
    assert_eq!(json_float(f64::INFINITY), None);
}

fn any_f64() -> impl Strategy<Value = f64> {
    prop_oneof![
        any::<u64>().prop_map(f64::from_bits),
        any::<f64>(),
        -1e7f64..1e7
    ]
}

proptest! {
    /// Shortest texts read back as the same value, in every layout and both sizes.
    #[test]
    fn shortest_round_trips(f in any_f64()) {
        prop_assume!(f.is_finite());
        for fmt in ['g', 'e', 'f', 'G', 'E'] {
            let s = format_float(f, fmt, -1, 64);
            prop_assert_eq!(s.parse::<f64>().ok(), Some(f), "{} {}", fmt, s);
            let s32 = format_float(f, fmt, -1, 32);
            if (f as f32).is_finite() {
                prop_assert_eq!(s32.parse::<f32>().ok(), Some(f as f32), "{} {}", fmt, s32);
            }
        }
        let j = json_float(f);
        prop_assert_eq!(j.as_deref().and_then(|j| j.parse::<f64>().ok()), Some(f));
    }

    /// Fixed precisions never panic and give the digit counts Go gives.
    #[test]
    fn fixed_precision_shapes(f in any_f64(), prec in 0i32..30) {
        let e = format_float(f, 'e', prec, 64);
        let fx = format_float(f, 'f', prec, 64);
        let _ = format_float(f, 'g', prec, 32);
        if f.is_finite() {
            let mant = e.split(['e']).next().unwrap_or("");
            let frac = mant.split('.').nth(1).map_or(0, str::len);
            prop_assert_eq!(frac, prec as usize, "{}", e);
            let frac = fx.split('.').nth(1).map_or(0, str::len);
            prop_assert_eq!(frac, prec as usize, "{}", fx);
        }
    }
}
