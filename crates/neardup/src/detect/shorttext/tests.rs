//! The short path against its pairwise definitions and planted pairs.

use super::*;
use crate::minhash::MIN_FROZEN;

fn detector(containment: bool) -> ShortTextDetector {
    let fp = Fingerprinter::new(crate::FingerprintConfig::default()).unwrap();
    let opts = ShortTextOptions {
        containment: containment.then(ContainmentOptions::default),
        ..ShortTextOptions::default()
    };
    ShortTextDetector::new(fp, opts).unwrap()
}

fn matches(d: &mut ShortTextDetector, a: &str, b: &str) -> Vec<Verdict> {
    let sa = d.sketch(a).unwrap();
    d.insert(0, sa);
    d.find(&d.sketch(b).unwrap())
}

/// A stream of short texts that share a phrase made every new one a candidate of
/// thousands of stored ones, each aligned: decisions slowed without bound. At most
/// `MAX_CONFIRMED` are confirmed — those sharing the most bands, so a near-duplicate among
/// thousands of texts sharing only the phrase is still found.
#[test]
fn candidates_confirmed_are_bounded_and_the_near_duplicate_is_still_found() {
    let mut d = detector(true);
    let phrase = "今天的天气预报说明天会下雨";
    for i in 0..2000u32 {
        let tail: String = (0..6)
            .map(|j| char::from_u32(0x4E00 + (i * 7 + j * 1013) % 20000).unwrap())
            .collect();
        let s = d.sketch(&format!("{phrase}，{tail}")).unwrap();
        d.insert(i, s);
    }
    let original = "我们周末一起去爬山吧，山顶的风景非常漂亮，记得带上相机和水";
    let s = d.sketch(original).unwrap();
    d.insert(5000, s);
    let query = format!(
        "{phrase}，{}",
        "我们周末一起去爬山吧，山顶的风景非常漂亮，记得带上相机和"
    );
    let q = d.sketch(&query).unwrap();
    assert!(
        d.lsh.candidates(&q.keys).len() > MAX_CONFIRMED,
        "the phrase makes thousands of candidates"
    );
    let found = d.find(&q);
    assert!(found.iter().any(|v| v.of == 5000), "{found:?}");
}

/// Batch dedup freezes the short path's band tables as they grow (`Detector::tidy`), which
/// holds them in a third of the bytes; what `find` answers stays the same.
#[test]
fn tidied_tables_find_what_growing_tables_find() {
    let mut d = detector(true);
    // Texts of twelve characters from an alphabet of forty, so that many share band keys.
    let text = |i: u32| -> String {
        (0..12)
            .map(|j| char::from_u32(0x4E00 + (i.wrapping_mul(2654435761) >> (j * 2)) % 40).unwrap())
            .collect()
    };
    let n = MIN_FROZEN as u32 + 2000;
    for i in 0..n {
        let s = d.sketch(&text(i)).unwrap();
        d.insert(i, s);
    }
    let queries: Vec<ShortSketch> = (0..300)
        .map(|i| {
            // A stored text with its middle character replaced, or a text never stored.
            let mut t: Vec<char> = text(i * 61).chars().collect();
            t[6] = '的';
            let t: String = if i % 3 == 0 {
                text(n + i)
            } else {
                t.into_iter().collect()
            };
            d.sketch(&t).unwrap()
        })
        .collect();
    let sorted = |mut v: Vec<Verdict>| {
        v.sort_by_key(|v| v.of);
        v
    };
    let before: Vec<Vec<Verdict>> = queries.iter().map(|q| sorted(d.find(q))).collect();
    let bytes = d.heap_bytes();
    d.tidy();
    assert!(
        d.heap_bytes() < bytes,
        "{} against {bytes} bytes",
        d.heap_bytes()
    );
    let after: Vec<Vec<Verdict>> = queries.iter().map(|q| sorted(d.find(q))).collect();
    assert_eq!(before, after);
    assert!(before.iter().filter(|v| !v.is_empty()).count() > 100);
}

