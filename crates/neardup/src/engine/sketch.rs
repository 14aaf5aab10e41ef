//! Sketches of the `auto` detector as the engine stores them: a compact little-endian encoding
//! (in log records and snapshots), and the per-segment index that answers with them.
//!
//! Encoding, version 4 (every integer little endian):
//! `3 u8 | exact u128 | chars u32 | flags u8` then, by flag,
//! `short` (1): `chars u32 | han u8 | text_len u32 | text | n u16 | keys u64×n`;
//! `simhash` (2): `u64`;
//! `minhash` (4): `n u16 | width u8 | signature` — `n` entries of `width` bytes each (1, 2
//! or 4: the fewest that hold every entry, so a signature of 8-bit entries takes `n` bytes;
//! see `MinHashDetectorOptions::bits`); the band keys are computed from the signature when
//! the sketch is indexed;
//! `shingles` (8, with minhash): `n u32 | u64×n`;
//! `lines` (32, under the template veto): `n u32 | u64×n | had_repeats u8` — the keys of the
//! document's counted lines, sorted, and whether any was repeated when it was stored;
//! `distinct` (64, under the template veto): `n u16 | signature u16×n | guard u8` (each slot's
//! low 16 bits), then with `guard` 1 the samples of the whole document and of the distinct
//! part, each `complete u8 | n u16 | u32×n`.
//! Version 3 wrote every signature entry as `u32` without `width`; it is read.
//! Version 2 also wrote the band keys after the signature (`m u16 | keys u64×m`); it is read,
//! its keys kept. Version 1 differs from version 2 only in the `distinct` part (32-bit slots,
//! 64-bit samples): a version 1 sketch without one is read as version 2; one with it is refused
//! (the data directory was written by an older build under the template veto and must be
//! rebuilt).
//! The detector configuration that produced the sketch is recorded in the data directory, so a
//! sketch is only ever read by an engine with the same configuration.

use crate::detect::containment::{BottomK, PackedBottomK};
use crate::detect::{compare_verdicts, Detector, Verdict};
use crate::minhash::MinHashSketch;
use crate::policy::{AutoDetector, AutoSketch};
use crate::shorttext::ShortSketch;
use crate::template_veto::{DistinctPart, DistinctSketch, VetoRules};

const VERSION: u8 = 4;
/// Version 4's layout with 32-bit signature entries and no `width`; read.
const VERSION_3: u8 = 3;
/// The layout of version 3 with the band keys written after the signature; read.
const VERSION_2: u8 = 2;
/// Version 2's layout but for the `distinct` part; read without one.
const VERSION_1: u8 = 1;
const SHORT: u8 = 1;
const SIMHASH: u8 = 2;
const MINHASH: u8 = 4;
const SHINGLES: u8 = 8;
/// In memory only: the MinHash part is left out (the segment's detector holds the signature and
/// gives it back for snapshots); never written to disk, refused by [`decode`].
const STRIPPED: u8 = 16;
const LINES: u8 = 32;
const DISTINCT: u8 = 64;
/// In memory only: the distinct part is left out (the segment's index holds it), as
/// [`STRIPPED`].
const HELD: u8 = 128;

/// A document's sketch in the engine: the `auto` detector's, and under the template veto the
/// veto's.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct DocSketch {
    pub(super) auto: AutoSketch,
    pub(super) veto: Option<VetoSketch>,
    /// Set when the costly parts were put off (see [`Deferred`]): `auto` then has no long-path
    /// sketch, `veto` no distinct part. Never encoded, never indexed.
    pub(super) deferred: Option<Box<Deferred>>,
}

/// The text of a document being checked whose exact copy was indexed when it was sketched.
/// Its answer will be "duplicate of that copy" — an exact match, which outranks every other
/// and which the template veto never vetoes (a tie, another live document at similarity 1,
/// cannot exist: of two such documents the later is never stored) — so its long-path
/// sketch (MinHash) and its
/// distinct part, most of the cost of a sketch, are needed only if that copy has left the
/// window by the time it is decided; they are computed then, from this text and the line
/// counts it was sketched with ([`VetoSketch::line_docs`]), as they would have been at
/// first. Decisions never need them otherwise; a query, which lists every match, never
/// puts them off.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Deferred {
    pub(super) text: String,
}

