//! The template veto: different documents that share a long boilerplate template (a site's
//! editor's notes, copyright lines, share prompts inside the article) are not near-duplicates.
//!
//! [`TemplateVeto`] wraps any [`Detector`](crate::detect::Detector). Before each batch is sketched it counts, per line
//! (trimmed, at least [`TemplateVetoOptions::min_line_bytes`] bytes), how many documents seen so far
//! contain it ([`Detector::observe_batch`](crate::detect::Detector::observe_batch)). A line found in at least
//! [`TemplateVetoOptions::min_docs`] documents is *repeated*. A document's *distinct part* is its
//! text without repeated lines; when that part is a substantial share of the document
//! ([`TemplateVetoOptions::min_distinct_share`] of its non-space characters, not counting *template*
//! lines — those in at least [`TemplateVetoOptions::template_docs`] documents), the wrapper keeps a
//! MinHash signature of it.
//!
//! A match of the inner detector is **vetoed** when both documents have a substantial distinct
//! part and those parts are dissimilar (estimated Jaccard below
//! [`TemplateVetoOptions::veto_below`]): the documents agree only on the template. Matches the inner
//! detector calls identical (distance 0 or similarity 1) are never vetoed. Syndicated copies
//! keep matching: when an article is repeated in many documents its own lines are the repeated
//! ones, so its distinct part is small and no veto applies.
//!
//! **The containment guard** ([`TemplateVetoOptions::contained_above`], default 0.5) keeps the
//! veto from firing where there is no template: an article whose lines repeat across its own
//! copies (syndication, an e-mail thread) leaves each copy only the lines where it differs as
//! its distinct part — an inserted ad, a counter header, the cut ends of an excerpt, an edited
//! line — and those parts are dissimilar to each other. The veto stands only when neither
//! document's distinct part lies (at least `contained_above` of its character 5-grams) inside
//! the *whole* other document: a template's two different articles do not; a copy's edited or
//! cut lines do. Measured on planted groups of an original and up to four copies without any
//! template (`split_eval`, docs/quality.md), the guard brings the veto's recall from 0.67 back
//! to within 0.01 of no veto, with precision on the template-heavy sets unchanged.
//!
//! Deterministic: counts depend only on the batches' contents and order, never on threads.
//!
//! ```
//! use neardup::template_veto::{TemplateVeto, TemplateVetoOptions};
//! use neardup::detect::Detector;
//! use neardup::minhash::{MinHashDetector, MinHashDetectorOptions};
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let inner = MinHashDetector::new(fp.clone(), MinHashDetectorOptions::default()).unwrap();
//! let mut d = TemplateVeto::new(inner, fp, TemplateVetoOptions::default()).unwrap();
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

use serde::{Deserialize, Serialize};

use crate::detect::containment::{shingle_set, shingle_set_packed, BottomK, PackedBottomK};
use crate::detect::Verdict;
use crate::error::{Error, Result};
use crate::features::{is_alphanumeric, PackedChars, PACK_PIECE};
use crate::fingerprint::Fingerprinter;
use crate::hash::xxh3;
use crate::minhash::{fold32, MinHashOptions, MinHasher, Scheme, Shingles};
use crate::normalize::Normalizer;

