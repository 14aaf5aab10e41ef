//! Hash functions. Everything persisted or part of a fingerprint uses XXH3 (its output is
//! frozen by the xxHash specification); in-memory hash maps use FxHash, which is never persisted.

use xxhash_rust::xxh3::{xxh3_128_with_seed, xxh3_64_with_seed};

/// The seed of every feature hash in fingerprint spec v1: 0.
pub const FEATURE_SEED: u64 = 0;

/// XXH3-64 of `bytes` with [`FEATURE_SEED`].
#[inline]
pub fn xxh3(bytes: &[u8]) -> u64 {
    xxh3_64_with_seed(bytes, FEATURE_SEED)
}

/// XXH3-64 of `bytes` with an explicit seed.
#[inline]
pub fn xxh3_seeded(bytes: &[u8], seed: u64) -> u64 {
    xxh3_64_with_seed(bytes, seed)
}

/// XXH3-128 of `bytes` with [`FEATURE_SEED`].
#[inline]
pub fn xxh3_128(bytes: &[u8]) -> u128 {
    xxh3_128_with_seed(bytes, FEATURE_SEED)
}

/// `BuildHasher` for in-memory maps (FxHash; not stable across versions, never persisted).
pub type FastBuild = rustc_hash::FxBuildHasher;
