//! The sketch encoding and the per-segment index, against what they were given.

use super::encoding::{
    encode_with, VERSION, VERSION_1, VERSION_2, VERSION_3, VERSION_4, VERSION_5, VERSION_6,
    VERSION_7, VERSION_8,
};
use super::*;
use crate::detect::containment::{BottomK, PackedBottomK};
use crate::detect::Stage;
use crate::policy::PolicyOptions;
use crate::shorttext::MAX_CONFIRMED;
use crate::{FingerprintConfig, Fingerprinter};

fn texts() -> Vec<String> {
    vec![
        "今天天气真好，我们去公园散步吧".to_string(),
        "the quick brown fox jumps over the lazy dog ".repeat(20),
        "长文本的例子，".repeat(40),
    ]
}

/// Sketches of `texts()`, each without and with the veto's parts (lines only; lines and a
/// distinct part with and without guard samples; lines and an indexed body).
pub(super) fn sketches(det: &AutoDetector) -> Vec<DocSketch> {
    let set: Vec<u32> = (0..300u32).map(|i| i * 7919).collect();
    let mut out = Vec::new();
    for t in texts() {
        let mut auto = det.sketch(&t).unwrap();
        // Passage keys need version 10 (`content_tests.rs`); these sketches are written in
        // every version.
        auto.passages = None;
        out.push(DocSketch {
            body: None,
            index_body: false,
            auto: auto.clone(),
            veto: None,
            deferred: None,
        });
        for thin in [
            None,
            Some(ThinPage {
                repeated: vec![0b101],
            }),
        ] {
            out.push(DocSketch {
                body: None,
                index_body: false,
                auto: auto.clone(),
                veto: Some(VetoSketch {
                    lines: vec![3, 5, 8],
                    had_repeats: true,
                    thin,
                    ..VetoSketch::default()
                }),
                deferred: None,
            });
        }
        for samples in [
            None,
            Some((
                PackedBottomK::pack(&BottomK::new(&set, 256)),
                PackedBottomK::pack(&BottomK::new(&set[..20], 256)),
            )),
        ] {
            out.push(DocSketch {
                body: None,
                index_body: false,
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
                    thin: None,
                    line_docs: Vec::new(),
                    whole_sample: None,
                    own: None,
                    part_repeated: None,
                }),
                deferred: None,
            });
        }
        out.push(DocSketch {
            body: Some(
                det.sketch(&t.chars().take(t.chars().count() / 2).collect::<String>())
                    .unwrap(),
            ),
            index_body: true,
            auto: auto.clone(),
            veto: Some(VetoSketch {
                lines: vec![4],
                had_repeats: true,
                ..VetoSketch::default()
            }),
            deferred: None,
        });
    }
    // A body's passages are never written (the whole text's keys hold its fragments).
    for s in &mut out {
        if let Some(b) = s.body.as_mut() {
            b.passages = None;
        }
    }
    out
}

/// What a sketch reads back as from an encoding before version 6: not thin.
fn without_thin(s: &DocSketch) -> DocSketch {
    let mut s = s.clone();
    if let Some(v) = s.veto.as_mut() {
        v.thin = None;
    }
    s
}

/// What a sketch reads back as from an encoding before version 5: no indexed body (and not
/// thin).
fn without_body(s: &DocSketch) -> DocSketch {
    DocSketch {
        body: None,
        index_body: false,
        ..without_thin(s)
    }
}

/// `s` in encoding `version`.
pub(super) fn encoded(s: &DocSketch, version: u8) -> Vec<u8> {
    let mut b = Vec::new();
    encode_with(s, &mut b, false, false, version);
    b
}

/// Version 7 wrote the guard samples as lists of 32-bit hashes: read as the same sketch;
/// version 8 writes them packed, in fewer bytes.
#[test]
fn version_7_guard_samples_are_read_and_version_8_packs_them() {
    let mut sampled = 0;
    for s in sketches(shared_detector()) {
        let (b7, b8) = (encoded(&s, VERSION_7), encoded(&s, VERSION_8));
        assert_eq!(decode(&b7).unwrap(), decode(&b8).unwrap());
        assert_eq!(decode(&b8).unwrap(), as_stored(&s));
        let samples = s
            .veto
            .as_ref()
            .and_then(|v| v.part.as_ref()?.samples.as_ref());
        if samples.is_some() {
            assert!(
                b8.len() < b7.len(),
                "{} against {} bytes",
                b8.len(),
                b7.len()
            );
            sampled += 1;
        } else {
            assert_eq!(b8.len(), b7.len());
        }
    }
    assert!(sampled > 0);
}