/// Settings of [`TemplateVeto`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TemplateVetoOptions {
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
    /// A repeated line found in at least this many documents is *template*: besides leaving the
    /// distinct part, it is also left out of the document size that
    /// [`min_distinct_share`](Self::min_distinct_share) is measured against. Lines repeated in
    /// fewer documents (an article syndicated to a handful of sites) still count in that size,
    /// so a copy's differing byline stays below the share; a heading that is all a page has
    /// besides a site's template does not. Default 32.
    pub template_docs: u32,
    /// The containment guard: a match whose distinct parts are dissimilar is still *not*
    /// vetoed when either document's distinct part lies, to at least this share of its
    /// character 5-grams, inside the *whole* other document — the documents then agree beyond
    /// any shared lines (an article whose lines repeat across its own copies: the distinct
    /// parts are the few lines where copies differ, which the other copy still holds in some
    /// form). `None`: no guard (the veto as it was before the guard). Default 0.5.
    pub contained_above: Option<f64>,
    /// Template lines ([`strip_template_share`](Self::strip_template_share)) are also counted
    /// with each run of digits as one mark: a counter header (`Posted 2011-05-10 · 3004
    /// views`) is one line on every page that carries it. Repeated lines (the veto's distinct
    /// parts) always go by the trimmed line's bytes. Default `true`.
    pub mask_line_digits: bool,
    /// When a text finds no match, it is searched again by its *body*: the text without its
    /// template lines (held by at least [`template_docs`](Self::template_docs) documents), if
    /// those hold at least this share of its letters and digits. The same short text wrapped in
    /// ads, a counter header or another site's template is then found by what it says. What is
    /// indexed, and every match the whole text finds, stay as without it: the body only adds
    /// matches for texts that would otherwise be unique. `None`: never. Default 0.175
    /// (docs/quality.md).
    pub strip_template_share: Option<f64>,
    /// A page with template lines whose other lines are all repeated (held by
    /// [`min_docs`](Self::min_docs) documents: its own copies hold them) takes its distinct
    /// part from its lines held by fewer than [`template_docs`](Self::template_docs)
    /// documents, instead of having none (then every match with it stood). Default `true`
    /// (docs/quality.md, "Pages whose own lines are repeated by their copies"); recorded only
    /// when on, so a configuration without it reads as off, the behaviour before it.
    #[serde(default, skip_serializing_if = "is_false")]
    pub own_repeated_lines: bool,
    /// Online, a match with a page stored before any of its lines was repeated is also vetoed
    /// when each of the two has text of its own that the other lacks, in comparable amounts
    /// ([`VetoRules::vetoed_by_content`]; such pages keep a sample of their whole text), and a
    /// stored page's distinct part whose lines have mostly become template lines since is not
    /// taken as held by the checked page ([`VetoRules::stands_with_stale_part`]). Off by
    /// default: short-text sets with templates sent one at a time gain up to 0.165 F1, sets of
    /// an article's copies lose up to 0.007 (docs/quality.md, "Pages stored before any of their
    /// lines was repeated (measured, not adopted)"). Recorded only when on.
    #[serde(default, skip_serializing_if = "is_false")]
    pub by_content: bool,
    /// An HTML page whose markup has fewer lines holding anything than its visible text has
    /// (minified markup, blocks run together on a line) has the lines of that text (one block element
    /// a line, as the normaliser extracts it: [`Normalizer::text_of`]), so that its
    /// template's lines are counted all the same; a page laid out a block a line or more
    /// keeps its markup's lines. Off, every HTML page has its markup's lines (then a minified
    /// page has one line, and pages of one template share none). Default `true`; recorded
    /// only when on, so a configuration without it reads as off, the behaviour before it
    /// (docs/quality.md, "Minified HTML pages read by the lines of their text").
    #[serde(default, skip_serializing_if = "is_false")]
    pub text_lines: bool,
    /// How many of the smallest hashes of each guard set (the whole document's and its
    /// distinct part's character 5-grams) a stored document keeps for the containment guard
    /// ([`contained_above`](Self::contained_above)): the guard's estimates are exact up to this
    /// many shingles and sampled beyond. Default 256.
    pub guard_sample: usize,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl TemplateVetoOptions {
    /// The veto without the containment guard ([`contained_above`](Self::contained_above)
    /// `None`), for comparisons.
    pub fn unguarded() -> TemplateVetoOptions {
        TemplateVetoOptions {
            contained_above: None,
            ..TemplateVetoOptions::whole_texts()
        }
    }

    /// The veto as it was before a text was searched by its body: lines counted by their
    /// exact bytes alone, no body (for comparisons).
    pub fn whole_texts() -> TemplateVetoOptions {
        TemplateVetoOptions {
            mask_line_digits: false,
            strip_template_share: None,
            text_lines: false,
            ..TemplateVetoOptions::default()
        }
    }
}

