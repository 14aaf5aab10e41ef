//! MinHash, LSH banding, I-Match, exact digest, short-text path and the `auto` policy: spec
//! test vectors and detectors against brute force (MinHash's statistical properties are in
//! `minhash`).

use neardup::detect::{Detector, Verdict};
use neardup::exact::ExactDetector;
use neardup::imatch::{IMatchDetector, IMatchOptions, IMatcher};
use neardup::minhash::{
    band_key, jaccard_estimate_bits, jaccard_sorted, keep_low_bits, Confirm, LshOptions,
    MinHashDetector, MinHashDetectorOptions, MinHashOptions, MinHasher, Scheme,
};
use neardup::policy::{AutoDetector, LongMethod, Path, PolicyOptions};
use neardup::shorttext::{
    confirmation_text, similarity, Measure, ShortTextDetector, ShortTextOptions,
};
use neardup::{FingerprintConfig, Fingerprinter};
use proptest::prelude::*;

pub(super) fn fp() -> Fingerprinter {
    Fingerprinter::new(FingerprintConfig::default()).unwrap()
}

/// SplitMix64, for deterministic test data.
pub(super) struct Rng(neardup::index::random::SplitMix64);
impl Rng {
    pub(super) fn new(seed: u64) -> Rng {
        Rng(neardup::index::random::SplitMix64::new(seed))
    }
    pub(super) fn next(&mut self) -> u64 {
        self.0.next()
    }
    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

// ---------------------------------------------------------------- spec vectors

pub(super) fn hasher(scheme: Scheme, seed: u64) -> MinHasher {
    MinHasher::new(&MinHashOptions {
        scheme,
        seed,
        ..Default::default()
    })
    .unwrap()
}

/// The vectors of docs/fingerprint-spec.md "MinHash v2", "MinHash v1", "I-Match v1", "Exact
/// digest v1". If one changes, the corresponding version must.
#[test]
fn spec_vectors() {
    assert_eq!(MinHashOptions::default().scheme, Scheme::CodePointSketch);
    // (scheme, [Chinese char 5-grams: sig[..4], band key], [English word 3-grams: same])
    let vectors = [
        (
            // v3: code-point keys of character n-grams; word n-grams keep v2's keys.
            Scheme::CodePointSketch,
            (
                [1575877143, 4074045402, 3460110966, 3706690065],
                0x53c335f35d420bc0,
            ),
            (
                [2400092844, 2585675447, 4048994095, 3718869077],
                0x8382603ef8184207,
            ),
        ),
        (
            Scheme::SimilaritySketch,
            (
                [1254281, 1070732289, 2104578583, 1799894271],
                0x62c2c6e313314e46,
            ),
            (
                [2400092844, 2585675447, 4048994095, 3718869077],
                0x8382603ef8184207,
            ),
        ),
        (
            Scheme::Permutations,
            (
                [567305696, 31658893, 727898761, 42563250],
                0x1d663740a877c74f,
            ),
            (
                [188007184, 87496179, 332125748, 160807149],
                0x9ce48a3781826390,
            ),
        ),
    ];
    for (scheme, zh, en) in vectors {
        let mh = hasher(scheme, 1);
        for (text, (head, key)) in [
            ("你妈妈喊你回家吃饭哦,回家罗回家罗", zh),
            ("the quick brown fox jumps over the lazy dog", en),
        ] {
            let sig = mh.signature_normalized(text).unwrap();
            assert_eq!(sig.len(), 128);
            assert_eq!(&sig[..4], &head, "{scheme:?} {text}");
            assert_eq!(band_key(&sig, 0, 8), key, "{scheme:?} {text}");
        }
    }
    // The detector keeps the low 8 bits of each entry by default (b-bit entries).
    let det = MinHashDetector::new(fp(), MinHashDetectorOptions::default()).unwrap();
    assert_eq!(det.bits(), 8);
    let s = det
        .sketch_normalized("the quick brown fox jumps over the lazy dog", 43)
        .unwrap();
    assert_eq!(&s.signature[..4], &[172, 183, 47, 85]);
    assert!(s.signature.iter().all(|&v| v < 256));
    assert_eq!(
        neardup::exact::digest("hello, world"),
        0x11c83d9c1ee368164c0abe17b55db69c
    );
    let f = fp();
    let im = IMatcher::new(
        &f,
        IMatchOptions {
            min_terms: 3,
            ..Default::default()
        },
    )
    .unwrap();
    let t = "wombats dig burrows using strong claws and teeth";
    assert_eq!(
        im.terms_normalized(t),
        ["burrows", "claws", "dig", "strong", "teeth", "using", "wombats"]
    );
    let want: [(u8, u128); 5] = [
        (0, 0xc435f55c6a2a2e4ffedb9b80d2c93b1c),
        (1, 0x08552741e449688feac5d44bb55e2c9b),
        (2, 0xbfff919e40a9202b45dc316dae6056a8),
        (3, 0xa28a917d7c8a6ebafe781b63d6abe361),
        (4, 0x329ec39aecc1644280a4fe6abecf8948),
    ];
    assert_eq!(im.digests(t).unwrap(), want);
}

// ---------------------------------------------------------------- detectors vs brute force

fn random_docs(rng: &mut Rng, n: usize) -> Vec<String> {
    // Texts over a small alphabet so near-duplicates occur by chance, plus planted edits.
    const CH: &[char] = &['天', '下', '大', '势', '分', '久', '必', '合', '国', '秦'];
    let mut docs: Vec<String> = Vec::new();
    for _ in 0..n {
        if !docs.is_empty() && rng.below(3) == 0 {
            let base = docs[rng.below(docs.len() as u64) as usize].clone();
            let mut chars: Vec<char> = base.chars().collect();
            let i = rng.below(chars.len() as u64) as usize;
            chars[i] = CH[rng.below(CH.len() as u64) as usize];
            docs.push(chars.into_iter().collect());
        } else {
            let len = 6 + rng.below(30) as usize;
            docs.push(
                (0..len)
                    .map(|_| CH[rng.below(CH.len() as u64) as usize])
                    .collect(),
            );
        }
    }
    docs
}

/// Runs a detector over docs (find, then insert), returning each doc's sorted matches.
fn run<D: Detector>(d: &mut D, docs: &[String]) -> Vec<Vec<u32>> {
    let mut out = Vec::new();
    for (i, t) in docs.iter().enumerate() {
        let s = d.sketch(t).unwrap();
        let mut m: Vec<u32> = d.find(&s).iter().map(|v: &Verdict| v.of).collect();
        m.sort_unstable();
        out.push(m);
        d.insert(i as u32, s);
    }
    out
}

fn brute(docs: &[String], same: impl Fn(usize, usize) -> bool) -> Vec<Vec<u32>> {
    (0..docs.len())
        .map(|i| (0..i).filter(|&j| same(i, j)).map(|j| j as u32).collect())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn exact_vs_brute_force(seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let mut docs = random_docs(&mut rng, 40);
        for i in 0..10 { let d = docs[i * 3].clone(); docs.push(d); }
        let f = fp();
        let norm: Vec<String> = docs.iter().map(|d| f.normalize(d)).collect();
        let got = run(&mut ExactDetector::new(f), &docs);
        prop_assert_eq!(got, brute(&docs, |i, j| norm[i] == norm[j]));
    }

    /// With one-row bands every pair sharing one minimum is a candidate, so estimated-Jaccard
    /// confirmation must equal brute force exactly; exact confirmation likewise.
    #[test]
    fn minhash_vs_brute_force(seed in any::<u64>(), t in 0.3f64..0.9) {
        let mut rng = Rng::new(seed);
        let docs = random_docs(&mut rng, 40);
        let f = fp();
        for (confirm, bits) in [(Confirm::Estimate, 32), (Confirm::Estimate, 16), (Confirm::Estimate, 8), (Confirm::Exact, 8)] {
            let opts = MinHashDetectorOptions {
                minhash: MinHashOptions { char_ngram: 2, ..Default::default() },
                lsh: LshOptions { threshold: t, params: Some((128, 1)), ..Default::default() },
                confirm,
                bits,
                script_band: None,
            };
            let mut d = MinHashDetector::new(f.clone(), opts).unwrap();
            let h = d.hasher().clone();
            let sigs: Vec<Vec<u32>> = docs.iter().map(|x| {
                let mut s = h.signature_normalized(&f.normalize(x)).unwrap();
                keep_low_bits(&mut s, bits);
                s
            }).collect();
            let sets: Vec<Vec<u64>> = docs.iter().map(|x| h.shingle_set(&f.normalize(x))).collect();
            let got = run(&mut d, &docs);
            let want = brute(&docs, |i, j| {
                let shares = sigs[i].iter().zip(&sigs[j]).any(|(a, b)| a == b);
                shares && match confirm {
                    Confirm::Exact => jaccard_sorted(&sets[i], &sets[j]) >= t,
                    _ => jaccard_estimate_bits(&sigs[i], &sigs[j], bits) >= t,
                }
            });
            prop_assert_eq!(got, want, "{:?} at {} bits", confirm, bits);
        }
    }

    /// Every confirmed short-text match has similarity ≥ threshold; every pair whose n-gram
    /// Jaccard is ≥ 0.5 and whose similarity passes is found (one-row bands: the chance of
    /// missing it is 0.5^128).
    #[test]
    fn shorttext_vs_brute_force(seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        let docs = random_docs(&mut rng, 40);
        let f = fp();
        let opts = ShortTextOptions {
            lsh: LshOptions { params: Some((128, 1)), ..Default::default() },
            ..Default::default()
        };
        let got = run(&mut ShortTextDetector::new(f.clone(), opts).unwrap(), &docs);
        let ct: Vec<String> = docs.iter().map(|d| confirmation_text(&f.normalize(d))).collect();
        let sim = |i: usize, j: usize| similarity(Measure::Levenshtein, &ct[i], &ct[j], 2);
        let jac = |i: usize, j: usize| similarity(Measure::Jaccard, &ct[i], &ct[j], 2);
        for (i, m) in got.iter().enumerate() {
            for &j in m {
                prop_assert!(sim(i, j as usize) >= 0.8);
            }
            for j in 0..i {
                if sim(i, j) >= 0.8 && jac(i, j) >= 0.5 {
                    prop_assert!(m.contains(&(j as u32)), "{} ~ {} missed", docs[i], docs[j]);
                }
            }
        }
    }

    #[test]
    fn imatch_vs_brute_force(seed in any::<u64>()) {
        let mut rng = Rng::new(seed);
        // English-like documents of random words from a small vocabulary.
        let vocab: Vec<String> = (0..30).map(|i| format!("w{}x{}", i * 7919 % 1000, i)).collect();
        let docs: Vec<String> = (0..40)
            .map(|_| (0..4 + rng.below(6)).map(|_| vocab[rng.below(vocab.len() as u64) as usize].as_str()).collect::<Vec<_>>().join(" "))
            .collect();
        let f = fp();
        let opts = IMatchOptions { min_terms: 3, ..Default::default() };
        let im = IMatcher::new(&f, opts.clone()).unwrap();
        let dg: Vec<_> = docs.iter().map(|d| im.digests(d).unwrap()).collect();
        let got = run(&mut IMatchDetector::new(&f, opts).unwrap(), &docs);
        let want = brute(&docs, |i, j| dg[i].iter().any(|x| dg[j].contains(x)));
        prop_assert_eq!(got, want);
    }
}

// ---------------------------------------------------------------- I-Match

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Inserting words outside the lexicon (stop words, punctuation) changes no digest.
    #[test]
    fn imatch_invariant_to_words_outside_the_lexicon(
        words in prop::collection::vec("[b-df-hj-np-tv-z]{4,8}", 8..30),
        inserts in prop::collection::vec((any::<prop::sample::Index>(), 0usize..6), 1..10),
    ) {
        let f = fp();
        let im = IMatcher::new(&f, IMatchOptions::default()).unwrap();
        let outside = ["the", "and", "of", "a", "is", "，", "!"];
        for w in outside.iter().take(5) {
            prop_assert!(!im.in_lexicon(w) || f.extractor().stopwords().contains(w));
        }
        let base = words.join(" ");
        let mut edited = words.clone();
        for (at, w) in &inserts {
            let i = at.index(edited.len() + 1);
            edited.insert(i, outside[*w % outside.len()].to_string());
        }
        let edited = edited.join(" ");
        prop_assert_eq!(im.digests(&base).unwrap(), im.digests(&edited).unwrap());
    }
}

