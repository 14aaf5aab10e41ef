use proptest::prelude::*;

use super::*;

const SENTENCES: [&str; 8] = [
    "天下大势，分久必合，合久必分。",
    "周末七国分争，并入于秦。",
    "及秦灭之后，楚、汉分争，又并入于汉。",
    "汉朝自高祖斩白蛇而起义，一统天下。",
    "后来光武中兴，传至献帝，遂分为三国。",
    "推其致乱之由，殆始于桓、灵二帝。",
    "桓帝禁锢善类，崇信宦官。",
    "及桓帝崩，灵帝即位，大将军窦武、太傅陈蕃共相辅佐。",
];

fn index_with(opts: &PassageOptions, docs: &[String]) -> PassageIndex {
    let mut index = PassageIndex::new(opts.clone());
    for (i, d) in docs.iter().enumerate() {
        index.insert(i as u32, &PassageSketch::of_stored(d, opts));
    }
    index
}

fn index_of(docs: &[String]) -> PassageIndex {
    index_with(&PassageOptions::default(), docs)
}

fn probe(text: &str) -> PassageSketch {
    PassageSketch::of_probe(text, &PassageOptions::default())
}

#[test]
fn fragments_end_at_sentence_ends_and_line_breaks() {
    let texts = |t: &str, breaks: &[usize]| {
        let f = Fragments::of(t, breaks);
        (0..f.ranges.len())
            .map(|i| f.text(i).to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(
        texts("Call me Ishmael. Some years ago\nnever mind how long!", &[]),
        ["CallmeIshmael", "Someyearsago", "nevermindhowlong"]
    );
    assert_eq!(texts("。。\n", &[]), Vec::<String>::new());
    // A break where white space holding a line break was folded into one space.
    assert_eq!(
        texts("some years ago never mind", &[14]),
        ["someyearsago", "nevermind"]
    );
}

#[test]
fn quote_after_an_attribution_is_found_in_its_source() {
    let index = index_of(&[SENTENCES.concat(), SENTENCES[4..].concat()]);
    let v = index
        .find(&probe(&format!(
            "罗贯中说：“{}{}”",
            SENTENCES[1], SENTENCES[2]
        )))
        .expect("found");
    assert_eq!((v.of, v.stage), (0, Stage::Passage));
    // An English quote cut inside its last sentence, the attribution after it.
    let text = "It was the best of times, it was the worst of times. It was the age of wisdom, \
                it was the age of foolishness. It was the epoch of belief.";
    let index = index_of(&[text.to_lowercase()]);
    let quote = "it was the best of times, it was the worst of times. it was the age of wisdom, \
                 it was the age (quoted by dickens)";
    assert!(
        index.find(&probe(quote)).is_none(),
        "attribution past a cut"
    );
    let quote = "\"it was the best of times, it was the worst of times. it was the age of wisdom, \
                 it was the age of foolishness.\" (quoted by dickens)";
    assert_eq!(index.find(&probe(quote)).map(|v| v.of), Some(0));
}

#[test]
fn a_fragment_held_by_many_documents_counts_for_none() {
    // The same sentence closes five different pages: it names no source.
    let docs: Vec<String> = (0..5)
        .map(|i| {
            format!(
                "{}本页面由自动化工具生成，请勿直接编辑本页面。",
                SENTENCES[i]
            )
        })
        .collect();
    let quote = probe("“本页面由自动化工具生成，请勿直接编辑本页面。”");
    assert_eq!(index_of(&docs[..1]).find(&quote).map(|v| v.of), Some(0));
    // By default (`max_holders` 1) two holders are already too many.
    assert!(index_of(&docs[..2]).find(&quote).is_none());
    // Up to four holders allowed: the earliest of four, none of five.
    let opts = PassageOptions {
        max_holders: 4,
        ..PassageOptions::default()
    };
    assert_eq!(
        index_with(&opts, &docs[..4]).find(&quote).map(|v| v.of),
        Some(0)
    );
    assert!(index_with(&opts, &docs).find(&quote).is_none());
}

#[test]
fn too_little_of_the_text_found_is_no_match() {
    let index = index_of(&[SENTENCES.concat()]);
    // Half the text is a comment of its own.
    let text = format!(
        "这段话我读了很多遍，每次都有新的体会，真是写得太好了。{}",
        SENTENCES[6]
    );
    assert!(index.find(&probe(&text)).is_none());
    // Below the least number of letters.
    assert!(index.find(&probe("桓帝禁锢善类。")).is_none());
}

proptest! {
    /// Consecutive whole sentences of a stored document, with an attribution of at most a
    /// fifth of the letters before them, are found in it (or in an earlier document holding
    /// as many of them); a text sharing no fragment with any stored document never is.
    #[test]
    fn whole_sentences_are_found_and_unrelated_text_never(
        start in 0usize..8, len in 1usize..4, attributed in any::<bool>(), split in 0usize..8,
    ) {
        let end = (start + len).min(8);
        let index = index_of(&[SENTENCES[..split].concat(), SENTENCES[split..].concat()]);
        let body = SENTENCES[start..end].concat();
        let quote = if attributed { format!("某某说：“{body}”") } else { body.clone() };
        let found = index.find(&probe(&quote));
        let inside = |d: usize| if d == 0 { end <= split } else { start >= split };
        // The attribution's three letters are at most a fifth of the quote's.
        let short = attributed && body.chars().filter(|c| is_han(*c)).count() < 12;
        if short {
            prop_assert!(found.is_none());
        } else if inside(0) || inside(1) {
            let v = found.expect("found");
            prop_assert!(inside(v.of as usize));
            prop_assert!(v.similarity.unwrap() >= 0.8);
        } else if let Some(v) = found {
            // Across the two documents: one holds at least 80 % of it.
            prop_assert!(v.similarity.unwrap() >= 0.8);
        }
        let unrelated = format!("某某说：“{}”", body.chars().rev().collect::<String>());
        prop_assert!(index.find(&probe(&unrelated)).is_none());
    }
}

#[test]
fn options_out_of_range_are_named() {
    let d = PassageOptions::default;
    for (bad, name) in [
        (
            PassageOptions {
                min_share: 1.5,
                ..d()
            },
            "passages.min_share",
        ),
        (
            PassageOptions {
                max_holders: 0,
                ..d()
            },
            "passages.max_holders",
        ),
        (
            PassageOptions {
                min_fragment: 0,
                ..d()
            },
            "passages.min_fragment",
        ),
    ] {
        let e = bad.check().unwrap_err().to_string();
        assert!(e.contains(name), "{e}");
    }
}

/// Regression: an attribution of exactly a fifth of the letters (3 of 15) was refused, the
/// probes' bound computed as `floor(0.2 · 15)` = 2 in floating point.
#[test]
fn an_attribution_of_exactly_a_fifth_is_allowed() {
    let index = index_of(&[SENTENCES.concat()]);
    let v = index.find(&probe(&format!("某某说：“{}”", SENTENCES[0])));
    assert_eq!(v.map(|v| (v.of, v.similarity)), Some((0, Some(0.8))));
}

/// The spec's test vectors (docs/fingerprint-spec.md, "Passages v1"): a fragment's key is the
/// XXH3-64 of its letters and digits, UTF-8.
#[test]
fn passage_keys_are_the_xxh3_of_a_fragments_letters() {
    let s = PassageSketch::of_stored(
        "天下大势，分久必合，合久必分。call me ishmael. hi!",
        &PassageOptions::default(),
    );
    assert_eq!(
        xxh3("天下大势分久必合合久必分".as_bytes()),
        0xf05f7a8129eb4ac0
    );
    assert_eq!(xxh3("callmeishmael".as_bytes()), 0x9d8a6a932b65994e);
    // `hi` is shorter than `min_fragment` (8): not a key. Keys are in the text's order.
    assert_eq!(s.keys(), [0xf05f7a8129eb4ac0, 0x9d8a6a932b65994e]);
}

/// A quote is one run of its source: a page whose own body lies between a header and a footer
/// it shares with a stored page is not a quote of it, nor is a text made of the source's
/// sentences out of their order or with one left out.
#[test]
fn only_a_run_of_the_source_is_a_quote() {
    let header = "欢迎访问本站，这里有最新最全的技术文章。\n请登录后发表评论，遵守社区规范。\n";
    let footer = "\n版权所有，未经许可不得转载本站任何内容。\n本站内容仅供学习交流使用，如有侵权请联系删除。";
    let index = index_of(&[format!("{header}{}{footer}", SENTENCES[..4].concat())]);
    let page = format!("{header}今天学习了新的知识。{footer}");
    assert!(index.find(&probe(&page)).is_none(), "own body between");
    let index = index_of(&[SENTENCES.concat()]);
    let shuffled = format!("{}{}{}", SENTENCES[2], SENTENCES[1], SENTENCES[3]);
    assert!(index.find(&probe(&shuffled)).is_none(), "out of order");
    let gap = format!("{}{}{}", SENTENCES[1], SENTENCES[3], SENTENCES[4]);
    assert!(index.find(&probe(&gap)).is_none(), "a sentence left out");
    let run = format!("{}{}{}", SENTENCES[2], SENTENCES[3], SENTENCES[4]);
    assert_eq!(index.find(&probe(&run)).map(|v| v.of), Some(0));
}

/// The fragments by their definition, a character at a time: letters and digits kept, a
/// fragment ended by a sentence end, a line break or a break offset, empty ones left out.
fn fragments_by_definition(text: &str, breaks: &[usize]) -> (Vec<String>, u32, u32) {
    let (mut out, mut cur, mut count, mut han) = (Vec::new(), String::new(), 0, 0);
    for (at, c) in text.char_indices() {
        if breaks.contains(&at) && !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
        if ends_fragment(c) {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else if c.is_alphanumeric() {
            cur.push(c);
            count += 1;
            han += u32::from(is_han(c));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    (out, count, han)
}

proptest! {
    /// `Fragments::cut` (bytes copied, ideographs by their lead bytes) equals the definition.
    #[test]
    fn fragments_equal_their_definition(
        v in proptest::collection::vec(proptest::sample::select(vec![
            'a', 'Z', '7', ' ', '.', '!', '?', '\n', '\r', '中', '丁', '龥', '㐀', '。', '｡',
            '！', '？', '，', 'é', '٣', 'ア', '𠀀', '\u{3000}', '\u{E000}', '€',
        ]), 0..60),
        cuts in proptest::collection::vec(0usize..60, 0..4),
    ) {
        let text: String = v.into_iter().collect();
        let mut breaks: Vec<usize> = cuts
            .into_iter()
            .filter_map(|k| text.char_indices().nth(k).map(|(at, _)| at))
            .collect();
        breaks.sort_unstable();
        breaks.dedup();
        let f = Fragments::of(&text, &breaks);
        let got: Vec<String> = (0..f.ranges.len()).map(|i| f.text(i).to_string()).collect();
        let (want, count, han) = fragments_by_definition(&text, &breaks);
        prop_assert_eq!(&got, &want);
        prop_assert_eq!((f.count, f.han), (count, han));
        for (i, w) in want.iter().enumerate() {
            prop_assert_eq!(f.ranges[i].2 as usize, w.chars().count());
        }
    }
}
