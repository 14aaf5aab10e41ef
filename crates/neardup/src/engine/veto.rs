//! The template veto online ([`crate::template_veto`]): how many stored documents of the
//! window hold each line, and the veto's sketch of the documents being checked.
//!
//! Batch dedup counts the lines of every document read before it sketches a batch. The
//! engine counts the lines of the documents it stores and of the duplicates it answers (but
//! copies of an identical text: [`counts_lines`]), plus those of the batch being checked, each
//! distinct text once: a document's count of a line is "stored documents and counted
//! duplicates holding it + documents of its own batch holding it". Both are in the log and
//! snapshots (a duplicate's lines as an `L` record), so the counts are rebuilt on restart and
//! on every instance that shares the log. A stored document's lines leave the counts with it
//! (removal, expiry), a duplicate's when its time segment expires (not with `max_docs`
//! eviction). A duplicate's answer does not wait for its `L` record: a crash may lose the
//! counts of the last duplicates answered before it, never a stored document.
//!
//! Counting the duplicates is what lets an online index learn a template at all: the pages
//! of a new template match the first one stored on the template alone and are answered
//! "duplicate", so if only stored documents counted, the template's lines would never reach
//! [`TemplateVetoOptions::template_docs`](crate::template_veto::TemplateVetoOptions::template_docs)
//! and every later page of it would be a duplicate of the first (docs/quality.md, "The online
//! engine learns templates from its duplicates").

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use rayon::prelude::*;

use super::sketch::{ThinPage, VetoSketch};
use crate::detect::containment::PackedBottomK;
use crate::detect::Stage;
use crate::hash::{xxh3, FastBuild};
use crate::template_veto::DistinctSketch;
use crate::template_veto::{LineKey, OwnLines, VetoRules};

/// Whether a duplicate answered by `stage` has its lines counted: every one but the copies of
/// an identical (normalised) text and the same id sent again — as `neardup dedup` counts every
/// document it reads, exact copies once.
pub(super) fn counts_lines(stage: Stage) -> bool {
    !matches!(stage, Stage::Exact | Stage::Id)
}

/// The count of documents at which a line stored before it was learned makes its page a
/// template page online ([`crate::template_veto::UNLEARNED_TEMPLATE_DOCS`]).
pub(super) use crate::template_veto::UNLEARNED_TEMPLATE_DOCS;

/// Line key → how many stored documents hold the line, and how many counted duplicates.
#[derive(Debug, Default)]
pub(super) struct LineCounts {
    stored: Counts,
    duplicates: Counts,
}

/// Counts of line keys. Nearly every line is held by one document (an article's own lines;
/// 97 % of the keys of the English corpora's pages): those keys are kept in a set, a slot of
/// nine bytes, and only the others with their count, a slot of seventeen — half the memory of
/// one map of counts. The counts are exact.
#[derive(Debug, Default)]
struct Counts {
    /// Keys counted once.
    once: HashSet<u64, FastBuild>,
    /// Keys counted more than once, with their count.
    more: HashMap<u64, u32, FastBuild>,
}

impl Counts {
    /// Adds one to key `k`'s count.
    fn add(&mut self, k: u64) {
        if let Some(c) = self.more.get_mut(&k) {
            *c += 1;
        } else if self.once.remove(&k) {
            self.more.insert(k, 2);
        } else {
            self.once.insert(k);
        }
    }

    /// Takes `n` from key `k`'s count (down to zero).
    fn sub(&mut self, k: u64, n: u32) {
        if n == 0 {
            return;
        }
        if let Some(c) = self.more.get_mut(&k) {
            match c.saturating_sub(n) {
                0 => {
                    self.more.remove(&k);
                }
                1 => {
                    self.more.remove(&k);
                    self.once.insert(k);
                }
                left => *c = left,
            }
        } else {
            self.once.remove(&k);
        }
    }

    /// Key `k`'s count.
    fn get(&self, k: u64) -> u32 {
        if self.once.contains(&k) {
            1
        } else {
            self.more.get(&k).copied().unwrap_or(0)
        }
    }

    /// Bytes of their tables: a slot is its entry and a control byte.
    fn heap_bytes(&self) -> usize {
        self.once.capacity() * (std::mem::size_of::<u64>() + 1)
            + self.more.capacity() * (std::mem::size_of::<(u64, u32)>() + 1)
    }
}

impl LineCounts {
    /// Counts a stored document's lines.
    pub(super) fn add(&mut self, lines: &[u64]) {
        lines.iter().for_each(|&k| self.stored.add(k));
    }

