//! The workspace's one Masterminds/semver v3 implementation (`gotmpl::semver`): the cases the
//! former copies in sprig, Helm rendering and Fleet's chart resolution each pinned, plus the
//! Masterminds v3.1.1 behaviours where those copies disagreed.

use std::cmp::Ordering;

use gotmpl::semver::{Constraints, Version, is_compatible_range, semver_compare};
use proptest::prelude::*;

fn v(s: &str) -> Version {
    match Version::parse(s) {
        Ok(v) => v,
        Err(e) => panic!("{s:?} should parse: {e}"),
    }
}

fn m(c: &str, ver: &str) -> bool {
    match semver_compare(c, ver) {
        Ok(b) => b,
        Err(e) => panic!("{c:?} / {ver:?} should parse: {e}"),
    }
}

#[test]
fn versions_parse_leniently() {
    let x = v("v1.30.0");
    assert_eq!((x.major(), x.minor(), x.patch()), (1, 30, 0));
    assert_eq!(x.original(), "v1.30.0");
    assert_eq!(x.to_string(), "1.30.0");
    assert_eq!(v("1.2").to_string(), "1.2.0");
    assert_eq!(v("v2").to_string(), "2.0.0");
    assert_eq!(v("1.2-beta").to_string(), "1.2.0-beta");
    assert_eq!(v("01.002.3").to_string(), "1.2.3");
    let y = v("1.2.3-rc.1+build-5.x");
    assert_eq!(y.prerelease(), "rc.1");
    assert_eq!(y.metadata(), "build-5.x");
    assert_eq!(v("1.2.3-a-b").prerelease(), "a-b");
    assert_eq!(v("1.2.3+b-c").metadata(), "b-c");
}

#[test]
fn bad_versions_are_errors_with_masterminds_texts() {
    for bad in [
        "",
        "abc",
        "v",
        "1.",
        "1..2",
        "1.2.3.4",
        "1.2.3-",
        "1.2.3+",
        "1.2.3-a..b",
        "1.2.3+a+b",
        " 1.2.3",
        "V1.2.3",
        "1.2.3-ä",
        "x.1.2",
    ] {
        let e = Version::parse(bad).err();
        assert_eq!(
            e.map(|e| e.to_string()).as_deref(),
            Some("Invalid Semantic Version"),
            "{bad:?}"
        );
    }
    assert_eq!(
        Version::parse("1.2.3-01").map_err(|e| e.to_string()),
        Err("Version segment starts with 0".to_string())
    );
    let big = Version::parse("99999999999999999999.0.0").map_err(|e| e.to_string());
    assert!(matches!(big, Err(e) if e.starts_with("Error parsing version segment")));
}

#[test]
fn ordering_follows_masterminds_compare() {
    let order = [
        "0.9.9",
        "1.0.0-alpha",
        "1.0.0-alpha.1",
        "1.0.0-alpha.beta",
        "1.0.0-beta",
        "1.0.0-beta.2",
        "1.0.0-beta.11",
        "1.0.0-rc.1",
        "1.0.0",
        "1.0.1",
        "1.2.0",
        "1.10.0",
        "2.0.0",
    ];
    for w in order.windows(2) {
        assert_eq!(v(w[0]).compare(&v(w[1])), Ordering::Less, "{w:?}");
        assert_eq!(v(w[1]).compare(&v(w[0])), Ordering::Greater, "{w:?}");
    }
    // Metadata and the `v` prefix do not take part.
    assert_eq!(v("v1.2.3+a").compare(&v("1.2.3+b")), Ordering::Equal);
    assert_eq!(v("1.2.3+a"), v("1.2.3"));
}

#[test]
fn constraints_from_sprig_copy() {
    assert!(m(">=1.19-0", "v1.20.0-gke.1"));
    assert!(m(">=1.19-0", "1.30.0"));
    assert!(!m(">=1.19", "1.20.0-rc.1"));
    assert!(m("^1.2.3", "1.9.0"));
    assert!(!m("^1.2.3", "2.0.0"));
    assert!(m("~1.2.3", "1.2.9"));
    assert!(!m("~1.2.3", "1.3.0"));
    assert!(m("1.x", "1.4.0"));
    assert!(m(">1.0 <2.0", "1.5.0"));
    assert!(m("<1.0 || >=3", "3.1.0"));
    assert!(m("1.2 - 1.4.5", "1.3.0"));
    assert!(!m("!=1.2.3", "1.2.3"));
    assert!(semver_compare(">=x.y", "1.0.0").is_err());
    assert!(semver_compare(">=1.0", "nope").is_err());
}

