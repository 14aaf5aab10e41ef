//! Bearer-token authentication.
//!
//! The expected token is kept only as a keyed 128-bit digest (XXH3-128 with a per-process
//! random seed). A presented token is digested the same way and the two fixed-length digests
//! are compared in constant time: the time taken depends on the presented token's length only,
//! never on the expected token's length or on how many leading bytes match.

use std::hash::{BuildHasher, Hasher};

use axum::http::{header, HeaderMap};

/// The expected token, as its keyed digest.
#[derive(Clone)]
pub(crate) struct TokenCheck {
    seed: u64,
    digest: [u8; 16],
}

impl std::fmt::Debug for TokenCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenCheck(..)")
    }
}

impl TokenCheck {
    /// Keeps `token`'s digest under a fresh random seed.
    pub(crate) fn new(token: &str) -> TokenCheck {
        // RandomState draws its keys from the OS once per process and varies them per
        // instance: enough to make the digest unpredictable to a client.
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u64(0x6e65_6172_6475_7030);
        let seed = h.finish();
        TokenCheck {
            seed,
            digest: digest(seed, token.as_bytes()),
        }
    }

    /// Whether `headers` carry `Authorization: Bearer <token>` (scheme in any case).
    pub(crate) fn allows(&self, headers: &HeaderMap) -> bool {
        let Some(presented) = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| bearer(v.as_bytes()))
        else {
            return false;
        };
        let d = digest(self.seed, presented);
        d.iter()
            .zip(&self.digest)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

fn digest(seed: u64, token: &[u8]) -> [u8; 16] {
    xxhash_rust::xxh3::xxh3_128_with_seed(token, seed).to_le_bytes()
}

/// The credentials of an `Authorization` value with the `Bearer` scheme (any case), without
/// surrounding whitespace.
fn bearer(value: &[u8]) -> Option<&[u8]> {
    let value = value.trim_ascii();
    let split = value.iter().position(|b| b.is_ascii_whitespace())?;
    let (scheme, rest) = value.split_at(split);
    scheme
        .eq_ignore_ascii_case(b"bearer")
        .then(|| rest.trim_ascii())
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn with(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, HeaderValue::from_str(auth).unwrap());
        h
    }

    #[test]
    fn bearer_scheme_in_any_case_and_only_the_exact_token() {
        let t = TokenCheck::new("s3cret");
        for ok in [
            "Bearer s3cret",
            "bearer s3cret",
            "BEARER s3cret",
            "BeArEr   s3cret ",
        ] {
            assert!(t.allows(&with(ok)), "{ok}");
        }
        for bad in [
            "Bearer s3cre",
            "Bearer s3crett",
            "Bearer",
            "Bearers3cret",
            "Basic s3cret",
            "s3cret",
            "Bearer S3CRET",
            "",
        ] {
            assert!(!t.allows(&with(bad)), "{bad}");
        }
        assert!(!t.allows(&HeaderMap::new()));
    }

    #[test]
    fn digests_differ_per_instance() {
        // Keyed per instance: the stored digest says nothing reusable about the token.
        assert_ne!(
            TokenCheck::new("same").digest,
            TokenCheck::new("same").digest
        );
    }
}
