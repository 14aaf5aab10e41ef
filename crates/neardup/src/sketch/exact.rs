//! Exact duplicates: XXH3-128 (seed 0) of the normalised text's UTF-8 bytes — the first, free
//! check of the `auto` policy (spec: `docs/fingerprint-spec.md`, section "Exact digest v1").
//!
//! Two documents are exact duplicates when their normalised texts are byte-identical (HTML,
//! case, width, white space and Unicode compatibility differences are normalised away). The
//! index keeps 16 bytes of key plus ~12 bytes of table and chain per document.
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

use crate::detect::{Detector, Verdict};
use crate::error::{Error, Result};
use crate::features::is_word_char;
use crate::fingerprint::Fingerprinter;
use crate::hash::xxh3_128;

/// Version of the exact digest specification.
pub const EXACT_VERSION: u32 = 1;

const NONE: u32 = u32::MAX;

/// A multimap of 128-bit digests → slots: an open-addressed table of heads (the newest slot of
/// each digest, 4 bytes, at most three quarters full), each slot's digest and a `next` link per
/// slot — about 28 bytes a slot where a hash map of digests took ~48 with its slack. Slots are
/// dense `u32` numbers chosen by the caller; a lookup reads a head, then that slot's digest.
#[derive(Debug, Clone, Default)]
pub(crate) struct Chains {
    /// `NONE` or the newest slot of a digest; a power-of-two length (or empty).
    heads: Vec<u32>,
    /// Each slot's digest, as four `u32` words (a `u128` would be 16-byte aligned: the same).
    digests: Vec<[u32; 4]>,
    /// Each slot's older slot under the same digest, `NONE` at the oldest.
    next: Vec<u32>,
    /// Distinct digests held (occupied heads).
    distinct: usize,
}

/// A digest as the table keeps it.
fn key(d: u128) -> [u32; 4] {
    [
        d as u32,
        (d >> 32) as u32,
        (d >> 64) as u32,
        (d >> 96) as u32,
    ]
}

impl Chains {
    /// Where the probe for `k` starts in a table of `len` heads (a power of two): the digest's
    /// low bits, uniform for a hash.
    fn home(k: &[u32; 4], len: usize) -> usize {
        (k[0] as usize ^ (k[1] as usize).rotate_left(16)) & (len - 1)
    }

    /// The head index holding `k`, or the empty one where it would go.
    fn probe(&self, k: &[u32; 4]) -> (usize, bool) {
        let mask = self.heads.len() - 1;
        let mut at = Self::home(k, self.heads.len());
        loop {
            let h = self.heads[at];
            if h == NONE {
                return (at, false);
            }
            if self.digests[h as usize] == *k {
                return (at, true);
            }
            at = (at + 1) & mask;
        }
    }

    /// Makes the table hold `distinct` digests at most three quarters full.
    fn fit(&mut self, distinct: usize) {
        let want = (distinct.saturating_mul(4) / 3 + 1)
            .next_power_of_two()
            .max(16);
        if want <= self.heads.len() {
            return;
        }
        let old = std::mem::replace(&mut self.heads, vec![NONE; want]);
        for h in old.into_iter().filter(|&h| h != NONE) {
            let (at, _) = self.probe(&self.digests[h as usize]);
            self.heads[at] = h;
        }
    }

    /// Adds `slot` under `digest`.
    pub(crate) fn insert(&mut self, digest: u128, slot: u32) {
        let s = slot as usize;
        if self.next.len() <= s {
            self.next.resize(s + 1, NONE);
            self.digests.resize(s + 1, [0; 4]);
        }
        let k = key(digest);
        self.digests[s] = k;
        self.fit(self.distinct + 1);
        let (at, found) = self.probe(&k);
        self.next[s] = if found { self.heads[at] } else { NONE };
        self.distinct += usize::from(!found);
        self.heads[at] = slot;
    }

    /// Asks for the head where a probe for `digest` starts (an insert a few documents ahead).
    #[inline]
    pub(crate) fn prefetch(&self, digest: u128) {
        if !self.heads.is_empty() {
            let at = Self::home(&key(digest), self.heads.len());
            neardup_index::prefetch(self.heads.as_ptr().wrapping_add(at));
        }
    }

    /// The newest slot under `digest`, `NONE` when there is none.
    fn head(&self, digest: &u128) -> u32 {
        if self.heads.is_empty() {
            return NONE;
        }
        match self.probe(&key(*digest)) {
            (at, true) => self.heads[at],
            _ => NONE,
        }
    }

    /// Calls `f` with every slot under `digest`, newest first.
    pub(crate) fn for_each(&self, digest: &u128, mut f: impl FnMut(u32)) {
        let mut cur = self.head(digest);
        while cur != NONE {
            f(cur);
            cur = self.next[cur as usize];
        }
    }

    /// Makes room for `more` slots under as many new digests.
    pub(crate) fn reserve(&mut self, more: usize) {
        self.fit(self.distinct.saturating_add(more));
        self.next.reserve(more);
        self.digests.reserve(more);
    }

    /// The digest of `slot` (zero for a slot never inserted).
    pub(crate) fn digest(&self, slot: usize) -> Option<u128> {
        let [a, b, c, d] = *self.digests.get(slot)?;
        Some(u128::from(a) | u128::from(b) << 32 | u128::from(c) << 64 | u128::from(d) << 96)
    }

    /// Whether any slot is under `digest`.
    pub(crate) fn contains(&self, digest: &u128) -> bool {
        self.head(digest) != NONE
    }