    /// Takes a stored document's lines back out of the counts.
    pub(super) fn sub(&mut self, lines: &[u64]) {
        lines.iter().for_each(|&k| self.stored.sub(k, 1));
    }

    /// Counts a duplicate's lines.
    pub(super) fn add_duplicate(&mut self, lines: &[u64]) {
        lines.iter().for_each(|&k| self.duplicates.add(k));
    }

    /// Takes `n` duplicates' line `k` out of the counts (taken back, or expired with their
    /// segment).
    pub(super) fn sub_duplicates(&mut self, k: u64, n: u32) {
        self.duplicates.sub(k, n);
    }

    /// How many stored documents and counted duplicates hold line `k`.
    pub(super) fn get(&self, k: u64) -> u32 {
        self.stored_docs(k) + self.duplicates.get(k)
    }

    /// How many stored documents hold line `k`.
    pub(super) fn stored_docs(&self, k: u64) -> u32 {
        self.stored.get(k)
    }

    pub(super) fn heap_bytes(&self) -> usize {
        self.stored.heap_bytes() + self.duplicates.heap_bytes()
    }
}

/// How many documents hold each line of a text (0 for a line too short to count), by its two
/// keys ([`LineKey`]): `exact` for the veto's repeated lines, `template` for the template
/// lines left out of its body; `exact_stored` counts the stored documents and the batch only
/// (no duplicates), for the lines it shares with documents stored before their template was
/// known ([`VetoSketch::distinct_lines`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct LineDocs {
    pub(super) exact: Vec<u32>,
    pub(super) template: Vec<u32>,
    pub(super) exact_stored: Vec<u32>,
}

/// A text's line keys ([`VetoRules::line_keys`]).
pub(super) type Keys = Vec<Option<LineKey>>;

/// What [`line_docs_batch`] gives for each text of a batch.
pub(super) struct BatchLines {
    /// The line keys.
    pub(super) keys: Vec<Keys>,
    /// How many documents hold each line.
    pub(super) docs: Vec<LineDocs>,
    /// An HTML page's visible text, parsed for its lines ([`VetoRules::visible_text`]), for
    /// the thread that sketches it ([`VetoRules::remember_visible`]).
    pub(super) visible: Vec<Option<Arc<str>>>,
}

/// Each text's line keys (`None`: a line too short to count) and how many documents hold its
/// lines: `stored(keys)` gives the counts of each line's two keys over the stored documents
/// and counted duplicates, and of its exact key over the stored documents alone (the caller
/// takes the engine's read lock for it), to which the batch's own are added, each distinct
/// text once and each of its keys once.
pub(super) fn line_docs_batch(
    rules: &VetoRules,
    texts: &[&str],
    stored: impl FnOnce(&[Keys]) -> Vec<Vec<(u32, u32, u32)>>,
) -> BatchLines {
    let (visible, keys): (Vec<Option<Arc<str>>>, Vec<Keys>) = texts
        .par_iter()
        .map(|t| (rules.visible_text(t), rules.line_keys(t)))
        .unzip();
    let mut batch: HashMap<u64, u32, FastBuild> = HashMap::default();
    let mut texts_seen: HashSet<u64, FastBuild> = HashSet::default();
    let mut lines_seen: HashSet<u64, FastBuild> = HashSet::default();
    for (t, ks) in texts.iter().zip(&keys) {
        if !texts_seen.insert(xxh3(t.as_bytes())) {
            continue;
        }
        lines_seen.clear();
        for k in ks.iter().flatten().flat_map(|k| [k.exact, k.template]) {
            if lines_seen.insert(k) {
                *batch.entry(k).or_insert(0) += 1;
            }
        }
    }
    let in_batch = |k: u64| batch.get(&k).copied().unwrap_or(0);
    let stored = stored(&keys);
    let docs = keys
        .iter()
        .zip(&stored)
        .map(|(ks, st)| {
            let mut d = LineDocs::default();
            for (k, &(e, t, s)) in ks.iter().zip(st) {
                let (e, t, s) = k.map_or((0, 0, 0), |k| {
                    let b = in_batch(k.exact);
                    (e + b, t + in_batch(k.template), s + b)
                });
                d.exact.push(e);
                d.template.push(t);
                d.exact_stored.push(s);
            }
            d
        })
        .collect();
    BatchLines {
        keys,
        docs,
        visible,
    }
}

