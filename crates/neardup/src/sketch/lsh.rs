//! LSH banding of MinHash signatures (spec: `docs/fingerprint-spec.md`, "LSH banding"): band
//! keys, the per-band tables, and datasketch's choice of `(bands, rows)` from a threshold.
//!
//! ```
//! use neardup::minhash::{candidate_probability, optimal_param};
//! let (b, r) = optimal_param(0.5, 128, 0.5, 0.5).unwrap();
//! assert!(b * r <= 128);
//! assert!(candidate_probability(0.8, b, r) > 0.99);
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use std::sync::Arc;

use crate::sketch::band_table::BandTable;
pub(crate) use crate::sketch::band_table::MIN_FROZEN;

/// Probability that two documents of Jaccard `s` share at least one of `b` bands of `r` rows.
pub fn candidate_probability(s: f64, b: usize, r: usize) -> f64 {
    1.0 - (1.0 - s.powi(r as i32)).powi(b as i32)
}

/// ∫ f over [lo, hi] by composite Gauss–Legendre (5 points on 64 sub-intervals); exact to
/// ~1e-12 for the smooth S-curves here, which matches scipy's `quad` used by datasketch.
fn integrate(f: impl Fn(f64) -> f64, lo: f64, hi: f64) -> f64 {
    const X: [f64; 5] = [
        0.0,
        -0.538_469_310_105_683,
        0.538_469_310_105_683,
        -0.906_179_845_938_664,
        0.906_179_845_938_664,
    ];
    const W: [f64; 5] = [
        0.568_888_888_888_889,
        0.478_628_670_499_366,
        0.478_628_670_499_366,
        0.236_926_885_056_189,
        0.236_926_885_056_189,
    ];
    const N: usize = 64;
    let h = (hi - lo) / N as f64;
    let mut sum = 0.0;
    for k in 0..N {
        let mid = lo + (k as f64 + 0.5) * h;
        for (x, w) in X.iter().zip(W) {
            sum += w * f(mid + 0.5 * h * x);
        }
    }
    sum * 0.5 * h
}

/// False-positive area: ∫₀^t P(candidate | s) ds.
pub fn false_positive_area(threshold: f64, b: usize, r: usize) -> f64 {
    integrate(|s| candidate_probability(s, b, r), 0.0, threshold)
}

/// False-negative area: ∫ₜ¹ (1 − P(candidate | s)) ds.
pub fn false_negative_area(threshold: f64, b: usize, r: usize) -> f64 {
    integrate(|s| 1.0 - candidate_probability(s, b, r), threshold, 1.0)
}

/// The `(bands, rows)` minimising `fp_weight · FP area + fn_weight · FN area` over all
/// `b·r ≤ num_perm`, scanning `b` then `r` upward and keeping the first strict minimum —
/// datasketch's `_optimal_param`. Fails on a threshold outside (0, 1) or bad weights.
pub fn optimal_param(
    threshold: f64,
    num_perm: usize,
    fp_weight: f64,
    fn_weight: f64,
) -> Result<(usize, usize)> {
    if !(threshold > 0.0 && threshold < 1.0) {
        return Err(Error::Config(format!(
            "LSH threshold {threshold} is out of range; use a Jaccard similarity strictly between 0 and 1 (e.g. 0.7)"
        )));
    }
    if !(fp_weight >= 0.0 && fn_weight >= 0.0 && fp_weight + fn_weight > 0.0) {
        return Err(Error::Config(format!(
            "LSH weights ({fp_weight}, {fn_weight}) are invalid; use non-negative weights that are not both 0 (e.g. 0.5, 0.5)"
        )));
    }
    if num_perm == 0 {
        return Err(Error::Config("num_perm must be at least 1".into()));
    }
    // The scan integrates two areas for each of ~650 `(b, r)` (128 slots): milliseconds, paid
    // by every detector built (several for `auto`), so each answer is kept for the process.
    type Key = (u64, usize, u64, u64);
    static KNOWN: std::sync::Mutex<Vec<(Key, (usize, usize))>> = std::sync::Mutex::new(Vec::new());
    let key = (
        threshold.to_bits(),
        num_perm,
        fp_weight.to_bits(),
        fn_weight.to_bits(),
    );
    let known = |k: &Key| {
        let cache = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
        cache.iter().find(|(c, _)| c == k).map(|&(_, p)| p)
    };
    if let Some(p) = known(&key) {
        return Ok(p);
    }
    let opt = scan_params(threshold, num_perm, fp_weight, fn_weight);
    let mut cache = KNOWN.lock().unwrap_or_else(|e| e.into_inner());
    if cache.len() < 256 && !cache.iter().any(|(c, _)| *c == key) {
        cache.push((key, opt));
    }
    Ok(opt)
}

