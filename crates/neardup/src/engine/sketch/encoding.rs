//! The encoding of a document's sketch in log records, snapshots and Redis entries.
//!
//! Encoding, version 10 (every integer little endian):
//! `9 u8 | exact u128 | chars u32 | flags u8` then, by flag,
//! `short` (1): `chars u32 | han u8 | text_len u32 | text | n u16 | tags u32×n` — each band
//! key's high 32 bits, all that a band table keeps of a key (a short text's candidates are
//! confirmed on its text, never on its keys), read back as keys with the low 32 bits zero;
//! `simhash` (2): `u64`;
//! `minhash` (4): `n u16 | width u8 | signature` — `n` entries of `width` bytes each (1, 2
//! or 4: the fewest that hold every entry, so a signature of 8-bit entries takes `n` bytes;
//! see `MinHashDetectorOptions::bits`); the band keys are computed from the signature when
//! the sketch is indexed;
//! `shingles` (8, with minhash): `n u32 | u64×n`;
//! `lines` (32, under the template veto): `n u32 | u64×n | had_repeats u8 | thin u8` — the
//! keys of the document's counted lines, sorted, whether any was repeated when it was stored,
//! and with `thin` 1 (a `ThinPage`) a bit set of `ceil(n / 8)` bytes: bit `i` (of byte
//! `i / 8`, lowest first) when key `i` is a line's exact key and that line was repeated;
//! then `whole u8`: with 1, a sample of the whole text's character 3-grams of a document
//! stored before any of its lines was repeated, written as the `distinct` part's samples are
//! (`VetoSketch::whole_sample`); then `part u8`: with 1, for a document with a distinct part,
//! a bit set of `ceil(n / 8)` bytes as `thin`'s: bit `i` when key `i` is a line's exact key and
//! that line was repeated when it was stored (`VetoSketch::part_repeated`);
//! `distinct` (64, under the template veto): `n u16 | signature u16×n | guard u8` (each slot's
//! low 16 bits), then with `guard` 1 the samples of the whole document and of the distinct
//! part, each `complete u8 | n u16 | width u8 | gaps` — the `n` ascending hashes as the gaps
//! between them (the first from 0), `width` bits each, packed from the lowest bit of the first
//! of `ceil(n · width / 8)` bytes (as `PackedBottomK` holds them);
//! then, with `lines`, `body u8`: with 1 the document's indexed body follows as the whole is
//! written (`exact u128 | chars u32 | flags u8` with only the `short`, `simhash`, `minhash`
//! and `shingles` bits, then those parts);
//! then, last, `passages u8`: with 1, `n u32 | keys u64×n` — the keys of a long text's
//! fragments in their order in the text, each once, where it first occurs (a key's place is
//! its rank, which a quote's fragments must follow: `PassageSketch::keys`; an indexed body has
//! none of its own).
//! Version 9 is version 10 without `passages`; it is read (the document is not found by its
//! sentences), and a sketch without passage keys is still written as version 9 or 8.
//! Version 8 is version 9 without `whole` and `part`; it is read (a match with such a document is judged
//! by line counts alone, `VetoRules::stands_unlearned`), and a stored sketch without `whole`
//! and `part` is still written as version 8 (only `TemplateVetoOptions::by_content` makes
//! them); the forms a segment keeps in memory are version 9.
//! Version 7 wrote each guard sample's hashes as `u32×n` (no `width`); it is read.
//! Version 6 also wrote the short part's whole keys (`keys u64×n`); it is read.
//! Version 5 is version 6 without `thin`; it is read (the document is not judged
//! template-only again). Version 4 is version 5 without `body`; it is read (no body is indexed). Version 3 wrote every signature entry as `u32` without `width`; it is read.
//! Version 2 also wrote the band keys after the signature (`m u16 | keys u64×m`); it is read,
//! its keys kept. Version 1 differs from version 2 only in the `distinct` part (32-bit slots,
//! 64-bit samples): a version 1 sketch without one is read as version 2; one with it is refused
//! (the data directory was written by an older build under the template veto and must be
//! rebuilt).
//! The detector configuration that produced the sketch is recorded in the data directory, so a
//! sketch is only ever read by an engine with the same configuration.