/// What the template veto knows of a document.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct VetoSketch {
    /// The keys of its counted lines, sorted and distinct (what it adds to the line counts).
    pub(super) lines: Vec<u64>,
    /// Whether any of its lines was repeated when it was sketched (without, it has no distinct
    /// part however its lines are counted later: see [`VetoRules::stands_unlearned`]).
    pub(super) had_repeats: bool,
    /// The keys of its lines that were not repeated, sorted: only for a document being
    /// checked, never encoded.
    pub(super) distinct_lines: Vec<u64>,
    /// Its distinct part with the full guard sets: only for a document being checked, never
    /// encoded.
    pub(super) distinct: Option<DistinctSketch>,
    /// What the index keeps of its distinct part.
    pub(super) part: Option<DistinctPart>,
    /// When its distinct part was put off ([`DocSketch::deferred`]): how many documents held
    /// each of its lines when it was sketched (`line_keys` order), what the part is computed
    /// from. Otherwise empty. Never encoded.
    pub(super) line_docs: Vec<u32>,
}

/// Appends the encoding of `s` to `out`.
pub(super) fn encode(s: &DocSketch, out: &mut Vec<u8>) {
    encode_with(s, out, false, false, VERSION)
}

/// The encoding, its MinHash part left out when `strip` (see [`STRIPPED`]), its distinct part
/// when `hold` (see [`HELD`]); `version` is [`VERSION`] but in tests of older versions.
fn encode_with(d: &DocSketch, out: &mut Vec<u8>, strip: bool, hold: bool, version: u8) {
    debug_assert!(
        d.deferred.is_none(),
        "a put-off sketch is completed before it is encoded"
    );
    let s = &d.auto;
    out.push(version);
    out.extend_from_slice(&s.exact.to_le_bytes());
    out.extend_from_slice(&(s.chars.min(u32::MAX as usize) as u32).to_le_bytes());
    let mut flags = 0;
    if s.short.is_some() {
        flags |= SHORT;
    }
    if s.simhash.is_some() {
        flags |= SIMHASH;
    }
    if let Some(m) = &s.minhash {
        flags |= if strip { STRIPPED } else { MINHASH };
        if m.shingles.is_some() {
            flags |= SHINGLES;
        }
    }
    if let Some(v) = &d.veto {
        flags |= LINES;
        if v.part.is_some() {
            flags |= if hold { HELD } else { DISTINCT };
        }
    }
    out.push(flags);
    if let Some(sh) = &s.short {
        out.extend_from_slice(&sh.chars.to_le_bytes());
        out.push(u8::from(sh.han));
        out.extend_from_slice(&(sh.text.len() as u32).to_le_bytes());
        out.extend_from_slice(sh.text.as_bytes());
        keys(out, &sh.keys);
    }
    if let Some(h) = s.simhash {
        out.extend_from_slice(&h.to_le_bytes());
    }
    if let Some(m) = s.minhash.as_ref().filter(|_| !strip) {
        out.extend_from_slice(&(m.signature.len() as u16).to_le_bytes());
        let width = match m.signature.iter().max() {
            _ if version < VERSION => 4,
            Some(&v) if v > u16::MAX as u32 => 4,
            Some(&v) if v > u8::MAX as u32 => 2,
            _ => 1,
        };
        if version >= VERSION {
            out.push(width as u8);
        }
        for v in &m.signature {
            out.extend_from_slice(&v.to_le_bytes()[..width]);
        }
        if version <= VERSION_2 {
            keys(out, &m.keys);
        }
        if let Some(set) = &m.shingles {
            out.extend_from_slice(&(set.len() as u32).to_le_bytes());
            for v in set {
                out.extend_from_slice(&v.to_le_bytes());
            }
        }
    }
    if let Some(v) = &d.veto {
        out.extend_from_slice(&(v.lines.len() as u32).to_le_bytes());
        for k in &v.lines {
            out.extend_from_slice(&k.to_le_bytes());
        }
        out.push(u8::from(v.had_repeats));
        if let Some(p) = v.part.as_ref().filter(|_| !hold) {
            out.extend_from_slice(&(p.signature.len() as u16).to_le_bytes());
            for x in p.signature.iter() {
                out.extend_from_slice(&x.to_le_bytes());
            }
            out.push(u8::from(p.samples.is_some()));
            if let Some((whole, part)) = &p.samples {
                for b in [whole.unpack(), part.unpack()] {
                    out.push(u8::from(b.complete));
                    out.extend_from_slice(&(b.hashes.len() as u16).to_le_bytes());
                    for h in b.hashes.iter() {
                        out.extend_from_slice(&h.to_le_bytes());
                    }
                }
            }
        }
    }
}

