//! A match with a page stored before any of its lines was repeated, judged by what each of the
//! two documents has that the other lacks.
//!
//! Online, the first pages of a new template are stored before the template is known: none of
//! their lines was repeated, so they have no distinct part, and line counts learn the template
//! only as more of its pages come — a site's own menu and footer no faster than the site's
//! pages. Until then, counts cannot tell another page of the template from a copy of the
//! stored page: both share most of its lines, and the lines they share are held by the few
//! documents answered as its duplicates. What tells them apart is the content of the lines
//! they do not share. A copy's own lines (an edited sentence, a reformatted paragraph, a
//! changed counter) lie inside the stored page; another page of the template has a sentence
//! of its own that the stored page does not hold, while the stored page has one of its own
//! too.
//!
//! So a page stored that way keeps a bottom-k sample of its whole text's character 3-grams
//! ([`VetoRules::whole_sample`]), and a document being checked the 3-grams of each of its own
//! lines ([`OwnLines`]: held by fewer than
//! [`min_docs`](super::TemplateVetoOptions::min_docs) documents). A match stands unless both
//! have own lines the other lacks and the checked document's lie outside the stored page
//! ([`VetoRules::vetoed_by_content`]).
//!
//! A page stored with a distinct part while its site's lines were held by only a few
//! documents kept them in its part; once they are template lines, every later page of the site
//! holds that part, so the containment guard's "their part lies in my whole" is no evidence
//! ([`VetoRules::stands_with_stale_part`]).
//!
//! Both only under [`by_content`](super::TemplateVetoOptions::by_content), off by default.

use super::{without_numerals, LineKey, VetoRules};
use crate::detect::containment::{shingle_set, BottomK, PackedBottomK};
use crate::detect::Verdict;
use crate::features::is_alphanumeric;

/// A match is vetoed only when the stored page's text outside the checked document is at
/// least this share of the checked document's own text outside the stored page (in character
/// 3-grams): each has text of its own in comparable amounts, as two pages of one template do.
/// A document that holds the stored one (an excerpt stored before its original) has next to
/// none. Chosen on the development split, seed 1, with the rule's first form (character
/// 5-grams): the online engine's matches with the first pages of a template gave ratios of
/// 0.64 and above but two, its matches of an article's copies 0.11 and below but two
/// (docs/quality.md, "Pages stored before any of their lines was repeated").
const OWN_TEXT_SHARE: f64 = 0.5;

/// The shingles both sides are compared by: character 3-grams, as the distinct part's
/// signature takes them (an edit of one character in a short line leaves most of its 3-grams,
/// few of its 5-grams).
const NGRAM: usize = 3;

/// How many of the checked document's own 3-grams the containment estimate counts as found
/// before it looks: with [`contained_above`](super::TemplateVetoOptions::contained_above) 0.5,
/// no veto on fewer than three sampled 3-grams, nor on one of four found.
const PRIOR_FOUND: usize = 2;

/// A document's own lines (counted, and held by fewer than
/// [`min_docs`](super::TemplateVetoOptions::min_docs) documents), each with its keys, its
/// letters and digits and its character 3-grams (normalised as the distinct part is, numerals
/// left out), and the 3-grams of the whole text.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct OwnLines {
    keys: Vec<LineKey>,
    letters: Vec<u32>,
    /// Line `i`'s 3-grams are `grams[ends[i - 1]..ends[i]]` (from 0 for the first), sorted.
    ends: Vec<u32>,
    grams: Vec<u32>,
    /// The shingles of the whole text (`whole`, as
    /// [`normalize_whole`](VetoRules::normalize_whole) gives it), sorted.
    whole: Vec<u32>,
}

impl OwnLines {
    /// Line `i`'s 3-grams.
    fn grams(&self, i: usize) -> &[u32] {
        let start = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        &self.grams[start..self.ends[i] as usize]
    }