use super::{DocSketch, ThinPage, VetoSketch};
use crate::detect::containment::{BottomK, PackedBottomK};
use crate::detect::passages::PassageSketch;
use crate::minhash::MinHashSketch;
use crate::policy::AutoSketch;
use crate::shorttext::ShortSketch;
use crate::template_veto::DistinctPart;

/// The version this build writes.
pub(super) const VERSION: u8 = 10;
/// Version 10 without `passages`; read.
pub(super) const VERSION_9: u8 = 9;
/// Version 9 without `whole`; read.
pub(super) const VERSION_8: u8 = 8;
/// Version 8 with the guard samples as lists of 32-bit hashes; read.
pub(super) const VERSION_7: u8 = 7;
/// Version 7 with the short part's whole band keys; read.
pub(super) const VERSION_6: u8 = 6;
/// Version 6 without `thin`; read.
pub(super) const VERSION_5: u8 = 5;
/// Version 5 without the indexed body; read.
pub(super) const VERSION_4: u8 = 4;
/// Version 4's layout with 32-bit signature entries and no `width`; read.
pub(super) const VERSION_3: u8 = 3;
/// The layout of version 3 with the band keys written after the signature; read.
pub(super) const VERSION_2: u8 = 2;
/// Version 2's layout but for the `distinct` part; read without one.
pub(super) const VERSION_1: u8 = 1;
const SHORT: u8 = 1;
const SIMHASH: u8 = 2;
const MINHASH: u8 = 4;
const SHINGLES: u8 = 8;
/// In memory only: the MinHash part is left out (the segment's detector holds the signature and
/// gives it back for snapshots); never written to disk, refused by [`decode`].
pub(super) const STRIPPED: u8 = 16;
const LINES: u8 = 32;
const DISTINCT: u8 = 64;
/// In memory only: the distinct part is left out, as [`STRIPPED`]; refused by [`decode`]. The
/// engine's index keeps the distinct part in its kept encodings, so only tests write it.
pub(super) const HELD: u8 = 128;
/// In memory only, on the version byte: the short part's text is left out (the segment's
/// detector holds it) — `chars u32 | han u8 | n u16 | tags u32×n`; refused by [`decode`].
pub(super) const TEXT_HELD: u8 = 0x80;
/// In memory only, on the version byte: the indexed body's short text is left out, and its
/// MinHash part where its flags say [`STRIPPED`] (the segment's body detector holds both);
/// refused by [`decode`].
pub(super) const BODY_HELD: u8 = 0x40;
/// In memory only, on the version byte: the exact digest is left out — `v u8 | chars u32 |
/// flags u8 | …` — and, with [`BODY_HELD`], the body's too (the segment's detectors hold
/// them); refused by [`decode`].
pub(super) const EXACT_HELD: u8 = 0x20;
/// Every in-memory bit of the version byte.
const KEPT_BITS: u8 = TEXT_HELD | BODY_HELD | EXACT_HELD;

/// Where the flags of a kept encoding `b` are (after the version byte, the exact digest unless
/// it is left out, and the character count).
pub(super) fn flags_at(b: &[u8]) -> usize {
    if b.first().is_some_and(|v| v & EXACT_HELD != 0) {
        5
    } else {
        21
    }
}

/// Appends the encoding of `s` to `out`.
pub(in crate::engine) fn encode(s: &DocSketch, out: &mut Vec<u8>) {
    // Only passage keys need version 10, and only a whole-text sample or a part's lines need
    // version 9: without them a sketch is written as version 8 wrote it, byte for byte.
    let passages = s.auto.passages.as_ref().is_some_and(|p| p.is_stored());
    let new = s
        .veto
        .as_ref()
        .is_some_and(|v| v.whole_sample.is_some() || v.part_repeated.is_some());
    let version = match (passages, new) {
        (true, _) => VERSION,
        (false, true) => VERSION_9,
        (false, false) => VERSION_8,
    };
    encode_with(s, out, false, false, version)
}

