//! Robustness: arbitrary bytes and markup-shaped strings never panic anywhere on the text path,
//! and results are deterministic. (Coverage-guided fuzz targets for the same entry points live
//! in `fuzz/`; these property tests run on every `cargo test`.)

use neardup::features::{FeatureOptions, Method};
use neardup::normalize::{html_to_text_with, NormalizeOptions, Normalizer};
use neardup::{FingerprintConfig, Fingerprinter};
use proptest::prelude::*;

fn fragments() -> impl Strategy<Value = String> {
    let atoms = prop::sample::select(vec![
        "<p>",
        "</p>",
        "<div class=\"nav\">",
        "</div>",
        "<a href=x>",
        "</a>",
        "<script>",
        "</script>",
        "<style>",
        "<!--",
        "-->",
        "<br/>",
        "<article>",
        "</article>",
        "&amp;",
        "&#20013;",
        "&#xFFFFFFFF;",
        "&bogus;",
        "<",
        ">",
        "\"",
        "中文",
        "ＡＢＣ",
        "abc",
        " ",
        "\n",
        "\u{0301}",
        "\u{3000}",
        "，",
        "ﬁ",
        "<title>",
        "</title>",
        "<head>",
        "<![CDATA[x]]>",
        "<svg><text>s</text></svg>",
        "\u{FEFF}",
        "\0",
    ]);
    prop::collection::vec(atoms, 0..60).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..400)) {
        let f = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let a = f.fingerprint_bytes(&bytes);
        let b = f.fingerprint_bytes(&bytes);
        prop_assert_eq!(format!("{a:?}"), format!("{b:?}"));
    }

    #[test]
    fn markup_shaped_text_never_panics(s in fragments()) {
        for main in [false, true] {
            let _ = html_to_text_with(&s, main);
        }
        let n = Normalizer::new(NormalizeOptions::default());
        let t = n.normalize(&s);
        prop_assert!(!t.starts_with(' ') && !t.ends_with(' '));
        for m in [Method::Auto, Method::Jieba, Method::Chars, Method::Words] {
            let f = Fingerprinter::new(FingerprintConfig { features: FeatureOptions { method: m, ..Default::default() }, ..Default::default() }).unwrap();
            if let Ok(e) = f.explain(&s) {
                // The fast accumulators agree with the reference simhash over the explained features.
                let reference = neardup::simhash::simhash64(e.features.iter().map(|x| (x.hash, x.weight)));
                prop_assert_eq!(e.simhash, reference);
            }
        }
    }
}
