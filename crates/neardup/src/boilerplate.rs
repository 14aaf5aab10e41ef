//! Template awareness: different documents that share a long boilerplate template (a site's
//! editor's notes, copyright lines, share prompts inside the article) are not near-duplicates.
//!
//! [`TemplateAware`] wraps any [`Detector`]. Before each batch is sketched it counts, per line
//! (trimmed, at least [`TemplateOptions::min_line_bytes`] bytes), how many documents seen so far
//! contain it ([`Detector::observe_batch`]). A line found in at least
//! [`TemplateOptions::min_docs`] documents is *repeated*. A document's *distinct part* is its
//! text without repeated lines; when that part is a substantial share of the document
//! ([`TemplateOptions::min_distinct_share`] of its non-space characters), the wrapper keeps a
//! MinHash signature of it.
//!
//! A match of the inner detector is **vetoed** when both documents have a substantial distinct
//! part and those parts are dissimilar (estimated Jaccard below
//! [`TemplateOptions::veto_below`]): the documents agree only on the template. Syndicated copies
//! keep matching: when an article is repeated in many documents its own lines are the repeated
//! ones, so its distinct part is small and no veto applies.
//!
//! Deterministic: counts depend only on the batches' contents and order, never on threads.
//!
//! ```
//! use neardup::boilerplate::{TemplateAware, TemplateOptions};
//! use neardup::detect::Detector;
//! use neardup::minhash::{MinHashDetector, MinHashDetectorOptions};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let inner = MinHashDetector::new(fp.clone(), MinHashDetectorOptions::default()).unwrap();
//! let mut d = TemplateAware::new(inner, fp, TemplateOptions::default()).unwrap();
//! let template = "Editor's note: the views expressed here are the author's own.\nCopyright: no part of this article may be reproduced without permission.\nFollow us to receive a daily selection of articles and exclusive material.\n";
//! let docs: Vec<String> = ["apples grow on trees in the orchard behind the old farmhouse", "the committee approved the budget for new roads and schools", "a storm closed the mountain pass for three days last winter"]
//!     .iter().map(|body| format!("{body}\n{template}")).collect();
//! let texts: Vec<&str> = docs.iter().map(|s| s.as_str()).collect();
//! d.observe_batch(&texts);
//! let a = d.sketch(texts[0]).unwrap();
//! let b = d.sketch(texts[1]).unwrap();
//! d.insert(0, a);
//! assert!(d.find(&b).is_empty()); // shares only the template
//! ```

use std::collections::{HashMap, HashSet};
use std::sync::RwLock;

use serde::{Deserialize, Serialize};

use crate::detect::{Detector, Verdict};
use crate::error::{Error, Result};
use crate::features::{is_alphanumeric, is_numeric};
use crate::fingerprint::Fingerprinter;
use crate::hash::{xxh3, FastBuild};
use crate::minhash::{jaccard_estimate, MinHashOptions, MinHasher, Shingles};
use crate::normalize::Normalizer;

/// Settings of [`TemplateAware`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemplateOptions {
    /// A line is repeated when at least this many documents contain it. Default 3.
    pub min_docs: u32,
    /// Shorter lines (trimmed, in bytes) are never counted. Default 20.
    pub min_line_bytes: usize,
    /// The distinct part counts when its letters (digits excluded) are at least this share of
    /// the normalised document's non-space characters. Default 0.02: a byline or source line
    /// in a long syndicated article stays below it, a short text in a page template does not.
    pub min_distinct_share: f64,
    /// … and at least this many letters. Default 4.
    pub min_distinct_chars: usize,
    /// A match is vetoed when the distinct parts' estimated Jaccard is below this. Default 0.3.
    pub veto_below: f64,
}

impl Default for TemplateOptions {
    fn default() -> Self {
        TemplateOptions {
            min_docs: 3,
            min_line_bytes: 20,
            min_distinct_share: 0.02,
            min_distinct_chars: 4,
            veto_below: 0.3,
        }
    }
}

/// A document's sketch: the inner detector's, plus the signature of its distinct part.
#[derive(Debug, Clone)]
pub struct TemplateSketch<S> {
    /// The inner detector's sketch of the whole document.
    pub inner: S,
    /// MinHash signature of the text without repeated lines, when that part is substantial.
    pub distinct: Option<Vec<u32>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::minhash::{MinHashDetector, MinHashDetectorOptions};
    use crate::FingerprintConfig;