    /// Heap bytes: the heads, the digests and the links.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.heads.capacity() * 4 + self.digests.capacity() * 16 + self.next.capacity() * 4
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
    /// Slot → document; empty while every document inserted was numbered as its slot (0, 1,
    /// 2, …: a segment's whole texts), when a slot is its document.
    docs: Vec<u32>,
    /// Slots inserted.
    slots: u32,
    /// Whether some document was not numbered as its slot (`docs` then holds every slot's).
    sparse: bool,
}

impl ExactDetector {
    /// A detector normalising with `fp`'s configuration.
    pub fn new(fp: Fingerprinter) -> Self {
        ExactDetector {
            fp,
            chains: Chains::default(),
            docs: Vec::new(),
            slots: 0,
            sparse: false,
        }
    }

    /// The document of `slot`.
    fn doc(&self, slot: u32) -> u32 {
        if self.sparse {
            self.docs[slot as usize]
        } else {
            slot
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
        if self.sparse {
            self.docs.reserve(more);
        }
    }

    /// Asks for the memory an insert of `digest` reads first (a restart inserts documents
    /// one after another: asked a few ahead, the reads overlap).
    #[inline]
    pub fn prefetch(&self, digest: u128) {
        self.chains.prefetch(digest);
    }

    /// Whether a document with this digest is indexed.
    pub fn contains(&self, digest: u128) -> bool {
        self.chains.contains(&digest)
    }

    /// The digest document `doc` was indexed with, when it was (documents inserted in
    /// ascending order, as the engine and batch dedup insert them, are found by a search).
    pub fn digest_of(&self, doc: u32) -> Option<u128> {
        let slot = if !self.sparse {
            (doc < self.slots).then_some(doc as usize)?
        } else if self.docs.get(doc as usize) == Some(&doc) {
            doc as usize
        } else {
            self.docs.binary_search(&doc).ok()?
        };
        self.chains.digest(slot)
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
                of: self.doc(slot),
                distance: Some(0),
                similarity: Some(1.0),
                stage: crate::detect::Stage::Exact,
            })
        });
        out
    }

    fn insert(&mut self, doc: u32, s: u128) {
        let slot = self.slots;
        if doc != slot && !self.sparse {
            // The first document numbered otherwise: every slot so far was its document.
            self.docs = (0..slot).collect();
            self.sparse = true;
        }
        if self.sparse {
            self.docs.push(doc);
        }
        self.slots += 1;
        self.chains.insert(s, slot);
    }

    fn heap_bytes(&self) -> usize {
        self.chains.heap_bytes() + self.docs.capacity() * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// The chains against a map of digests to their slots, newest first, whatever the
        /// digests (low bits shared, so probes collide) and however often one repeats.
        #[test]
        fn chains_equal_a_map(
            digests in proptest::collection::vec((0u8..40, any::<u8>()), 0..400),
            reserve in 0usize..300,
            gaps in proptest::collection::vec(1u32..4, 0..400),
        ) {
            let mut chains = Chains::default();
            chains.reserve(reserve);
            let mut model: HashMap<u128, Vec<u32>> = HashMap::new();
            let mut slot = 0u32;
            for (i, &(d, high)) in digests.iter().enumerate() {
                // Few distinct values in the low words: long probe runs and repeats.
                let digest = u128::from(d) | u128::from(high % 4) << 100;
                slot += gaps.get(i).copied().unwrap_or(1);
                chains.insert(digest, slot);
                model.entry(digest).or_default().insert(0, slot);
            }
            for d in 0u8..40 {
                for high in 0u8..4 {
                    let digest = u128::from(d) | u128::from(high) << 100;
                    let mut got = Vec::new();
                    chains.for_each(&digest, |s| got.push(s));
                    let want = model.get(&digest).cloned().unwrap_or_default();
                    prop_assert_eq!(chains.contains(&digest), !want.is_empty());
                    prop_assert_eq!(got, want);
                }
            }
            prop_assert!(chains.distinct * 4 <= chains.heads.len() * 3 || chains.heads.is_empty());
            // Each slot gives back the digest it was inserted with.
            let mut slot = 0u32;
            for (i, &(d, high)) in digests.iter().enumerate() {
                slot += gaps.get(i).copied().unwrap_or(1);
                let digest = u128::from(d) | u128::from(high % 4) << 100;
                prop_assert_eq!(chains.digest(slot as usize), Some(digest));
            }
        }

        /// A detector gives back the digest each document was indexed with, documents numbered
        /// densely or sparsely (a segment's bodies), and nothing for one it never indexed.
        #[test]
        fn digest_of_gives_back_each_documents_digest(
            gaps in proptest::collection::vec(1u32..4, 1..200),
        ) {
            let fp = crate::Fingerprinter::new(crate::FingerprintConfig::default()).unwrap();
            let mut det = ExactDetector::new(fp);
            let mut doc = 0u32;
            let mut docs = Vec::new();
            for (i, &g) in gaps.iter().enumerate() {
                doc += g - 1;
                det.insert(doc, i as u128 * 0x9e37_79b9_7f4a_7c15);
                docs.push(doc);
                doc += 1;
            }
            for (i, &d) in docs.iter().enumerate() {
                let digest = i as u128 * 0x9e37_79b9_7f4a_7c15;
                prop_assert_eq!(det.digest_of(d), Some(digest));
                let found: Vec<u32> = det.find(&digest).iter().map(|v| v.of).collect();
                prop_assert_eq!(found, vec![d]);
            }
            for d in (0..doc + 2).filter(|d| !docs.contains(d)) {
                prop_assert_eq!(det.digest_of(d), None);
            }
            // Documents numbered as their slots keep no slot → document map.
            prop_assert_eq!(det.docs.is_empty(), gaps.iter().all(|&g| g == 1));
        }
    }
}