#[test]
fn imatch_sub_lexicons_survive_one_changed_word() {
    let f = fp();
    let im = IMatcher::new(
        &f,
        IMatchOptions {
            sub_lexicons: 16,
            ..Default::default()
        },
    )
    .unwrap();
    let words: Vec<String> = (0..20).map(|i| format!("zq{i}word")).collect();
    let base = im.digests(&words.join(" ")).unwrap();
    let mut survived = 0;
    for k in 0..20 {
        let mut w = words.clone();
        w[k] = "completelydifferent".into();
        let d = im.digests(&w.join(" ")).unwrap();
        assert_ne!(d[0], base[0]);
        survived += d.iter().any(|x| base.contains(x)) as usize;
    }
    // Each change survives with probability 1 − (1 − 0.2²)^16 ≈ 0.48 (both the old and the
    // new word must be dropped by the same sub-lexicon).
    assert!(survived >= 3, "{survived}/20");
}

#[test]
fn imatch_short_texts_get_no_signature() {
    let f = fp();
    let im = IMatcher::new(&f, IMatchOptions::default()).unwrap();
    assert!(im.digests("春眠不觉晓").unwrap().is_empty());
    let mut d = IMatchDetector::new(&f, IMatchOptions::default()).unwrap();
    let s = d.sketch("春眠不觉晓").unwrap();
    d.insert(0, s.clone());
    assert!(d.find(&s).is_empty());
    assert!(IMatcher::new(
        &f,
        IMatchOptions {
            low_fraction: 1.5,
            ..Default::default()
        }
    )
    .is_err());
}

