//! Batch dedup against brute-force connected components, and the eval scorer against
//! brute-force pair enumeration and hand-computed figures.

use neardup::dedup::{dedup, dedup_sketches, Deduper, Keep, Linkage};
use neardup::detect::{Detector, SimhashDetector, Verdict};
use neardup::eval::{make_set, score, Bucket, Kind, MakeOptions, SourceDoc, Truth};
use neardup::{FingerprintConfig, Fingerprinter};
use proptest::prelude::*;

/// A real (if simple) detector: documents are integers, near-duplicates when within `d`;
/// the index is a linear scan.
struct IntDetector {
    d: i64,
    seen: Vec<(u32, i64)>,
}

impl Detector for IntDetector {
    type Sketch = i64;
    fn name(&self) -> String {
        format!("int(d={})", self.d)
    }
    fn sketch(&self, text: &str) -> neardup::Result<i64> {
        text.trim()
            .parse()
            .map_err(|_| neardup::Error::EmptyDocument {
                input_bytes: text.len(),
            })
    }
    fn find(&self, s: &i64) -> Vec<Verdict> {
        self.seen
            .iter()
            .filter(|(_, v)| (v - s).abs() <= self.d)
            .map(|&(of, v)| Verdict {
                of,
                distance: Some((v - s).unsigned_abs() as u32),
                similarity: None,
                stage: neardup::detect::Stage::Simhash,
            })
            .collect()
    }
    fn insert(&mut self, doc: u32, s: i64) {
        self.seen.push((doc, s));
    }
}

