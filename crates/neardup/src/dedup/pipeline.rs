//! Batch dedup as a three-stage pipeline: read batch N + 2, sketch batch N + 1, decide batch N —
//! at once ([`run_pipelined`], what `neardup dedup` runs).
//!
//! Decisions need the [`Deduper`] (`&mut`, serially, in input order) while sketches are pure
//! ([`sketch_batch`]): they depend only on a detector's configuration and on the batches it
//! observed, never on what it indexed. So a second, identically built detector that observes
//! the same batches in the same order sketches batch N + 1 (in parallel, rayon) while the
//! deduper decides batch N, and the caller reads batch N + 2 meanwhile. What a sequential run
//! over the same batches gives is what the pipeline gives:
//!
//! - **Batches are the caller's**: each call of `next_batch` is one batch, observed and sketched
//!   at once (the template veto learns per batch). Cut with the rule of [`batch_end`]
//!   ([`BATCH_DOCS`](super::BATCH_DOCS), [`BATCH_BYTES`](super::BATCH_BYTES)) to get the batches
//!   of `neardup dedup` and of the Python `dedup`.
//! - **Observations and decisions keep input order**, so the result never depends on the
//!   number of threads.
//! - **A text read after an identical one may be sketched in part** (`Detector::sketch_nth`,
//!   from what the sketcher observed): the decider completes it (`Detector::resolve`) unless
//!   the identical text it follows is indexed, whose exact match then decides — the decision
//!   a full sketch would give.
//! - **Errors come in the order of a sequential run**: batch N is decided, and handed to
//!   `on_decided`, before a failure to read batch N + 1 is returned; a document that cannot be
//!   sketched stops the run before anything of its batch is decided.
//!
//! ```
//! use neardup::dedup::{batch_end, dedup, run_pipelined, Keep, Linkage};
//! use neardup::minhash::{MinHashDetector, MinHashDetectorOptions};
//! use neardup::{FingerprintConfig, Fingerprinter};
//!
//! let texts: Vec<String> = [
//!     "the quick brown fox jumps over the lazy dog, again and again and again",
//!     "something else entirely, about ice cream and long summer evenings",
//!     "the quick brown fox jumps over the lazy dog, again and again and again!",
//! ]
//! .map(String::from)
//! .to_vec();
//! // Two identical detectors: one sketches the next batch while the other decides.
//! let make = || -> neardup::Result<MinHashDetector> {
//!     let fp = Fingerprinter::new(FingerprintConfig::default())?;
//!     MinHashDetector::new(fp, MinHashDetectorOptions::default())
//! };
//! // Batches as `neardup dedup` cuts them; an empty batch ends the input.
//! let bytes: Vec<usize> = texts.iter().map(|t| t.len()).collect();
//! let mut start = 0;
//! let next_batch = || -> neardup::Result<Vec<String>> {
//!     let end = batch_end(&bytes, start);
//!     let batch = texts[start..end].to_vec();
//!     start = end;
//!     Ok(batch)
//! };
//! // Each batch comes back with its decisions, in input order (progress goes here too).
//! let mut kept = Vec::new();
//! let on_decided = |batch: Vec<String>, decided: &[neardup::dedup::Assignment]| {
//!     for (text, a) in batch.into_iter().zip(decided) {
//!         if a.duplicate_of.is_none() {
//!             kept.push(text);
//!         }
//!     }
//!     Ok(())
//! };
//! let deduper = run_pipelined(make, Linkage::Kept, next_batch, on_decided)
//!     .map_err(|e| e.into_error(|failure, _doc| failure.source))?;
//! let clustering = deduper.finish(Keep::First);
//! assert_eq!(clustering.outcomes[2].duplicate_of, Some(0));
//! assert_eq!(kept.len(), 2);
//! // The decisions of the sequential run.
//! let sequential = dedup(make()?, &texts, Keep::First).map_err(|e| e.source)?;
//! assert_eq!(clustering.outcomes, sequential.outcomes);
//! # Ok::<(), neardup::Error>(())
//! ```