impl Default for TemplateVetoOptions {
    fn default() -> Self {
        TemplateVetoOptions {
            min_docs: 3,
            min_line_bytes: 20,
            min_distinct_share: 0.02,
            min_distinct_chars: 4,
            veto_below: 0.3,
            template_docs: 32,
            contained_above: Some(0.5),
            mask_line_digits: true,
            strip_template_share: Some(0.175),
            guard_sample: GUARD_SAMPLE,
            own_repeated_lines: true,
            by_content: false,
            text_lines: true,
        }
    }
}

/// How many documents must hold a line before it makes a page stored ahead of its template a
/// template page.
///
/// Online, a document stored before any of its lines was repeated has no distinct part; a
/// match with it is judged by its lines ([`VetoRules::stands_unlearned`]). It is a template
/// page once one of its lines is held by `min_docs` stored documents or by this many
/// documents, counted duplicates included; below that, a line repeated by a few duplicates is
/// as likely an article's own, repeated by its copies. Chosen on the development split and
/// confirmed on the held-out one (docs/quality.md, "The online engine learns templates from
/// its duplicates"): 32 (`template_docs`) left most template pages sent one at a time matched
/// to the first one; 8 costs no family of copies on those sets (groups of up to five).
///
/// A [`thin`](VetoRules::thin) page stored with repeated lines — online, or in an earlier
/// batch of [`TemplateVeto`] — is template-only once one of them is held by `template_docs`
/// documents and every one by this many ([`VetoRules::template_only_now`]; docs/quality.md,
/// "Pages stored before their template was learned").
pub const UNLEARNED_TEMPLATE_DOCS: u32 = 8;

/// The keys a counted line is known by ([`VetoRules::line_keys`]). The two kinds never meet:
/// an exact key is even, a masked one odd ([`LineKey::is_exact`]), so one count table and one
/// list of a document's keys hold both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LineKey {
    /// The trimmed line's: what the veto's repeated lines and distinct part go by.
    pub exact: u64,
    /// The line's with each run of digits one mark ([`mask_digits`], under
    /// [`TemplateVetoOptions::mask_line_digits`]; `exact` for a line without digits): what
    /// template lines go by, so that a counter header is one line on every page.
    pub template: u64,
}

impl LineKey {
    /// Whether `key` is an exact key (a line's own bytes), not a masked one.
    pub fn is_exact(key: u64) -> bool {
        key & 1 == 0
    }
}

/// A document's sketch: the inner detector's, plus its distinct part.
#[derive(Debug, Clone)]
pub struct TemplateSketch<S> {
    /// The inner detector's sketch of the whole document.
    pub inner: S,
    /// The inner detector's sketch of its body ([`VetoRules::body`]), when it has one: searched
    /// when the whole document finds no match.
    pub body: Option<S>,
    /// Whether the body is indexed when the document is ([`VetoRules::body_is_own`]; only
    /// under [`TemplateVeto::with_body_index`]).
    pub index_body: bool,
    /// The distinct part (the text without repeated lines), when it is substantial.
    pub distinct: Option<DistinctSketch>,
    /// Set when the text came after an identical one ([`Detector::sketch_nth`]): `inner` is
    /// then the inner detector's [`Detector::sketch_exact_copy`], `body` and `distinct` are
    /// left out, and [`Detector::resolve`] completes them from here when the exact match
    /// cannot decide.
    pub(crate) put_off: Option<Box<PutOff>>,
    /// For a [`thin`](VetoRules::thin) page without a distinct part: the exact keys of its
    /// lines that were repeated when it was sketched, to judge it template-only again as its
    /// template is learned ([`VetoRules::template_only_now`]).
    pub(crate) thin: Option<Box<[u64]>>,
}

/// What a put-off [`TemplateSketch`] is completed from: the text and the line counts it was
/// sketched with.
#[derive(Debug, Clone)]
pub(crate) struct PutOff {
    text: String,
    line_docs: Vec<u32>,
    template_docs: Vec<u32>,
}