    fn detector() -> TemplateAware<MinHashDetector> {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let inner = MinHashDetector::new(fp.clone(), MinHashDetectorOptions::default()).unwrap();
        TemplateAware::new(inner, fp, TemplateOptions::default()).unwrap()
    }

    fn run(d: &mut TemplateAware<MinHashDetector>, docs: &[String]) -> Vec<Vec<u32>> {
        let texts: Vec<&str> = docs.iter().map(|s| s.as_str()).collect();
        d.observe_batch(&texts);
        let mut out = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let s = d.sketch(t).unwrap();
            out.push(d.find(&s).into_iter().map(|v| v.of).collect());
            d.insert(i as u32, s);
        }
        out
    }

    const ARTICLE: &str =
        "市政府周二批准了新的预算方案，将在未来两年内增加道路和学校的维护支出。\n\
        议员们经过长时间的辩论，最终以多数票通过了这项计划，并要求每季度公开支出明细。\n\
        专家认为，这项预算将改善城市基础设施，但也提醒需要防止工程拖延和成本超支。\n";

    /// Regression: syndicated copies (the same article on many sites, each with its own view
    /// counter) must stay near-duplicates even though their lines repeat across documents.
    #[test]
    fn syndicated_copies_still_match() {
        let mut d = detector();
        let docs: Vec<String> = (0..6)
            .map(|i| format!("{ARTICLE}阅读数：{}\n", 100 + i * 37))
            .collect();
        let found = run(&mut d, &docs);
        for (i, f) in found.iter().enumerate().skip(1) {
            assert!(!f.is_empty(), "copy {i} lost its match: {found:?}");
        }
    }

    #[test]
    fn template_only_matches_are_vetoed() {
        let template = "编者按：本文由本站特约作者投稿，观点仅代表作者本人，不代表本站立场。\n\
            版权声明：本文版权归原作者所有，未经授权，任何单位和个人不得转载、摘编或以其他方式使用。\n\
            读者交流群已开放，扫描页面底部二维码即可加入，与数万名读者一起讨论、分享与成长。\n\
            如需转载，请在文首注明出处和作者，并保留原文链接，违者本站将依法追究其法律责任。\n";
        let bodies = [
            "滚滚长江东逝水，浪花淘尽英雄。是非成败转头空，青山依旧在，几度夕阳红。",
            "白发渔樵江渚上，惯看秋月春风。一壶浊酒喜相逢，古今多少事，都付笑谈中。",
            "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦，及秦灭之后，楚汉分争。",
            "日月照之何不及此？惟有北风号怒天上来。燕山雪花大如席，片片吹落轩辕台。",
        ];
        let mut d = detector();
        let docs: Vec<String> = bodies.iter().map(|b| format!("{b}\n{template}")).collect();
        let found = run(&mut d, &docs);
        assert!(found.iter().all(|f| f.is_empty()), "{found:?}");
        // The same documents without the wrapper are matched on the template alone.
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let mut plain = MinHashDetector::new(fp, MinHashDetectorOptions::default()).unwrap();
        let mut matched = 0;
        for (i, t) in docs.iter().enumerate() {
            let s = plain.sketch(t).unwrap();
            matched += !plain.find(&s).is_empty() as usize;
            plain.insert(i as u32, s);
        }
        assert!(matched > 0);
    }
}

/// Wraps a detector to veto matches that rest only on a shared template (see module docs).
#[derive(Debug)]
pub struct TemplateAware<D: Detector> {
    inner: D,
    fp: Fingerprinter,
    /// `fp`'s normaliser, for the whole document: the inner detector (`auto`, `minhash`) has
    /// just normalised it with [`Normalizer::normalize_remembered`].
    normalizer: Normalizer,
    hasher: MinHasher,
    opts: TemplateOptions,
    lines: RwLock<HashMap<u64, u32, FastBuild>>,
    distinct: Vec<Option<Vec<u32>>>,
}

fn line_key(line: &str, min_bytes: usize) -> Option<u64> {
    let t = line.trim();
    (t.len() >= min_bytes).then(|| xxh3(t.as_bytes()))
}