/// Reposts with a comment, a forwarding marker or an attribution added (found 47 % of the
/// time on held-out short reviews, under the edit-distance measure alone) match by
/// containment, with the stage saying so; either order.
#[test]
fn reposts_match_by_containment() {
    let post = "今天终于把那本三国演义读完了，诸葛亮真是太令人佩服了";
    for repost in [
        format!("//@小明同学: 转发微博 好文，收藏了。{post}"),
        format!("{post}——转自晴天娃娃的微博（来源：网络）"),
        format!("说得太好了，转给大家看看：{post}#每日一句#"),
    ] {
        let mut plain = detector(false);
        assert!(matches(&mut plain, post, &repost).is_empty(), "{repost}");
        for (a, b) in [(post, repost.as_str()), (repost.as_str(), post)] {
            let mut d = detector(true);
            let v = matches(&mut d, a, b);
            assert_eq!(v.len(), 1, "{a} / {b}");
            assert_eq!(v[0].stage, crate::detect::Stage::Containment);
            assert_eq!(v[0].similarity, Some(1.0));
        }
    }
    let en = "the committee approved the budget for new roads and schools after a long debate";
    let mut d = detector(true);
    let v = matches(&mut d, en, &format!("RT @jsmith: {en} (via @news_bot)"));
    assert_eq!(v[0].stage, crate::detect::Stage::Containment);
}

/// Containment does not link texts that only share a phrase, texts too short to judge,
/// or a shorter text whose numbers the longer one lacks.
#[test]
fn containment_needs_most_of_the_shorter_text() {
    let mut d = detector(true);
    // One shared clause, the rest different.
    assert!(matches(
        &mut d,
        "滚滚长江东逝水，浪花淘尽英雄，是非成败转头空",
        "浪花淘尽英雄，今天我们去江边散步，看到很多游客在拍照留念"
    )
    .is_empty());
    let mut d = detector(true);
    // Under `han_min_chars` letters.
    assert!(matches(&mut d, "转发微博", "//@小明同学: 转发微博 好文").is_empty());
    let mut d = detector(true);
    // A verification code the longer text does not hold.
    assert!(matches(
        &mut d,
        "您的验证码是834921，五分钟内有效，请勿告诉他人",
        "【某某银行】您的验证码是106577，五分钟内有效，请勿告诉他人，谢谢"
    )
    .is_empty());
}

proptest::proptest! {
    /// The digit-run checks answer what comparing the collected runs answers.
    #[test]
    fn digit_run_checks_equal_collected_runs(
        a in proptest::collection::vec(proptest::sample::select(vec!['1', '2', '3', 'a', ' ', '中', '〇', '²', '٣', '①', '\u{4DFF}', '😀']), 0..24),
        b in proptest::collection::vec(proptest::sample::select(vec!['1', '2', '3', 'a', ' ', '中', '〇', '²', '٣', '①', '\u{4DFF}', '😀']), 0..24),
    ) {
        let (a, b): (String, String) = (a.into_iter().collect(), b.into_iter().collect());
        let runs = |t: &str| -> Vec<String> {
            t.split(|c: char| !crate::text::classes::is_numeric(c))
                .filter(|r| !r.is_empty())
                .map(str::to_owned)
                .collect()
        };
        proptest::prop_assert_eq!(same_numbers(&a, &b), runs(&a) == runs(&b));
        let theirs = runs(&b);
        proptest::prop_assert_eq!(
            numbers_contained(&a, &b),
            runs(&a).iter().all(|r| theirs.contains(r))
        );
    }
}

#[test]
fn numbers_contained_is_per_run() {
    assert!(numbers_contained("价格 12 元", "原价 15 元，现价 12 元"));
    assert!(!numbers_contained("价格 12 元", "价格 123 元"));
    assert!(numbers_contained("没有数字", "有 1 个数字"));
}

/// The shortcut for identical texts gives exactly what the edit-distance computation gives.
#[test]
fn identical_texts_shortcut_matches_levenshtein() {
    for t in [
        "",
        "a",
        "今天天气真好",
        "abc 123 def",
        &"长文本".repeat(200),
    ] {
        let full = levenshtein::normalized_similarity(t.chars(), t.chars());
        assert_eq!(similarity(Measure::Levenshtein, t, t, 2), full, "{t:?}");
        assert_eq!(full, 1.0);
    }
}