/// The encoding, its MinHash part left out when `strip` (see [`STRIPPED`]), its distinct part
/// when `hold` (see [`HELD`]); `version` is [`VERSION`] but in tests of older versions.
pub(super) fn encode_with(d: &DocSketch, out: &mut Vec<u8>, strip: bool, hold: bool, version: u8) {
    encode_parts(d, out, strip, hold, Kept::default(), version)
}

/// The encoding a segment's index keeps ([`super::kept`]): [`encode_with`] at [`VERSION`]
/// with its distinct part, the short part's text left out when it has one (see
/// [`TEXT_HELD`]), an indexed body's short text and, when `strip_body`, its MinHash part (see
/// [`BODY_HELD`]), and with `exact` the exact digests (see [`EXACT_HELD`]).
pub(super) fn encode_kept(
    d: &DocSketch,
    out: &mut Vec<u8>,
    strip: bool,
    strip_body: bool,
    exact: bool,
) {
    let kept = Kept {
        text: d.auto.short.is_some(),
        body: d.index_body && d.body.is_some(),
        strip_body,
        exact,
    };
    encode_parts(d, out, strip, false, kept, VERSION)
}

/// What an in-memory encoding leaves out of a document's text and body.
#[derive(Clone, Copy, Default)]
struct Kept {
    /// The short part's text ([`TEXT_HELD`]).
    text: bool,
    /// The indexed body's short text ([`BODY_HELD`]).
    body: bool,
    /// With `body`: its MinHash part too.
    strip_body: bool,
    /// The exact digest, and with `body` the body's ([`EXACT_HELD`]).
    exact: bool,
}

fn encode_parts(
    d: &DocSketch,
    out: &mut Vec<u8>,
    strip: bool,
    hold: bool,
    kept: Kept,
    version: u8,
) {
    debug_assert!(
        d.deferred.is_none(),
        "a put-off sketch is completed before it is encoded"
    );
    debug_assert!(!(kept.text || kept.body || kept.exact) || version == VERSION);
    let mut v = version;
    if kept.text {
        v |= TEXT_HELD;
    }
    if kept.body {
        v |= BODY_HELD;
    }
    if kept.exact {
        v |= EXACT_HELD;
    }
    out.push(v);
    let mut flags = 0;
    if let Some(v) = &d.veto {
        flags |= LINES;
        if v.part.is_some() {
            flags |= if hold { HELD } else { DISTINCT };
        }
    }
    write_auto(out, &d.auto, flags, strip, kept.text, kept.exact, version);
    if let Some(v) = &d.veto {
        out.extend_from_slice(&(v.lines.len() as u32).to_le_bytes());
        for k in &v.lines {
            out.extend_from_slice(&k.to_le_bytes());
        }
        out.push(u8::from(v.had_repeats));
        if version >= VERSION_6 {
            write_line_bits(out, v.thin.as_ref(), v.lines.len());
        }
        if version >= VERSION_9 {
            match &v.whole_sample {
                Some(w) => {
                    out.push(1);
                    write_sample(out, w);
                }
                None => out.push(0),
            }
            write_line_bits(out, v.part_repeated.as_ref(), v.lines.len());
        }
        if let Some(p) = v.part.as_ref().filter(|_| !hold) {
            out.extend_from_slice(&(p.signature.len() as u16).to_le_bytes());
            for x in p.signature.iter() {
                out.extend_from_slice(&x.to_le_bytes());
            }
            out.push(u8::from(p.samples.is_some()));
            if let Some((whole, part)) = &p.samples {
                for b in [whole, part] {
                    if version >= VERSION_8 {
                        write_sample(out, b);
                    } else {
                        let b = b.unpack();
                        out.push(u8::from(b.complete));
                        out.extend_from_slice(&(b.hashes.len() as u16).to_le_bytes());
                        for h in b.hashes.iter() {
                            out.extend_from_slice(&h.to_le_bytes());
                        }
                    }
                }
            }
        }
        if version >= VERSION_5 {
            match d.body.as_ref().filter(|_| d.index_body) {
                Some(b) => {
                    out.push(1);
                    write_auto(
                        out,
                        b,
                        0,
                        kept.body && kept.strip_body,
                        kept.body,
                        kept.body && kept.exact,
                        version,
                    );
                }
                None => out.push(0),
            }
        }
    }
    if version >= VERSION {
        match d.auto.passages.as_ref().filter(|p| p.is_stored()) {
            Some(p) => {
                out.push(1);
                out.extend_from_slice(&(p.keys().len() as u32).to_le_bytes());
                for k in p.keys() {
                    out.extend_from_slice(&k.to_le_bytes());
                }
            }
            None => out.push(0),
        }
    }
}

