//! An object's `metadata.labels` as the store keeps them beside its JSON, for label selectors:
//! one array of shared pairs per set. A `BTreeMap<String, String>` of a BundleDeployment's eight
//! labels took about 1.5 KB in 17 allocations, and one packed buffer of them about 0.4 KB. Yet a
//! fleet repeats the same pairs over and over (every BundleDeployment of a cluster carries its
//! cluster's name and namespace, every one of a bundle its bundle's name and commit), so each
//! distinct `key=value` is kept once, for every set that holds it: a BundleDeployment's set is then
//! 16 bytes a label, about 0.27 KB less per BundleDeployment (from the sizes; not measured apart).

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

/// Label pairs in key order, each shared with every other set holding the same pair. Built only
/// from maps or parsed JSON objects, so keys are unique and sorted.
#[derive(Clone, Default, PartialEq, Eq, Hash)]
pub struct Labels {
    pairs: Box<[Pair]>,
}

/// One `key=value`: the key's length (4 bytes, little-endian), the key, the value.
#[derive(Clone, PartialEq, Eq, Hash)]
struct Pair(Arc<[u8]>);

impl Pair {
    fn key(&self) -> &[u8] {
        split_field(&self.0).map_or(&[][..], |(k, _)| k)
    }

    fn split(&self) -> (&str, &str) {
        let (k, v) = split_field(&self.0).unwrap_or((&[], &[]));
        // Written from `&str`s only; a failure here would be a bug, and reads as empty.
        (
            std::str::from_utf8(k).unwrap_or_default(),
            std::str::from_utf8(v).unwrap_or_default(),
        )
    }
}

/// Every pair some set holds (and, until the next sweep, some no set holds any more).
struct PairTable {
    pairs: HashSet<Arc<[u8]>>,
    /// Size at which unused pairs are swept out next: twice the pairs in use after the last
    /// sweep, so sweeping stays amortised O(1) per pair interned.
    sweep_at: usize,
    /// Sweeps never run below this many pairs.
    sweep_min: usize,
}

/// Sweeps never run below this many pairs in the process's table.
const PAIR_SWEEP_MIN: usize = 4096;

fn pair_table() -> &'static Mutex<PairTable> {
    static TABLE: OnceLock<Mutex<PairTable>> = OnceLock::new();
    TABLE.get_or_init(|| {
        Mutex::new(PairTable {
            pairs: HashSet::new(),
            sweep_at: PAIR_SWEEP_MIN,
            sweep_min: PAIR_SWEEP_MIN,
        })
    })
}

impl PairTable {
    fn intern(&mut self, key: &str, value: &str, buf: &mut Vec<u8>) -> Pair {
        buf.clear();
        buf.extend_from_slice(&u32::try_from(key.len()).unwrap_or(u32::MAX).to_le_bytes());
        buf.extend_from_slice(key.as_bytes());
        buf.extend_from_slice(value.as_bytes());
        if let Some(shared) = self.pairs.get(buf.as_slice()) {
            return Pair(shared.clone());
        }
        if self.pairs.len() >= self.sweep_at {
            self.pairs.retain(|p| Arc::strong_count(p) > 1);
            self.sweep_at = (self.pairs.len() * 2).max(self.sweep_min);
        }
        let shared: Arc<[u8]> = Arc::from(buf.as_slice());
        self.pairs.insert(shared.clone());
        Pair(shared)
    }
}

impl Labels {
    /// The set holding `map`'s pairs.
    pub fn from_map(map: &BTreeMap<String, String>) -> Labels {
        Labels::from_pairs(map.iter().map(|(k, v)| (k.as_str(), v.as_str())))
    }