/// [`optimal_param`]'s scan, for checked arguments.
fn scan_params(threshold: f64, num_perm: usize, fp_weight: f64, fn_weight: f64) -> (usize, usize) {
    let mut best = f64::INFINITY;
    let mut opt = (1, 1);
    for b in 1..=num_perm {
        for r in 1..=num_perm / b {
            let err = false_positive_area(threshold, b, r) * fp_weight
                + false_negative_area(threshold, b, r) * fn_weight;
            if err < best {
                best = err;
                opt = (b, r);
            }
        }
    }
    opt
}

/// LSH banding options (serde defaults = [`Default`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct LshOptions {
    /// Jaccard threshold, in (0, 1). Default 0.5.
    pub threshold: f64,
    /// Weight of the false-positive area in the `(b, r)` choice. Default 0.5.
    pub false_positive_weight: f64,
    /// Weight of the false-negative area. Default 0.5.
    pub false_negative_weight: f64,
    /// Explicit `(bands, rows)` instead of the optimum; `b·r ≤ num_perm`.
    pub params: Option<(usize, usize)>,
}

impl Default for LshOptions {
    fn default() -> Self {
        LshOptions {
            threshold: 0.5,
            false_positive_weight: 0.5,
            false_negative_weight: 0.5,
            params: None,
        }
    }
}

/// An in-memory LSH index: for each band, band key → chain of slots, about 16 bytes a slot and
/// band (about 5 once frozen). A table keeps each key's high 32 bits only, and a frozen one the
/// top 29 of them: [`MinHashLsh::candidates`] may give, besides the slots that share a band key,
/// one that shares only those bits — about `n / 2³²` of them per band and lookup among `n`
/// distinct keys (`8 n / 2³²` in a frozen table); [`MinHashLsh::candidates_where`] checks them.
#[derive(Debug)]
pub struct MinHashLsh {
    bands: usize,
    rows: usize,
    tables: Vec<Arc<BandTable>>,
    slots: usize,
    /// While tables are deferred ([`MinHashLsh::defer_tables`]): each band's
    /// `tag << 32 | slot` pairs inserted since.
    pending: Option<Vec<Vec<u64>>>,
    /// Held also by the tables shared to be frozen ([`MinHashLsh::share_tables`]) while they
    /// live; each index (a clone too) has its own.
    freezing: Arc<()>,
    /// Slots inserted meanwhile, with their band keys: searched beside the tables and put
    /// into them once the frozen ones are in place, so that an insert never copies a shared
    /// table (a segment's, tens of megabytes a band).
    late: Vec<(u32, Box<[u64]>)>,
    /// Whether its tables may be frozen, which keeps fewer bits of each tag (set off by
    /// [`MinHashLsh::whole_tags`]).
    may_freeze: bool,
}

impl Clone for MinHashLsh {
    fn clone(&self) -> Self {
        MinHashLsh {
            bands: self.bands,
            rows: self.rows,
            tables: self.tables.clone(),
            slots: self.slots,
            pending: self.pending.clone(),
            // Its own: tables shared to be frozen are the original's.
            freezing: Arc::new(()),
            late: self.late.clone(),
            may_freeze: self.may_freeze,
        }
    }
}

/// The band key of the spec: XXH3-64 (seed = band index) of the band's `r` entries as
/// little-endian u32s.
pub fn band_key(sig: &[u32], band: usize, rows: usize) -> u64 {
    band_key_of(&sig[band * rows..(band + 1) * rows], band)
}

/// The key of band `band` whose rows are `part` (as [`band_key`] of the whole signature).
pub fn band_key_of(part: &[u32], band: usize) -> u64 {
    // On a little-endian machine the rows' memory is their little-endian bytes, hashed where
    // they lie (copying them into a buffer first was most of a key's cost).
    #[cfg(target_endian = "little")]
    {
        // SAFETY: `part` is valid, initialised and aligned for `4 × len` bytes, and every byte
        // pattern is a valid `u8`; the bytes live as long as `part`.
        let bytes =
            unsafe { std::slice::from_raw_parts(part.as_ptr().cast::<u8>(), 4 * part.len()) };
        crate::hash::xxh3_seeded(bytes, band as u64)
    }
    #[cfg(not(target_endian = "little"))]
    {
        let bytes: Vec<u8> = part.iter().flat_map(|v| v.to_le_bytes()).collect();
        crate::hash::xxh3_seeded(&bytes, band as u64)
    }
}