#[test]
fn constraints_from_helm_copy() {
    let c = is_compatible_range;
    assert!(c(">=1.19.0-0", "v1.30.0"));
    assert!(c(">= 1.16.0-0 < 2.0.0", "1.30.0"));
    assert!(!c("<1.16.0", "1.30.0"));
    assert!(c("~1.2.0", "1.2.9"));
    assert!(!c("~1.2.0", "1.3.0"));
    assert!(c("^1.2.0", "1.9.0"));
    assert!(!c("^1.2.0", "2.0.0"));
    assert!(c("1.2.x", "1.2.7"));
    assert!(c("*", "3.4.5"));
    assert!(!c("*", "3.4.5-rc1"));
    assert!(c("1.0.0 - 2.0.0", "1.5.0"));
    assert!(c("<1.0.0 || >=3.0.0", "3.1.0"));
    assert!(c("0.1.0", "0.1.0"));
    assert!(!c("", "0.1.0"));
    assert!(!c(">=1.0", "garbage"));
}

#[test]
fn constraints_from_bundle_copy() {
    assert!(m("1.2.3", "1.2.3"));
    assert!(!m("1.2.3", "1.2.4"));
    assert!(m(">= 1.2, < 2.0", "1.5.0"));
    assert!(!m(">= 1.2, < 2.0", "2.0.0"));
    assert!(m(">=1.2 <2.0", "1.9.9"));
    assert!(m("^1.2.0", "1.9.0"));
    assert!(!m("1.2.x", "1.3.0"));
    assert!(m("1.0 - 1.4", "1.3.0"));
    assert!(!m("1.0 - 1.4", "1.5.0"));
    assert!(m("< 1 || > 3", "4.0.0"));
    assert!(!m("< 1 || > 3", "2.0.0"));
    assert!(m("!=1.2.3", "1.2.4"));
    assert!(m("*", "0.1.0"));
    assert!(m("v1.2.3", "v1.2.3"));
    assert!(!m("*", "1.0.0-rc1"));
    assert!(Constraints::parse(">=garbage").is_err());
}

/// Cases where the former copies disagreed; each answer is Masterminds v3.1.1's.
#[test]
fn masterminds_quirks_where_copies_differed() {
    // A bare or `=` partial version is a tilde range, not an exact 1.2.0.
    assert!(m("1.2", "1.2.5"));
    assert!(m("=1.2", "1.2.5"));
    assert!(!m("1.2", "1.3.0"));
    // `<=` with a missing patch admits the whole minor; `>` needs the next minor.
    assert!(m("<=1.2", "1.2.9"));
    assert!(!m("<=1.2", "1.3.0"));
    assert!(!m(">1.2", "1.2.5"));
    assert!(m(">1.2", "1.3.0"));
    assert!(!m(">1.x", "1.9.0"));
    assert!(m(">1.x", "2.0.0"));
    // `>*` is ">0.0.0".
    assert!(m(">*", "0.1.0"));
    assert!(!m(">*", "0.0.0"));
    // `^0.0.3` checks major 0 and patch 3 only.
    assert!(m("^0.0.3", "0.0.3"));
    assert!(m("^0.0.3", "0.1.3"));
    assert!(!m("^0.0.3", "0.0.4"));
    assert!(m("^0.2", "0.2.9"));
    assert!(!m("^0.2", "0.3.0"));
    assert!(!m("^0.2.3", "1.2.3"));
    // Exact `!=` does not apply the prerelease rule; wildcard `!=` does.
    assert!(m("!=1.2.3", "1.2.4-rc.1"));
    assert!(!m("!=1.x", "2.0.0-rc.1"));
    assert!(m("!=1.x", "2.0.0"));
    assert!(!m("!=1.x", "1.5.0"));
    // Any prerelease in the constraint opens all prereleases (not only the same core).
    assert!(m(">=1.0.0-0", "1.5.0-beta"));
    assert!(!m(">=1.0.0", "1.5.0-beta"));
    // Terms may be written with no separator at all; `=>`, `=<`, `~>` spellings.
    assert!(m(">=1.0<2.0", "1.5.0"));
    assert!(!m(">=1.0<2.0", "2.0.0"));
    assert!(m("=>1.0, =<1.5", "1.5.0"));
    assert!(m("~>1.2", "1.2.8"));
    assert!(m("~1", "1.9.0"));
    assert!(!m("~1", "2.0.0"));
    // Leading/trailing whitespace and `v` in the constraint are fine.
    assert!(m("  >= v1.2.0  ", "1.2.0"));
}