/// Writes `bits`, a bit a line of a document's `lines` counted lines: `0`, or `1` then the
/// `ceil(lines / 8)` bytes.
fn write_line_bits(out: &mut Vec<u8>, bits: Option<&ThinPage>, lines: usize) {
    match bits {
        Some(t) => {
            debug_assert_eq!(t.repeated.len(), lines.div_ceil(8));
            out.push(1);
            out.extend_from_slice(&t.repeated);
        }
        None => out.push(0),
    }
}

/// Reads what [`write_line_bits`] wrote for `lines` lines; `what` names the flag in an error.
fn read_line_bits(
    r: &mut Reader<'_>,
    lines: usize,
    what: &str,
) -> Result<Option<ThinPage>, String> {
    match r.u8()? {
        0 => Ok(None),
        1 => Ok(Some(ThinPage {
            repeated: r.take(lines.div_ceil(8))?.to_vec(),
        })),
        x => Err(format!("lines: {what} flag {x}")),
    }
}

/// Writes a guard sample as version 8 and later do: `complete u8 | n u16 | width u8 | gaps`.
fn write_sample(out: &mut Vec<u8>, b: &PackedBottomK) {
    let (complete, len, width, bits) = b.parts();
    out.push(u8::from(complete));
    out.extend_from_slice(&(len as u16).to_le_bytes());
    out.push(width);
    out.extend_from_slice(bits);
}

/// Reads a guard sample written by [`write_sample`].
fn read_sample(r: &mut Reader<'_>) -> Result<PackedBottomK, String> {
    let complete = r.u8()? != 0;
    let n = r.u16()? as usize;
    let width = r.u8()?;
    let bytes = (n * width as usize).div_ceil(8);
    let bits = r.take(bytes)?.into();
    PackedBottomK::from_parts(complete, n as u32, width, bits)
}