impl MinHashLsh {
    /// An index for signatures of `num_perm` entries.
    pub fn new(num_perm: usize, opts: &LshOptions) -> Result<Self> {
        let (bands, rows) = match opts.params {
            Some((b, r)) => {
                if b == 0 || r == 0 || b * r > num_perm {
                    return Err(Error::Config(format!(
                        "LSH params ({b}, {r}) need b ≥ 1, r ≥ 1 and b·r ≤ num_perm = {num_perm}"
                    )));
                }
                (b, r)
            }
            None => optimal_param(
                opts.threshold,
                num_perm,
                opts.false_positive_weight,
                opts.false_negative_weight,
            )?,
        };
        Ok(MinHashLsh {
            bands,
            rows,
            tables: (0..bands).map(|_| Arc::default()).collect(),
            slots: 0,
            pending: None,
            freezing: Arc::new(()),
            late: Vec::new(),
            may_freeze: true,
        })
    }

    /// `(bands, rows)`.
    pub fn params(&self) -> (usize, usize) {
        (self.bands, self.rows)
    }

    /// The band keys of a signature (precompute them in the parallel sketch step).
    pub fn keys(&self, sig: &[u32]) -> Vec<u64> {
        (0..self.bands)
            .map(|b| band_key(sig, b, self.rows))
            .collect()
    }

    /// Adds the next slot (0, 1, 2, …) with its band keys; returns the slot.
    pub fn insert_keys(&mut self, keys: &[u64]) -> u32 {
        let slot = self.slots as u32;
        if let Some(pending) = self.pending.as_mut() {
            for (p, &k) in pending.iter_mut().zip(keys) {
                p.push(k & !0xFFFF_FFFF | slot as u64);
            }
            self.slots += 1;
            return slot;
        }
        if Arc::strong_count(&self.freezing) > 1 {
            self.late.push((slot, keys.into()));
            self.slots += 1;
            return slot;
        }
        if !self.late.is_empty() {
            self.put_late();
        }
        self.prefetch(keys);
        for (t, &k) in self.tables.iter_mut().zip(keys) {
            // A copy only when a clone of this index shares the table.
            Arc::make_mut(t).insert(k, slot);
        }
        self.slots += 1;
        slot
    }

    /// Puts the slots inserted while the tables were shared to be frozen into the tables.
    fn put_late(&mut self) {
        for (slot, keys) in std::mem::take(&mut self.late) {
            for (t, &k) in self.tables.iter_mut().zip(keys.iter()) {
                Arc::make_mut(t).insert(k, slot);
            }
        }
    }

    /// Calls `f` with each table and its key of `keys`, then with each late slot sharing
    /// that band's tag (as a table would give it).
    fn each_band(&self, keys: &[u64], mut f: impl FnMut(usize, u32)) {
        self.prefetch(keys);
        for (band, (t, &k)) in self.tables.iter().zip(keys).enumerate() {
            t.for_each(k, |s| f(band, s));
        }
        for (slot, theirs) in &self.late {
            for (band, (&a, &b)) in keys.iter().zip(theirs.iter()).enumerate() {
                if a >> 32 == b >> 32 {
                    f(band, *slot);
                }
            }
        }
    }

    /// Distinct slots sharing at least one band key, ascending — and, rarely, a slot whose key
    /// in some band has the same high 32 bits only (see [`MinHashLsh`]; when that matters, use
    /// [`MinHashLsh::candidates_where`]).
    pub fn candidates(&self, keys: &[u64]) -> Vec<u32> {
        let mut out = Vec::new();
        self.each_band(keys, |_, s| out.push(s));
        crate::sort::sort_u32(&mut out);
        out.dedup();
        out
    }

    /// [`MinHashLsh::candidates`], but at most `max` of them: when more slots share a band key,
    /// the `max` that share the most bands (of equally many, the earliest), ascending.
    pub fn candidates_at_most(&self, keys: &[u64], max: usize) -> Vec<u32> {
        self.candidates_ranked_at_most(keys, max)
            .into_iter()
            .map(|(_, s)| s)
            .collect()
    }