    /// The set of `pairs` in any order (an object's `metadata.labels` as parsed, straight from
    /// the borrowed strings: no map and no owned copy per label on the write path). Keys are
    /// expected to be unique, as in any JSON object or map; of repeated ones the first is kept.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Labels {
        let mut pairs: Vec<(&str, &str)> = pairs.into_iter().collect();
        if pairs.is_empty() {
            return Labels::default();
        }
        pairs.sort_by_key(|&(k, _)| k);
        pairs.dedup_by_key(|&mut (k, _)| k);
        let mut buf = Vec::new();
        let mut table = pair_table().lock();
        let pairs = pairs
            .into_iter()
            .map(|(k, v)| table.intern(k, v, &mut buf))
            .collect();
        Labels { pairs }
    }

    /// The pairs, in key order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            pairs: self.pairs.iter(),
        }
    }

    /// The value of label `key`. Label selectors call this for every object a list or watch
    /// considers, so it compares raw bytes and decodes only the value it returns.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.pairs
            .iter()
            .find(|p| p.key() == key.as_bytes())
            .map(|p| p.split().1)
    }

    /// Whether label `key` is set.
    pub fn contains_key(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// How many labels there are.
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// The pairs as a map (tests and callers that need one).
    pub fn to_map(&self) -> BTreeMap<String, String> {
        self.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }
}

impl fmt::Debug for Labels {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// The pairs of a [`Labels`].
pub struct Iter<'a> {
    pairs: std::slice::Iter<'a, Pair>,
}

/// One length-prefixed field of a pair and what follows it.
fn split_field(buf: &[u8]) -> Option<(&[u8], &[u8])> {
    let (len, rest) = buf.split_first_chunk::<4>()?;
    let len = usize::try_from(u32::from_le_bytes(*len)).ok()?;
    rest.split_at_checked(len)
}

impl<'a> Iterator for Iter<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<Self::Item> {
        self.pairs.next().map(Pair::split)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the map, the packed set answers as the map does.
        #[test]
        fn packed_sets_answer_as_their_maps(
            map in proptest::collection::btree_map(".{0,12}", ".{0,20}", 0..12),
            probe in ".{0,12}",
        ) {
            let l = Labels::from_map(&map);
            prop_assert_eq!(l.to_map(), map.clone());
            prop_assert_eq!(l.len(), map.len());
            prop_assert_eq!(l.is_empty(), map.is_empty());
            prop_assert_eq!(l.get(&probe), map.get(&probe).map(String::as_str));
            for (k, v) in &map {
                prop_assert_eq!(l.get(k), Some(v.as_str()));
                prop_assert!(l.contains_key(k));
            }
            prop_assert_eq!(Labels::from_map(&map), l.clone());
            // Any order of the pairs packs the same set.
            let reversed: Vec<(&str, &str)> =
                map.iter().rev().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            prop_assert_eq!(Labels::from_pairs(reversed), l);
        }
    }

    #[test]
    fn sets_share_their_common_pairs() {
        let a = Labels::from_pairs([("app", "web"), ("tier", ""), ("pod", "web-1")]);
        let b = Labels::from_pairs([("pod", "web-2"), ("app", "web"), ("tier", "")]);
        assert_eq!(
            format!("{a:?}"),
            r#"{"app": "web", "pod": "web-1", "tier": ""}"#
        );
        assert_eq!(a.get("tier"), Some(""));
        assert_eq!(a.get("ap"), None);
        assert_eq!(a.get("web"), None, "values are not keys");
        assert!(
            Arc::ptr_eq(&a.pairs[0].0, &b.pairs[0].0),
            "app=web kept once"
        );
        assert!(Arc::ptr_eq(&a.pairs[2].0, &b.pairs[2].0), "tier= kept once");
        assert!(!Arc::ptr_eq(&a.pairs[1].0, &b.pairs[1].0));
        assert_ne!(a, b);
    }

    #[test]
    fn pairs_no_set_holds_are_swept() {
        let mut t = PairTable {
            pairs: HashSet::new(),
            sweep_at: 8,
            sweep_min: 8,
        };
        let mut buf = Vec::new();
        let kept: Vec<Pair> = (0..4)
            .map(|i| t.intern("k", &i.to_string(), &mut buf))
            .collect();
        for i in 4..100 {
            drop(t.intern("k", &i.to_string(), &mut buf));
        }
        assert!(t.pairs.len() <= 16, "{} pairs left", t.pairs.len());
        for (i, p) in kept.iter().enumerate() {
            assert!(Arc::ptr_eq(
                &t.intern("k", &i.to_string(), &mut buf).0,
                &p.0
            ));
        }
        // A key that is a prefix of another's bytes is still its own pair.
        let ab = t.intern("a", "b", &mut buf);
        let a_b = t.intern("ab", "", &mut buf);
        assert_eq!((ab.split(), a_b.split()), (("a", "b"), ("ab", "")));
    }
}