/// Version 5 did not mark thin pages: read, the page is not judged template-only again.
#[test]
fn version_5_sketches_are_read_as_not_thin() {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let det = AutoDetector::new(fp, PolicyOptions::default()).unwrap();
    let mut thin = 0;
    for s in sketches(&det) {
        let (b5, b6) = (encoded(&s, VERSION_5), encoded(&s, VERSION_6));
        assert_eq!(decode(&b5).unwrap(), without_band_keys(&without_thin(&s)));
        if let Some(v) = &s.veto {
            let bits = v.thin.as_ref().map_or(0, |t| t.repeated.len());
            assert_eq!(b6.len(), b5.len() + 1 + bits);
            thin += usize::from(v.thin.is_some());
        }
    }
    assert!(thin > 0);
}

#[test]
fn sketches_round_trip_and_damage_is_refused() {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let det = AutoDetector::new(fp, PolicyOptions::default()).unwrap();
    for s in sketches(&det) {
        let mut b = Vec::new();
        encode(&s, &mut b);
        assert_eq!(decode(&b).unwrap(), as_stored(&s));
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

/// A guard sample is kept packed by its gaps, so one that is not ascending (a damaged sketch)
/// is refused when read, not packed into nonsense: a version 7 list of hashes, and a version
/// 8 packed sample whose gaps are zero or whose bytes do not match its width.
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
    encode_with(&with_samples, &mut b, false, false, VERSION_7);
    assert_eq!(decode(&b).unwrap(), as_stored(&with_samples));
    // The encoding ends with the distinct part's sample, then the body's flag (0): the
    // sample's last two hashes swapped.
    assert_eq!(b.pop(), Some(0));
    let n = b.len();
    let (last, before) = (b[n - 4..].to_vec(), b[n - 8..n - 4].to_vec());
    b[n - 8..n - 4].copy_from_slice(&last);
    b[n - 4..].copy_from_slice(&before);
    b.push(0);
    assert!(decode(&b).unwrap_err().contains("not ascending"));
    // Version 8: the last gaps zero.
    let mut b = Vec::new();
    encode(&with_samples, &mut b);
    assert_eq!(decode(&b).unwrap(), as_stored(&with_samples));
    let n = b.len() - 1;
    b[n - 4..n].fill(0);
    assert!(decode(&b).unwrap_err().contains("not ascending"));
}

/// A packed guard sample is read back only with as many bytes as its gaps take and a width
/// of at most 32 bits.
#[test]
fn packed_samples_with_a_bad_width_or_length_are_refused() {
    let sample = BottomK::new(&(0..300u32).map(|i| i * 7919 + 3).collect::<Vec<_>>(), 256);
    let p = PackedBottomK::pack(&sample);
    let (complete, len, width, bits) = p.parts();
    let back = PackedBottomK::from_parts(complete, len, width, bits.into()).unwrap();
    assert_eq!(back.unpack(), sample);
    let short: Box<[u8]> = bits[..bits.len() - 1].into();
    assert!(PackedBottomK::from_parts(complete, len, width, short)
        .unwrap_err()
        .contains("expected"));
    assert!(PackedBottomK::from_parts(complete, len, 33, bits.into())
        .unwrap_err()
        .contains("at most 32"));
}

/// What a stored sketch reads back as: its band keys are left to the index.
fn without_band_keys(s: &DocSketch) -> DocSketch {
    let mut s = s.clone();
    for a in std::iter::once(&mut s.auto).chain(s.body.as_mut()) {
        if let Some(m) = a.minhash.as_mut() {
            m.keys.clear();
        }
    }
    s
}

/// A document's sketch without the template veto's parts or a body.
fn plain(auto: AutoSketch) -> DocSketch {
    DocSketch {
        body: None,
        index_body: false,
        auto,
        veto: None,
        deferred: None,
    }
}

/// What `idx` alone finds for `s` ([`SketchIndex::find`] with a plan of it alone).
fn find_alone(
    idx: &SketchIndex,
    s: &DocSketch,
    by_body: bool,
    rules: Option<&VetoRules>,
    counts: &LineCounts,
    out: &mut Vec<(Verdict, u64)>,
) {
    let q = s.searched(by_body);
    let Some(q) = q else {
        return;
    };
    let mut plan = ShortPlan::new(q, &[idx]);
    idx.find(s, by_body, rules, counts, &mut plan, 0, out);
}

/// What `a` and `b` find for `q`, which must be the same.
fn same_matches(a: &SketchIndex, b: &SketchIndex, q: &DocSketch) -> Vec<(Verdict, u64)> {
    let (mut x, mut y) = (Vec::new(), Vec::new());
    find_alone(a, q, false, None, &LineCounts::default(), &mut x);
    find_alone(b, q, false, None, &LineCounts::default(), &mut y);
    assert_eq!(x, y);
    x
}

/// What a sketch reads back as from the current encoding: its long parts' band keys left to
/// the index, its short parts' keys as their tags (the low 32 bits zero).
pub(super) fn as_stored(s: &DocSketch) -> DocSketch {
    let mut s = without_band_keys(s);
    for a in std::iter::once(&mut s.auto).chain(s.body.as_mut()) {
        if let Some(sh) = a.short.as_mut() {
            sh.keys.iter_mut().for_each(|k| *k &= !0xFFFF_FFFF);
        }
    }
    s
}

/// Version 6 wrote a short text's whole band keys: read, keys kept. Version 7 keeps their
/// tags, 4 bytes a key fewer, and an index given them finds what it finds with the whole
/// keys: the band tables keep nothing else of a key.
#[test]
fn version_6_short_keys_are_read_and_version_7_keeps_their_tags() {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let make = || AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
    let det = make();
    let mut shorts = 0;
    for s in sketches(&det) {
        let (mut b6, mut b7) = (Vec::new(), Vec::new());
        encode_with(&s, &mut b6, false, false, VERSION_6);
        encode_with(&s, &mut b7, false, false, VERSION_7);
        assert_eq!(decode(&b6).unwrap(), without_band_keys(&s));
        assert_eq!(decode(&b7).unwrap(), as_stored(&s));
        let keys: usize = std::iter::once(&s.auto)
            .chain(s.body.as_ref())
            .filter_map(|a| a.short.as_ref())
            .map(|sh| sh.keys.len())
            .sum();
        assert_eq!(b6.len(), b7.len() + 4 * keys);
        shorts += usize::from(keys > 0);
    }
    assert!(shorts > 0);
    // Short windows of a text, stored with whole keys and with their tags, then searched
    // with edited copies: the same matches.
    let text: Vec<char> = include_str!("../../../tests/fixtures/sanguo_ch1.txt")
        .chars()
        .collect();
    let window = |i: usize| -> String { text[i * 23..i * 23 + 50].iter().collect() };
    let mut whole = SketchIndex::new(make());
    let mut tags = SketchIndex::new(make());
    for i in 0..60 {
        let s = plain(det.sketch(&window(i)).unwrap());
        let mut b = Vec::new();
        encode(&s, &mut b);
        whole.insert(i as u32, i as u64, Box::new(s), &b, &make);
        tags.insert(i as u32, i as u64, Box::new(decode(&b).unwrap()), &b, &make);
    }
    let mut found = 0;
    for i in 0..60 {
        let mut edited: Vec<char> = window(i).chars().collect();
        edited[25] = '某';
        let q = plain(det.sketch(&edited.iter().collect::<String>()).unwrap());
        found += same_matches(&whole, &tags, &q)
            .iter()
            .filter(|(v, _)| v.stage == Stage::Short)
            .count();
    }
    assert!(
        found >= 50,
        "the edited windows are found by the short path ({found})"
    );
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
        assert_eq!(decode(&b).unwrap(), without_body(s));
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
            encode_with(s, &mut b4, false, false, VERSION_4);
            let n = s.auto.minhash.as_ref().unwrap().signature.len();
            assert_eq!(b4.len(), b3.len() + 1 - (4 - width) * n);
            let read = without_band_keys(&without_body(s));
            assert_eq!(decode(&b3).unwrap(), read);
            assert_eq!(decode(&b4).unwrap(), read);
        }
    }
    let make = || AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
    let mut with = SketchIndex::new(make());
    let mut without = SketchIndex::new(make());
    for (i, s) in all.iter().enumerate() {
        let mut b = Vec::new();
        encode(s, &mut b);
        with.insert(i as u32, i as u64, Box::new(s.clone()), &b, &make);
        without.insert(i as u32, i as u64, Box::new(decode(&b).unwrap()), &b, &make);
    }
    // Edited copies of the long texts: found by MinHash, not as exact copies.
    let mut found = 0;
    for t in texts() {
        let edited = t.replacen("lazy", "sleepy", 1).replacen("例子", "样子", 1);
        let q = plain(det.sketch(&edited).unwrap());
        found += same_matches(&with, &without, &q)
            .iter()
            .filter(|(v, _)| v.stage == Stage::Minhash)
            .count();
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
                assert_eq!(d, without_body(&s));
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
/// it), short ones' without their text (the detector holds it too), and an indexed body
/// without its text and signature (the body detector holds them), and gives back exactly what
/// `encode` wrote, in memory and spilled to a file; a stripped encoding is never read back as
/// a stored one.
#[test]
fn index_gives_back_the_full_encoding() {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let det = AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
    let make = || AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for spilled in [false, true] {
        let idx = if spilled {
            SketchIndex::spilled(make(), &std::sync::Arc::from(dir.path()))
        } else {
            SketchIndex::new(make())
        };
        index_gives_back_what_encode_wrote(&det, idx, &make);
    }
}

/// Inserts every test sketch into `idx` and checks what it gives back.
fn index_gives_back_what_encode_wrote(
    det: &AutoDetector,
    mut idx: SketchIndex,
    make: &dyn Fn() -> AutoDetector,
) {
    let (mut blobs, mut left_out) = (Vec::new(), 0);
    for (i, s) in sketches(det).into_iter().enumerate() {
        let mut b = Vec::new();
        encode(&s, &mut b);
        // `n u16 | width u8 | n` one-byte entries, and the distinct part.
        left_out += s.auto.minhash.as_ref().map_or(0, |m| 3 + m.signature.len());
        // The exact digest, and an indexed body's: its digest, `len u32 | text` and its
        // signature.
        left_out += 16;
        if let Some(body) = s.body.as_ref().filter(|_| s.index_body) {
            left_out += 16;
            left_out += body.short.as_ref().map_or(0, |sh| 4 + sh.text.len());
            left_out += body.minhash.as_ref().map_or(0, |m| 3 + m.signature.len());
        }
        let lines = s.veto.as_ref().map(|v| v.lines.clone()).unwrap_or_default();
        idx.insert(i as u32, i as u64, Box::new(s), &b, make);
        assert_eq!(idx.lines(i), lines);
        assert_eq!(idx.position(i as u64), Some(i));
        blobs.push(b);
    }
    for (i, b) in blobs.iter().enumerate() {
        assert_eq!(&*idx.blob(i), b.as_slice(), "document {i}");
    }
    // The long ones are kept stripped.
    let kept = idx.kept.len() as usize;
    assert!(
        kept < blobs.iter().map(Vec::len).sum::<usize>() - left_out,
        "{kept} bytes kept"
    );
}

#[test]
fn kept_forms_are_refused_as_stored_ones() {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let det = AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
    // A stripped encoding, or one without its distinct part, is refused by decode.
    for (strip, hold) in [(true, false), (false, true)] {
        let mut stripped = Vec::new();
        encode_with(&sketches(&det)[9], &mut stripped, strip, hold, VERSION);
        assert!(decode(&stripped).is_err());
    }
    // A short text's sketch is kept without its text (the detector holds it), and that form
    // is refused as a stored one too.
    let short = &sketches(&det)[0];
    let text = short.auto.short.as_ref().expect("a short text").text.len();
    let (mut whole, mut held) = (Vec::new(), Vec::new());
    encode(short, &mut whole);
    encode_kept(short, &mut held, false, false, false);
    // (Kept forms are version 10: one byte more, its `passages` flag.)
    assert_eq!(held.len(), whole.len() - 4 - text + 1);
    assert!(decode(&held).unwrap_err().contains("not a stored form"));
    // And without its exact digest (the exact stage holds it).
    let mut no_exact = Vec::new();
    encode_kept(short, &mut no_exact, false, false, true);
    assert_eq!(no_exact.len(), held.len() - 16);
    assert!(no_exact[0] & EXACT_HELD != 0);
    assert!(decode(&no_exact).unwrap_err().contains("not a stored form"));
    // So is a sketch kept without its body's parts.
    let with_body = sketches(&det)
        .into_iter()
        .find(|s| s.index_body && s.body.as_ref().is_some_and(|b| b.short.is_some()))
        .expect("a sketch with a short indexed body");
    let mut held = Vec::new();
    encode_kept(&with_body, &mut held, false, true, false);
    assert!(held[0] & BODY_HELD != 0);
    assert!(decode(&held).unwrap_err().contains("not a stored form"));
}

/// `text` with its middle character replaced.
fn edited(text: &str) -> String {
    let mid = text.chars().count() / 2;
    text.chars()
        .enumerate()
        .map(|(i, c)| if i == mid { '＃' } else { c })
        .collect()
}

/// Frozen band tables (a past segment's, `SketchIndex::share_tables`) find what the growing
/// ones found, for documents of both paths and their indexed bodies; a document inserted while
/// they are frozen, and those inserted after, are found too.
#[test]
fn frozen_tables_find_what_the_growing_ones_found() {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let make = || AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
    let det = make();
    // Windows of a Chinese and an English text, short (60 characters) and long (300) in
    // turn, at spread offsets (overlapping windows are near-duplicates of each other too).
    let mut paras: Vec<String> = Vec::new();
    for text in [
        include_str!("../../../tests/fixtures/sanguo_ch1.txt"),
        include_str!("../../../tests/fixtures/moby_dick_excerpt.txt"),
    ] {
        let chars: Vec<char> = text.chars().collect();
        for i in 0..40 {
            let len = if i % 2 == 0 { 60 } else { 300 };
            let start = (i * 131) % (chars.len() - len);
            paras.push(chars[start..start + len].iter().collect());
        }
    }
    let sketch = |t: &str| {
        let auto = det.sketch(t).unwrap();
        DocSketch {
            // Its second half as an indexed body.
            body: Some(
                det.sketch(&t.chars().skip(t.chars().count() / 2).collect::<String>())
                    .unwrap(),
            ),
            index_body: true,
            auto,
            veto: None,
            deferred: None,
        }
    };
    let mut idx = SketchIndex::new(make());
    let insert = |idx: &mut SketchIndex, i: usize, t: &str| {
        let s = sketch(t);
        let mut b = Vec::new();
        encode(&s, &mut b);
        idx.insert(i as u32, i as u64, Box::new(s), &b, &make);
    };
    let (old, new) = paras.split_at(paras.len() * 2 / 3);
    for (i, t) in old.iter().enumerate() {
        insert(&mut idx, i, t);
    }
    let counts = LineCounts::default();
    let found = |idx: &SketchIndex, t: &str, by_body: bool| {
        let mut out = Vec::new();
        find_alone(idx, &sketch(&edited(t)), by_body, None, &counts, &mut out);
        sort_strongest(&mut out);
        out
    };
    let before: Vec<_> = old
        .iter()
        .flat_map(|t| [found(&idx, t, false), found(&idx, t, true)])
        .collect();
    assert!(before.iter().filter(|f| !f.is_empty()).count() >= old.len());
    for stage in [Stage::Short, Stage::Minhash] {
        assert!(
            before.iter().flatten().any(|(v, _)| v.stage == stage),
            "no {stage:?} match: the test needs both paths"
        );
    }

    // A document inserted while the tables are shared is kept aside, found all the same,
    // and put into the frozen tables with them.
    let mut shared = idx.share_tables(0).expect("tables to freeze");
    insert(&mut idx, old.len(), &new[0]);
    assert!(
        !found(&idx, &new[0], false).is_empty(),
        "a late document is found"
    );
    shared.freeze();
    drop(idx.put_frozen(shared));
    for (i, t) in new.iter().enumerate().skip(1) {
        insert(&mut idx, old.len() + i, t);
    }
    // (Windows overlap: the documents inserted since match too; they are left out.)
    let before_them = |mut f: Vec<(Verdict, u64)>| {
        f.retain(|&(_, seq)| seq < old.len() as u64);
        f
    };
    let after: Vec<_> = old
        .iter()
        .flat_map(|t| [found(&idx, t, false), found(&idx, t, true)])
        .map(before_them)
        .collect();
    assert_eq!(after, before);
    for t in new {
        assert!(!found(&idx, t, false).is_empty(), "{t}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Damaged sketches — arbitrary bytes after any version byte, or a valid encoding of
    /// every kind with bytes overwritten — are refused or read, never a panic; a stored
    /// form never reads back as one with a part left out.
    #[test]
    fn damaged_sketches_are_refused_or_read_never_a_panic(
        version in proptest::prelude::any::<u8>(),
        junk in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300),
        which in proptest::prelude::any::<usize>(),
        hits in proptest::collection::vec(
            (proptest::prelude::any::<usize>(), proptest::prelude::any::<u8>()),
            1..4,
        ),
    ) {
        let mut b = vec![version];
        b.extend_from_slice(&junk);
        let _ = decode(&b);
        let _ = decode_any(&b);
        let det = shared_detector();
        let all = sketches(det);
        let s = &all[which % all.len()];
        for kept in [false, true] {
            let mut b = Vec::new();
            if kept {
                encode_kept(s, &mut b, false, true, true);
            } else {
                encode(s, &mut b);
            }
            for &(at, x) in &hits {
                let n = b.len();
                b[at % n] = x;
            }
            let _ = decode_any(&b);
            if let Ok(d) = decode(&b) {
                // What decode accepts, it can write again.
                let mut again = Vec::new();
                encode(&d, &mut again);
                proptest::prop_assert!(decode(&again).is_ok());
            }
        }
    }
}

/// One detector for the property test's cases (building one loads the jieba dictionary).
pub(super) fn shared_detector() -> &'static AutoDetector {
    static DET: std::sync::OnceLock<AutoDetector> = std::sync::OnceLock::new();
    DET.get_or_init(|| {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        AutoDetector::new(fp, PolicyOptions::default()).unwrap()
    })
}

/// Searched one time segment after another, a short text that shares a phrase with thousands
/// of stored ones had up to `MAX_CONFIRMED` candidates confirmed in every segment: a decision
/// cost grew with the segments, and the engine confirmed candidates that `neardup dedup`'s one
/// detector, holding the same documents, leaves out. Ranked across the segments, the engine
/// finds exactly what one index of every document finds.
#[test]
fn candidates_ranked_across_segments_as_in_one_index() {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let make = || AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap();
    let det = make();
    let phrase = "今天的天气预报说明天会下雨";
    let text = |i: u32| -> String {
        let tail: String = (0..6)
            .map(|j| char::from_u32(0x4E00 + (i * 7 + j * 1013) % 20000).unwrap())
            .collect();
        format!("{phrase}，{tail}")
    };
    let n = 1600u32;
    let segments = 4;
    let mut one = SketchIndex::new(make());
    let mut split: Vec<SketchIndex> = (0..segments).map(|_| SketchIndex::new(make())).collect();
    let mut positions = vec![0u32; segments];
    for i in 0..n {
        let s = plain(det.sketch(&text(i)).unwrap());
        let mut b = Vec::new();
        encode(&s, &mut b);
        // Handles are the sequences, so that both answers name documents alike.
        one.insert(i, u64::from(i), Box::new(s.clone()), &b, &make);
        let seg = (i as usize * segments) / n as usize;
        split[seg].insert(i, u64::from(i), Box::new(s), &b, &make);
        positions[seg] += 1;
    }
    assert!(positions.iter().all(|&p| p > 300), "{positions:?}");
    let counts = LineCounts::default();
    let mut capped = 0;
    for k in 0..40u32 {
        // A stored text with one character of its tail replaced, or a new text of the phrase.
        let t = if k % 2 == 0 {
            let mut c: Vec<char> = text(k * 37).chars().collect();
            let last = c.len() - 1;
            c[last] = '雪';
            c.into_iter().collect()
        } else {
            text(n + k)
        };
        let q = plain(det.sketch(&t).unwrap());
        let found = one.det.short_candidates(&q.auto).unwrap();
        if found.own.len() == MAX_CONFIRMED {
            capped += 1;
        }
        let mut want = Vec::new();
        find_alone(&one, &q, false, None, &counts, &mut want);
        let live: Vec<&SketchIndex> = split.iter().collect();
        let mut plan = ShortPlan::new(&q.auto, &live);
        let mut got = Vec::new();
        for (i, x) in live.iter().enumerate() {
            x.find(&q, false, None, &counts, &mut plan, i, &mut got);
        }
        sort_strongest(&mut want);
        sort_strongest(&mut got);
        assert_eq!(got, want, "query {k}: {t}");
        if k % 2 == 0 {
            assert!(
                want.iter().any(|(v, _)| v.of == k * 37),
                "query {k}: {want:?}"
            );
        }
        let confirmed: usize = (0..segments).map(|i| plan.segment(i).1[0].len()).sum();
        assert!(
            confirmed <= MAX_CONFIRMED,
            "query {k}: {confirmed} confirmed"
        );
    }
    assert!(
        capped > 20,
        "the phrase makes more candidates than are confirmed: {capped}"
    );
}
