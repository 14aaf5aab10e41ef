//! The library's [`Deduper`] behind an object-safe trait, so that one Python class can hold it
//! over whichever detector the spec names ([`DetectorSpec::build`] hands over a generic maker).

use rayon::prelude::*;

use neardup::dedup::{batch_end, Assignment, Clustering, Deduper, Keep, Linkage, SketchFailure};
use neardup::detect::spec::{DetectorSpec, WithDetector};
use neardup::detect::{best_verdict, Detector, Verdict};
use neardup::Fingerprinter;

/// A [`Deduper`] over some detector.
pub trait Stream: Send + Sync {
    /// Observes, sketches (in parallel) and decides (in order) a batch of texts — exactly
    /// [`Deduper::push_batch`].
    fn push(&mut self, texts: &[&str]) -> Result<Vec<Assignment>, SketchFailure>;
    /// The strongest indexed near-duplicate of `text`, decided as [`Deduper::decide_one`] would,
    /// without adding it (`Ok(None)`: none, or an empty text).
    fn check(&self, text: &str) -> neardup::Result<Option<Verdict>>;
    /// Adds a text as kept without asking the detector ([`Deduper::add_one`]).
    fn add(&mut self, text: &str) -> neardup::Result<Assignment>;
    /// Documents so far.
    fn len(&self) -> usize;
    /// The final clustering ([`Deduper::finish`]).
    fn finish(self: Box<Self>, keep: Keep) -> Clustering;
}

struct Held<D: Detector> {
    dd: Deduper<D>,
}

fn chars(text: &str) -> u32 {
    text.chars().count().min(u32::MAX as usize) as u32
}

impl<D: Detector + 'static> Stream for Held<D> {
    fn push(&mut self, texts: &[&str]) -> Result<Vec<Assignment>, SketchFailure> {
        self.dd.push_batch(texts).map(|o| o.to_vec())
    }

    fn check(&self, text: &str) -> neardup::Result<Option<Verdict>> {
        let det = self.dd.detector();
        match det.sketch(text) {
            Ok(s) => Ok(best_verdict(&det.find(&s))),
            Err(neardup::Error::EmptyDocument { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn add(&mut self, text: &str) -> neardup::Result<Assignment> {
        let sketch = match self.dd.detector().sketch(text) {
            Ok(s) => Some(s),
            Err(neardup::Error::EmptyDocument { .. }) => None,
            Err(e) => return Err(e),
        };
        Ok(self.dd.add_one(sketch, chars(text)))
    }

    fn len(&self) -> usize {
        self.dd.len()
    }

    fn finish(self: Box<Self>, keep: Keep) -> Clustering {
        self.dd.finish(keep)
    }
}

/// Builds the held deduper from the spec's maker.
struct Build {
    linkage: Linkage,
}

impl WithDetector for Build {
    type Output = neardup::Result<Box<dyn Stream>>;
    fn with<D: Detector + 'static>(self, make: impl Fn() -> neardup::Result<D>) -> Self::Output {
        Ok(Box::new(Held {
            dd: Deduper::with_linkage(make()?, self.linkage),
        }))
    }
}

/// A deduper over the detector `spec` names, with `fp`'s normalisation and features.
pub fn build(
    spec: &DetectorSpec,
    fp: &Fingerprinter,
    linkage: Linkage,
) -> neardup::Result<Box<dyn Stream>> {
    spec.build(fp, Build { linkage })
}

/// Batch dedup of `texts`, in the batches `neardup dedup` uses ([`batch_end`], sizes in UTF-8
/// bytes of the texts): the decisions and clusters of [`Deduper::finish`].
pub fn dedup(
    mut stream: Box<dyn Stream>,
    texts: &[&str],
    keep: Keep,
) -> Result<Clustering, SketchFailure> {
    let bytes: Vec<usize> = texts.par_iter().map(|t| t.len()).collect();
    let mut start = 0;
    while start < texts.len() {
        let end = batch_end(&bytes, start);
        stream.push(&texts[start..end])?;
        start = end;
    }
    Ok(stream.finish(keep))
}
