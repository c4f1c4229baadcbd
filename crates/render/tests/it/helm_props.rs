//! Property tests: no input to the Helm code panics — `--set` strings, `.helmignore` rules and
//! globs, chart archives, rendered manifests, and whole charts with arbitrary templates and
//! values (the template parser and executor run on every case).

use fleet_render::helm::chart::{File, load_archive, load_files};
use fleet_render::helm::ignore::{Rules, go_match};
use fleet_render::helm::manifests::sort_manifests;
use fleet_render::helm::objects::glob_regex;
use fleet_render::helm::{TemplateOptions, Values, strvals, template};
use proptest::prelude::*;

/// Strings biased towards the `--set` grammar.
fn set_string() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("a".to_string()),
            Just("b".to_string()),
            Just(".".to_string()),
            Just("=".to_string()),
            Just(",".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            Just("\\".to_string()),
            Just("0".to_string()),
            Just("1".to_string()),
            Just("-1".to_string()),
            Just("99999999999".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            any::<char>().prop_map(|c| c.to_string()),
        ],
        0..24,
    )
    .prop_map(|v| v.concat())
}

/// Template text biased towards Go template syntax.
fn template_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("{{".to_string()),
            Just("}}".to_string()),
            Just("{{-".to_string()),
            Just("-}}".to_string()),
            Just(" ".to_string()),
            Just("\n".to_string()),
            Just(".Values.a".to_string()),
            Just(".Values.a.b".to_string()),
            Just(".Release.Name".to_string()),
            Just(".Chart.Name".to_string()),
            Just(".Capabilities.APIVersions.Has \"v1\"".to_string()),
            Just(".Files.Get \"f.txt\"".to_string()),
            Just("(.Files.Glob \"*\").AsConfig".to_string()),
            Just(".Template.Name".to_string()),
            Just("include \"x\" .".to_string()),
            Just("define \"x\"".to_string()),
            Just("tpl \"{{ . }}\" .".to_string()),
            Just("if".to_string()),
            Just("range".to_string()),
            Just("with".to_string()),
            Just("else".to_string()),
            Just("end".to_string()),
            Just("|".to_string()),
            Just("$x :=".to_string()),
            Just("\"s\"".to_string()),
            Just("---\n".to_string()),
            Just("kind: Pod\n".to_string()),
            Just("metadata: {annotations: {helm.sh/hook: test}}\n".to_string()),
            any::<char>().prop_map(|c| c.to_string()),
        ],
        0..30,
    )
    .prop_map(|v| v.concat())
}

fn yaml_text() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("a: ".to_string()),
            Just("b:\n  ".to_string()),
            Just("- ".to_string()),
            Just("1".to_string()),
            Just("null".to_string()),
            Just("[".to_string()),
            Just("{".to_string()),
            Just("}".to_string()),
            Just("\n".to_string()),
            Just("  ".to_string()),
            Just("&x ".to_string()),
            Just("*x".to_string()),
            Just("y: yes".to_string()),
            any::<char>().prop_map(|c| c.to_string()),
        ],
        0..20,
    )
    .prop_map(|v| v.concat())
}

fn f(name: &str, data: &str) -> File {
    File {
        name: name.into(),
        data: data.as_bytes().into(),
    }
}

const CASES: u32 = 512;

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, ..ProptestConfig::default() })]

    #[test]
    fn set_parser_never_panics(s in set_string(), raw in ".{0,40}") {
        let mut m = Values::new();
        let _ = strvals::parse_into(&s, &mut m);
        let _ = strvals::parse_into_string(&s, &mut m);
        let mut read = |p: &str| Ok(p.to_string());
        let _ = strvals::parse_into_file(&s, &mut m, &mut read);
        let mut m2 = Values::new();
        let _ = strvals::parse_into(&raw, &mut m2);
    }

    #[test]
    fn ignore_and_globs_never_panic(pat in ".{0,20}", path in "[a-z./*?\\[\\]{},!^-]{0,20}") {
        let _ = go_match(&pat, &path);
        if let Ok(r) = Rules::parse(&pat) {
            let _ = r.ignore(&path, false);
            let _ = r.ignore(&path, true);
        }
        if let Some(re) = glob_regex(&pat) {
            let _ = re.is_match(&path);
        }
    }

    #[test]
    fn archives_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..256)) {
        let mut gz = vec![0x1f, 0x8b];
        gz.extend(bytes.iter().copied());
        let _ = load_archive(&bytes);
        let _ = load_archive(&gz);
    }

    #[test]
    fn manifest_sorting_never_panics(doc in template_text()) {
        let files = vec![("c/templates/x.yaml".to_string(), doc)];
        let _ = sort_manifests(&files);
    }

    #[test]
    fn fast_document_classifier_matches_full_parse(doc in template_text(), y in yaml_text()) {
        for d in [doc, y] {
            if let Some(agrees) = fleet_render::helm::manifests::fast_path_agrees(&d) {
                prop_assert!(agrees, "fast and full classification differ on {:?}", d);
            }
        }
    }

    #[test]
    fn charts_with_arbitrary_templates_never_panic(
        tpl in template_text(),
        helper in template_text(),
        values in yaml_text(),
        set in set_string(),
    ) {
        let chart = load_files(vec![
            f("Chart.yaml", "apiVersion: v2\nname: p\nversion: 0.1.0\n"),
            f("values.yaml", &values),
            f("f.txt", "file"),
            f("templates/_h.tpl", &helper),
            f("templates/x.yaml", &tpl),
        ]);
        if let Ok(chart) = chart {
            let mut vals = Values::new();
            let _ = strvals::parse_into(&set, &mut vals);
            let _ = template(&chart, &vals, &TemplateOptions::default());
        }
    }
}

#[test]
fn report_case_counts() {
    eprintln!("helm property tests: 6 properties x {CASES} cases each");
}
