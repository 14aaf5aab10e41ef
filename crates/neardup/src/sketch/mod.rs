//! Sketches of a document, each a versioned specification (`docs/fingerprint-spec.md`):
//! [`simhash`] 64-bit fingerprints ([`fingerprint`] ties them to their configuration),
//! [`minhash`] signatures and their [`lsh`] band keys, [`imatch`] digests, the [`exact`] digest,
//! and the persisted [`hash`] functions. Each module also holds the detector that indexes its
//! sketch, except MinHash's, which is [`crate::detect::minhash`].

mod band_table;
pub mod exact;
pub mod fingerprint;
pub mod hash;
pub mod imatch;
pub mod lsh;
pub mod minhash;
pub mod simhash;