/// The distinct part of a document being checked: its MinHash signature and, for the
/// containment guard, its full shingle sets.
#[derive(Debug, Clone, PartialEq)]
pub struct DistinctSketch {
    /// MinHash signature (character 3-grams) of the text without repeated lines; empty for a
    /// *template-only* page (template lines and fewer than
    /// [`TemplateVetoOptions::min_distinct_chars`] letters besides), which agrees with no
    /// other part.
    pub signature: Vec<u32>,
    /// The shingle sets of the containment guard (when it is on).
    pub guard: Option<GuardSets>,
}

impl DistinctSketch {
    /// What an indexed document keeps of it: the signature, and the `sample` smallest hashes of
    /// each of the guard's sets ([`TemplateVetoOptions::guard_sample`]).
    pub fn kept(&self, sample: usize) -> DistinctPart {
        DistinctPart {
            signature: self.signature.iter().map(|&v| v as u16).collect(),
            samples: self.guard.as_ref().map(|g| {
                (
                    PackedBottomK::pack(&BottomK::new(&g.whole, sample)),
                    PackedBottomK::pack(&BottomK::new(&g.part, sample)),
                )
            }),
        }
    }
}

/// What an indexed document keeps of its distinct part.
#[derive(Debug, Clone, PartialEq)]
pub struct DistinctPart {
    /// MinHash signature of the distinct part, each slot's low 16 bits (b-bit minwise hashing,
    /// Li & König 2010: two different slots agree by chance once in 65,536, which moves a
    /// Jaccard estimate of 128 slots by under 0.002 on average).
    pub signature: Box<[u16]>,
    /// Bottom-k samples of the whole document's and of the distinct part's shingle sets
    /// (when the containment guard is on), packed.
    pub samples: Option<(PackedBottomK, PackedBottomK)>,
}

impl DistinctPart {
    /// The distinct part of a *template-only* page: an empty signature, which agrees with no
    /// other part but another template-only page's ([`VetoRules::stands`]).
    pub fn template_only() -> DistinctPart {
        DistinctPart {
            signature: Box::new([]),
            samples: None,
        }
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.signature.len() * 2
            + self
                .samples
                .as_ref()
                .map_or(0, |(a, b)| a.heap_bytes() + b.heap_bytes())
    }
}

/// The shingle sets a document's sketch carries for the containment guard.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct GuardSets {
    /// Sorted character 5-gram hashes of the whole normalised document.
    pub whole: Vec<u32>,
    /// Sorted character 5-gram hashes of the distinct part.
    pub part: Vec<u32>,
}

/// Shingle size of the containment guard.
const GUARD_NGRAM: usize = 5;
/// Shingle size of the distinct part's signature.
const DISTINCT_NGRAM: usize = 3;
/// Sample size (per set) an inserted document keeps for the containment guard, by default.
const GUARD_SAMPLE: usize = 256;

mod batch;
mod body;
mod digits;
mod lines;
mod pairwise;
#[cfg(test)]
mod tests;

pub use batch::TemplateVeto;
pub use digits::mask_digits;
use digits::without_numerals;
use lines::lines_below;
pub use pairwise::OwnLines;

/// The veto's rules, without its state: which lines are counted, a document's distinct part
/// given how many documents hold each of its lines, and whether a match stands.
/// [`TemplateVeto`] applies them to a batch corpus; the online engine to its time window.
#[derive(Debug, Clone)]
pub struct VetoRules {
    fp: Fingerprinter,
    normalizer: Normalizer,
    hasher: MinHasher,
    opts: TemplateVetoOptions,
}

fn non_space_chars(s: &str) -> usize {
    s.chars().filter(|c| !c.is_whitespace()).count()
}

impl VetoRules {
    /// [`non_space_chars`] of text this veto's normaliser wrote: when it collapses white space,
    /// the only white space left is single spaces and vertical tabs (which its ASCII path, as
    /// `u8::is_ascii_whitespace`, leaves alone), and both counts are byte scans.
    fn non_space_normalized(&self, normalized: &str) -> usize {
        if self.normalizer.options().whitespace {
            normalized.chars().count()
                - normalized
                    .bytes()
                    .filter(|&b| b == b' ' || b == 0x0B)
                    .count()
        } else {
            non_space_chars(normalized)
        }
    }
}

