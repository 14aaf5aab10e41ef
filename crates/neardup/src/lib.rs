//! # neardup
//!
//! Near-duplicate text detection at web scale: the pages a crawler should not store twice, the
//! stories a search engine folds into "12 similar articles", the copies to strip from a
//! training corpus.
//!
//! Data flows one way: **text → [normalize] → [features] → [fingerprint] (simhash) →
//! index (`neardup-index`) → engine → store**.
//!
//! ```
//! use neardup::{Fingerprinter, FingerprintConfig, hamming};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let a = fp.simhash("你妈妈喊你回家吃饭哦，回家罗回家罗").unwrap();
//! let b = fp.simhash("你妈妈叫你回家吃饭啦，回家罗回家罗").unwrap();
//! let c = fp.simhash("we all scream for ice cream").unwrap();
//! assert!(hamming(a, b) < hamming(a, c));
//! ```
#![warn(missing_docs)]

// The folders follow the data flow: text → features (`text/`) → sketches (`sketch/`) →
// detectors (`detect/`) → batch dedup / the online engine (`engine/`) → the store
// (`neardup-store`). Every module is also reachable at the crate root (`neardup::minhash`, …).
pub mod dedup;
pub mod detect;
pub mod engine;
pub mod error;
pub mod eval;
pub mod sketch;
pub mod text;
// Bytes kept for rare reads, in memory or spilled to a file (the engine's kept sketches, the
// short path's texts).
pub(crate) mod sort;
pub(crate) mod spill_store;

pub use detect::{policy, shorttext, template_veto};
pub use sketch::{exact, fingerprint, hash, imatch, minhash, simhash};
pub use text::{features, idf, normalize};

/// The exact Hamming index (re-exported from `neardup-index`).
pub use neardup_index as index;

pub use error::{Error, Result};
pub use fingerprint::{Fingerprint, FingerprintConfig, Fingerprinter};
pub use simhash::hamming;
