//! Text → 64-bit simhash, as specified in `docs/fingerprint-spec.md` (spec version 1).
//!
//! A [`Fingerprinter`] holds a [`FingerprintConfig`] (normalisation + feature options), the
//! loaded dictionaries, and a [`config_id`](Fingerprinter::config_id): a 64-bit digest of
//! everything that determines the fingerprint (spec version, options, dictionary digests,
//! segmenter version). Stores write the [`descriptor`](Fingerprinter::descriptor) next to the
//! fingerprints and refuse data whose configuration differs.
//!
//! ```
//! use neardup::{Fingerprinter, FingerprintConfig, hamming};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let a = fp.simhash("the cat sat on the mat").unwrap();
//! let b = fp.simhash("<p>The  cat sat on the mat</p>").unwrap();
//! assert_eq!(hamming(a, b), 0);
//! assert!(fp.simhash("  \n ").is_err());
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::features::{FeatureExtractor, FeatureOptions, Method, NamedFeature};
use crate::hash::xxh3;
use crate::normalize::{NormalizeOptions, Normalizer};

/// Version of the fingerprint specification implemented here.
pub const SPEC_VERSION: u32 = 1;

/// The segmenter whose dictionary and algorithm the `jieba` method depends on.
pub const SEGMENTER: &str = "jieba-rs 0.11.0 default dictionary, hmm=false";

/// Everything a user chooses about fingerprints.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(default, deny_unknown_fields)]
pub struct FingerprintConfig {
    /// Normalisation steps.
    pub normalize: NormalizeOptions,
    /// Feature extraction.
    pub features: FeatureOptions,
}

/// The result of fingerprinting one document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    /// The 64-bit simhash.
    pub simhash: u64,
    /// The method that produced the features.
    pub method: Method,
}

/// A human-readable account of a fingerprint: what the text became and which features made it.
#[derive(Debug, Clone)]
pub struct Explanation {
    /// The normalised text.
    pub normalized: String,
    /// Method used.
    pub method: Method,
    /// Features, heaviest first.
    pub features: Vec<NamedFeature>,
    /// The simhash.
    pub simhash: u64,
}

/// Turns text into fingerprints with one fixed configuration. Cheap to clone and share
/// between threads (dictionaries are shared).
#[derive(Debug, Clone)]
pub struct Fingerprinter {
    config: FingerprintConfig,
    normalizer: Normalizer,
    features: FeatureExtractor,
    descriptor: String,
    config_id: u64,
}

impl Fingerprinter {
    /// Builds a fingerprinter; fails on out-of-range options or unreadable dictionaries.
    pub fn new(config: FingerprintConfig) -> Result<Self> {
        let features = FeatureExtractor::new(&config.features)?;
        let normalizer = Normalizer::new(config.normalize.clone());
        let mut portable = config.clone();
        // Paths are not part of the identity; the dictionaries' digests are.
        portable.features.idf_file = None;
        portable.features.stopwords_file = None;
        let descriptor = serde_json::json!({
            "fingerprint": "simhash64",
            "spec_version": SPEC_VERSION,
            "config": portable,
            "idf_digest": format!("{:016x}", features.idf_digest()),
            "stopwords_digest": format!("{:016x}", features.stopwords().digest()),
            "segmenter": SEGMENTER,
        })
        .to_string();
        let config_id = xxh3(descriptor.as_bytes());
        Ok(Fingerprinter {
            config,
            normalizer,
            features,
            descriptor,
            config_id,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &FingerprintConfig {
        &self.config
    }

    /// A canonical JSON description of everything that determines the fingerprint.
    pub fn descriptor(&self) -> &str {
        &self.descriptor
    }

    /// XXH3-64 of [`descriptor`](Self::descriptor).
    pub fn config_id(&self) -> u64 {
        self.config_id
    }

    /// The feature extractor.
    pub fn extractor(&self) -> &FeatureExtractor {
        &self.features
    }

    /// Loads lazy dictionaries now (jieba's takes ~0.2 s), e.g. before serving.
    pub fn warm_up(&self) {
        self.features.warm_up();
    }

    /// Normalises `text` with this configuration.
    pub fn normalize(&self, text: &str) -> String {
        self.normalizer.normalize(text)
    }

    /// The simhash of `text`. Fails with [`Error::EmptyDocument`] when nothing is left after
    /// normalisation (no letter or digit).
    pub fn simhash(&self, text: &str) -> Result<u64> {
        self.fingerprint(text).map(|f| f.simhash)
    }

    /// The fingerprint of `text` (simhash and method used).
    pub fn fingerprint(&self, text: &str) -> Result<Fingerprint> {
        let normalized = self.normalizer.normalize(text);
        self.fingerprint_normalized(&normalized, text.len())
    }

    /// The fingerprint of text that is already normalised with this configuration.
    pub fn fingerprint_normalized(
        &self,
        normalized: &str,
        input_bytes: usize,
    ) -> Result<Fingerprint> {
        match self.features.simhash(normalized) {
            Some((simhash, method)) => Ok(Fingerprint { simhash, method }),
            None => Err(Error::EmptyDocument { input_bytes }),
        }
    }

    /// Like [`fingerprint`](Self::fingerprint) for raw bytes: fails with
    /// [`Error::InvalidUtf8`] on invalid UTF-8.
    pub fn fingerprint_bytes(&self, bytes: &[u8]) -> Result<Fingerprint> {
        let text = std::str::from_utf8(bytes).map_err(|e| Error::InvalidUtf8 {
            offset: e.valid_up_to(),
        })?;
        self.fingerprint(text)
    }

    /// The normalised text, method, features and simhash of `text`.
    pub fn explain(&self, text: &str) -> Result<Explanation> {
        let normalized = self.normalizer.normalize(text);
        let fp = self.fingerprint_normalized(&normalized, text.len())?;
        let (features, method) = self.features.features_with_method(&normalized);
        debug_assert_eq!(method, fp.method);
        Ok(Explanation {
            normalized,
            method,
            features,
            simhash: fp.simhash,
        })
    }
}

/// Formats a fingerprint as 16 lower-case hex digits.
pub fn to_hex(fp: u64) -> String {
    format!("{fp:016x}")
}

/// Parses 1–16 hex digits, with an optional `0x` prefix.
pub fn parse_hex(s: &str) -> Result<u64> {
    let t = s.trim();
    let t = t
        .strip_prefix("0x")
        .or_else(|| t.strip_prefix("0X"))
        .unwrap_or(t);
    if t.is_empty() || t.len() > 16 || !t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::Config(format!(
            "`{s}` is not a fingerprint: write 1 to 16 hex digits, e.g. 0123456789abcdef"
        )));
    }
    u64::from_str_radix(t, 16).map_err(|e| Error::Config(format!("`{s}`: {e}")))
}