fn keys(out: &mut Vec<u8>, keys: &[u64]) {
    out.extend_from_slice(&(keys.len() as u16).to_le_bytes());
    for k in keys {
        out.extend_from_slice(&k.to_le_bytes());
    }
}

/// A bounds-checked little-endian reader.
struct Reader<'a> {
    b: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.b.len())
            .ok_or_else(|| format!("sketch cut short at byte {} (needs {n} more)", self.at))?;
        let s = &self.b[self.at..end];
        self.at = end;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.take(1)?[0])
    }
    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(
            self.take(2)?.try_into().expect("2 bytes"),
        ))
    }
    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(
            self.take(8)?.try_into().expect("8 bytes"),
        ))
    }
    fn keys(&mut self) -> Result<Vec<u64>, String> {
        let n = self.u16()? as usize;
        (0..n).map(|_| self.u64()).collect()
    }
}

/// Whether the encoded sketch `b` has a MinHash part (without decoding it; `false` for a
/// damaged one, which [`decode`] then refuses).
pub(super) fn has_minhash(b: &[u8]) -> bool {
    b.get(21).is_some_and(|f| f & (MINHASH | STRIPPED) != 0)
}

/// Decodes a sketch written by [`encode`]; `Err` says what is wrong.
pub(super) fn decode(b: &[u8]) -> Result<DocSketch, String> {
    if b.get(21).is_some_and(|f| f & (STRIPPED | HELD) != 0) {
        return Err("a sketch without its MinHash or distinct part is not a stored form".into());
    }
    decode_any(b)
}