    /// Bytes held on the heap.
    pub fn heap_bytes(&self) -> usize {
        self.keys.capacity() * std::mem::size_of::<LineKey>()
            + (self.letters.capacity()
                + self.ends.capacity()
                + self.grams.capacity()
                + self.whole.capacity())
                * 4
    }
}

impl VetoRules {
    /// The own lines of `text`, whose lines have `keys` ([`VetoRules::line_keys`]) and are
    /// held by `line_docs` documents.
    pub fn own_lines(
        &self,
        text: &str,
        whole: &str,
        keys: &[Option<LineKey>],
        line_docs: &[u32],
    ) -> OwnLines {
        let mut own = OwnLines {
            whole: shingle_set(whole, NGRAM),
            ..OwnLines::default()
        };
        for ((line, k), &n) in self.lines_of(text).lines().zip(keys).zip(line_docs) {
            let Some(k) = k.filter(|_| n < self.opts.min_docs) else {
                continue;
            };
            let kept = without_numerals(self.fp.normalize(line));
            own.keys.push(k);
            own.letters
                .push(kept.chars().filter(|&c| is_alphanumeric(c)).count() as u32);
            own.grams.extend(shingle_set(&kept, NGRAM));
            own.ends.push(own.grams.len() as u32);
        }
        own
    }

    /// The sample a document stored before any of its lines was repeated keeps of its whole
    /// text (`whole`, as [`normalize_whole`](Self::normalize_whole) gives it): the
    /// [`guard_sample`](super::TemplateVetoOptions::guard_sample) smallest hashes of its
    /// character 3-grams.
    pub fn whole_sample(&self, whole: &str) -> PackedBottomK {
        PackedBottomK::pack(&BottomK::new(
            &shingle_set(whole, NGRAM),
            self.opts.guard_sample,
        ))
    }

    /// Whether a match is vetoed by content, `verdict` between a document being checked — its
    /// distinct part `mine`, its own lines `own`, the keys of all its counted lines
    /// `my_lines` (sorted) — and a document stored before any of its lines was repeated,
    /// whose counted lines are `their_lines` (sorted), whose whole text's sample is
    /// `their_whole` ([`whole_sample`](Self::whole_sample)), and whose line of exact key `k`
    /// no other document holds when `their_own(k)` (neither a stored document nor one
    /// answered as a duplicate). The line counts' rule ([`stands_unlearned`](Self::stands_unlearned))
    /// decides the matches this does not veto.
    ///
    /// It vetoes when each has text of its own that the other lacks, in comparable amounts:
    /// the stored page has a line no other document holds (an article's copies, answered as
    /// its duplicates, repeat its lines; other pages of its template never its text) that the
    /// checked one lacks; the checked one's own lines that the stored one lacks (by either
    /// key: a changed counter is not lacking) have at least
    /// [`min_distinct_chars`](super::TemplateVetoOptions::min_distinct_chars) letters, and
    /// less than [`contained_above`](super::TemplateVetoOptions::contained_above) of their
    /// 3-grams lie inside the stored page (not an edit or a reformatted line); and the stored
    /// page's text outside the checked one is at least half that size (not an
    /// excerpt stored before its original). The two then agree on what they share alone:
    /// another page of the same template. Identical matches are never vetoed.
    #[allow(clippy::too_many_arguments)]
    pub fn vetoed_by_content(
        &self,
        verdict: &Verdict,
        mine: Option<&super::DistinctSketch>,
        own: &OwnLines,
        my_lines: &[u64],
        their_lines: &[u64],
        their_own: impl Fn(u64) -> bool,
        their_whole: &PackedBottomK,
    ) -> bool {
        if verdict.distance == Some(0) || verdict.similarity == Some(1.0) {
            return false;
        }
        let (Some(at_least), Some(_)) = (self.opts.contained_above, mine) else {
            return false;
        };
        // A line of theirs that no other document holds and the checked one lacks.
        let they_lack = their_lines
            .iter()
            .any(|&k| LineKey::is_exact(k) && my_lines.binary_search(&k).is_err() && their_own(k));
        if !they_lack {
            return false;
        }
        let held = |k: u64| their_lines.binary_search(&k).is_ok();
        let mut letters = 0usize;
        let mut lacking: Vec<u32> = Vec::new();
        for (i, k) in own.keys.iter().enumerate() {
            if !(held(k.exact) || held(k.template)) {
                letters += own.letters[i] as usize;
                lacking.extend_from_slice(own.grams(i));
            }
        }
        if letters < self.opts.min_distinct_chars {
            return false;
        }
        lacking.sort_unstable();
        lacking.dedup();
        // The share of its 3-grams within the sample's reach that the stored page holds, with
        // two found added: a handful of sampled 3-grams (a short line against a long page,
        // whose sample reaches a small share of the hash space) is not evidence enough.
        let (found, seen) = their_whole.set_within_reach(&lacking);
        ((found + PRIOR_FOUND) as f64) < at_least * (seen + PRIOR_FOUND) as f64
            && their_whole.outside_set(&own.whole) >= OWN_TEXT_SHARE * lacking.len() as f64
    }
}