fn non_space_chars(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

impl<D: Detector> TemplateAware<D> {
    /// Wraps `inner`; `fp` normalises the distinct parts (use the inner detector's).
    pub fn new(inner: D, fp: Fingerprinter, opts: TemplateOptions) -> Result<Self> {
        if opts.min_docs < 2 {
            return Err(Error::Config(format!(
                "template min_docs = {} must be at least 2",
                opts.min_docs
            )));
        }
        if !(0.0..=1.0).contains(&opts.min_distinct_share)
            || !(0.0..=1.0).contains(&opts.veto_below)
        {
            return Err(Error::Config(
                "template min_distinct_share and veto_below must be within [0, 1]".into(),
            ));
        }
        // Distinct parts are short: compare them on character 3-grams.
        let hasher = MinHasher::new(&MinHashOptions {
            shingles: Shingles::Chars,
            char_ngram: 3,
            ..MinHashOptions::default()
        })?;
        Ok(TemplateAware {
            inner,
            normalizer: Normalizer::new(fp.config().normalize.clone()),
            fp,
            hasher,
            opts,
            lines: RwLock::new(HashMap::default()),
            distinct: Vec::new(),
        })
    }

    /// The wrapped detector.
    pub fn inner(&self) -> &D {
        &self.inner
    }

    fn distinct_signature(&self, text: &str) -> Option<Vec<u32>> {
        let counts = self.lines.read().unwrap_or_else(|e| e.into_inner());
        let mut repeated = false;
        let mut kept = String::new();
        for line in text.lines() {
            match line_key(line, self.opts.min_line_bytes) {
                Some(k) if counts.get(&k).is_some_and(|&n| n >= self.opts.min_docs) => {
                    repeated = true
                }
                _ => {
                    kept.push_str(line);
                    kept.push('\n');
                }
            }
        }
        drop(counts);
        if !repeated {
            return None;
        }
        // Digits are left out of the distinct part: copies that differ only in counters, dates
        // or view counts must not look distinct.
        // Not remembered: the whole document (normalised by the inner detector) stays so.
        let kept: String = self
            .fp
            .normalize(&kept)
            .chars()
            .filter(|&c| !is_numeric(c))
            .collect();
        let part = kept.chars().filter(|&c| is_alphanumeric(c)).count();
        if part < self.opts.min_distinct_chars {
            return None;
        }
        // Only now the whole document's size (a second normalisation) is needed.
        let total = non_space_chars(&self.normalizer.normalize_remembered(text)).max(1);
        if (part as f64) < self.opts.min_distinct_share * total as f64 {
            return None;
        }
        self.hasher.signature_normalized(&kept)
    }
}

impl<D: Detector> Detector for TemplateAware<D> {
    type Sketch = TemplateSketch<D::Sketch>;

    fn name(&self) -> String {
        format!("{}+template", self.inner.name())
    }

    fn observe_batch(&self, texts: &[&str]) {
        self.inner.observe_batch(texts);
        let mut counts = self.lines.write().unwrap_or_else(|e| e.into_inner());
        let mut seen: HashSet<u64, FastBuild> = HashSet::default();
        for t in texts {
            seen.clear();
            for line in t.lines() {
                if let Some(k) = line_key(line, self.opts.min_line_bytes) {
                    if seen.insert(k) {
                        *counts.entry(k).or_insert(0) += 1;
                    }
                }
            }
        }
    }

    fn sketch(&self, text: &str) -> Result<Self::Sketch> {
        let inner = self.inner.sketch(text)?;
        Ok(TemplateSketch {
            inner,
            distinct: self.distinct_signature(text),
        })
    }

    fn find(&self, sketch: &Self::Sketch) -> Vec<Verdict> {
        let mut found = self.inner.find(&sketch.inner);
        if let Some(mine) = &sketch.distinct {
            found.retain(|v| match self.distinct.get(v.of as usize) {
                Some(Some(theirs)) => jaccard_estimate(mine, theirs) >= self.opts.veto_below,
                _ => true,
            });
        }
        found
    }

    fn insert(&mut self, doc: u32, sketch: Self::Sketch) {
        let i = doc as usize;
        if self.distinct.len() <= i {
            self.distinct.resize(i + 1, None);
        }
        self.distinct[i] = sketch.distinct;
        self.inner.insert(doc, sketch.inner);
    }

    fn heap_bytes(&self) -> usize {
        let lines = self.lines.read().map(|m| m.capacity() * 16).unwrap_or(0);
        let sigs: usize = self
            .distinct
            .iter()
            .map(|d| d.as_ref().map_or(0, |v| v.len() * 4) + 24)
            .sum();
        self.inner.heap_bytes() + lines + sigs
    }
}