/// Writes an `auto` sketch: `exact u128 | chars u32 | flags u8` (`flags` with the bits of its
/// parts added) and its parts, the short part's text left out when `text_held`, the exact
/// digest when `exact_held`.
fn write_auto(
    out: &mut Vec<u8>,
    s: &AutoSketch,
    mut flags: u8,
    strip: bool,
    text_held: bool,
    exact_held: bool,
    version: u8,
) {
    if !exact_held {
        out.extend_from_slice(&s.exact.to_le_bytes());
    }
    out.extend_from_slice(&(s.chars.min(u32::MAX as usize) as u32).to_le_bytes());
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
        if !text_held {
            out.extend_from_slice(&(sh.text.len() as u32).to_le_bytes());
            out.extend_from_slice(sh.text.as_bytes());
        }
        if version >= VERSION_7 {
            out.extend_from_slice(&(sh.keys.len() as u16).to_le_bytes());
            for k in &sh.keys {
                out.extend_from_slice(&short_tag(*k).to_le_bytes());
            }
        } else {
            keys(out, &sh.keys);
        }
    }
    if let Some(h) = s.simhash {
        out.extend_from_slice(&h.to_le_bytes());
    }
    if let Some(m) = s.minhash.as_ref().filter(|_| !strip) {
        out.extend_from_slice(&(m.signature.len() as u16).to_le_bytes());
        let width = match m.signature.iter().max() {
            _ if version < VERSION_4 => 4,
            Some(&v) if v > u16::MAX as u32 => 4,
            Some(&v) if v > u8::MAX as u32 => 2,
            _ => 1,
        };
        if version >= VERSION_4 {
            out.push(width as u8);
        }
        // A loop per width: a slice of a width known only at run time is a call to `memcpy`
        // per entry.
        match width {
            1 => out.extend(m.signature.iter().map(|&v| v as u8)),
            2 => m
                .signature
                .iter()
                .for_each(|&v| out.extend_from_slice(&(v as u16).to_le_bytes())),
            _ => m
                .signature
                .iter()
                .for_each(|&v| out.extend_from_slice(&v.to_le_bytes())),
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
}

/// What version 7 keeps of a short text's band key: its high 32 bits (the band tables' tag).
fn short_tag(key: u64) -> u32 {
    (key >> 32) as u32
}

/// A band key as version 7 reads it back: its tag, the low 32 bits zero.
fn from_short_tag(tag: u32) -> u64 {
    u64::from(tag) << 32
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
pub(in crate::engine) fn has_minhash(b: &[u8]) -> bool {
    b.get(21).is_some_and(|f| f & (MINHASH | STRIPPED) != 0)
}

/// Decodes a sketch written by [`encode`]; `Err` says what is wrong.
pub(in crate::engine) fn decode(b: &[u8]) -> Result<DocSketch, String> {
    if b.get(21).is_some_and(|f| f & (STRIPPED | HELD) != 0)
        || b.first().is_some_and(|v| v & KEPT_BITS != 0)
    {
        return Err(
            "a sketch with a part left out (its MinHash, its distinct part, its short text, its exact digest or its body's parts) is not a stored form"
                .into(),
        );
    }
    decode_any(b)
}

/// [`decode`], also of an encoding with parts left out (they are then `None`; a held short
/// text is empty).
pub(super) fn decode_any(b: &[u8]) -> Result<DocSketch, String> {
    decode_kept(b).map(|(s, _)| s)
}

/// [`decode_any`], and whether the body's MinHash part was left out (its flags say
/// [`STRIPPED`]).
pub(super) fn decode_kept(b: &[u8]) -> Result<(DocSketch, bool), String> {
    let mut r = Reader { b, at: 0 };
    let v = r.u8()?;
    let (text_held, body_held) = (v & TEXT_HELD != 0, v & BODY_HELD != 0);
    let exact_held = v & EXACT_HELD != 0;
    let v = v & !KEPT_BITS;
    if (text_held || body_held || exact_held) && v != VERSION {
        return Err(format!(
            "sketch encoding version {v} with a part left out, which only version {VERSION} leaves out"
        ));
    }
    if ![
        VERSION, VERSION_9, VERSION_8, VERSION_7, VERSION_6, VERSION_5, VERSION_4, VERSION_3,
        VERSION_2, VERSION_1,
    ]
    .contains(&v)
    {
        return Err(format!(
            "sketch encoding version {v}, this build reads version {VERSION}"
        ));
    }
    let exact = if exact_held {
        0
    } else {
        u128::from_le_bytes(r.take(16)?.try_into().expect("16 bytes"))
    };
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
    let mut auto = read_auto(&mut r, v, exact, chars, flags, text_held)?;
    let veto = if flags & LINES != 0 {
        let n = r.u32()? as usize;
        let lines = (0..n).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
        let had_repeats = match r.u8()? {
            0 => false,
            1 => true,
            x => return Err(format!("lines: repeated flag {x}")),
        };
        let thin = if v >= VERSION_6 {
            read_line_bits(&mut r, n, "thin")?
        } else {
            None
        };
        let (whole_sample, part_repeated) = if v >= VERSION_9 {
            let whole = match r.u8()? {
                0 => None,
                1 => Some(read_sample(&mut r)?),
                x => return Err(format!("lines: whole-sample flag {x}")),
            };
            (whole, read_line_bits(&mut r, n, "part-lines")?)
        } else {
            (None, None)
        };
        let part = if flags & DISTINCT != 0 {
            let n = r.u16()? as usize;
            let signature = (0..n).map(|_| r.u16()).collect::<Result<Box<[u16]>, _>>()?;
            let samples = match r.u8()? {
                0 => None,
                1 => {
                    let mut sample = || -> Result<PackedBottomK, String> {
                        if v >= VERSION_8 {
                            return read_sample(&mut r);
                        }
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
            whole_sample,
            own: None,
            part_repeated,
            had_repeats,
            distinct_lines: Vec::new(),
            distinct: None,
            part,
            thin,
            line_docs: Vec::new(),
        })
    } else if flags & (DISTINCT | HELD) != 0 {
        return Err("a distinct part without its lines".into());
    } else {
        None
    };
    let mut body_stripped = false;
    let body = if v >= VERSION_5 && veto.is_some() {
        match r.u8()? {
            0 => None,
            1 => {
                let exact = if exact_held && body_held {
                    0
                } else {
                    u128::from_le_bytes(r.take(16)?.try_into().expect("16 bytes"))
                };
                let chars = r.u32()? as usize;
                let flags = r.u8()?;
                let parts = SHORT | SIMHASH | MINHASH | SHINGLES;
                let left_out = if body_held { STRIPPED } else { 0 };
                if flags & !(parts | left_out) != 0
                    || flags & (MINHASH | STRIPPED) == MINHASH | STRIPPED
                {
                    return Err(format!("body flags {flags:#04x}: a body has no such part"));
                }
                body_stripped = flags & STRIPPED != 0;
                Some(read_auto(&mut r, v, exact, chars, flags, body_held)?)
            }
            x => return Err(format!("body flag {x}")),
        }
    } else if body_held {
        return Err("a body left out of a sketch without one".into());
    } else {
        None
    };
    if v >= VERSION {
        auto.passages = match r.u8()? {
            0 => None,
            1 => {
                let n = r.u32()? as usize;
                // Bounded by the bytes there are before anything is allocated.
                let keys: Vec<u64> = r
                    .take(n.saturating_mul(8))?
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect();
                let mut sorted = keys.clone();
                sorted.sort_unstable();
                if keys.is_empty() || sorted.windows(2).any(|w| w[0] == w[1]) {
                    return Err("passages: no key, or a key repeated".into());
                }
                Some(Box::new(PassageSketch::from_keys(keys)))
            }
            x => return Err(format!("passages flag {x}")),
        };
    }
    if r.at != b.len() {
        return Err(format!("{} bytes after the sketch", b.len() - r.at));
    }
    Ok((
        DocSketch {
            index_body: body.is_some(),
            body,
            auto,
            veto,
            deferred: None,
        },
        body_stripped,
    ))
}

/// The parts of an `auto` sketch (after its `flags`), in an encoding of version `v` (the
/// short part's text left out when `text_held`).
fn read_auto(
    r: &mut Reader<'_>,
    v: u8,
    exact: u128,
    chars: usize,
    flags: u8,
    text_held: bool,
) -> Result<AutoSketch, String> {
    if flags & SHINGLES != 0 && flags & (MINHASH | STRIPPED) == 0 {
        return Err(format!(
            "sketch flags {flags:#04x}: shingles without MinHash"
        ));
    }
    let short = if flags & SHORT != 0 {
        let chars = r.u32()?;
        let han = r.u8()? != 0;
        let text = if text_held {
            ""
        } else {
            let len = r.u32()? as usize;
            std::str::from_utf8(r.take(len)?)
                .map_err(|_| "short-text sketch is not UTF-8".to_string())?
        };
        let keys = if v >= VERSION_7 {
            let n = r.u16()? as usize;
            (0..n)
                .map(|_| r.u32().map(from_short_tag))
                .collect::<Result<_, _>>()?
        } else {
            r.keys()?
        };
        Some(ShortSketch {
            text: text.into(),
            chars,
            han,
            keys,
            // Searched at the document's decision, never stored.
            other_keys: None,
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
        let width = if v >= VERSION_4 { r.u8()? as usize } else { 4 };
        if ![1, 2, 4].contains(&width) {
            return Err(format!(
                "signature entries of {width} bytes; 1, 2 or 4 are written"
            ));
        }
        // A loop per width (see the encoder).
        let bytes = r.take(n * width)?;
        let signature: Vec<u32> = match width {
            1 => bytes.iter().map(|&b| u32::from(b)).collect(),
            2 => bytes
                .chunks_exact(2)
                .map(|b| u32::from(u16::from_le_bytes([b[0], b[1]])))
                .collect(),
            _ => bytes
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect(),
        };
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
            // Searched at the document's decision, never stored.
            other: None,
        })
    } else {
        None
    };
    Ok(AutoSketch {
        exact,
        chars,
        short,
        simhash,
        minhash,
        // The engine refuses passages (`Engine::open`): nothing of them is stored.
        passages: None,
    })
}