impl VetoRules {
    /// [`stands`](Self::stands) against a document whose distinct part has gone stale: most
    /// lines of its part when it was stored (not yet repeated) are template lines now (held by
    /// [`min_docs`](super::TemplateVetoOptions::min_docs) stored documents, or by
    /// [`UNLEARNED_TEMPLATE_DOCS`](super::UNLEARNED_TEMPLATE_DOCS) counting the duplicates
    /// answered) — a site's menu, related-articles list and footer, stored with an early page
    /// of the site before more of its pages came. Such a part holds what every later page of the site holds, so the
    /// containment guard's direction "their part lies in my whole" is not evidence and is not
    /// asked; the parts' agreement and "my part lies in their whole" still are.
    pub fn stands_with_stale_part(
        &self,
        verdict: &Verdict,
        mine: Option<&super::DistinctSketch>,
        theirs: Option<&super::DistinctPart>,
    ) -> bool {
        self.stands_guarded(verdict, mine, theirs, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template_veto::TemplateVetoOptions;
    use crate::{FingerprintConfig, Fingerprinter};

    fn rules() -> VetoRules {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        VetoRules::new(fp, TemplateVetoOptions::default()).unwrap()
    }

    const TEMPLATE: &str = "Editor's note: the views expressed here are the author's own.\n\
        Copyright: no part of this article may be reproduced without permission.\n\
        Follow us to receive a daily selection of articles and exclusive material.\n";

    fn page(body: &str) -> String {
        format!("{body}\n{TEMPLATE}")
    }

    /// The keys of `text`'s counted lines, sorted and distinct, as an index keeps them.
    fn lines(r: &VetoRules, text: &str) -> Vec<u64> {
        r.counted_lines(text)
    }

    /// Whether a match of `checked` with `stored` (stored before any of its lines was
    /// repeated) stands, every line but the template's held by one document.
    fn stands(checked: &str, stored: &str) -> bool {
        let r = rules();
        let keys = r.line_keys(checked);
        // The template's lines are repeated; the body is the checked page's own.
        let docs: Vec<u32> = checked
            .lines()
            .map(|l| if TEMPLATE.contains(l) { 3 } else { 1 })
            .collect();
        let own = r.own_lines(checked, &r.normalize_whole(checked), &keys, &docs);
        let mine = crate::template_veto::DistinctSketch {
            signature: vec![1; 4],
            guard: None,
        };
        let verdict = Verdict {
            of: 0,
            distance: None,
            similarity: Some(0.8),
            stage: crate::detect::Stage::Minhash,
        };
        let their_lines = lines(&r, stored);
        let stored_own: Vec<u64> = r
            .line_keys(stored)
            .into_iter()
            .zip(stored.lines())
            .filter(|(_, l)| !TEMPLATE.contains(l))
            .filter_map(|(k, _)| k.map(|k| k.exact))
            .collect();
        !r.vetoed_by_content(
            &verdict,
            Some(&mine),
            &own,
            &lines(&r, checked),
            &their_lines,
            |k| stored_own.contains(&k),
            &r.whole_sample(&r.normalize_whole(stored)),
        )
    }

    #[test]
    fn another_page_of_the_template_is_vetoed() {
        let a = page("The committee approved the budget for new roads and schools this spring.");
        let b = page("A storm closed the mountain pass for three days during the last winter.");
        assert!(!stands(&b, &a));
    }

    #[test]
    fn an_edited_copy_stands() {
        let a = page("The committee approved the budget for new roads and schools this spring.");
        let b = page("The committee approved the budget for new roads and bridges this spring.");
        assert!(stands(&b, &a));
    }

    #[test]
    fn a_copy_with_a_changed_counter_stands() {
        let a = page("Posted on 2011-05-10, read 3004 times by visitors of the site today.");
        let b = page("Posted on 2011-05-12, read 3107 times by visitors of the site today.");
        assert!(stands(&b, &a));
    }

    #[test]
    fn a_copy_that_adds_a_line_stands_and_so_does_its_original() {
        let a = page("The committee approved the budget for new roads and schools this spring.");
        let b = format!("Advertisement: learn a new language in thirty days with us.\n{a}");
        // The stored page has nothing the copy lacks.
        assert!(stands(&b, &a));
        // The stored copy's own line (the ad) is one the original lacks; the original has
        // no line the copy lacks.
        assert!(stands(&a, &b));
    }

    /// A stale part (a site's lines stored with an early page) lies in every later page of the
    /// site: the guard's "their part lies in my whole" lets the match stand, the stale form does
    /// not; "my part lies in their whole" still does in both.
    #[test]
    fn a_stale_part_is_not_evidence_that_the_checked_page_holds_the_stored_one() {
        let r = rules();
        let verdict = Verdict {
            of: 0,
            distance: None,
            similarity: Some(0.8),
            stage: crate::detect::Stage::Minhash,
        };
        let part = |text: &str, whole: &str| {
            let t = r.normalize_whole(text);
            let w = r.normalize_whole(whole);
            crate::template_veto::DistinctSketch {
                signature: (0..128)
                    .map(|i| i as u32 * 7919 + text.len() as u32)
                    .collect(),
                guard: Some(crate::template_veto::GuardSets {
                    whole: crate::detect::containment::shingle_set(&w, 5),
                    part: crate::detect::containment::shingle_set(&t, 5),
                }),
            }
        };
        let site = "Reading Room: home, top charts, sign in, contact, forum, help and blog.";
        let stored_own = "Has he dined, canst thou tell? For I would not speak with him.";
        let later_own = "Another says whip him out, and the third says hang him up there.";
        // The stored page's part: its sentence and the site's line (not yet repeated then).
        let theirs = r.kept(&part(
            &format!("{stored_own}\n{site}"),
            &format!("{stored_own}\n{site}\n{TEMPLATE}"),
        ));
        // A later page of the site: its part is its sentence alone.
        let mine = part(later_own, &format!("{later_own}\n{site}\n{TEMPLATE}"));
        assert!(r.stands(&verdict, Some(&mine), Some(&theirs)));
        assert!(!r.stands_with_stale_part(&verdict, Some(&mine), Some(&theirs)));
        // A copy of the stored page whose part (an edited sentence) lies in the stored page.
        let edited = stored_own.replace("thou", "you");
        let copy = part(
            &format!("{edited}\n{stored_own}"),
            &format!("{edited}\n{stored_own}\n{site}\n{TEMPLATE}"),
        );
        assert!(r.stands_with_stale_part(&verdict, Some(&copy), Some(&theirs)));
    }
}
