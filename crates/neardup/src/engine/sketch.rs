//! Sketches of the `auto` detector as the engine stores them: a compact little-endian encoding
//! (in log records and snapshots), and the per-segment index that answers with them.
//!
//! Encoding, version 1 (every integer little endian):
//! `1 u8 | exact u128 | chars u32 | flags u8` then, by flag,
//! `short` (1): `chars u32 | han u8 | text_len u32 | text | n u16 | keys u64×n`;
//! `simhash` (2): `u64`;
//! `minhash` (4): `n u16 | signature u32×n | m u16 | keys u64×m`;
//! `shingles` (8, with minhash): `n u32 | u64×n`.
//! The detector configuration that produced the sketch is recorded in the data directory, so a
//! sketch is only ever read by an engine with the same configuration.

use crate::detect::{compare_verdicts, Detector, Verdict};
use crate::minhash::MinHashSketch;
use crate::policy::{AutoDetector, AutoSketch};
use crate::shorttext::ShortSketch;

const VERSION: u8 = 1;
const SHORT: u8 = 1;
const SIMHASH: u8 = 2;
const MINHASH: u8 = 4;
const SHINGLES: u8 = 8;
/// In memory only: the MinHash part is left out (the segment's detector holds the signature and
/// gives it back for snapshots); never written to disk, refused by [`decode`].
const STRIPPED: u8 = 16;

/// Appends the encoding of `s` to `out`.
pub(super) fn encode(s: &AutoSketch, out: &mut Vec<u8>) {
    encode_with(s, out, false)
}