/// [`decode`], also of an encoding with parts left out (they are then `None`).
fn decode_any(b: &[u8]) -> Result<DocSketch, String> {
    let mut r = Reader { b, at: 0 };
    let v = r.u8()?;
    if ![VERSION, VERSION_3, VERSION_2, VERSION_1].contains(&v) {
        return Err(format!(
            "sketch encoding version {v}, this build reads version {VERSION}"
        ));
    }
    let exact = u128::from_le_bytes(r.take(16)?.try_into().expect("16 bytes"));
    let chars = r.u32()? as usize;
    let flags = r.u8()?;
    if v == VERSION_1 && flags & (DISTINCT | HELD) != 0 {
        return Err(format!(
            "sketch encoding version {VERSION_1} with a template-veto part, written by an older \
             build; this build reads version {VERSION}: rebuild the data directory (start with \
             an empty one and send the documents again)"
        ));
    }
    // Every bit has a meaning; a part is either present or left out, never both.
    for (both, what) in [
        (MINHASH | STRIPPED, "MinHash"),
        (DISTINCT | HELD, "distinct"),
    ] {
        if flags & both == both {
            return Err(format!(
                "sketch flags {flags:#04x}: the {what} part both present and left out"
            ));
        }
    }
    if flags & SHINGLES != 0 && flags & (MINHASH | STRIPPED) == 0 {
        return Err(format!(
            "sketch flags {flags:#04x}: shingles without MinHash"
        ));
    }
    let short = if flags & SHORT != 0 {
        let chars = r.u32()?;
        let han = r.u8()? != 0;
        let len = r.u32()? as usize;
        let text = std::str::from_utf8(r.take(len)?)
            .map_err(|_| "short-text sketch is not UTF-8".to_string())?;
        let keys = r.keys()?;
        Some(ShortSketch {
            text: text.into(),
            chars,
            han,
            keys,
        })
    } else {
        None
    };
    let simhash = if flags & SIMHASH != 0 {
        Some(r.u64()?)
    } else {
        None
    };
    let minhash = if flags & MINHASH != 0 {
        let n = r.u16()? as usize;
        let width = if v >= VERSION { r.u8()? as usize } else { 4 };
        if ![1, 2, 4].contains(&width) {
            return Err(format!(
                "signature entries of {width} bytes; 1, 2 or 4 are written"
            ));
        }
        let signature = r
            .take(n * width)?
            .chunks_exact(width)
            .map(|b| {
                let mut v = [0u8; 4];
                v[..width].copy_from_slice(b);
                u32::from_le_bytes(v)
            })
            .collect::<Vec<_>>();
        // Versions 3 and 4 leave the keys to the index (`MinHashSketch::keys` empty).
        let keys = if v <= VERSION_2 {
            r.keys()?
        } else {
            Vec::new()
        };
        let shingles = if flags & SHINGLES != 0 {
            let n = r.u32()? as usize;
            Some((0..n).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?)
        } else {
            None
        };
        Some(MinHashSketch {
            signature,
            keys,
            shingles,
        })
    } else {
        None
    };
    let veto = if flags & LINES != 0 {
        let n = r.u32()? as usize;
        let lines = (0..n).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
        let had_repeats = match r.u8()? {
            0 => false,
            1 => true,
            x => return Err(format!("lines: repeated flag {x}")),
        };
        let part = if flags & DISTINCT != 0 {
            let n = r.u16()? as usize;
            let signature = (0..n).map(|_| r.u16()).collect::<Result<Box<[u16]>, _>>()?;
            let samples = match r.u8()? {
                0 => None,
                1 => {
                    let mut sample = || -> Result<PackedBottomK, String> {
                        let complete = r.u8()? != 0;
                        let n = r.u16()? as usize;
                        let hashes: Box<[u32]> =
                            (0..n).map(|_| r.u32()).collect::<Result<_, _>>()?;
                        if hashes.windows(2).any(|w| w[0] >= w[1]) {
                            return Err("distinct part: a guard sample is not ascending".into());
                        }
                        Ok(PackedBottomK::pack(&BottomK { complete, hashes }))
                    };
                    Some((sample()?, sample()?))
                }
                g => return Err(format!("distinct part: guard flag {g}")),
            };
            Some(DistinctPart { signature, samples })
        } else {
            None
        };
        Some(VetoSketch {
            lines,
            had_repeats,
            distinct_lines: Vec::new(),
            distinct: None,
            part,
            line_docs: Vec::new(),
        })
    } else if flags & (DISTINCT | HELD) != 0 {
        return Err("a distinct part without its lines".into());
    } else {
        None
    };
    if r.at != b.len() {
        return Err(format!("{} bytes after the sketch", b.len() - r.at));
    }
    Ok(DocSketch {
        auto: AutoSketch {
            exact,
            chars,
            short,
            simhash,
            minhash,
        },
        veto,
        deferred: None,
    })
}

/// One time segment's `auto` index: the detector (documents numbered by their position in the
/// segment), each position's slab handle and arrival sequence (the LSN of its insert record:
/// a handle may be reused after its document is gone, a sequence never), and the encoded
/// sketches for snapshots.
pub(super) struct SketchIndex {
    det: AutoDetector,
    /// Each position's distinct part under the template veto (empty without it).
    parts: Vec<Option<Box<DistinctPart>>>,
    /// Under the template veto, the positions whose document had no repeated line when it
    /// was stored.
    unlearned: Vec<bool>,
    pub(super) handles: Vec<u32>,
    pub(super) seqs: Vec<u64>,
    blobs: Vec<u8>,
    ends: Vec<u64>,
}

