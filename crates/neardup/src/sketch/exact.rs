//! Exact duplicates: XXH3-128 (seed 0) of the normalised text's UTF-8 bytes — the first, free
//! check of the `auto` policy (spec: `docs/fingerprint-spec.md`, section "Exact digest v1").
//!
//! Two documents are exact duplicates when their normalised texts are byte-identical (HTML,
//! case, width, white space and Unicode compatibility differences are normalised away). The
//! index keeps 16 bytes of key plus ~8 bytes of chain per document.
//!
//! ```
//! use neardup::detect::Detector;
//! use neardup::exact::ExactDetector;
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let mut d = ExactDetector::new(Fingerprinter::new(FingerprintConfig::default()).unwrap());
//! let a = d.sketch("Hello,   World").unwrap();
//! d.insert(7, a);
//! assert_eq!(d.find(&d.sketch("<p>hello, world</p>").unwrap())[0].of, 7);
//! assert!(d.find(&d.sketch("hello world").unwrap()).is_empty());
//! ```

use std::collections::HashMap;

use crate::detect::{Detector, Verdict};
use crate::error::{Error, Result};
use crate::features::is_word_char;
use crate::fingerprint::Fingerprinter;
use crate::hash::{xxh3_128, FastBuild};

/// Version of the exact digest specification.
pub const EXACT_VERSION: u32 = 1;

const NONE: u32 = u32::MAX;

/// A multimap of 128-bit digests → slots, stored as a head per digest and a `next` link per
/// slot: ~26 bytes a slot at the map's usual load. The map keeps a digest as four `u32`s, so
/// an entry is 20 bytes where a `u128` key (16-byte aligned) would pad it to 32. Slots are
/// dense `u32` numbers chosen by the caller.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chains {
    heads: HashMap<[u32; 4], u32, FastBuild>,
    next: Vec<u32>,
}

/// A digest as the map keeps it.
fn key(d: u128) -> [u32; 4] {
    [
        d as u32,
        (d >> 32) as u32,
        (d >> 64) as u32,
        (d >> 96) as u32,
    ]
}

impl Chains {
    /// Adds `slot` under `digest`.
    pub(crate) fn insert(&mut self, digest: u128, slot: u32) {
        let s = slot as usize;
        if self.next.len() <= s {
            self.next.resize(s + 1, NONE);
        }
        let prev = self.heads.insert(key(digest), slot).unwrap_or(NONE);
        self.next[s] = prev;
    }

    /// Calls `f` with every slot under `digest`, newest first.
    pub(crate) fn for_each(&self, digest: &u128, mut f: impl FnMut(u32)) {
        let mut cur = self.heads.get(&key(*digest)).copied().unwrap_or(NONE);
        while cur != NONE {
            f(cur);
            cur = self.next[cur as usize];
        }
    }

    /// Makes room for `more` slots under as many new digests.
    pub(crate) fn reserve(&mut self, more: usize) {
        self.heads.reserve(more);
        self.next.reserve(more);
    }

    /// Whether any slot is under `digest`.
    pub(crate) fn contains(&self, digest: &u128) -> bool {
        self.heads.contains_key(&key(*digest))
    }

    /// Approximate heap bytes: the map's buckets (an entry and a control byte each) and the
    /// links.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.heads.capacity() * (std::mem::size_of::<([u32; 4], u32)>() + 1)
            + self.next.capacity() * 4
    }
}

/// XXH3-128 (seed 0) of normalised text.
pub fn digest(normalized: &str) -> u128 {
    xxh3_128(normalized.as_bytes())
}

/// Exact-duplicate detector over digests of normalised text.
#[derive(Debug, Clone)]
pub struct ExactDetector {
    fp: Fingerprinter,
    chains: Chains,
    docs: Vec<u32>,
}

impl ExactDetector {
    /// A detector normalising with `fp`'s configuration.
    pub fn new(fp: Fingerprinter) -> Self {
        ExactDetector {
            fp,
            chains: Chains::default(),
            docs: Vec::new(),
        }
    }

    /// The sketch of already-normalised text; fails with [`Error::EmptyDocument`] when it has
    /// no letter or digit (like every other method).
    pub fn sketch_normalized(&self, normalized: &str, input_bytes: usize) -> Result<u128> {
        if !normalized.chars().any(is_word_char) {
            return Err(Error::EmptyDocument { input_bytes });
        }
        Ok(digest(normalized))
    }

    /// Makes room for `more` documents.
    pub fn reserve(&mut self, more: usize) {
        self.chains.reserve(more);
        self.docs.reserve(more);
    }

    /// Whether a document with this digest is indexed.
    pub fn contains(&self, digest: u128) -> bool {
        self.chains.contains(&digest)
    }
}

impl Detector for ExactDetector {
    type Sketch = u128;

    fn name(&self) -> String {
        "exact".into()
    }

    fn sketch(&self, text: &str) -> Result<u128> {
        self.sketch_normalized(&self.fp.normalize(text), text.len())
    }

    fn find(&self, s: &u128) -> Vec<Verdict> {
        let mut out = Vec::new();
        self.chains.for_each(s, |slot| {
            out.push(Verdict {
                of: self.docs[slot as usize],
                distance: Some(0),
                similarity: Some(1.0),
                stage: crate::detect::Stage::Exact,
            })
        });
        out
    }

    fn insert(&mut self, doc: u32, s: u128) {
        let slot = self.docs.len() as u32;
        self.docs.push(doc);
        self.chains.insert(s, slot);
    }

    fn heap_bytes(&self) -> usize {
        self.chains.heap_bytes() + self.docs.capacity() * 4
    }
}