    /// [`MinHashLsh::candidates_at_most`] with the number of bands each shares, as
    /// `(bands, slot)`, ascending by slot: what a search across several tables (the engine's
    /// time segments) ranks again as one.
    pub(crate) fn candidates_ranked_at_most(&self, keys: &[u64], max: usize) -> Vec<(u32, u32)> {
        // Room for a few slots a band, so that a typical lookup does not grow it.
        let mut all = Vec::with_capacity(4 * keys.len());
        self.each_band(keys, |_, s| all.push(s));
        // A phrase many stored texts share gives thousands of slots: radix-sorted.
        crate::sort::sort_u32(&mut all);
        // (bands shared, slot) of each distinct slot.
        let mut counted: Vec<(u32, u32)> = Vec::with_capacity(all.len());
        for s in all {
            match counted.last_mut() {
                Some((n, last)) if *last == s => *n += 1,
                _ => counted.push((1, s)),
            }
        }
        if keep_most_shared(&mut counted, max, |&(n, s)| (n, u64::from(s))) {
            counted.sort_unstable_by_key(|&(_, s)| s);
        }
        counted
    }

    /// Distinct slots sharing at least one band key, ascending, exactly: `key_of(slot, band)`
    /// gives a slot's key in a band (from its stored signature, with [`band_key`]), asked only
    /// of the slots a table gives until one band agrees.
    pub fn candidates_where(&self, keys: &[u64], key_of: impl Fn(u32, usize) -> u64) -> Vec<u32> {
        let mut found = Vec::new();
        self.each_band(keys, |band, s| found.push((s, band)));
        found.sort_unstable();
        let mut out: Vec<u32> = Vec::new();
        for (slot, band) in found {
            if out.last() != Some(&slot) && key_of(slot, band) == keys[band] {
                out.push(slot);
            }
        }
        out
    }

    /// Makes room for `more` slots, so that inserting them never grows a table.
    pub fn reserve(&mut self, more: usize) {
        if let Some(pending) = self.pending.as_mut() {
            pending.iter_mut().for_each(|p| p.reserve(more));
            return;
        }
        if Arc::strong_count(&self.freezing) > 1 {
            // The tables are shared to be frozen: reserving would copy them.
            return;
        }
        for t in &mut self.tables {
            Arc::make_mut(t).reserve(more);
        }
    }

    /// Prefetches where each band's lookup of `keys` starts.
    fn prefetch(&self, keys: &[u64]) {
        debug_assert!(
            self.pending.is_none(),
            "a lookup while the tables are deferred would miss their slots"
        );
        for (t, &k) in self.tables.iter().zip(keys) {
            t.prefetch(k);
        }
        // A frozen table's entries are a second dependent read: asked for once every band's
        // directory entry is on its way, so that the bands wait for both levels together.
        for (t, &k) in self.tables.iter().zip(keys) {
            t.prefetch_entries(k);
        }
    }

    /// Number of slots.
    pub fn len(&self) -> usize {
        self.slots
    }

    /// Whether empty.
    pub fn is_empty(&self) -> bool {
        self.slots == 0
    }

    /// Approximate heap bytes.
    pub fn heap_bytes(&self) -> usize {
        self.tables.iter().map(|t| t.heap_bytes()).sum::<usize>()
            + self
                .pending
                .iter()
                .flatten()
                .map(|p| p.capacity() * 8)
                .sum::<usize>()
    }

    /// Freezes every table now, in place (about 5 bytes a slot and band instead of 16; slots
    /// inserted later go into a growing part): for an index that will take few more slots,
    /// such as a past time segment's or one built once and then searched. A table at a time,
    /// each replaced as soon as its frozen form is built, so that at most one table is held
    /// twice. An index of fewer than 16,384 slots (where freezing does not pay), one made with
    /// [`MinHashLsh::whole_tags`], and one whose tables are shared to be frozen elsewhere (by
    /// the engine's maintenance) are left as they are. Whether it froze.
    pub fn freeze(&mut self) -> bool {
        if !self.may_freeze
            || self.slots < MIN_FROZEN
            || self.pending.is_some()
            || Arc::strong_count(&self.freezing) > 1
        {
            return false;
        }
        if !self.late.is_empty() {
            self.put_late();
        }
        for t in &mut self.tables {
            let frozen = t.frozen();
            *t = Arc::new(frozen);
        }
        true
    }

    /// [`MinHashLsh::freeze`] when it pays: an eighth of the slots or more came after the
    /// last freeze, so that a growing index is frozen again and again at a cost proportional
    /// to its size in all. Whether it froze.
    pub fn freeze_if_worth(&mut self) -> bool {
        self.worth_freezing(MIN_FROZEN) && self.freeze()
    }