#[test]
fn constraint_errors_name_the_bad_part() {
    let e = |c: &str| Constraints::parse(c).err().map(|e| e.to_string());
    assert_eq!(e("").as_deref(), Some("improper constraint: "));
    assert_eq!(e(">=1.0 || ").as_deref(), Some("improper constraint:  "));
    assert_eq!(e("==1.0").as_deref(), Some("improper constraint: ==1.0"));
    assert_eq!(
        e(">=1.0 || abc").as_deref(),
        Some("improper constraint:  abc")
    );
    assert_eq!(e("1x").as_deref(), Some("constraint Parser Error"));
    // The constraint's error wins over the version's.
    assert_eq!(
        semver_compare("==1", "nope").map_err(|e| e.to_string()),
        Err("improper constraint: ==1".to_string())
    );
}

proptest! {
    #[test]
    fn never_panics_on_arbitrary_input(s in "\\PC{0,40}") {
        let _ = Version::parse(&s);
        if let Ok(c) = Constraints::parse(&s) {
            let _ = c.check(&v("1.2.3"));
            let _ = c.check(&v("0.0.0-rc.1"));
        }
    }

    #[test]
    fn never_panics_on_constraint_shaped_input(s in "[0-9vxX*.<>=!~^|, +a-z-]{0,32}") {
        if let Ok(c) = Constraints::parse(&s) {
            let _ = c.check(&v("1.2.3"));
        }
        let _ = Version::parse(&s);
    }

    /// Printing a parsed version and parsing it again gives an equal version that prints the
    /// same; and comparison is a consistent total order on such versions.
    #[test]
    fn display_round_trips_and_compare_is_antisymmetric(
        a in (0u64..50, 0u64..50, 0u64..50, "(-[0-9a-z]{1,3}(\\.[1-9a-z][0-9a-z]{0,2}){0,2})?", "(\\+[0-9a-z]{1,4})?"),
        b in (0u64..50, 0u64..50, 0u64..50, "(-[0-9a-z]{1,3}(\\.[1-9a-z][0-9a-z]{0,2}){0,2})?"),
    ) {
        let sa = format!("v{}.{}.{}{}{}", a.0, a.1, a.2, a.3, a.4);
        let sb = format!("{}.{}.{}{}", b.0, b.1, b.2, b.3);
        let (Ok(va), Ok(vb)) = (Version::parse(&sa), Version::parse(&sb)) else {
            // Only numeric prerelease parts with a leading zero are rejected.
            return Ok(());
        };
        let printed = va.to_string();
        let again = Version::parse(&printed);
        prop_assert!(again.is_ok());
        if let Ok(again) = again {
            prop_assert_eq!(again.to_string(), printed.clone());
            prop_assert_eq!(again.compare(&va), Ordering::Equal);
        }
        prop_assert_eq!(va.compare(&vb), vb.compare(&va).reverse());
        // An exact constraint matches exactly the versions that compare equal.
        let exact = format!("={}", sb.split('+').next().unwrap_or(""));
        if let Ok(c) = Constraints::parse(&exact) {
            prop_assert_eq!(c.check(&va), va.compare(&vb) == Ordering::Equal, "{} vs {}", exact, sa);
        }
    }
}