impl SketchIndex {
    pub(super) fn new(det: AutoDetector) -> SketchIndex {
        SketchIndex {
            det,
            parts: Vec::new(),
            unlearned: Vec::new(),
            handles: Vec::new(),
            seqs: Vec::new(),
            blobs: Vec::new(),
            ends: Vec::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.handles.len()
    }

    /// Makes room for `documents` more documents, `long` of them with a MinHash sketch.
    pub(super) fn reserve(&mut self, documents: usize, long: usize) {
        self.det.reserve(documents, long);
        self.handles.reserve(documents);
        self.seqs.reserve(documents);
        self.ends.reserve(documents);
    }

    /// Adds a document. Its encoded sketch is kept for snapshots — without the MinHash
    /// signature and band keys when the detector keeps the signature (it gives them back), and
    /// without the distinct part (the index holds it).
    pub(super) fn insert(&mut self, handle: u32, seq: u64, mut sketch: DocSketch, blob: &[u8]) {
        let pos = self.handles.len() as u32;
        let strip = sketch
            .auto
            .minhash
            .as_ref()
            .is_some_and(|m| m.shingles.is_none() && self.det.keeps_signatures());
        let hold = sketch.veto.as_ref().is_some_and(|v| v.part.is_some());
        if strip || hold {
            encode_with(&sketch, &mut self.blobs, strip, hold, VERSION);
        } else {
            self.blobs.extend_from_slice(blob);
        }
        if let Some(v) = sketch.veto.as_mut() {
            self.parts.resize(pos as usize, None);
            self.parts.push(v.part.take().map(Box::new));
            self.unlearned.resize(pos as usize, false);
            self.unlearned.push(!v.had_repeats);
        }
        self.det.insert(pos, sketch.auto);
        self.handles.push(handle);
        self.seqs.push(seq);
        self.ends.push(self.blobs.len() as u64);
    }

    fn raw(&self, pos: usize) -> &[u8] {
        let start = if pos == 0 { 0 } else { self.ends[pos - 1] } as usize;
        &self.blobs[start..self.ends[pos] as usize]
    }

    /// The encoded sketch at `pos`, as [`encode`] wrote it.
    pub(super) fn blob(&self, pos: usize) -> std::borrow::Cow<'_, [u8]> {
        let b = self.raw(pos);
        if b.get(21).is_none_or(|f| f & (STRIPPED | HELD) == 0) {
            return std::borrow::Cow::Borrowed(b);
        }
        let mut s = decode_any(b).expect("a sketch this index encoded");
        if b[21] & STRIPPED != 0 {
            s.auto.minhash = self.det.minhash_sketch_of(pos as u32);
        }
        if let Some(v) = s.veto.as_mut() {
            v.part = self.part(pos).cloned();
        }
        let mut full = Vec::with_capacity(b.len() + 600);
        encode(&s, &mut full);
        std::borrow::Cow::Owned(full)
    }

    /// Whether a document with exact digest `digest` is indexed here (live or not).
    pub(super) fn has_exact(&self, digest: u128) -> bool {
        self.det.has_exact(digest)
    }

    /// The distinct part of the document at `pos` (under the template veto, when it has one).
    fn part(&self, pos: usize) -> Option<&DistinctPart> {
        self.parts.get(pos).and_then(|p| p.as_deref())
    }

    /// The counted lines of the document at `pos` (empty without the template veto).
    pub(super) fn lines(&self, pos: usize) -> Vec<u64> {
        decode_any(self.raw(pos))
            .expect("a sketch this index encoded")
            .veto
            .map(|v| v.lines)
            .unwrap_or_default()
    }

