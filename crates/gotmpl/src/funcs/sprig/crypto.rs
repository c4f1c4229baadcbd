//! Sprig's hashing and crypto functions.

use super::super::Map;

/// SHA-1 digest.
pub(crate) fn sha1(data: &[u8]) -> Vec<u8> {
    use sha1::Digest as _;
    sha1::Sha1::digest(data).to_vec()
}

pub(crate) fn register(_m: &mut Map) {}