use std::fmt;

use rayon::prelude::*;

#[cfg(doc)]
use super::{batch_end, Keep};
use super::{chars, sketch_batch, Assignment, Deduper, Linkage, SketchFailure};
use crate::detect::Detector;

/// Why [`run_pipelined`] stopped.
#[derive(Debug)]
pub enum PipelineError<T, E> {
    /// A document could not be sketched (for a reason other than being empty); nothing of its
    /// batch was decided.
    Sketch {
        /// Which document (its 0-based input position) and why.
        failure: SketchFailure,
        /// The document itself, as `next_batch` gave it (e.g. to name its origin).
        doc: T,
    },
    /// One of the caller's functions failed: building a detector, reading a batch, or handling
    /// a decided batch.
    Caller(E),
}

impl<T, E> PipelineError<T, E> {
    /// The caller's error type for both kinds: `sketch` turns a sketch failure and its
    /// document into one.
    pub fn into_error(self, sketch: impl FnOnce(SketchFailure, T) -> E) -> E {
        match self {
            PipelineError::Sketch { failure, doc } => sketch(failure, doc),
            PipelineError::Caller(e) => e,
        }
    }
}

impl<T, E: fmt::Display> fmt::Display for PipelineError<T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PipelineError::Sketch { failure, .. } => failure.fmt(f),
            PipelineError::Caller(e) => e.fmt(f),
        }
    }
}

impl<T: fmt::Debug, E: std::error::Error + 'static> std::error::Error for PipelineError<T, E> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            PipelineError::Sketch { failure, .. } => Some(&failure.source),
            PipelineError::Caller(e) => e.source(),
        }
    }
}

/// A batch's sketches and its documents' lengths in characters.
type Sketched<D> = (Vec<crate::Result<<D as Detector>::Sketch>>, Vec<u32>);

/// Lets `sketcher` observe `batch`, then sketches it and counts its characters (in parallel).
fn sketch<D: Detector, T: AsRef<str> + Sync>(sketcher: &D, batch: &[T]) -> Sketched<D> {
    let lengths = batch.par_iter().map(|t| chars(t.as_ref())).collect();
    (sketch_batch(sketcher, batch), lengths)
}

/// Decides `batch` from its sketches and hands it to `on_decided` with its assignments.
fn decide<D: Detector, T, E>(
    dd: &mut Deduper<D>,
    on_decided: &mut impl FnMut(Vec<T>, &[Assignment]) -> Result<(), E>,
    batch: Vec<T>,
    (sketches, lengths): Sketched<D>,
) -> Result<(), PipelineError<T, E>> {
    let start = dd.len();
    match dd.decide_batch(sketches, &lengths) {
        Ok(decided) => on_decided(batch, decided).map_err(PipelineError::Caller),
        Err(failure) => {
            let at = failure.doc as usize - start;
            let doc = batch
                .into_iter()
                .nth(at)
                .expect("a sketch failure names a document of its batch");
            Err(PipelineError::Sketch { failure, doc })
        }
    }
}