/// Regression: a short text on one side of the script cut (30 % Han: 2-grams in the Han key
/// space from there on, 3-grams in the other below) and its excerpt on the other side shared
/// no band key and were never compared, though the excerpt lies inside it verbatim (a
/// command line quoted from a Chinese how-to, an English ad added to a Chinese post). A text
/// near the cut is now also searched in the other space.
#[test]
fn an_excerpt_on_the_other_side_of_the_script_cut_is_found() {
    let post = "在终端里输入下面的命令就能挂载新的目录结构 mount -t overlay overlay -o lowerdir=/old upperdir=/new";
    let excerpt = "挂载新的目录结构 mount -t overlay overlay -o lowerdir=/old upperdir=/new";
    let shares = [post, excerpt].map(|t| crate::features::spaceless_share(t).unwrap());
    assert!(shares[0] >= 0.3 && shares[1] < 0.3, "{shares:?}");
    for band in [Some(SHORT_SCRIPT_BAND), None] {
        for (a, b) in [(post, excerpt), (excerpt, post)] {
            let mut d = detector(true);
            d.opts.script_band = band;
            let found = matches(&mut d, a, b);
            assert_eq!(
                !found.is_empty(),
                band.is_some(),
                "band {band:?}, {a:?} then {b:?}: {found:?}"
            );
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Searching the other key space near the script cut only adds matches: whatever a text
    /// finds without it, it finds with it, at the same similarity.
    #[test]
    fn the_script_band_only_adds_matches(
        texts in proptest::collection::vec(
            proptest::collection::vec(
                proptest::sample::select(vec![
                    "挂载", "目录", "命令", "终端", "新的", "结构", " mount", " overlay",
                    " lowerdir", " upper", " the", " new", " old", "输入",
                ]),
                6..24,
            ),
            2..8,
        ),
    ) {
        let texts: Vec<String> = texts.iter().map(|t| t.concat()).collect();
        let mut with = detector(true);
        let mut without = detector(true);
        without.opts.script_band = None;
        for (i, t) in texts.iter().enumerate() {
            let (sa, sb) = (with.sketch(t).unwrap(), without.sketch(t).unwrap());
            let (va, vb) = (with.find(&sa), without.find(&sb));
            for v in &vb {
                proptest::prop_assert!(va.contains(v), "{v:?} not in {va:?}");
            }
            with.insert(i as u32, sa);
            without.insert(i as u32, sb);
        }
    }
}

/// A script band that is not two shares in order is refused by name, on either path.
#[test]
fn a_bad_script_band_is_refused() {
    let fp = Fingerprinter::new(crate::FingerprintConfig::default()).unwrap();
    let short = ShortTextOptions {
        script_band: Some((0.6, 0.1)),
        ..ShortTextOptions::default()
    };
    let e = ShortTextDetector::new(fp.clone(), short)
        .unwrap_err()
        .to_string();
    assert!(e.contains("short script_band = (0.6, 0.1)"), "{e}");
    let long = crate::minhash::MinHashDetectorOptions {
        script_band: Some((0.2, 1.5)),
        ..Default::default()
    };
    let e = crate::minhash::MinHashDetector::new(fp, long)
        .unwrap_err()
        .to_string();
    assert!(e.contains("minhash script_band = (0.2, 1.5)"), "{e}");
}

/// Texts spilled to a file are confirmed as those held in memory: the same verdicts for
/// every text, with near-duplicates, reposts and quotes among them, and the same texts given
/// back, whether they were spilled from the start or after some were stored.
#[test]
fn spilled_texts_give_the_verdicts_of_texts_in_memory() {
    let dir = tempfile::tempdir().unwrap();
    // Groups of four: a text, a copy with one character replaced, a repost with a comment,
    // and an English line, all different from the other groups.
    let base = |i: u32| -> String {
        (0..24)
            .map(|j| char::from_u32(0x4E00 + (i * 131 + j * 977) % 20000).unwrap())
            .collect()
    };
    let texts: Vec<String> = (0..400u32)
        .map(|i| {
            let b = base(i / 4);
            match i % 4 {
                0 => b,
                1 => b.replacen(b.chars().nth(10).unwrap(), "好", 1),
                2 => format!("//@小明同学: 转发微博 {b}"),
                _ => format!(
                    "the quick brown fox {} jumps over the lazy dog number",
                    i / 4
                ),
            }
        })
        .collect();
    let mut memory = detector(true);
    let mut spilled = detector(true);
    spilled.spill_texts(dir.path());
    let mut late = detector(true);
    let mut found = 0;
    for (i, t) in texts.iter().enumerate() {
        let s = memory.sketch(t).unwrap();
        let verdicts = memory.find(&s);
        found += usize::from(!verdicts.is_empty());
        assert_eq!(verdicts, spilled.find(&s), "text {i}: {t}");
        assert_eq!(verdicts, late.find(&s), "text {i}: {t}");
        memory.insert(i as u32, s.clone());
        spilled.insert(i as u32, s.clone());
        late.insert(i as u32, s);
        if i == 100 {
            late.spill_texts(dir.path());
        }
    }
    assert!(found > 50, "{found} texts found a match");
    assert!(spilled.spilled_bytes() > 0 && late.spilled_bytes() > 0);
    for i in 0..texts.len() as u32 {
        assert_eq!(memory.text_of(i), spilled.text_of(i));
        assert_eq!(memory.text_of(i), late.text_of(i));
    }
    spilled.release_pages();
    assert_eq!(spilled.text_of(3), memory.text_of(3));
}