impl VetoRules {
    /// Checks the options.
    ///
    /// # Errors
    /// [`Error::Config`] when an option is out of range (the message names it).
    pub fn new(fp: Fingerprinter, opts: TemplateVetoOptions) -> Result<Self> {
        if opts.min_docs < 2 {
            return Err(Error::Config(format!(
                "template min_docs = {} must be at least 2",
                opts.min_docs
            )));
        }
        if opts.template_docs < opts.min_docs {
            return Err(Error::Config(format!(
                "template template_docs = {} must be at least min_docs = {}",
                opts.template_docs, opts.min_docs
            )));
        }
        if !(0.0..=1.0).contains(&opts.min_distinct_share)
            || !(0.0..=1.0).contains(&opts.veto_below)
            || [opts.contained_above, opts.strip_template_share]
                .into_iter()
                .flatten()
                .any(|c| !(0.0..=1.0).contains(&c))
        {
            return Err(Error::Config(
                "template min_distinct_share, veto_below, contained_above and strip_template_share \
                 must be within [0, 1]"
                    .into(),
            ));
        }
        if opts.guard_sample == 0 {
            return Err(Error::Config(
                "template guard_sample must be at least 1 (the containment guard's sample of each \
                 stored document; default 256)"
                    .into(),
            ));
        }
        // Distinct parts are short: compare them on character 3-grams.
        let hasher = MinHasher::new(&MinHashOptions {
            shingles: Shingles::Chars,
            char_ngram: DISTINCT_NGRAM,
            // v1: the guard's thresholds (docs/quality.md) were measured with it, and these
            // signatures are stored in the engine's sketches (encoding version 2).
            scheme: Scheme::Permutations,
            ..MinHashOptions::default()
        })?;
        Ok(VetoRules {
            normalizer: Normalizer::new(fp.config().normalize.clone()),
            fp,
            hasher,
            opts,
        })
    }

    /// The options.
    pub fn options(&self) -> &TemplateVetoOptions {
        &self.opts
    }

    /// What a stored document keeps of its distinct part
    /// ([`TemplateVetoOptions::guard_sample`] hashes of each guard set).
    pub fn kept(&self, d: &DistinctSketch) -> DistinctPart {
        d.kept(self.opts.guard_sample)
    }

    /// The distinct part of `text`, when it is substantial. `line_docs[i]` is how many
    /// documents (this one included) hold line `i` (0 for lines too short to be counted).
    pub fn distinct_part(&self, text: &str, line_docs: &[u32]) -> Option<DistinctSketch> {
        self.distinct_part_of(text, None, line_docs)
    }

    /// `text` normalised as the whole document is (what
    /// [`distinct_part_normalized`](Self::distinct_part_normalized) takes).
    pub fn normalize_whole(&self, text: &str) -> String {
        self.normalizer.normalize_remembered(text)
    }

    /// [`distinct_part`](Self::distinct_part), given `whole`, the text as
    /// [`normalize_whole`](Self::normalize_whole) gives it: for callers that sketch many
    /// documents before they know the line counts, where the thread's last normalisation is
    /// another document's.
    pub fn distinct_part_normalized(
        &self,
        text: &str,
        whole: &str,
        line_docs: &[u32],
    ) -> Option<DistinctSketch> {
        self.distinct_part_of(text, Some(whole), line_docs)
    }