/// Connected components of docs `0..n` (numbered by their smallest member) by brute force.
fn components(vals: &[Option<i64>], n: usize, d: i64) -> Vec<u32> {
    let mut comp: Vec<u32> = (0..n as u32).collect();
    loop {
        let mut changed = false;
        for i in 0..n {
            for j in 0..n {
                if let (Some(a), Some(b)) = (vals[i], vals[j]) {
                    if (a - b).abs() <= d && comp[j] < comp[i] {
                        comp[i] = comp[j];
                        changed = true;
                    }
                }
            }
        }
        if !changed {
            return comp;
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn clusters_are_components_and_first_is_prefix_component(
        raw in prop::collection::vec(prop::option::weighted(0.9, 0i64..60), 0..40),
        d in 0i64..4,
        chunk in 1usize..9,
    ) {
        let texts: Vec<String> = raw.iter().map(|v| v.map_or(String::new(), |v| v.to_string())).collect();
        let mut dd = Deduper::with_linkage(IntDetector { d, seen: Vec::new() }, Linkage::Components);
        for c in texts.chunks(chunk) {
            dd.push_batch(c).unwrap();
        }
        let first = dd.finish(Keep::First);
        let comps = components(&raw, raw.len(), d);
        for (i, o) in first.outcomes.iter().enumerate() {
            prop_assert_eq!(o.cluster, comps[i]);
            prop_assert_eq!(o.empty, raw[i].is_none());
            // duplicate_of: the first document of i's component among documents 0..=i.
            let prefix = components(&raw[..=i], i + 1, d);
            let want = (prefix[i] != i as u32).then_some(prefix[i]);
            prop_assert_eq!(o.duplicate_of, want);
            // matched: the closest earlier document (ties → earliest).
            let best = (0..i)
                .filter_map(|j| Some((j, (raw[j]? - raw[i]?).abs())))
                .filter(|&(_, dist)| dist <= d)
                .min_by_key(|&(j, dist)| (dist, j));
            prop_assert_eq!(o.matched, best.map(|b| b.0 as u32));
            prop_assert_eq!(o.distance, best.map(|b| b.1 as u32));
        }
        // Keep::Longest: the representative is the longest member (ties → earliest).
        let mut dd = Deduper::with_linkage(IntDetector { d, seen: Vec::new() }, Linkage::Components);
        dd.push_batch(&texts).unwrap();
        let longest = dd.finish(Keep::Longest);
        for (i, o) in longest.outcomes.iter().enumerate() {
            let members: Vec<usize> = (0..raw.len()).filter(|&j| comps[j] == comps[i]).collect();
            let rep = *members.iter().max_by_key(|&&j| (texts[j].chars().count(), std::cmp::Reverse(j))).unwrap();
            prop_assert_eq!(o.duplicate_of, (rep != i).then_some(rep as u32));
        }
        // Report.
        let r = first.report(3);
        let ncomp = { let mut c = comps.clone(); c.sort(); c.dedup(); c.len() as u64 };
        prop_assert_eq!(r.clusters, ncomp);
        prop_assert_eq!(r.documents, raw.len() as u64);
        prop_assert_eq!(r.size_distribution.iter().map(|x| x.1).sum::<u64>(), ncomp);
    }

    /// The online rule: only kept documents are indexed; a duplicate points at its strongest
    /// kept match (smallest distance, then earliest); every cluster has exactly one kept document.
    #[test]
    fn kept_linkage_is_the_online_rule(
        raw in prop::collection::vec(prop::option::weighted(0.9, 0i64..60), 0..40),
        d in 0i64..4,
        chunk in 1usize..9,
    ) {
        let texts: Vec<String> = raw.iter().map(|v| v.map_or(String::new(), |v| v.to_string())).collect();
        let mut dd = Deduper::new(IntDetector { d, seen: Vec::new() });
        for c in texts.chunks(chunk) {
            dd.push_batch(c).unwrap();
        }
        let out = dd.finish(Keep::First);
        let mut kept: Vec<(usize, i64)> = Vec::new();
        for (i, o) in out.outcomes.iter().enumerate() {
            let Some(v) = raw[i] else {
                prop_assert!(o.empty);
                prop_assert_eq!(o.cluster, i as u32);
                continue;
            };
            let best = kept
                .iter()
                .map(|&(j, w)| (j, (w - v).abs()))
                .filter(|&(_, dist)| dist <= d)
                .min_by_key(|&(j, dist)| (dist, j));
            match best {
                Some((j, dist)) => {
                    prop_assert_eq!(o.duplicate_of, Some(j as u32));
                    prop_assert_eq!(o.cluster, j as u32);
                    prop_assert_eq!(o.matched, Some(j as u32));
                    prop_assert_eq!(o.distance, Some(dist as u32));
                }
                None => {
                    prop_assert_eq!(o.duplicate_of, None);
                    prop_assert_eq!(o.cluster, i as u32);
                    kept.push((i, v));
                }
            }
        }
        // Exactly one kept document per cluster.
        let mut kept_per_cluster = std::collections::HashMap::new();
        for o in &out.outcomes {
            *kept_per_cluster.entry(o.cluster).or_insert(0) += u32::from(o.duplicate_of.is_none());
        }
        prop_assert!(kept_per_cluster.values().all(|&k| k == 1));
        // The same through the slice API.
        let again = dedup(IntDetector { d, seen: Vec::new() }, &texts, Keep::First).unwrap();
        prop_assert_eq!(again.outcomes, out.outcomes);
    }

    #[test]
    fn score_matches_brute_force_pairs(
        docs in prop::collection::vec((0u32..6, 0u64..5, 0usize..9, 0usize..3), 0..30),
    ) {
        let truth: Vec<Truth> = docs.iter().map(|&(g, _, k, b)| Truth { group: g, kind: Kind::ALL[k], bucket: Bucket::ALL[b] }).collect();
        let pred: Vec<u64> = docs.iter().map(|d| d.1).collect();
        let s = score(&truth, &pred);
        let (mut t, mut p, mut c) = (0u64, 0u64, 0u64);
        let (mut tl, mut pl, mut cl) = (0u64, 0u64, 0u64);
        let (mut te, mut pe, mut ce) = (0u64, 0u64, 0u64);
        for i in 0..docs.len() {
            for j in i + 1..docs.len() {
                let same_t = truth[i].group == truth[j].group;
                let same_p = pred[i] == pred[j];
                t += u64::from(same_t); p += u64::from(same_p); c += u64::from(same_t && same_p);
                if truth[i].bucket.min(truth[j].bucket) == Bucket::Long {
                    tl += u64::from(same_t); pl += u64::from(same_p); cl += u64::from(same_t && same_p);
                }
                if truth[i].kind == Kind::Edit || truth[j].kind == Kind::Edit {
                    te += u64::from(same_t); pe += u64::from(same_p); ce += u64::from(same_t && same_p);
                }
            }
        }
        prop_assert_eq!((s.overall.true_pairs, s.overall.predicted_pairs, s.overall.correct_pairs), (t, p, c));
        let long = s.by_bucket.iter().find(|r| r.bucket == "long").map(|r| r.prf);
        let got = long.map_or((0, 0, 0), |r| (r.true_pairs, r.predicted_pairs, r.correct_pairs));
        prop_assert_eq!(got, (tl, pl, cl));
        let edit = s.by_kind.iter().find(|r| r.kind == "edit").map(|r| r.prf);
        let got = edit.map_or((0, 0, 0), |r| (r.true_pairs, r.predicted_pairs, r.correct_pairs));
        prop_assert_eq!(got, (te, pe, ce));
    }
}

#[test]
fn scorer_hand_computed() {
    let t = |group, kind, bucket| Truth {
        group,
        kind,
        bucket,
    };
    // Truth groups: {0,1} (ads, long), {2,3} (excerpt, medium), {4} unique.
    let truth = [
        t(0, Kind::Original, Bucket::Long),
        t(0, Kind::Ads, Bucket::Long),
        t(1, Kind::Original, Bucket::Medium),
        t(1, Kind::Excerpt, Bucket::Medium),
        t(2, Kind::Unique, Bucket::Long),
    ];
    // Predicted: {0,1,4}, {2}, {3}.
    let s = score(&truth, &[1, 1, 2, 3, 1]);
    // Predicted pairs (0,1) (0,4) (1,4); true (0,1) (2,3); correct (0,1).
    assert_eq!(
        (
            s.overall.predicted_pairs,
            s.overall.true_pairs,
            s.overall.correct_pairs
        ),
        (3, 2, 1)
    );
    assert!((s.overall.precision.unwrap() - 1.0 / 3.0).abs() < 1e-12);
    assert_eq!(s.overall.recall, Some(0.5));
    assert!((s.overall.f1.unwrap() - 0.4).abs() < 1e-12);
    let ads = s.by_kind.iter().find(|r| r.kind == "ads").unwrap().prf;
    // ads pairs: (0,1) true+pred, (1,4) pred → P 1/2, R 1.
    assert_eq!((ads.precision, ads.recall), (Some(0.5), Some(1.0)));
    let ex = s.by_kind.iter().find(|r| r.kind == "excerpt").unwrap().prf;
    assert_eq!((ex.precision, ex.recall, ex.f1), (None, Some(0.0), None));
    let unplanted = s
        .by_kind
        .iter()
        .find(|r| r.kind == "unplanted")
        .unwrap()
        .prf;
    assert_eq!(
        (unplanted.predicted_pairs, unplanted.precision),
        (1, Some(0.0))
    );
    let table = s.table();
    assert!(table.contains("excerpt"), "{table}");
}

fn fingerprinter() -> Fingerprinter {
    Fingerprinter::new(FingerprintConfig::default()).unwrap()
}

#[test]
fn simhash_dedup_independent_of_threads_and_batches() {
    let base = [
        "春天来了，小镇上的樱花开得正好。每天早上，老王都会沿着河边散步，看着柳树发出新芽。",
        "The old lighthouse on the northern cape has been restored by a group of volunteers over three summers.",
        "Bread dough needs time more than it needs effort; leave it overnight in a cool kitchen.",
    ];
    let mut texts = Vec::new();
    for i in 0..60 {
        let b = base[i % 3];
        texts.push(if i % 2 == 0 {
            b.to_string()
        } else {
            format!("{b}!")
        });
    }
    let run = |threads: usize, chunk: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut d = Deduper::new(SimhashDetector::new(fingerprinter(), 3).unwrap());
            for c in texts.chunks(chunk) {
                d.push_batch(c).unwrap();
            }
            d.finish(Keep::First).outcomes
        })
    };
    let a = run(1, 60);
    assert_eq!(a, run(2, 7));
    assert_eq!(a, run(3, 1));
    assert_eq!(a[3].duplicate_of, Some(0));
    assert_eq!(a.iter().filter(|o| o.duplicate_of.is_none()).count(), 3);
}

