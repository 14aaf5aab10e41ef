use proptest::prelude::*;

use super::*;
use crate::dedup::{Deduper, Linkage};
use crate::minhash::MinHashDetectorOptions;
use crate::{FingerprintConfig, Fingerprinter};

fn detector(threshold: f64) -> MinHashDetector {
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let mut opts = MinHashDetectorOptions::default();
    opts.lsh.threshold = threshold;
    MinHashDetector::new(fp, opts).unwrap()
}

/// The in-memory deduper's outcomes.
fn in_memory(
    texts: &[String],
    batch: usize,
    keep: Keep,
    threshold: f64,
    linkage: Linkage,
) -> Vec<Assignment> {
    let mut dd = Deduper::with_linkage(detector(threshold), linkage);
    for b in texts.chunks(batch) {
        dd.push_batch(b).unwrap();
    }
    dd.finish(keep).outcomes
}

fn spilled(
    texts: &[String],
    batch: usize,
    keep: Keep,
    threshold: f64,
    memory: usize,
    linkage: Linkage,
) -> (Vec<Assignment>, SpillStats) {
    let dir = tempfile::tempdir().unwrap();
    let opts = SpillOptions {
        linkage,
        ..SpillOptions::new(memory, dir.path())
    };
    let mut dd = SpillingDeduper::with_any_budget(detector(threshold), opts).unwrap();
    for b in texts.chunks(batch) {
        dd.push_batch(b).unwrap();
    }
    let c = dd.finish(keep).unwrap();
    let out = c.outcomes().map(Result::unwrap).collect();
    (out, c.stats())
}

const WORDS: &[&str] = &[
    "river", "stone", "light", "cloud", "market", "winter", "paper", "signal", "garden", "engine",
    "silver", "harbor", "letter", "morning", "forest", "window",
];

/// A corpus of a few base texts, each copied exactly, with words changed, cut or extended, and
/// some empty documents: exact copies, near-duplicates, chains and strangers.
fn corpus() -> impl Strategy<Value = Vec<String>> {
    let base = proptest::collection::vec(proptest::collection::vec(0..WORDS.len(), 12..40), 1..6);
    let edits = proptest::collection::vec((0usize..6, 0u8..5, any::<u16>()), 1..60);
    (base, edits).prop_map(|(bases, edits)| {
        edits
            .into_iter()
            .map(|(b, kind, seed)| {
                let mut w: Vec<usize> = bases[b % bases.len()].clone();
                let at = seed as usize % w.len();
                match kind {
                    0 => {}
                    1 => w[at] = (w[at] + 1 + seed as usize / 7) % WORDS.len(),
                    2 => w.truncate(w.len() - (seed as usize % 4).min(w.len() - 1)),
                    3 => w.extend([
                        seed as usize % WORDS.len(),
                        (seed as usize / 3) % WORDS.len(),
                    ]),
                    _ => {
                        return if seed % 3 == 0 {
                            "  ".to_string()
                        } else {
                            format!("{seed} {}", WORDS[at % WORDS.len()])
                        }
                    }
                }
                w.iter().map(|&i| WORDS[i]).collect::<Vec<_>>().join(" ")
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]
    /// Whatever the budget (runs of a few keys, many runs, merges of merges) and batching, the
    /// spilled decisions are the in-memory deduper's, for both linkages and both keep rules.
    #[test]
    fn spilled_equals_in_memory(
        texts in corpus(),
        batch in 1usize..20,
        memory in prop_oneof![Just(64usize), Just(512), Just(1 << 20)],
        threshold in prop_oneof![Just(0.5), Just(0.6), Just(0.8)],
    ) {
        for linkage in [Linkage::Kept, Linkage::Components] {
            for keep in [Keep::First, Keep::Longest] {
                let want = in_memory(&texts, batch, keep, threshold, linkage);
                let (got, _) = spilled(&texts, batch, keep, threshold, memory, linkage);
                prop_assert_eq!(got, want, "{:?} {:?}", linkage, keep);
            }
        }
    }
}

/// A thousand exact copies are one node: no pairs at all, and each copy's evidence is the
/// first (a bucket of copies once yielded pairs by the square).
#[test]
fn exact_copies_collapse_to_one_node() {
    let text = "a bucket of many exact copies of one long enough document ".repeat(3);
    let mut texts = vec![text.clone(); 1000];
    texts.push("a stranger with nothing in common at all, not one shingle".into());
    for linkage in [Linkage::Kept, Linkage::Components] {
        let (got, stats) = spilled(&texts, 100, Keep::First, 0.6, 256, linkage);
        assert_eq!(stats.candidate_pairs, 0);
        assert!(stats.spilled_bytes > 0, "{stats:?}");
        assert!(got[1..1000].iter().all(|o| o.duplicate_of == Some(0)
            && o.matched == Some(0)
            && o.similarity == Some(1.0)));
        assert_eq!(got[1000].duplicate_of, None);
        assert_eq!(got, in_memory(&texts, 100, Keep::First, 0.6, linkage));
    }
}

#[test]
fn a_budget_under_the_minimum_is_refused_with_the_minimum() {
    let dir = tempfile::tempdir().unwrap();
    let e = SpillingDeduper::new(detector(0.6), SpillOptions::new(1000, dir.path()))
        .err()
        .unwrap();
    assert!(e.to_string().contains("at least 4 MiB"), "{e}");
}

#[test]
fn an_unusable_spill_directory_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("missing");
    let e = SpillingDeduper::new(detector(0.6), SpillOptions::new(MIN_MEMORY, &missing))
        .err()
        .unwrap();
    assert!(matches!(e, Error::Spill { .. }), "{e:?}");
    assert!(e.to_string().contains("missing"), "{e}");
}