    fn distinct_part_of(
        &self,
        text: &str,
        whole: Option<&str>,
        line_docs: &[u32],
    ) -> Option<DistinctSketch> {
        let repeated = line_docs.iter().any(|&n| n >= self.opts.min_docs);
        if !repeated {
            return None;
        }
        let template = line_docs.iter().any(|&n| n >= self.opts.template_docs);
        let lines = self.lines_of(text);
        let lines_below = |floor: u32| lines_below(&lines, line_docs, floor);
        // Digits are left out of the distinct part: copies that differ only in counters, dates
        // or view counts must not look distinct.
        // Not remembered: the whole document (normalised by the inner detector) stays so.
        let part_of = |floor: u32| {
            let kept = without_numerals(self.fp.normalize(&lines_below(floor)));
            // Its letters, packed once for both shingle sizes.
            let packed = Self::pack(&kept);
            let part = match &packed {
                Some(p) => p.len(),
                None => kept.chars().filter(|&c| is_alphanumeric(c)).count(),
            };
            (kept, packed, part)
        };
        let (mut kept, mut packed, mut part) = part_of(self.opts.min_docs);
        if part < self.opts.min_distinct_chars && template && self.opts.own_repeated_lines {
            // Every line of its own is repeated — by its own copies, as a short text's are
            // when it is posted again in a template of ads — yet it has template lines: its
            // own lines, those below the template count, are its part. Without one, every
            // other page of the template matched it.
            (kept, packed, part) = part_of(self.opts.template_docs);
        }
        if part < self.opts.min_distinct_chars {
            // A page that is a template (lines in `template_docs` documents) and next to
            // nothing else (a table rule, a caption of two characters) has no text of its own
            // to compare: it is *template-only*, an empty signature that no other distinct
            // part agrees with. Lines repeated in fewer documents (an article's, by its
            // copies) are its own.
            if template
                && self.letters_below(&lines, line_docs, self.opts.template_docs)
                    < self.opts.min_distinct_chars
            {
                return Some(DistinctSketch {
                    signature: Vec::new(),
                    guard: None,
                });
            }
            return None;
        }
        // Only now the document's size is needed: the whole document's first (the inner
        // detector has just normalised it), then, only if the part is too small against that
        // and there are template lines, the size without them (a smaller denominator).
        let whole: std::borrow::Cow<'_, str> = match whole {
            Some(w) => w.into(),
            None => self.normalizer.normalize_remembered(text).into(),
        };
        let below =
            |total: usize| (part as f64) < self.opts.min_distinct_share * total.max(1) as f64;
        if below(self.non_space_normalized(&whole))
            && (!template
                || below(self.non_space_normalized(
                    &self.fp.normalize(&lines_below(self.opts.template_docs)),
                )))
        {
            return None;
        }
        let (signature, part_set) = self.part_sketch(&kept, packed.as_ref())?;
        let guard = part_set.map(|part| GuardSets {
            whole: shingle_set(&whole, GUARD_NGRAM),
            part,
        });
        Some(DistinctSketch { signature, guard })
    }

    /// The letters and digits of the lines of `lines` (a [`lines_of`](Self::lines_of) text)
    /// held by fewer than `floor` documents, as its distinct part counts them (normalised,
    /// numerals left out).
    fn letters_below(&self, lines: &str, line_docs: &[u32], floor: u32) -> usize {
        without_numerals(self.fp.normalize(&lines_below(lines, line_docs, floor)))
            .chars()
            .filter(|&c| is_alphanumeric(c))
            .count()
    }

    /// Whether `text`, whose lines are held by `line_docs` documents, has fewer than
    /// [`TemplateVetoOptions::min_distinct_chars`] letters outside its repeated lines (held by
    /// [`TemplateVetoOptions::min_docs`]): too few for a distinct part, and template-only once
    /// those lines are template lines ([`template_only_now`](Self::template_only_now)).
    pub fn thin(&self, text: &str, line_docs: &[u32]) -> bool {
        self.letters_below(&self.lines_of(text), line_docs, self.opts.min_docs)
            < self.opts.min_distinct_chars
    }

    /// Whether any line is repeated (held by at least
    /// [`min_docs`](TemplateVetoOptions::min_docs) documents, `line_docs` as
    /// [`thin_repeated`](Self::thin_repeated) takes them): a page without one is never thin.
    pub fn any_repeated(&self, line_docs: &[u32]) -> bool {
        line_docs.iter().any(|&n| n >= self.opts.min_docs)
    }

    /// The exact keys of the lines (`keys`, held by `line_docs` documents) held by
    /// [`min_docs`](TemplateVetoOptions::min_docs) documents: the repeated ones.
    pub fn repeated_lines(&self, keys: &[Option<LineKey>], line_docs: &[u32]) -> Vec<u64> {
        keys.iter()
            .zip(line_docs)
            .filter(|(_, &n)| n >= self.opts.min_docs)
            .filter_map(|(k, _)| k.map(|k| k.exact))
            .collect()
    }

    /// For a [`thin`](Self::thin) page with repeated lines (`keys` its line keys, `line_docs`
    /// how many documents hold each by its exact key), the exact keys of those lines, sorted
    /// and distinct: what [`template_only_now`](Self::template_only_now) is asked of later.
    /// `None` for any other page.
    pub fn thin_repeated(
        &self,
        text: &str,
        keys: &[Option<LineKey>],
        line_docs: &[u32],
    ) -> Option<Vec<u64>> {
        let mut repeated = self.repeated_lines(keys, line_docs);
        if repeated.is_empty() || !self.thin(text, line_docs) {
            return None;
        }
        repeated.sort_unstable();
        repeated.dedup();
        Some(repeated)
    }

    /// Whether a [`thin`](Self::thin) page is *template-only* now that each of the lines
    /// that were repeated when it was judged is held by `repeated` documents: when one is a
    /// template line (held by [`TemplateVetoOptions::template_docs`]) and every one is held
    /// by `learned` documents at least. With `learned` = `template_docs` that is what
    /// [`distinct_part`](Self::distinct_part) would find with these counts: all the page has
    /// besides its template lines is its thin rest. The online engine and [`TemplateVeto`]
    /// ask this of a page stored before its template was known (online, or in an earlier
    /// batch) with `learned` = [`UNLEARNED_TEMPLATE_DOCS`] (a template's lines that are on
    /// only some of its pages reach `template_docs` long after the others); a line below
    /// `learned` may be the page's own, repeated by its copies: then it is not.
    pub fn template_only_now(&self, repeated: impl IntoIterator<Item = u32>, learned: u32) -> bool {
        let mut template = false;
        for n in repeated {
            if n < learned {
                return false;
            }
            template |= n >= self.opts.template_docs;
        }
        template
    }

    /// `kept` packed, unless it is longer than [`PACK_PIECE`] bytes: past that, `chars_each`
    /// cuts it a piece at a time, which bounds the memory of very long parts.
    fn pack(kept: &str) -> Option<PackedChars> {
        (kept.len() <= PACK_PIECE).then(|| PackedChars::new(kept))
    }

    /// The distinct part's signature and, under the guard, its sorted shingle set, from
    /// `packed` (the part packed) when given, else from the text. Both give the same.
    fn part_sketch(
        &self,
        kept: &str,
        packed: Option<&PackedChars>,
    ) -> Option<(Vec<u32>, Option<Vec<u32>>)> {
        let guard = self.opts.contained_above.is_some();
        Some(match packed {
            Some(p) => {
                let mut keys = Vec::with_capacity(p.len());
                let mut seen = RecentKeys::new();
                p.ngrams_each(DISTINCT_NGRAM, |g| {
                    let k = fold32(xxh3(g));
                    if seen.is_new(k) {
                        keys.push(k);
                    }
                });
                if keys.is_empty() {
                    return None;
                }
                (
                    self.hasher.signature_of_keys(&keys),
                    guard.then(|| shingle_set_packed(p, GUARD_NGRAM)),
                )
            }
            None => (
                self.hasher.signature_normalized(kept)?,
                guard.then(|| shingle_set(kept, GUARD_NGRAM)),
            ),
        })
    }

    /// Whether a match of the inner detector stands, `verdict` between a document whose
    /// distinct part is `mine` and one whose distinct part is `theirs` (`None`: it has none).
    /// Matches the inner detector calls identical (distance 0 or similarity 1) always stand:
    /// which lines count as repeated changes as the corpus is read, so an exact copy's
    /// distinct part can differ from its original's.
    pub fn stands(
        &self,
        verdict: &Verdict,
        mine: Option<&DistinctSketch>,
        theirs: Option<&DistinctPart>,
    ) -> bool {
        self.stands_guarded(verdict, mine, theirs, true)
    }

    /// [`stands`](Self::stands), the guard's "their part lies in my whole" asked only when
    /// `their_part_held` ([`stands_with_stale_part`](Self::stands_with_stale_part) does not).
    fn stands_guarded(
        &self,
        verdict: &Verdict,
        mine: Option<&DistinctSketch>,
        theirs: Option<&DistinctPart>,
        their_part_held: bool,
    ) -> bool {
        let (Some(mine), Some(theirs)) = (mine, theirs) else {
            return true;
        };
        if verdict.distance == Some(0) || verdict.similarity == Some(1.0) {
            return true;
        }
        // Two template-only pages have nothing of their own that could differ.
        if mine.signature.is_empty() && theirs.signature.is_empty() {
            return true;
        }
        if low_bits_agreement(&mine.signature, &theirs.signature) >= self.opts.veto_below {
            return true;
        }
        let (Some(at_least), Some(g), Some((their_whole, their_part))) =
            (self.opts.contained_above, &mine.guard, &theirs.samples)
        else {
            return false;
        };
        their_part_held && their_part.contained_in_set(&g.whole) >= at_least
            || their_whole
                .contains_set(&g.part)
                .is_some_and(|c| c >= at_least)
    }
}