#[test]
fn dedup_sketches_matches_dedup() {
    let texts = [
        "one two three four five six",
        "one two three four five six seven",
        "",
        "zzz yyy xxx www",
    ];
    let fp = fingerprinter();
    let a = dedup(
        SimhashDetector::new(fp.clone(), 3).unwrap(),
        &texts,
        Keep::First,
    )
    .unwrap();
    let sketches: Vec<Option<u64>> = texts.iter().map(|t| fp.simhash(t).ok()).collect();
    let b = dedup_sketches(
        SimhashDetector::new(fp, 3).unwrap(),
        sketches,
        &[0; 4],
        Keep::First,
    );
    assert_eq!(a.outcomes, b.outcomes);
    assert!(a.outcomes[2].empty);
}

#[test]
fn make_set_is_deterministic_and_consistent() {
    let mut sources = Vec::new();
    for i in 0..60u64 {
        let mut rng = neardup::index::random::SplitMix64::new(i + 100);
        let len = [10, 40, 120][i as usize % 3];
        let text: Vec<String> = (0..len)
            .map(|_| {
                (0..3 + rng.below(6))
                    .map(|_| (b'a' + rng.below(26) as u8) as char)
                    .collect()
            })
            .collect();
        sources.push(SourceDoc {
            label: format!("t#{i}"),
            text: text.join(" ") + ".",
        });
    }
    sources.push(SourceDoc {
        label: "t#dup".into(),
        text: sources[5].text.clone(),
    });
    sources.push(SourceDoc {
        label: "t#tiny".into(),
        text: "tiny".into(),
    });
    let opts = MakeOptions {
        seed: 9,
        ..MakeOptions::default()
    };
    let a = make_set(&sources, &opts);
    let b = make_set(&sources, &opts);
    assert_eq!(a.docs, b.docs);
    assert_eq!(a.too_short, 1);
    assert!(a.natural_duplicates >= 1);
    assert!(a
        .docs
        .iter()
        .all(|d| d.source != "t#dup" && d.source != "t#tiny"));
    let c = make_set(
        &sources,
        &MakeOptions {
            seed: 10,
            ..MakeOptions::default()
        },
    );
    assert_ne!(a.docs, c.docs);
    for d in &a.docs {
        let members: Vec<_> = a.docs.iter().filter(|x| x.group == d.group).collect();
        match d.kind {
            Kind::Unique | Kind::Negative => assert_eq!(members.len(), 1),
            Kind::Original => assert_eq!(members.len(), 2),
            _ => {
                let of = d.of.as_ref().expect("planted copies name their original");
                let orig = a.docs.iter().find(|x| &x.id == of).unwrap();
                assert_eq!((orig.group, orig.kind), (d.group, Kind::Original));
                assert_ne!(orig.text, d.text);
            }
        }
    }
    // The planted kinds all occur in a set of this size.
    for k in Kind::PLANTED {
        assert!(a.docs.iter().any(|d| d.kind == k), "{k:?} missing");
    }
}