/// Deduplicates the batches `next_batch` reads (an empty batch ends the input) under `linkage`,
/// reading batch N + 2 and sketching batch N + 1 while batch N is decided (module docs).
/// Returns the [`Deduper`] after the last batch: [`Deduper::finish`] gives the clusters under
/// either [`Keep`].
///
/// - `make` builds the detector; it is called twice and must build identical detectors (a
///   [`DetectorSpec`](crate::detect::spec::DetectorSpec) does).
/// - `next_batch` is called while the previous batches are sketched and decided; it is not
///   called again once it returned an empty batch or an error.
/// - `on_decided(batch, assignments)` is called once per batch, in input order, as soon as the
///   batch is decided (while later batches are read and sketched), with the batch's documents
///   and one [`Assignment`] each; their `duplicate_of` is final under [`Keep::First`], their
///   `cluster` only after [`Deduper::finish`]. Progress reports and streaming outputs go here.
///
/// The result is [`Deduper::push_batch`] over the same batches, at any number of threads.
pub fn run_pipelined<D, T, E>(
    make: impl Fn() -> Result<D, E>,
    linkage: Linkage,
    mut next_batch: impl FnMut() -> Result<Vec<T>, E> + Send,
    mut on_decided: impl FnMut(Vec<T>, &[Assignment]) -> Result<(), E> + Send,
) -> Result<Deduper<D>, PipelineError<T, E>>
where
    D: Detector,
    T: AsRef<str> + Send + Sync,
    E: Send,
{
    let sketcher = make().map_err(PipelineError::Caller)?;
    let mut dd = Deduper::with_linkage(make().map_err(PipelineError::Caller)?, linkage);
    let mut batch = next_batch().map_err(PipelineError::Caller)?;
    if batch.is_empty() {
        return Ok(dd);
    }
    let (mut sketched, mut next) = rayon::join(|| sketch(&sketcher, &batch), &mut next_batch);
    loop {
        let following = match next {
            Ok(following) => following,
            Err(e) => {
                // As in a sequential run: this batch's decisions first, then the reading error.
                decide(&mut dd, &mut on_decided, batch, sketched)?;
                return Err(PipelineError::Caller(e));
            }
        };
        if following.is_empty() {
            decide(&mut dd, &mut on_decided, batch, sketched)?;
            return Ok(dd);
        }
        let (decided, (following_sketched, after)) = rayon::join(
            || decide(&mut dd, &mut on_decided, batch, sketched),
            || rayon::join(|| sketch(&sketcher, &following), &mut next_batch),
        );
        decided?;
        (batch, sketched, next) = (following, following_sketched, after);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dedup::{dedup, Keep};
    use crate::detect::spec::{DetectorSpec, Method, WithDetector};
    use crate::eval::{make_set, paragraph_sources, MakeOptions};
    use crate::{Error, FingerprintConfig, Fingerprinter};

    /// A planted set from the bundled fixtures (Chinese and English; copies, edits, excerpts,
    /// template hard negatives), with an empty document.
    fn texts() -> Vec<String> {
        let fixtures = [
            (
                "sanguo_ch1.txt",
                include_str!("../../tests/fixtures/sanguo_ch1.txt"),
            ),
            (
                "moby_dick_excerpt.txt",
                include_str!("../../tests/fixtures/moby_dick_excerpt.txt"),
            ),
        ];
        let sources: Vec<_> = fixtures
            .iter()
            .flat_map(|(name, text)| paragraph_sources(text, name, 20))
            .collect();
        let set = make_set(
            &sources,
            &MakeOptions {
                seed: 11,
                min_chars: 10,
                copies: 2,
                ..MakeOptions::default()
            },
        );
        let mut out: Vec<String> = set.docs.into_iter().map(|d| d.text).collect();
        out.insert(out.len() / 2, String::new());
        out
    }

    /// The pipelined run over batches of `size` documents.
    fn pipelined<D: Detector>(
        make: impl Fn() -> crate::Result<D>,
        linkage: Linkage,
        texts: &[String],
        size: usize,
    ) -> (Vec<Assignment>, Vec<Assignment>) {
        let mut chunks = texts.chunks(size);
        let mut streamed = Vec::new();
        let dd = run_pipelined(
            make,
            linkage,
            || Ok(chunks.next().map(<[String]>::to_vec).unwrap_or_default()),
            |batch, decided| {
                assert_eq!(batch.len(), decided.len());
                streamed.extend_from_slice(decided);
                Ok(())
            },
        )
        .map_err(|e| e.into_error(|f, _| f.source))
        .unwrap();
        (dd.finish(Keep::First).outcomes, streamed)
    }

    /// Compares the pipelined run with the sequential one for the detector it is given.
    struct Compare<'a> {
        texts: &'a [String],
        linkage: Linkage,
        what: String,
    }

    impl WithDetector for Compare<'_> {
        type Output = usize;
        fn with<D: Detector>(self, make: impl Fn() -> crate::Result<D>) -> usize {
            let mut duplicates = 0;
            for size in [1, 7, 4096] {
                let mut dd = Deduper::with_linkage(make().unwrap(), self.linkage);
                let mut streamed = Vec::new();
                for chunk in self.texts.chunks(size) {
                    streamed.extend_from_slice(dd.push_batch(chunk).unwrap());
                }
                let want = dd.finish(Keep::First).outcomes;
                if size == 4096 && self.linkage == Linkage::Kept {
                    let whole = dedup(make().unwrap(), self.texts, Keep::First).unwrap();
                    assert_eq!(whole.outcomes, want, "{}", self.what);
                }
                let (got, got_streamed) = pipelined(&make, self.linkage, self.texts, size);
                assert_eq!(got, want, "{}, batches of {size}", self.what);
                assert_eq!(got_streamed, streamed, "{}, batches of {size}", self.what);
                // The short path's texts in a spill file (as `neardup dedup` keeps them): the
                // same decisions.
                let dir = tempfile::tempdir().unwrap();
                let spilled = || {
                    let mut d = make()?;
                    d.spill_texts(dir.path());
                    Ok(d)
                };
                let (got, _) = pipelined(spilled, self.linkage, self.texts, size);
                assert_eq!(got, want, "{}, texts spilled, batches of {size}", self.what);
                duplicates = want.iter().filter(|o| o.duplicate_of.is_some()).count();
            }
            duplicates
        }
    }

    #[test]
    fn pipelined_equals_sequential_for_every_linkage_and_method() {
        let texts = texts();
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        for method in [
            Method::Auto,
            Method::Simhash,
            Method::Minhash,
            Method::Short,
        ] {
            for linkage in [Linkage::Kept, Linkage::Components] {
                let spec = DetectorSpec {
                    method,
                    threshold: DetectorSpec::default_threshold(method, true),
                    ..DetectorSpec::default()
                };
                let what = format!("{method:?}, {linkage:?}");
                let compare = Compare {
                    texts: &texts,
                    linkage,
                    what: what.clone(),
                };
                let duplicates = spec.build(&fp, compare);
                assert!(duplicates > 0, "{what}: the set holds near-duplicates");
            }
        }
    }

    #[test]
    fn thread_count_does_not_change_the_result() {
        let texts = texts();
        let make = || {
            let fp = Fingerprinter::new(FingerprintConfig::default())?;
            crate::policy::AutoDetector::new(fp, crate::policy::PolicyOptions::default())
        };
        let run = |threads: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| pipelined(make, Linkage::Components, &texts, 5))
        };
        let one = run(1);
        assert_eq!(run(4), one);
        assert_eq!(one.0, dedup_components(&texts, 5));
    }

    /// The sequential run under [`Linkage::Components`] with the `auto` detector.
    fn dedup_components(texts: &[String], size: usize) -> Vec<Assignment> {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let det =
            crate::policy::AutoDetector::new(fp, crate::policy::PolicyOptions::default()).unwrap();
        let mut dd = Deduper::with_linkage(det, Linkage::Components);
        for chunk in texts.chunks(size) {
            dd.push_batch(chunk).unwrap();
        }
        dd.finish(Keep::First).outcomes
    }

    /// A simhash detector, and a scripted reader: batches of two, then `fail` at batch `at`.
    fn scripted(
        texts: &[String],
        at: usize,
    ) -> (
        impl Fn() -> Result<crate::detect::SimhashDetector, String>,
        impl FnMut() -> Result<Vec<String>, String> + Send + '_,
    ) {
        let make = || {
            let fp = Fingerprinter::new(FingerprintConfig::default()).map_err(|e| e.to_string())?;
            crate::detect::SimhashDetector::new(fp, 3).map_err(|e| e.to_string())
        };
        let mut n = 0;
        let mut chunks = texts.chunks(2);
        let next = move || {
            n += 1;
            if n == at + 1 {
                return Err(format!("cannot read batch {at}"));
            }
            Ok(chunks.next().map(<[String]>::to_vec).unwrap_or_default())
        };
        (make, next)
    }

    #[test]
    fn a_reading_error_comes_after_the_decisions_of_the_batches_before_it() {
        let texts = texts();
        for at in 0..4 {
            let (make, next) = scripted(&texts, at);
            let mut decided = Vec::new();
            let e = run_pipelined(make, Linkage::Kept, next, |batch, _| {
                decided.push(batch);
                Ok(())
            })
            .expect_err("the run fails");
            assert!(
                matches!(&e, PipelineError::Caller(m) if *m == format!("cannot read batch {at}")),
                "{e}"
            );
            let want: Vec<Vec<String>> = texts.chunks(2).take(at).map(<[_]>::to_vec).collect();
            assert_eq!(decided, want, "every batch before batch {at} is decided");
        }
    }

    #[test]
    fn a_decided_batch_error_comes_before_a_reading_error_of_the_next() {
        let texts = texts();
        let (make, next) = scripted(&texts, 2);
        let mut calls = 0;
        let e = run_pipelined(make, Linkage::Kept, next, |_, _| {
            calls += 1;
            if calls == 2 {
                Err("cannot write batch 1".to_string())
            } else {
                Ok(())
            }
        })
        .expect_err("the run fails");
        assert_eq!(e.to_string(), "cannot write batch 1");
        assert_eq!(calls, 2);
    }

    /// Simhash, but texts starting with `!` cannot be sketched.
    #[derive(Debug)]
    struct Picky(crate::detect::SimhashDetector);

    impl Detector for Picky {
        type Sketch = u64;
        fn name(&self) -> String {
            self.0.name()
        }
        fn sketch(&self, text: &str) -> crate::Result<u64> {
            if text.starts_with('!') {
                return Err(Error::Config("a bang".into()));
            }
            self.0.sketch(text)
        }
        fn find(&self, sketch: &u64) -> Vec<crate::detect::Verdict> {
            self.0.find(sketch)
        }
        fn insert(&mut self, doc: u32, sketch: u64) {
            self.0.insert(doc, sketch)
        }
    }

    #[test]
    fn a_sketch_failure_names_its_document_and_decides_nothing_of_its_batch() {
        let mut texts = texts();
        texts[5] = "!unsketchable".into();
        let make = || {
            let fp = Fingerprinter::new(FingerprintConfig::default())?;
            Ok::<_, Error>(Picky(crate::detect::SimhashDetector::new(fp, 3)?))
        };
        let mut chunks = texts.chunks(4);
        let mut decided = 0;
        let e = run_pipelined(
            make,
            Linkage::Kept,
            || Ok(chunks.next().map(<[String]>::to_vec).unwrap_or_default()),
            |batch, _| {
                decided += batch.len();
                Ok(())
            },
        )
        .expect_err("the run fails");
        match e {
            PipelineError::Sketch { failure, doc } => {
                assert_eq!(failure.doc, 5);
                assert_eq!(doc, "!unsketchable");
            }
            PipelineError::Caller(e) => panic!("{e}"),
        }
        assert_eq!(
            decided, 4,
            "the batch before is decided, the failing one is not"
        );
    }

    #[test]
    fn an_empty_input_decides_nothing() {
        let dd = run_pipelined(
            || {
                crate::detect::SimhashDetector::new(
                    Fingerprinter::new(FingerprintConfig::default())?,
                    3,
                )
            },
            Linkage::Kept,
            || Ok(Vec::<String>::new()),
            |_, _| panic!("nothing to decide"),
        )
        .map_err(|e| e.into_error(|f, _| f.source))
        .unwrap();
        assert!(dd.is_empty());
    }
}