impl VetoRules {
    /// The online form of [`stands`](Self::stands) against a document whose distinct part was
    /// never computed: none of its lines was repeated when it was stored, and some are now
    /// (an online index learns a template from the documents that carry it, so the first of
    /// them are stored before it is known). The match stands when the two documents share a
    /// line that is not repeated — `mine_distinct_lines`, the sorted keys of the checked
    /// document's lines below [`TemplateVetoOptions::min_docs`], meets `their_lines` —, or
    /// when the checked document has no distinct part, or the inner detector calls them
    /// identical; otherwise they agree only on repeated lines and the match is vetoed.
    pub fn stands_unlearned(
        &self,
        verdict: &Verdict,
        mine: Option<&DistinctSketch>,
        mine_distinct_lines: &[u64],
        their_lines: &[u64],
    ) -> bool {
        if mine.is_none() || verdict.distance == Some(0) || verdict.similarity == Some(1.0) {
            return true;
        }
        mine_distinct_lines
            .iter()
            .any(|k| their_lines.binary_search(k).is_ok())
    }
}

/// A direct-mapped table of the last key seen in each of its slots, keyed by the key's low
/// bits: a key met again while its slot still holds it is left out of a signature, whose
/// minima it cannot change (a set's signature is its multiset's). Repeated n-grams are common
/// (a third to two thirds of a part's character 3-grams), and each costs a pass over all the
/// signature's slots.
struct RecentKeys {
    slots: [u32; RECENT_KEYS],
}

const RECENT_KEYS: usize = 2048;

impl RecentKeys {
    fn new() -> Self {
        // Slot `i` starts with `!i`, whose low bits differ from `i`'s: no key matches it.
        RecentKeys {
            slots: std::array::from_fn(|i| !(i as u32)),
        }
    }

    /// Whether `k` is not the key its slot holds; it holds `k` afterwards.
    #[inline]
    fn is_new(&mut self, k: u32) -> bool {
        let slot = &mut self.slots[k as usize & (RECENT_KEYS - 1)];
        let new = *slot != k;
        *slot = k;
        new
    }
}

/// The share of slots where `a`'s low 16 bits equal `b`'s: the Jaccard estimate of two
/// signatures of which `b` keeps only the low bits ([`DistinctPart::signature`]).
fn low_bits_agreement(a: &[u32], b: &[u16]) -> f64 {
    if a.is_empty() || a.len() != b.len() {
        return 0.0;
    }
    let same = a.iter().zip(b).filter(|&(&x, &y)| x as u16 == y).count();
    same as f64 / a.len() as f64
}