/// The default detector (`auto` under the template veto) as `neardup dedup` builds it.
fn default_detector() -> neardup::template_veto::TemplateVeto<neardup::policy::AutoDetector> {
    use neardup::policy::{AutoDetector, PolicyOptions};
    let fp = fingerprinter();
    neardup::template_veto::TemplateVeto::with_body_index(
        AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap(),
        AutoDetector::new(fp.clone(), PolicyOptions::default()).unwrap(),
        fp,
        neardup::template_veto::TemplateVetoOptions::default(),
    )
    .unwrap()
}

/// A text read after an identical one has its costly sketch parts put off
/// (`Detector::sketch_nth`) and completed only when the exact copy cannot decide it
/// (`Detector::resolve`): the decisions are those of sketching every text in full, under both
/// linkages, whatever the batches — including copies whose first occurrence was itself a
/// duplicate (not indexed), and copies in the batch of their first occurrence.
#[test]
fn exact_copies_sketched_later_decide_as_fully_sketched_texts() {
    let mut texts = crate::engine_parity::templated_texts();
    // Exact copies of every fifth text (kept ones and duplicates alike), later in the input.
    let copies: Vec<String> = texts.iter().step_by(5).cloned().collect();
    texts.extend(copies.iter().cloned());
    texts.extend(copies);
    for linkage in [Linkage::Kept, Linkage::Components] {
        let full = {
            let mut d = Deduper::with_linkage(default_detector(), linkage);
            for c in texts.chunks(50) {
                let det = d.detector();
                let refs: Vec<&str> = c.iter().map(String::as_str).collect();
                det.observe_batch(&refs);
                let sketches: Vec<_> = refs.iter().map(|t| det.sketch(t)).collect();
                let lengths: Vec<u32> = refs.iter().map(|t| t.chars().count() as u32).collect();
                d.decide_batch(sketches, &lengths).unwrap();
            }
            d.finish(Keep::First).outcomes
        };
        for chunk in [50, 7, 400] {
            let mut d = Deduper::with_linkage(default_detector(), linkage);
            for c in texts.chunks(chunk) {
                d.push_batch(c).unwrap();
            }
            let got = d.finish(Keep::First).outcomes;
            if chunk == 50 {
                assert_eq!(got, full, "{linkage:?}");
            }
            let exact = got
                .iter()
                .filter(|o| o.stage == Some(neardup::detect::Stage::Exact))
                .count();
            assert!(
                exact >= 40,
                "{linkage:?}, batches of {chunk}: {exact} exact copies"
            );
        }
    }
}

/// A put-off sketch handed to `Deduper::add_one` (a document known to be kept) is completed
/// before it is indexed: a near-duplicate that is not an exact copy finds it.
#[test]
fn put_off_sketch_added_as_kept_is_indexed_in_full() {
    let text = "The harbour master kept a ledger of every ship that entered the bay, \
                noting its flag, its cargo and the hour of its arrival, and on winter nights \
                he read the old volumes aloud to the apprentices who stayed behind."
        .repeat(3);
    let edited = text.replacen("ledger", "journal", 1);
    let mut d = Deduper::new(default_detector());
    let sketches = d.sketch_batch(&[text.as_str(), text.as_str()]);
    let chars = text.chars().count() as u32;
    for s in sketches {
        d.add_one(Some(s.unwrap()), chars);
    }
    let det = d.detector();
    let found = det.find(&det.sketch(&edited).unwrap());
    for doc in [0, 1] {
        assert!(
            found
                .iter()
                .any(|v| v.of == doc && v.stage == neardup::detect::Stage::Minhash),
            "document {doc}: {found:?}"
        );
    }
}
