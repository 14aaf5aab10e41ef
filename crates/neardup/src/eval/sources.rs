//! Where planted sets get their text: the `text` field of a JSONL corpus, or the paragraphs of
//! a plain text.

use std::path::Path;

use super::{Bucket, Kind, SourceDoc, Truth};

/// Up to `limit` texts of a JSONL file (the `text` field of each line that has one; other
/// lines are passed over), each cut to `max_chars` characters, labelled `<file name>#<n>`.
///
/// # Errors
/// The file cannot be read.
pub fn jsonl_sources(
    path: &Path,
    limit: usize,
    max_chars: usize,
) -> std::io::Result<Vec<SourceDoc>> {
    let text = std::fs::read_to_string(path)?;
    let name = path
        .file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned());
    Ok(text
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| {
            v["text"]
                .as_str()
                .map(|t| t.chars().take(max_chars).collect())
        })
        .take(limit)
        .enumerate()
        .map(|(i, text)| SourceDoc {
            label: format!("{name}#{i}"),
            text,
        })
        .collect())
}

/// The paragraphs (separated by blank lines) of `text` longer than `min_bytes` once trimmed,
/// labelled `<label>#<n>`.
pub fn paragraph_sources(text: &str, label: &str, min_bytes: usize) -> Vec<SourceDoc> {
    text.split("\n\n")
        .filter(|p| p.trim().len() > min_bytes)
        .enumerate()
        .map(|(i, p)| SourceDoc {
            label: format!("{label}#{i}"),
            text: p.to_string(),
        })
        .collect()
}

/// Sources cut from a small text: each sentence of at least eight characters (split after
/// `。！？.!?`; short texts) and runs of eight consecutive sentences, one a line (long texts).
/// Labels are `<label>#s<i>` and `<label>#r<i>`. For tests and examples that must run on a
/// few kilobytes of bundled text.
///
/// ```
/// let s = neardup::eval::sentence_sources("天下大势，分久必合，合久必分。周末七国分争，并入于秦。", "t");
/// assert_eq!(s.len(), 3); // two sentences and one run
/// assert_eq!(s[2].text, "天下大势，分久必合，合久必分。\n周末七国分争，并入于秦。");
/// ```
pub fn sentence_sources(text: &str, label: &str) -> Vec<SourceDoc> {
    let sentences: Vec<&str> = text
        .split_inclusive(['。', '！', '？', '.', '!', '?'])
        .map(str::trim)
        .filter(|s| s.chars().count() >= 8)
        .collect();
    let mut out: Vec<SourceDoc> = sentences
        .iter()
        .enumerate()
        .map(|(i, s)| SourceDoc {
            label: format!("{label}#s{i}"),
            text: s.to_string(),
        })
        .collect();
    out.extend(sentences.chunks(8).enumerate().map(|(i, run)| SourceDoc {
        label: format!("{label}#r{i}"),
        text: run.join("\n"),
    }));
    out
}

/// The truth of a set of real documents whose known near-duplicate pairs are listed as JSONL
/// lines `{"a": id, "b": id}` (the `pairs_*.jsonl` files): each document's group is its
/// connected component over the listed pairs (pairs naming an unknown id are passed over).
/// Every document is of kind [`Kind::Unique`] in the long bucket: only the groups are scored.
pub fn pair_truth(ids: &[&str], pairs_jsonl: &str) -> Vec<Truth> {
    let index: std::collections::HashMap<&str, usize> =
        ids.iter().enumerate().map(|(i, &id)| (id, i)).collect();
    let mut group: Vec<usize> = (0..ids.len()).collect();
    fn root(g: &mut [usize], mut x: usize) -> usize {
        while g[x] != x {
            g[x] = g[g[x]];
            x = g[x];
        }
        x
    }
    for l in pairs_jsonl.lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(l) else {
            continue;
        };
        if let (Some(&a), Some(&b)) = (
            v["a"].as_str().and_then(|a| index.get(a)),
            v["b"].as_str().and_then(|b| index.get(b)),
        ) {
            let (ra, rb) = (root(&mut group, a), root(&mut group, b));
            group[ra] = rb;
        }
    }
    (0..ids.len())
        .map(|i| Truth {
            group: root(&mut group, i) as u32,
            kind: Kind::Unique,
            bucket: Bucket::Long,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonl_and_paragraphs() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.jsonl");
        std::fs::write(
            &p,
            "{\"text\":\"abcdef\"}\nnot json\n{\"id\":1}\n{\"text\":\"xyz\"}\n",
        )
        .unwrap();
        let s = jsonl_sources(&p, 10, 4).unwrap();
        assert_eq!(
            s.iter()
                .map(|d| (d.label.as_str(), d.text.as_str()))
                .collect::<Vec<_>>(),
            [("c.jsonl#0", "abcd"), ("c.jsonl#1", "xyz")]
        );
        assert!(jsonl_sources(&dir.path().join("missing"), 1, 1).is_err());
        let p = paragraph_sources(
            "a long enough paragraph\n\nshort\n\nanother long one here",
            "f",
            8,
        );
        assert_eq!(p.len(), 2);
        assert_eq!(p[1].label, "f#1");
        let t = pair_truth(
            &["a", "b", "c", "d"],
            "{\"a\":\"a\",\"b\":\"c\"}\n{\"a\":\"c\",\"b\":\"x\"}\n",
        );
        let g: Vec<u32> = t.iter().map(|t| t.group).collect();
        assert_eq!(g[0], g[2]);
        assert!(g[0] != g[1] && g[1] != g[3] && g[0] != g[3]);
    }
}