    /// The position of the document with arrival sequence `seq`.
    pub(super) fn position(&self, seq: u64) -> Option<usize> {
        // Sequences grow with positions (documents are inserted in log order).
        self.seqs
            .binary_search(&seq)
            .ok()
            .or_else(|| self.seqs.iter().position(|&s| s == seq))
    }

    /// Every indexed document the sketch is a near-duplicate of, as `(verdict with `of` = its
    /// handle, its sequence)`; the caller checks that the handle still holds that sequence.
    /// Under the template veto (`rules`; `repeated(k)`: whether line `k` is repeated now),
    /// matches it vetoes are left out.
    pub(super) fn find(
        &self,
        s: &DocSketch,
        rules: Option<&VetoRules>,
        repeated: &dyn Fn(u64) -> bool,
        out: &mut Vec<(Verdict, u64)>,
    ) {
        let mine = s.veto.as_ref().and_then(|v| v.distinct.as_ref());
        for v in self.det.find(&s.auto) {
            let pos = v.of as usize;
            if let (Some(r), Some(_), Some(veto)) = (rules, mine, &s.veto) {
                let unlearned = self.unlearned.get(pos).copied().unwrap_or(false);
                let stands = if unlearned {
                    let theirs = self.lines(pos);
                    !theirs.iter().any(|&k| repeated(k))
                        || r.stands_unlearned(&v, mine, &veto.distinct_lines, &theirs)
                } else {
                    r.stands(&v, mine, self.part(pos))
                };
                if !stands {
                    continue;
                }
            }
            out.push((
                Verdict {
                    of: self.handles[pos],
                    ..v
                },
                self.seqs[pos],
            ));
        }
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.det.heap_bytes()
            + self.parts.capacity() * 8
            + self.unlearned.capacity()
            + self
                .parts
                .iter()
                .flatten()
                .map(|p| p.heap_bytes() + std::mem::size_of::<DistinctPart>())
                .sum::<usize>()
            + self.handles.capacity() * 4
            + self.seqs.capacity() * 8
            + self.blobs.capacity()
            + self.ends.capacity() * 8
    }
}

