//! Arbitrary bytes through the whole text path (UTF-8 check, HTML, NFKC, features, simhash)
//! for every feature method: never a panic, and the same answer twice.
#![no_main]
use libfuzzer_sys::fuzz_target;
use neardup::features::{FeatureOptions, Method};
use neardup::{FingerprintConfig, Fingerprinter};
use std::sync::LazyLock;

static FPS: LazyLock<Vec<Fingerprinter>> = LazyLock::new(|| {
    [Method::Auto, Method::Jieba, Method::Chars, Method::Words]
        .into_iter()
        .map(|method| {
            Fingerprinter::new(FingerprintConfig { features: FeatureOptions { method, ..Default::default() }, ..Default::default() })
                .unwrap()
        })
        .collect()
});

fuzz_target!(|data: &[u8]| {
    for fp in FPS.iter() {
        let a = fp.fingerprint_bytes(data).map(|f| f.simhash).ok();
        let b = fp.fingerprint_bytes(data).map(|f| f.simhash).ok();
        assert_eq!(a, b);
    }
});
