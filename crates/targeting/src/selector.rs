//! Kubernetes label selectors (`matchLabels` + `matchExpressions`), evaluated like
//! `metav1.LabelSelectorAsSelector`: a nil selector matches nothing, `{}` matches everything.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use crate::Error;

/// Labels of an object.
pub type Labels = BTreeMap<String, String>;

/// One compiled requirement.
#[derive(Clone, Debug, PartialEq)]
pub enum Requirement {
    /// key = value (from matchLabels or `In` with one value).
    Equals(String, String),
    /// key in (values).
    In(String, Vec<String>),
    /// key not in (values) (also matches when the key is absent).
    NotIn(String, Vec<String>),
    /// key present.
    Exists(String),
    /// key absent.
    DoesNotExist(String),
}

/// A compiled selector.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Selector {
    /// All requirements must hold.
    pub reqs: Vec<Requirement>,
}

impl Selector {
    /// Compiles a selector; unknown operators or missing values are errors, as upstream.
    pub fn compile(sel: &LabelSelector) -> Result<Selector, Error> {
        let mut reqs = Vec::new();
        if let Some(ml) = &sel.match_labels {
            for (k, v) in ml {
                reqs.push(Requirement::Equals(k.clone(), v.clone()));
            }
        }
        for e in sel.match_expressions.iter().flatten() {
            let vals = e.values.clone().unwrap_or_default();
            let r = match e.operator.as_str() {
                "In" | "NotIn" if vals.is_empty() => {
                    return Err(Error::SelectorValuesRequired {
                        key: e.key.clone(),
                        operator: e.operator.clone(),
                    });
                }
                "In" => Requirement::In(e.key.clone(), vals),
                "NotIn" => Requirement::NotIn(e.key.clone(), vals),
                "Exists" | "DoesNotExist" if !vals.is_empty() => {
                    return Err(Error::SelectorValuesForbidden {
                        key: e.key.clone(),
                        operator: e.operator.clone(),
                    });
                }
                "Exists" => Requirement::Exists(e.key.clone()),
                "DoesNotExist" => Requirement::DoesNotExist(e.key.clone()),
                op => {
                    return Err(Error::SelectorOperator {
                        key: e.key.clone(),
                        operator: op.to_string(),
                    });
                }
            };
            reqs.push(r);
        }
        Ok(Selector { reqs })
    }

    /// Whether `labels` satisfy every requirement.
    pub fn matches(&self, labels: &Labels) -> bool {
        self.reqs.iter().all(|r| match r {
            Requirement::Equals(k, v) => labels.get(k) == Some(v),
            Requirement::In(k, vs) => labels.get(k).is_some_and(|x| vs.contains(x)),
            Requirement::NotIn(k, vs) => labels.get(k).is_none_or(|x| !vs.contains(x)),
            Requirement::Exists(k) => labels.contains_key(k),
            Requirement::DoesNotExist(k) => !labels.contains_key(k),
        })
    }

    /// An equality requirement usable for an index lookup, if any.
    pub fn index_key(&self) -> Option<(&str, &str)> {
        self.reqs.iter().find_map(|r| match r {
            Requirement::Equals(k, v) => Some((k.as_str(), v.as_str())),
            Requirement::In(k, vs) if vs.len() == 1 => Some((k.as_str(), vs[0].as_str())),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    fn labels(kv: &[(&str, &str)]) -> Labels {
        kv.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, vals: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!vals.is_empty()).then(|| vals.iter().map(|s| s.to_string()).collect()),
        }
    }

    #[test]
    fn table() {
        let l = labels(&[("env", "prod"), ("region", "eu")]);
        let s = |ml: &[(&str, &str)], ex: Vec<LabelSelectorRequirement>| {
            Selector::compile(&LabelSelector {
                match_labels: (!ml.is_empty()).then(|| labels(ml)),
                match_expressions: (!ex.is_empty()).then_some(ex),
            })
            .unwrap()
        };
        assert!(s(&[], vec![]).matches(&l));
        assert!(s(&[("env", "prod")], vec![]).matches(&l));
        assert!(!s(&[("env", "dev")], vec![]).matches(&l));
        assert!(s(&[], vec![expr("env", "In", &["dev", "prod"])]).matches(&l));
        assert!(!s(&[], vec![expr("env", "NotIn", &["prod"])]).matches(&l));
        assert!(s(&[], vec![expr("tier", "NotIn", &["x"])]).matches(&l));
        assert!(s(&[], vec![expr("region", "Exists", &[])]).matches(&l));
        assert!(!s(&[], vec![expr("region", "DoesNotExist", &[])]).matches(&l));
        assert!(!s(&[("env", "prod")], vec![expr("region", "In", &["us"])]).matches(&l));
        let bad = LabelSelector {
            match_expressions: Some(vec![expr("a", "Like", &["x"])]),
            ..Default::default()
        };
        assert_eq!(
            Selector::compile(&bad).unwrap_err().to_string(),
            r#"a: "Like" is not a valid label selector operator"#
        );
        let bad = LabelSelector {
            match_expressions: Some(vec![expr("a", "In", &[])]),
            ..Default::default()
        };
        assert_eq!(
            Selector::compile(&bad).unwrap_err().to_string(),
            "a: values must be non-empty for operator In"
        );
        let bad = LabelSelector {
            match_expressions: Some(vec![expr("a", "Exists", &["x"])]),
            ..Default::default()
        };
        assert_eq!(
            Selector::compile(&bad).unwrap_err().to_string(),
            "a: values must be empty for operator Exists"
        );
    }

    proptest::proptest! {
        #[test]
        fn match_labels_is_subset_check(
            sel in proptest::collection::btree_map("[a-c]", "[x-z]", 0..3),
            lab in proptest::collection::btree_map("[a-c]", "[x-z]", 0..4),
        ) {
            let s = Selector::compile(&LabelSelector { match_labels: Some(sel.clone()), match_expressions: None }).unwrap();
            let expected = sel.iter().all(|(k, v)| lab.get(k) == Some(v));
            proptest::prop_assert_eq!(s.matches(&lab), expected);
        }

        #[test]
        fn not_in_is_negation_of_in(key in "[a-c]", vals in proptest::collection::vec("[x-z]", 1..3), lab in proptest::collection::btree_map("[a-c]", "[x-z]", 0..4)) {
            let vr: Vec<&str> = vals.iter().map(|s| s.as_str()).collect();
            let i = Selector::compile(&LabelSelector { match_expressions: Some(vec![expr(&key, "In", &vr)]), ..Default::default() }).unwrap();
            let n = Selector::compile(&LabelSelector { match_expressions: Some(vec![expr(&key, "NotIn", &vr)]), ..Default::default() }).unwrap();
            proptest::prop_assert_eq!(i.matches(&lab), !n.matches(&lab));
        }
    }
}