    /// Never freezes its tables: every lookup then checks a candidate's whole 32-bit tag, for
    /// callers that take candidates without checking them (a frozen table gives about eight
    /// times as many that share only part of it; see `band_table.rs`).
    pub fn whole_tags(mut self) -> Self {
        self.may_freeze = false;
        self
    }

    /// Defers the tables: slots inserted from now on are only collected, to be put into the
    /// tables at once by [`MinHashLsh::finish_deferred`] (a restart's bulk load; no lookup may
    /// come in between).
    pub(crate) fn defer_tables(&mut self) {
        if self.pending.is_none() {
            self.pending = Some(vec![Vec::new(); self.bands]);
        }
    }

    /// Puts the slots collected since [`MinHashLsh::defer_tables`] into the tables, a band
    /// per thread: empty tables of at least `MIN_FROZEN` slots are built frozen (as
    /// [`FrozenTables::freeze`] would make them), others take the slots one by one.
    pub(crate) fn finish_deferred(&mut self) {
        use rayon::prelude::*;
        let Some(pending) = self.pending.take() else {
            return;
        };
        let (slots, may_freeze) = (self.slots, self.may_freeze);
        self.tables
            .par_iter_mut()
            .zip(pending)
            .for_each(|(t, pairs)| {
                let t = Arc::make_mut(t);
                if may_freeze && slots >= MIN_FROZEN && t.is_empty() {
                    *t = BandTable::frozen_from(&pairs, slots);
                } else {
                    t.reserve(pairs.len());
                    for p in pairs {
                        t.insert(p & !0xFFFF_FFFF, p as u32);
                    }
                }
            });
    }

    /// Whether freezing the tables would pay: they hold at least `min_slots` slots
    /// ([`MIN_FROZEN`] is where it starts to), and an eighth of them or more came after the
    /// last freeze.
    pub(crate) fn worth_freezing(&self, min_slots: usize) -> bool {
        let unfrozen = self.tables.first().map_or(0, |t| t.unfrozen());
        self.may_freeze && self.slots >= min_slots && unfrozen > 0 && unfrozen * 8 >= self.slots
    }

    /// The tables as they are, shared (no copy): [`FrozenTables::freeze`] then builds their
    /// frozen form outside any lock, and [`MinHashLsh::put_frozen`] puts it in place. Slots
    /// inserted meanwhile are kept aside (searched all the same) and go into the tables when
    /// the frozen ones are put in place, or once the shared tables are dropped.
    pub(crate) fn share_tables(&self) -> FrozenTables {
        FrozenTables {
            tables: self.tables.clone(),
            slots: self.slots,
            _token: Some(Arc::clone(&self.freezing)),
        }
    }

    /// Puts `frozen` (this index's tables from [`MinHashLsh::share_tables`]) in place, with
    /// the slots inserted since, and gives back the tables it replaces (to be dropped outside
    /// a lock).
    pub(crate) fn put_frozen(&mut self, mut frozen: FrozenTables) -> FrozenTables {
        debug_assert_eq!(frozen.tables.len(), self.tables.len());
        debug_assert!(frozen.slots + self.late.len() == self.slots);
        std::mem::swap(&mut self.tables, &mut frozen.tables);
        frozen._token = None;
        self.put_late();
        frozen
    }
}

/// An index's band tables at a number of slots ([`MinHashLsh::share_tables`]).
#[derive(Debug)]
pub(crate) struct FrozenTables {
    tables: Vec<Arc<BandTable>>,
    slots: usize,
    /// Keeps the index's late slots aside while it lives.
    _token: Option<Arc<()>>,
}

impl FrozenTables {
    /// Builds each table's frozen form (about 5 bytes a slot and band instead of 16), one at
    /// a time.
    pub(crate) fn freeze(&mut self) {
        for t in &mut self.tables {
            *t = Arc::new(t.frozen());
        }
    }
}

/// Keeps at most `max` of `items`, those sharing the most bands, of equally many the earliest:
/// `rank(item)` is `(bands shared, arrival order)`. The order of what is kept is unspecified;
/// returns whether any was dropped.
pub(crate) fn keep_most_shared<T>(
    items: &mut Vec<T>,
    max: usize,
    rank: impl Fn(&T) -> (u32, u64),
) -> bool {
    if items.len() <= max {
        return false;
    }
    let order = |a: &T, b: &T| {
        let (ra, rb) = (rank(a), rank(b));
        rb.0.cmp(&ra.0).then(ra.1.cmp(&rb.1))
    };
    if max > 0 {
        items.select_nth_unstable_by(max - 1, order);
    }
    items.truncate(max);
    true
}

#[cfg(test)]
mod tests;