/// The encoding, its MinHash part left out when `strip` (see [`STRIPPED`]).
fn encode_with(s: &AutoSketch, out: &mut Vec<u8>, strip: bool) {
    out.push(VERSION);
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
        for v in &m.signature {
            out.extend_from_slice(&v.to_le_bytes());
        }
        keys(out, &m.keys);
        if let Some(set) = &m.shingles {
            out.extend_from_slice(&(set.len() as u32).to_le_bytes());
            for v in set {
                out.extend_from_slice(&v.to_le_bytes());
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

/// Decodes a sketch written by [`encode`]; `Err` says what is wrong.
pub(super) fn decode(b: &[u8]) -> Result<AutoSketch, String> {
    if b.get(21).is_some_and(|f| f & STRIPPED != 0) {
        return Err("a sketch without its MinHash part is not a stored form".into());
    }
    decode_any(b)
}

/// [`decode`], also of a stripped encoding (its `minhash` is then `None`).
fn decode_any(b: &[u8]) -> Result<AutoSketch, String> {
    let mut r = Reader { b, at: 0 };
    let v = r.u8()?;
    if v != VERSION {
        return Err(format!(
            "sketch encoding version {v}, this build reads version {VERSION}"
        ));
    }
    let exact = u128::from_le_bytes(r.take(16)?.try_into().expect("16 bytes"));
    let chars = r.u32()? as usize;
    let flags = r.u8()?;
    if flags & !(SHORT | SIMHASH | MINHASH | SHINGLES | STRIPPED) != 0 {
        return Err(format!("unknown sketch flags {flags:#04x}"));
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
        let signature = (0..n).map(|_| r.u32()).collect::<Result<Vec<_>, _>>()?;
        let keys = r.keys()?;
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
    if r.at != b.len() {
        return Err(format!("{} bytes after the sketch", b.len() - r.at));
    }
    Ok(AutoSketch {
        exact,
        chars,
        short,
        simhash,
        minhash,
    })
}

/// One time segment's `auto` index: the detector (documents numbered by their position in the
/// segment), each position's slab handle and arrival sequence (the LSN of its insert record:
/// a handle may be reused after its document is gone, a sequence never), and the encoded
/// sketches for snapshots.
pub(super) struct SketchIndex {
    det: AutoDetector,
    pub(super) handles: Vec<u32>,
    pub(super) seqs: Vec<u64>,
    blobs: Vec<u8>,
    ends: Vec<u64>,
}

impl SketchIndex {
    pub(super) fn new(det: AutoDetector) -> SketchIndex {
        SketchIndex {
            det,
            handles: Vec::new(),
            seqs: Vec::new(),
            blobs: Vec::new(),
            ends: Vec::new(),
        }
    }

    pub(super) fn len(&self) -> usize {
        self.handles.len()
    }

    /// Adds a document. Its encoded sketch is kept for snapshots — without the MinHash
    /// signature and band keys when the detector keeps the signature (it gives them back).
    pub(super) fn insert(&mut self, handle: u32, seq: u64, sketch: AutoSketch, blob: &[u8]) {
        let pos = self.handles.len() as u32;
        let strip = sketch
            .minhash
            .as_ref()
            .is_some_and(|m| m.shingles.is_none() && self.det.keeps_signatures());
        if strip {
            encode_with(&sketch, &mut self.blobs, true);
        } else {
            self.blobs.extend_from_slice(blob);
        }
        self.det.insert(pos, sketch);
        self.handles.push(handle);
        self.seqs.push(seq);
        self.ends.push(self.blobs.len() as u64);
    }

    /// The encoded sketch at `pos`, as [`encode`] wrote it.
    pub(super) fn blob(&self, pos: usize) -> std::borrow::Cow<'_, [u8]> {
        let start = if pos == 0 { 0 } else { self.ends[pos - 1] } as usize;
        let b = &self.blobs[start..self.ends[pos] as usize];
        if b.get(21).is_none_or(|f| f & STRIPPED == 0) {
            return std::borrow::Cow::Borrowed(b);
        }
        let mut s = decode_any(b).expect("a sketch this index encoded");
        s.minhash = self.det.minhash_sketch_of(pos as u32);
        let mut full = Vec::with_capacity(b.len() + 600);
        encode(&s, &mut full);
        std::borrow::Cow::Owned(full)
    }

    /// Every indexed document the sketch is a near-duplicate of, as `(verdict with `of` = its
    /// handle, its sequence)`; the caller checks that the handle still holds that sequence.
    pub(super) fn find(&self, s: &AutoSketch, out: &mut Vec<(Verdict, u64)>) {
        for v in self.det.find(s) {
            let pos = v.of as usize;
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
    use crate::policy::PolicyOptions;
    use crate::{FingerprintConfig, Fingerprinter};

    #[test]
    fn sketches_round_trip_and_damage_is_refused() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let det = AutoDetector::new(fp, PolicyOptions::default()).unwrap();
        for text in [
            "今天天气真好，我们去公园散步吧",
            &"the quick brown fox jumps over the lazy dog ".repeat(20),
            &"长文本的例子，".repeat(40),
        ] {
            let s = det.sketch(text).unwrap();
            let mut b = Vec::new();
            encode(&s, &mut b);
            assert_eq!(decode(&b).unwrap(), s);
            for cut in 0..b.len() {
                assert!(decode(&b[..cut]).is_err(), "cut at {cut}");
            }
            let mut longer = b.clone();
            longer.push(0);
            assert!(decode(&longer).is_err());
            let mut v2 = b.clone();
            v2[0] = 2;
            assert!(decode(&v2).unwrap_err().contains("version"));
        }
    }

    /// The index keeps long documents' sketches without their signature (the detector holds
    /// it) and gives back exactly what `encode` wrote; a stripped encoding is never read back
    /// as a stored one.
    #[test]
    fn index_gives_back_the_full_encoding() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let det = AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
        let mut idx = SketchIndex::new(AutoDetector::new(fp, PolicyOptions::default()).unwrap());
        let texts = [
            "今天天气真好，我们去公园散步吧".to_string(),
            "the quick brown fox jumps over the lazy dog ".repeat(20),
            "长文本的例子，".repeat(40),
        ];
        let mut blobs = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let s = det.sketch(t).unwrap();
            let mut b = Vec::new();
            encode(&s, &mut b);
            idx.insert(i as u32, i as u64, s, &b);
            blobs.push(b);
        }
        for (i, b) in blobs.iter().enumerate() {
            assert_eq!(&*idx.blob(i), b.as_slice(), "document {i}");
        }
        // The long ones are kept stripped, and a stripped encoding is refused by decode.
        let kept = idx.blobs.len();
        assert!(
            kept < blobs.iter().map(Vec::len).sum::<usize>() / 2,
            "{kept} bytes kept"
        );
        let mut stripped = Vec::new();
        encode_with(&det.sketch(&texts[1]).unwrap(), &mut stripped, true);
        assert!(decode(&stripped).is_err());
    }
}