/// The veto's sketch of `text`, whose lines have `keys` and are held by `line_docs`
/// documents (`stored_docs` of them stored or in its batch: [`line_docs_batch`]), given its
/// normalised whole
/// ([`VetoRules::normalize_whole`]); `whole` is `None` when its distinct part is put off
/// ([`super::sketch::Deferred`]), which then keeps the line counts to compute it later.
pub(super) fn veto_sketch(
    rules: &VetoRules,
    text: &str,
    whole: Option<&str>,
    keys: &[Option<LineKey>],
    line_docs: Vec<u32>,
    stored_docs: &[u32],
) -> VetoSketch {
    let distinct = whole.and_then(|w| rules.distinct_part_normalized(text, w, &line_docs));
    let min_docs = rules.options().min_docs;
    let (whole_sample, own) = whole.map_or((None, None), |w| {
        by_content(rules, text, w, keys, &line_docs, distinct.is_some())
    });
    let mut lines: Vec<u64> = keys
        .iter()
        .flatten()
        .flat_map(|k| [k.exact, k.template])
        .collect();
    lines.sort_unstable();
    lines.dedup();
    // What it may share with a document stored before its template was known: lines that
    // neither `min_docs` stored documents nor `UNLEARNED_TEMPLATE_DOCS` documents in all hold
    // (`SketchIndex::find` vetoes such a document on the others).
    let mut distinct_lines: Vec<u64> = keys
        .iter()
        .zip(stored_docs.iter().zip(&line_docs))
        .filter(|(_, (&s, &n))| s < min_docs && n < UNLEARNED_TEMPLATE_DOCS)
        .filter_map(|(k, _)| k.map(|k| k.exact))
        .collect();
    distinct_lines.sort_unstable();
    distinct_lines.dedup();
    // A thin page with repeated lines may be template-only once they are held by more
    // documents: which they are is kept to ask again.
    let thin = (whole.is_some() && distinct.is_none())
        .then(|| rules.thin_repeated(text, keys, &line_docs))
        .flatten()
        .map(|r| ThinPage::of(&r, &lines));
    let part_repeated = part_repeated(rules, keys, &line_docs, &lines, distinct.as_ref());
    VetoSketch {
        whole_sample,
        own,
        part_repeated,
        had_repeats: line_docs.iter().any(|&n| n >= min_docs),
        thin,
        lines,
        distinct_lines,
        part: distinct.as_ref().map(|d| rules.kept(d)),
        distinct,
        line_docs: if whole.is_none() {
            line_docs
        } else {
            Vec::new()
        },
    }
}

/// Under [`by_content`](crate::template_veto::TemplateVetoOptions::by_content), for a document
/// with a distinct part (`distinct`, not template-only) whose lines have `keys`
/// and are held by `line_docs` documents: which of its counted lines (`lines`,
/// [`VetoSketch::lines`]) were repeated, so that the index can tell when its part goes stale
/// ([`VetoRules::stands_with_stale_part`]).
pub(super) fn part_repeated(
    rules: &VetoRules,
    keys: &[Option<LineKey>],
    line_docs: &[u32],
    lines: &[u64],
    distinct: Option<&DistinctSketch>,
) -> Option<ThinPage> {
    if !rules.options().by_content || distinct.is_none_or(|d| d.signature.is_empty()) {
        return None;
    }
    Some(ThinPage::of(&rules.repeated_lines(keys, line_docs), lines))
}

/// What a match is judged by when one side was stored before any of its lines was repeated
/// ([`VetoRules::vetoed_by_content`], under
/// [`by_content`](crate::template_veto::TemplateVetoOptions::by_content)): a document without
/// repeated lines, with two counted lines or more (`keys`, held by `line_docs` documents), keeps its whole
/// text's sample (`whole` normalised; a page of one line has no template to share); one
/// with a distinct part (`has_part`) brings its own lines to the check.
pub(super) fn by_content(
    rules: &VetoRules,
    text: &str,
    whole: &str,
    keys: &[Option<LineKey>],
    line_docs: &[u32],
    has_part: bool,
) -> (Option<PackedBottomK>, Option<OwnLines>) {
    let guard = rules.options().by_content && rules.options().contained_above.is_some();
    let repeated = rules.any_repeated(line_docs);
    let counted = keys.iter().flatten().count();
    let sample = (guard && !repeated && counted >= 2).then(|| rules.whole_sample(whole));
    let own = (guard && has_part).then(|| rules.own_lines(text, whole, keys, line_docs));
    (sample, own)
}

#[cfg(test)]
mod tests;