/// Orders `(verdict, sequence)` pairs strongest first (see [`compare_verdicts`]; arrival order
/// is the sequence).
pub(super) fn sort_strongest(found: &mut [(Verdict, u64)]) {
    found.sort_by(|a, b| compare_verdicts(&a.0, a.1, &b.0, b.1));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::detect::Stage;
    use crate::policy::PolicyOptions;
    use crate::{FingerprintConfig, Fingerprinter};

    fn texts() -> Vec<String> {
        vec![
            "今天天气真好，我们去公园散步吧".to_string(),
            "the quick brown fox jumps over the lazy dog ".repeat(20),
            "长文本的例子，".repeat(40),
        ]
    }

    /// Sketches of `texts()`, each without and with the veto's parts (lines only; lines and a
    /// distinct part with and without guard samples).
    fn sketches(det: &AutoDetector) -> Vec<DocSketch> {
        let set: Vec<u32> = (0..300u32).map(|i| i * 7919).collect();
        let mut out = Vec::new();
        for t in texts() {
            let auto = det.sketch(&t).unwrap();
            out.push(DocSketch {
                auto: auto.clone(),
                veto: None,
                deferred: None,
            });
            out.push(DocSketch {
                auto: auto.clone(),
                veto: Some(VetoSketch {
                    lines: vec![3, 5, 8],
                    had_repeats: true,
                    ..VetoSketch::default()
                }),
                deferred: None,
            });
            for samples in [
                None,
                Some((
                    PackedBottomK::pack(&BottomK::new(&set, 256)),
                    PackedBottomK::pack(&BottomK::new(&set[..20], 256)),
                )),
            ] {
                out.push(DocSketch {
                    auto: auto.clone(),
                    veto: Some(VetoSketch {
                        lines: vec![1, 2],
                        had_repeats: true,
                        distinct_lines: Vec::new(),
                        distinct: None,
                        part: Some(DistinctPart {
                            signature: (0..128).collect(),
                            samples,
                        }),
                        line_docs: Vec::new(),
                    }),
                    deferred: None,
                });
            }
        }
        out
    }

    #[test]
    fn sketches_round_trip_and_damage_is_refused() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let det = AutoDetector::new(fp, PolicyOptions::default()).unwrap();
        for s in sketches(&det) {
            let mut b = Vec::new();
            encode(&s, &mut b);
            assert_eq!(decode(&b).unwrap(), without_band_keys(&s));
            for cut in 0..b.len() {
                assert!(decode(&b[..cut]).is_err(), "cut at {cut}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert!(decode(&longer).is_err());
            let mut next = b.clone();
            next[0] = VERSION + 1;
            assert!(decode(&next).unwrap_err().contains("version"));
        }
    }

    /// A guard sample is stored packed by its gaps, so one that is not ascending (a damaged
    /// sketch) is refused when read, not packed into nonsense.
    #[test]
    fn a_guard_sample_out_of_order_is_refused() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let det = AutoDetector::new(fp, PolicyOptions::default()).unwrap();
        let with_samples = sketches(&det)
            .into_iter()
            .find(|s| {
                s.veto
                    .as_ref()
                    .is_some_and(|v| v.part.as_ref().is_some_and(|p| p.samples.is_some()))
            })
            .unwrap();
        let mut b = Vec::new();
        encode(&with_samples, &mut b);
        assert_eq!(decode(&b).unwrap(), without_band_keys(&with_samples));
        // The encoding ends with the distinct part's sample: its last two hashes swapped.
        let n = b.len();
        let (last, before) = (b[n - 4..].to_vec(), b[n - 8..n - 4].to_vec());
        b[n - 8..n - 4].copy_from_slice(&last);
        b[n - 4..].copy_from_slice(&before);
        assert!(decode(&b).unwrap_err().contains("not ascending"));
    }

    /// What a stored sketch reads back as: its band keys are left to the index.
    fn without_band_keys(s: &DocSketch) -> DocSketch {
        let mut s = s.clone();
        if let Some(m) = s.auto.minhash.as_mut() {
            m.keys.clear();
        }
        s
    }

    /// Version 2 wrote the band keys after the signature: read, keys kept. An index given a
    /// sketch without them finds what it finds with them.
    #[test]
    fn version_2_sketches_are_read_and_band_keys_are_computed_when_left_out() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let det = AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
        let all = sketches(&det);
        let mut read = 0;
        for s in &all {
            let mut b = Vec::new();
            encode_with(s, &mut b, false, false, VERSION_2);
            assert_eq!(&decode(&b).unwrap(), s);
            let mut b3 = Vec::new();
            encode_with(s, &mut b3, false, false, VERSION_3);
            if let Some(m) = &s.auto.minhash {
                assert!(!m.keys.is_empty());
                assert_eq!(b.len(), b3.len() + 2 + 8 * m.keys.len());
                read += 1;
            }
        }
        assert!(read > 0);
        // Version 4 writes each entry in the fewest bytes that hold them all (one byte at 8
        // bits); version 3's 32-bit entries are still read.
        for (bits, width) in [(32, 4), (16, 2), (8, 1)] {
            let mut opts = PolicyOptions::default();
            opts.minhash.bits = bits;
            let det = AutoDetector::new(fp.clone(), opts).unwrap();
            for s in sketches(&det).iter().filter(|s| s.auto.minhash.is_some()) {
                let (mut b3, mut b4) = (Vec::new(), Vec::new());
                encode_with(s, &mut b3, false, false, VERSION_3);
                encode(s, &mut b4);
                let n = s.auto.minhash.as_ref().unwrap().signature.len();
                assert_eq!(b4.len(), b3.len() + 1 - (4 - width) * n);
                assert_eq!(decode(&b3).unwrap(), without_band_keys(s));
                assert_eq!(decode(&b4).unwrap(), without_band_keys(s));
            }
        }
        let mut with =
            SketchIndex::new(AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap());
        let mut without =
            SketchIndex::new(AutoDetector::new(fp, PolicyOptions::default()).unwrap());
        for (i, s) in all.iter().enumerate() {
            let mut b = Vec::new();
            encode(s, &mut b);
            with.insert(i as u32, i as u64, s.clone(), &b);
            without.insert(i as u32, i as u64, decode(&b).unwrap(), &b);
        }
        // Edited copies of the long texts: found by MinHash, not as exact copies.
        let mut found = 0;
        for t in texts() {
            let edited = t.replacen("lazy", "sleepy", 1).replacen("例子", "样子", 1);
            let q = DocSketch {
                auto: det.sketch(&edited).unwrap(),
                veto: None,
                deferred: None,
            };
            let (mut a, mut b) = (Vec::new(), Vec::new());
            with.find(&q, None, &|_| false, &mut a);
            without.find(&q, None, &|_| false, &mut b);
            assert_eq!(a, b);
            found += a.iter().filter(|(v, _)| v.stage == Stage::Minhash).count();
        }
        assert!(found > 0, "the edited long texts are found by MinHash");
    }

    /// Version 1 wrote the template veto's distinct part with 32-bit slots and 64-bit samples.
    /// Read as version 2 it would be misread, so it is refused with what to do; a version 1
    /// sketch without that part has the same layout and is read.
    #[test]
    fn version_1_sketches_with_a_distinct_part_are_refused_not_misread() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let det = AutoDetector::new(fp, PolicyOptions::default()).unwrap();
        let (mut read, mut refused) = (0, 0);
        for s in sketches(&det) {
            let mut b = Vec::new();
            encode_with(&s, &mut b, false, false, VERSION_1);
            let has_part = s.veto.as_ref().is_some_and(|v| v.part.is_some());
            match decode(&b) {
                Ok(d) => {
                    assert!(!has_part);
                    assert_eq!(d, s);
                    read += 1;
                }
                Err(e) => {
                    assert!(has_part, "{e}");
                    assert!(e.contains("rebuild the data directory"), "{e}");
                    refused += 1;
                }
            }
        }
        assert!(read > 0 && refused > 0);
    }

    /// The index keeps long documents' sketches without their signature (the detector holds
    /// it) and without their distinct part (the index holds it), and gives back exactly what
    /// `encode` wrote; a stripped encoding is never read back as a stored one.
    #[test]
    fn index_gives_back_the_full_encoding() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let det = AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
        let mut idx = SketchIndex::new(AutoDetector::new(fp, PolicyOptions::default()).unwrap());
        let (mut blobs, mut left_out) = (Vec::new(), 0);
        for (i, s) in sketches(&det).into_iter().enumerate() {
            let mut b = Vec::new();
            encode(&s, &mut b);
            // `n u16 | width u8 | n` one-byte entries, and the distinct part.
            left_out += s.auto.minhash.as_ref().map_or(0, |m| 3 + m.signature.len());
            let lines = s.veto.as_ref().map(|v| v.lines.clone()).unwrap_or_default();
            idx.insert(i as u32, i as u64, s, &b);
            assert_eq!(idx.lines(i), lines);
            assert_eq!(idx.position(i as u64), Some(i));
            blobs.push(b);
        }
        for (i, b) in blobs.iter().enumerate() {
            assert_eq!(&*idx.blob(i), b.as_slice(), "document {i}");
        }
        // The long ones are kept stripped, and a stripped encoding is refused by decode.
        let kept = idx.blobs.len();
        assert!(
            kept < blobs.iter().map(Vec::len).sum::<usize>() - left_out,
            "{kept} bytes kept"
        );
        for (strip, hold) in [(true, false), (false, true)] {
            let mut stripped = Vec::new();
            encode_with(&sketches(&det)[7], &mut stripped, strip, hold, VERSION);
            assert!(decode(&stripped).is_err());
        }
    }
}
