//! Fingerprint behaviour: spec test vectors, the seeds' examples, robustness to markup and
//! small edits, bad input. Fixtures are public-domain excerpts (三国演义 chapter 1, Moby-Dick
//! chapter 1).

use neardup::features::{FeatureOptions, Method};
use neardup::{hamming, Error, FingerprintConfig, Fingerprinter};

const SANGUO: &str = include_str!("../fixtures/sanguo_ch1.txt");
const MOBY: &str = include_str!("../fixtures/moby_dick_excerpt.txt");

fn fp() -> Fingerprinter {
    Fingerprinter::new(FingerprintConfig::default()).unwrap()
}

fn with_method(m: Method) -> Fingerprinter {
    Fingerprinter::new(FingerprintConfig {
        features: FeatureOptions {
            method: m,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap()
}

/// The vectors of docs/fingerprint-spec.md §7. If one of these changes, the spec version must.
#[test]
fn spec_v1_test_vectors() {
    let f = fp();
    let cases: &[(&str, Method, u64)] = &[
        ("the cat sat on the mat", Method::Words, 0xcb10034311d3346d),
        ("你妈妈喊你回家吃饭哦，回家罗回家罗", Method::Jieba, 0xd57724fa8ff02f2c),
        ("<html><body><p>Ｈｅｌｌｏ,&nbsp;World!</p><script>x()</script></body></html>", Method::Words, 0x94456805082048bc),
        (
            "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。后天纽约的天气不好，昨天纽约的天气也不好，北京烤鸭真好吃",
            Method::Jieba,
            0xa665b3b7c7845eb4,
        ),
        ("ภาษาไทยเขียนติดกัน", Method::Chars, 0xa7c0818208a043ec),
        ("a", Method::Words, 0xe6c632b61e964e1f),
        ("的了", Method::Chars, 0x4481fd06a6efef4d),
    ];
    for &(text, method, want) in cases {
        let got = f.fingerprint(text).unwrap();
        assert_eq!((got.simhash, got.method), (want, method), "{text}");
    }
    let chars = with_method(Method::Chars);
    assert_eq!(
        chars
            .simhash("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。")
            .unwrap(),
        0x0281bf9d0106d709
    );
}

/// Step 6 of docs/fingerprint-spec.md §2: a text written in Traditional characters has the
/// fingerprint of its Simplified form (the §7 vectors), with `jieba` and with `chars`; with
/// the step off it does not, and the configurations differ.
#[test]
fn traditional_text_has_the_simplified_fingerprint() {
    let jieba_s = "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。后天纽约的天气不好，昨天纽约的天气也不好，北京烤鸭真好吃";
    let jieba_t = "今天紐約的天氣真好啊，京華大酒店的張堯經理吃了一隻北京烤鴨。後天紐約的天氣不好，昨天紐約的天氣也不好，北京烤鴨真好吃";
    let chars_s = "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。";
    let chars_t = "今天紐約的天氣真好啊，京華大酒店的張堯經理吃了一隻北京烤鴨。";
    assert_eq!(fp().simhash(jieba_t).unwrap(), 0xa665b3b7c7845eb4);
    let chars = with_method(Method::Chars);
    assert_eq!(chars.simhash(chars_t).unwrap(), 0x0281bf9d0106d709);
    assert_eq!(chars.normalize(chars_t), chars.normalize(chars_s));
    let kept = Fingerprinter::new(FingerprintConfig {
        normalize: neardup::normalize::NormalizeOptions {
            fold_traditional: false,
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    assert_eq!(kept.simhash(jieba_s).unwrap(), 0xa665b3b7c7845eb4);
    assert_ne!(kept.simhash(jieba_t).unwrap(), 0xa665b3b7c7845eb4);
    assert_ne!(kept.config_id(), fp().config_id());
}

/// A configuration recorded before the script step existed (no `fold_traditional` key)
/// describes fingerprints made without it: it reads as off, never as the new default.
#[test]
fn descriptor_without_fold_traditional_reads_as_kept() {
    let old: neardup::normalize::NormalizeOptions = serde_json::from_str(
        r#"{"html":"auto","main_content":true,"nfkc":true,"width":true,"lowercase":true,"whitespace":true}"#,
    )
    .unwrap();
    assert!(!old.fold_traditional);
    assert!(neardup::normalize::NormalizeOptions::default().fold_traditional);
    assert!(fp().descriptor().contains("\"fold_traditional\":true"));
    // Without the step the descriptor is the one written before the step existed: the same
    // configuration, the same `config_id`.
    let kept = Fingerprinter::new(FingerprintConfig {
        normalize: old,
        ..Default::default()
    })
    .unwrap();
    assert!(!kept.descriptor().contains("fold_traditional"));
    assert_eq!(
        kept.descriptor(),
        fp().descriptor().replace("\"fold_traditional\":true,", "")
    );
}

#[test]
fn config_id_is_stable_and_sensitive() {
    let a = fp();
    assert_eq!(a.config_id(), fp().config_id());
    assert_ne!(a.config_id(), with_method(Method::Chars).config_id());
    assert!(a.descriptor().contains("\"spec_version\":1"));
}

/// Seed 001: "the cat sat on the mat" and "the cat sat on a mat" are far closer to each other
/// than either is to "we all scream for ice cream".
#[test]
fn seed_cat_example() {
    for f in [fp(), with_method(Method::Chars)] {
        let a = f.simhash("the cat sat on the mat").unwrap();
        let b = f.simhash("the cat sat on a mat").unwrap();
        let c = f.simhash("we all scream for ice cream").unwrap();
        assert!(
            hamming(a, b) + 8 <= hamming(a, c),
            "{} {}",
            hamming(a, b),
            hamming(a, c)
        );
        assert!(
            hamming(a, b) + 8 <= hamming(b, c),
            "{} {}",
            hamming(a, b),
            hamming(b, c)
        );
    }
}

/// Seed 002's pair differs by two characters and must be a near-duplicate.
#[test]
fn seed_chinese_pair() {
    let f = fp();
    let a = f.simhash("你妈妈喊你回家吃饭哦，回家罗回家罗").unwrap();
    let b = f.simhash("你妈妈叫你回家吃饭啦，回家罗回家罗").unwrap();
    assert!(hamming(a, b) <= 3);
}

#[test]
fn chinese_one_character_changed_within_3() {
    let f = fp();
    let a = f.simhash(SANGUO).unwrap();
    // Change one character in the middle of the text, at several places.
    let chars: Vec<char> = SANGUO.chars().collect();
    for pos in [100, 400, 700, 1000, 1300] {
        let mut c = chars.clone();
        c[pos] = if c[pos] == '国' { '家' } else { '国' };
        let b = f.simhash(&c.iter().collect::<String>()).unwrap();
        assert!(hamming(a, b) <= 3, "pos {pos}: {}", hamming(a, b));
    }
}

fn as_html(title: &str, body: &str) -> String {
    let paras: String = body
        .split('\n')
        .filter(|l| !l.trim().is_empty())
        .map(|l| format!("<p>{}</p>\n", l.replace('&', "&amp;")))
        .collect();
    format!(
        "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>{title}</title>\
         <style>body {{ font-family: serif }} .ad {{ display: none }}</style>\
         <script>window.dataLayer = window.dataLayer || []; function gtag(){{dataLayer.push(arguments);}}</script></head>\
         <body><!-- article starts --><article><h1>{title}</h1>\n{paras}</article>\
         <script>gtag('config', 'UA-000000');</script></body></html>"
    )
}

#[test]
fn html_and_plain_text_versions_within_3() {
    let f = fp();
    for (title, text) in [("第一回", SANGUO), ("Loomings", MOBY)] {
        let plain = format!("{title}\n{text}");
        let a = f.simhash(&plain).unwrap();
        let b = f.simhash(&as_html(title, text)).unwrap();
        assert!(hamming(a, b) <= 3, "{title}: {}", hamming(a, b));
    }
}

#[test]
fn full_width_and_case_variants_are_identical() {
    let f = fp();
    let a = f.simhash("Linux 内核文档 ABC 123").unwrap();
    let b = f.simhash("ＬＩＮＵＸ　内核文档　ａｂｃ　１２３").unwrap();
    assert_eq!(a, b);
}

#[test]
fn identical_text_distance_zero_any_method() {
    for m in [Method::Auto, Method::Jieba, Method::Chars, Method::Words] {
        let f = with_method(m);
        assert_eq!(f.simhash(SANGUO).unwrap(), f.simhash(SANGUO).unwrap());
        assert_eq!(f.simhash(MOBY).unwrap(), f.simhash(MOBY).unwrap());
    }
}

#[test]
fn empty_and_punctuation_only_documents_are_errors() {
    let f = fp();
    for t in [
        "",
        "   \n\t",
        "，。！？",
        "<p></p><script>var x = 1;</script>",
        "<!-- only a comment -->",
    ] {
        match f.fingerprint(t) {
            Err(Error::EmptyDocument { .. }) => {}
            other => panic!("{t:?}: {other:?}"),
        }
    }
}

#[test]
fn invalid_utf8_is_a_clear_error() {
    let f = fp();
    let e = f.fingerprint_bytes(b"abc \xff\xfe def").unwrap_err();
    assert!(matches!(e, Error::InvalidUtf8 { offset: 4 }), "{e:?}");
    assert!(e.to_string().contains("iconv"));
    assert!(f.fingerprint_bytes("正常".as_bytes()).is_ok());
}

#[test]
fn user_idf_and_stopwords_files() {
    let dir = tempfile::tempdir().unwrap();
    let idf = dir.path().join("idf.txt");
    std::fs::write(&idf, "回家 1.0\n吃饭 20.0\n").unwrap();
    let stop = dir.path().join("stop.txt");
    std::fs::write(&stop, "妈妈\n").unwrap();
    let f = Fingerprinter::new(FingerprintConfig {
        features: FeatureOptions {
            method: Method::Jieba,
            idf_file: Some(idf.clone()),
            stopwords_file: Some(stop),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap();
    let e = f.explain("你妈妈喊你回家吃饭哦，回家罗回家罗").unwrap();
    assert_eq!(e.features[0].text, "吃饭");
    assert!(e.features.iter().all(|x| x.text != "妈妈"));
    assert_ne!(f.config_id(), fp().config_id());

    std::fs::write(&idf, "回家 abc\n").unwrap();
    let err = Fingerprinter::new(FingerprintConfig {
        features: FeatureOptions {
            method: Method::Jieba,
            idf_file: Some(idf),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap_err();
    assert!(err.to_string().contains("line 1"), "{err}");
    let missing = Fingerprinter::new(FingerprintConfig {
        features: FeatureOptions {
            idf_file: Some(dir.path().join("nope.txt")),
            ..Default::default()
        },
        ..Default::default()
    })
    .unwrap_err();
    assert!(missing.to_string().contains("nope.txt"), "{missing}");
}

#[test]
fn huge_single_document_is_fingerprinted() {
    // 8 MB of text in one document, all methods: must work (memory is bounded by streaming
    // shingles and chunked segmentation; the 100 MB figure is measured in the benchmarks).
    let big = SANGUO.repeat(8 * 1024 * 1024 / SANGUO.len());
    for m in [Method::Jieba, Method::Chars, Method::Words] {
        assert!(with_method(m).simhash(&big).is_ok());
    }
}
