//! A text's *body*: the text without its template lines, searched when the whole text finds
//! no match and, under [`TemplateVeto::with_body_index`](super::TemplateVeto::with_body_index),
//! indexed beside it.

use super::VetoRules;
use crate::features::is_alphanumeric;

impl VetoRules {
    /// The *body* of `text` (its lines [`lines_of`](VetoRules::lines_of)) ([`TemplateVetoOptions::strip_template_share`](super::TemplateVetoOptions::strip_template_share)): its lines held by
    /// fewer than [`TemplateVetoOptions::template_docs`](super::TemplateVetoOptions::template_docs) documents (`template_docs[i]`: how
    /// many hold line `i` by its [`LineKey::template`](super::LineKey::template) key, 0 for a line too short to count).
    /// `None` when the option is off, when the template lines hold less than the share of the
    /// text's letters and digits, or when nothing with a letter or digit is left.
    pub fn body(&self, text: &str, template_docs: &[u32]) -> Option<String> {
        let share = self.opts.strip_template_share?;
        let floor = self.opts.template_docs;
        if !template_docs.iter().any(|&n| n >= floor) {
            return None;
        }
        let text = self.lines_of(text);
        // The share first, from the lines' letters; the body only when it counts.
        let letters = |s: &str| s.chars().filter(|&c| is_alphanumeric(c)).count();
        let (mut kept, mut all) = (0usize, 0usize);
        for (line, &n) in text.lines().zip(template_docs) {
            let l = letters(line);
            all += l;
            if n < floor {
                kept += l;
            }
        }
        let template = 1.0 - kept as f64 / all.max(1) as f64;
        if kept == 0 || template < share {
            return None;
        }
        let mut out = String::with_capacity(text.len());
        for (line, &n) in text.lines().zip(template_docs) {
            if n < floor {
                out.push_str(line);
                out.push('\n');
            }
        }
        Some(out)
    }

    /// Whether the body of `text` may be *indexed*: at least
    /// [`TemplateVetoOptions::min_distinct_chars`](super::TemplateVetoOptions::min_distinct_chars)
    /// of its letters and digits lie in lines held by fewer than
    /// [`TemplateVetoOptions::min_docs`](super::TemplateVetoOptions::min_docs) documents
    /// (`line_docs[i]`, by the exact key). A body made only of repeated lines — an ad or a
    /// counter line that has not yet reached `template_docs` documents, around a table rule
    /// with no letters — would otherwise be found inside every text that carries the same
    /// ad.
    pub fn body_is_own(&self, text: &str, line_docs: &[u32], template_docs: &[u32]) -> bool {
        let mut own = 0usize;
        let text = self.lines_of(text);
        for ((line, &n), &t) in text.lines().zip(line_docs).zip(template_docs) {
            if t < self.opts.template_docs && n < self.opts.min_docs {
                own += line.chars().filter(|&c| is_alphanumeric(c)).count();
                if own >= self.opts.min_distinct_chars {
                    return true;
                }
            }
        }
        false
    }
}