// ---------------------------------------------------------------- short texts

#[test]
fn shorttext_rejects_template_sharing_pair() {
    let f = fp();
    let pairs = [
        (
            "您的验证码是834921，5分钟内有效，请勿泄露",
            "您的验证码是106577，5分钟内有效，请勿泄露",
        ),
        (
            "Your order #88231 has shipped",
            "Your order #10457 has shipped",
        ),
        (
            "会议定于3月5日下午2点在201室举行",
            "会议定于4月9日下午3点在305室举行",
        ),
        ("恭喜张三获得一等奖", "恭喜李四获得三等奖"),
    ];
    for (a, b) in pairs {
        let mut d = ShortTextDetector::new(f.clone(), ShortTextOptions::default()).unwrap();
        let s = d.sketch(a).unwrap();
        d.insert(0, s);
        assert!(d.find(&d.sketch(b).unwrap()).is_empty(), "{a} ~ {b}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// A one-character edit (substitution, insertion or deletion) of a 15–140 character text
    /// is accepted.
    #[test]
    fn shorttext_accepts_one_character_edit(
        text in "[\u{4e00}-\u{9fa5}]{15,140}", at in any::<prop::sample::Index>(),
        c in "[\u{4e00}-\u{9fa5}]", op in 0u8..3,
    ) {
        let f = fp();
        let mut chars: Vec<char> = text.chars().collect();
        let i = at.index(chars.len());
        let c = c.chars().next().unwrap();
        match op {
            0 => chars[i] = c,
            1 => chars.insert(i, c),
            _ => { chars.remove(i); }
        }
        let edited: String = chars.into_iter().collect();
        let mut d = ShortTextDetector::new(f, ShortTextOptions::default()).unwrap();
        let s = d.sketch(&text).unwrap();
        d.insert(9, s);
        let found = d.find(&d.sketch(&edited).unwrap());
        prop_assert_eq!(found.len(), 1);
        prop_assert!(found[0].similarity.unwrap() >= 0.8);
    }
}

#[test]
fn measures() {
    assert_eq!(similarity(Measure::Levenshtein, "abcde", "abcdf", 2), 0.8);
    assert!((similarity(Measure::Jaccard, "abcde", "abcdf", 2) - 3.0 / 5.0).abs() < 1e-12);
    assert!((similarity(Measure::Cosine, "abab", "abab", 2) - 1.0).abs() < 1e-12);
    assert_eq!(
        confirmation_text("hello,  world!! 你好，世界"),
        "hello world你好世界"
    );
}

// ---------------------------------------------------------------- policy

#[test]
fn auto_policy_routes_by_length() {
    let f = fp();
    let mut d = AutoDetector::new(f, PolicyOptions::default()).unwrap();
    let short = d.sketch("今天天气真好，我们去公园散步吧").unwrap();
    assert_eq!(d.path(&short), Path::Short);
    let long_text = include_str!("../fixtures/sanguo_ch1.txt");
    let long = d.sketch(long_text).unwrap();
    assert_eq!(d.path(&long), Path::Long);
    assert!(long.minhash.is_some() && long.simhash.is_none() && long.short.is_none());
    d.insert(0, short);
    d.insert(1, long);
    // Exact, short edit, long edit.
    assert_eq!(
        d.find(&d.sketch("今天天气真好,我们去公园散步吧").unwrap())[0].of,
        0
    );
    assert_eq!(
        d.find(&d.sketch("今天天气真好，我们去公园散散步吧").unwrap())[0].of,
        0
    );
    let edited = long_text.replacen("天下大势", "天下大事", 1);
    assert_eq!(d.find(&d.sketch(&edited).unwrap())[0].of, 1);
    assert!(d
        .find(&d.sketch("明天下雨，我们在家看书吧").unwrap())
        .is_empty());
    assert!(d.sketch(" ，。").is_err());
}

#[test]
fn auto_policy_boundary_pairs_are_found() {
    // A 138-character text and a 146-character copy straddle max_chars = 140.
    let f = fp();
    for long in [LongMethod::Simhash, LongMethod::Minhash, LongMethod::Either] {
        let mut d = AutoDetector::new(
            f.clone(),
            PolicyOptions {
                long,
                ..Default::default()
            },
        )
        .unwrap();
        let base: String = "滚滚长江东逝水浪花淘尽英雄是非成败转头空青山依旧在几度夕阳红"
            .chars()
            .cycle()
            .take(138)
            .collect();
        let longer = format!("{base}白发渔樵江渚上惯");
        let a = d.sketch(&base).unwrap();
        let b = d.sketch(&longer).unwrap();
        assert_eq!(d.path(&a), Path::Short);
        assert_eq!(d.path(&b), Path::Long);
        d.insert(0, b);
        assert_eq!(d.find(&a).len(), 1, "{long:?}");
    }
}

#[test]
fn options_have_serde_defaults() {
    let p: PolicyOptions = serde_json::from_str("{}").unwrap();
    // Every setting but `passages`, which a configuration recorded without it reads as off
    // (a data directory written before passages opens only with them off).
    assert_eq!(p.passages, None);
    assert_eq!(
        PolicyOptions {
            passages: PolicyOptions::default().passages,
            ..p.clone()
        },
        PolicyOptions::default()
    );
    assert_eq!(p.long, LongMethod::Minhash);
    let p: PolicyOptions = serde_json::from_str(
        r#"{"long": "either", "short": {"threshold": 0.9, "measure": "jaccard"}}"#,
    )
    .unwrap();
    assert_eq!(p.short.threshold, 0.9);
    assert_eq!(p.short.max_chars, 140);
    assert!(serde_json::from_str::<PolicyOptions>(r#"{"shrot": {}}"#).is_err());
    let m: MinHashDetectorOptions =
        serde_json::from_str(r#"{"lsh": {"params": [16, 8]}, "confirm": "exact"}"#).unwrap();
    assert_eq!(m.lsh.params, Some((16, 8)));
    assert_eq!(m.minhash.num_perm, 128);
    let i: IMatchOptions = serde_json::from_str(r#"{"min_terms": 3}"#).unwrap();
    assert_eq!(i.sub_lexicons, 4);
    let bad = MinHashDetectorOptions {
        lsh: LshOptions {
            params: Some((200, 1)),
            ..Default::default()
        },
        ..Default::default()
    };
    assert!(MinHashDetector::new(fp(), bad).is_err());
    let odd = MinHashDetectorOptions {
        bits: 12,
        ..Default::default()
    };
    let e = MinHashDetector::new(fp(), odd).unwrap_err().to_string();
    assert!(
        e.contains("minhash bits = 12") && e.contains("8, 16 or 32"),
        "{e}"
    );
}

/// `auto` finds a short post inside a repost that is longer than the short path's measure
/// reaches (⌈140 / 0.8⌉ = 175 letters) — a comment of 120 characters added before it — by
/// containment, and still matches an edited copy of a 170-letter page by the measure; two
/// mid-length texts that differ by edits are not compared on the short path.
#[test]
fn containment_reaches_reposts_beyond_the_measure() {
    use neardup::dedup::{dedup, Keep};
    use neardup::detect::Stage;
    let det = || AutoDetector::new(fp(), PolicyOptions::default()).unwrap();
    let post = "今天去了西湖边散步，看到很多人在放风筝，天气特别好，湖面上波光粼粼，远处的雷峰塔在夕阳下格外好看，回来的路上买了一杯龙井茶。";
    let comment: String = "这条微博说得太对了我也是这么想的"
        .chars()
        .cycle()
        .take(120)
        .collect();
    let repost = format!("{comment}//@小明: {post}");
    let out = dedup(det(), &[post.to_string(), repost], Keep::First).unwrap();
    assert_eq!(out.outcomes[1].duplicate_of, Some(0));
    assert_eq!(out.outcomes[1].stage, Some(Stage::Containment));
    // A 170-letter page and its edit (a LibreOffice help page of en_debian_docs): the
    // measure's business, whatever the confirmation text's spaces add to its length.
    let page = "LibreOffice 7.4 Help\n\nModule\n\nContents\n\nIndex\n\nFile name\n\nInserts the name of the active file. The name only appears after you save the file.\n\nTo access this command...\n\nChoose Insert - Field - File Name";
    let edit = "LibreOffice 7.4 Help\n\nModule\n\nContents\n\nIndex\n\nFile name\n\nInserts the name of the active file. The very name only appears after you save the file.\n\naccess this then\n\nChoose Insert - Field - indeed indeed Name";
    let out = dedup(det(), &[edit, page], Keep::First).unwrap();
    assert_eq!(out.outcomes[1].duplicate_of, Some(0));
    assert_eq!(out.outcomes[1].stage, Some(Stage::Short));
    // Two 240-letter texts differing in a tenth of their words: not compared on the short path
    // at all, neither by edits nor by containment (the long path's MinHash decides them).
    let word = |i: usize| -> String {
        let l = |k: usize| char::from(b'a' + (k % 26) as u8);
        [l(i), l(i / 26 + 3), l(i * 7 + 1), l(i / 3 + 11)]
            .iter()
            .collect()
    };
    let words: Vec<String> = (0..60).map(word).collect();
    let a = words.join(" ");
    let b: Vec<String> = words
        .iter()
        .enumerate()
        .map(|(i, w)| {
            if i % 10 == 3 {
                word(i + 500)
            } else {
                w.clone()
            }
        })
        .collect();
    let out = dedup(det(), &[a, b.join(" ")], Keep::First).unwrap();
    let stage = out.outcomes[1].stage;
    assert!(
        !matches!(stage, Some(Stage::Short | Stage::Containment)),
        "{stage:?}"
    );
}
