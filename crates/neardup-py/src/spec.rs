//! The detector options of `dedup` and `Deduper`: the flags of `neardup dedup`, mapped to the
//! library's [`DetectorSpec`] (whose defaults are the command's).

use neardup::detect::spec::{DetectorSpec, Method};
use pyo3::prelude::*;

use crate::errors::config;
use crate::options::Options;

/// The detector option names.
pub const SPEC_OPTIONS: &[&str] = &[
    "method",
    "threshold",
    "distance",
    "template_veto",
    "minhash_char_ngram",
    "minhash_word_ngram",
    "minhash_bits",
    "minhash_scheme",
    "quote_edge",
    "passages",
];

/// Takes `method`, `threshold`, `distance`, `template_veto` (default: `veto_default`) and
/// MinHash's shingle sizes `minhash_char_ngram` and `minhash_word_ngram`, its signature
/// entries' `minhash_bits`, the short path's `quote_edge` and `auto`'s `passages`; refuses a setting
/// the method would ignore, as the command does.
pub fn take_spec(o: &Options<'_>, veto_default: bool) -> PyResult<DetectorSpec> {
    let d = DetectorSpec::default();
    let method: Method = match o.take::<String>("method")? {
        Some(m) => m
            .parse()
            .map_err(|e: neardup::Error| config(e.to_string()))?,
        None => d.method,
    };
    let distance = o.take::<u32>("distance")?;
    let threshold = o.take::<f64>("threshold")?;
    if distance.is_some() && !method.uses_distance() {
        return Err(config(format!(
            "`distance` is the Hamming distance of method=\"simhash\"; method=\"{}\" would ignore it",
            method.name()
        )));
    }
    if threshold.is_some() && !method.uses_threshold() {
        return Err(config(format!(
            "`threshold` is the Jaccard threshold of method=\"minhash\" and \"auto\"; method=\"{}\" would ignore it",
            method.name()
        )));
    }
    if let Some(k) = distance {
        if k > 63 {
            return Err(config(format!("`distance` = {k}: use 0 to 63 (default 3)")));
        }
    }
    if let Some(t) = threshold {
        if !(t > 0.0 && t < 1.0) {
            return Err(config(format!(
                "`threshold` = {t} is not a Jaccard similarity strictly between 0 and 1 (e.g. 0.6)"
            )));
        }
    }
    let char_ngram = o.take::<usize>("minhash_char_ngram")?;
    let word_ngram = o.take::<usize>("minhash_word_ngram")?;
    if (char_ngram.is_some() || word_ngram.is_some()) && !method.uses_threshold() {
        return Err(config(format!(
            "`minhash_char_ngram` and `minhash_word_ngram` size the shingles of method=\"minhash\" and \"auto\"; method=\"{}\" would ignore them",
            method.name()
        )));
    }
    let bits = o.take::<u32>("minhash_bits")?;
    let scheme = o.take::<String>("minhash_scheme")?;
    if (bits.is_some() || scheme.is_some()) && !method.uses_threshold() {
        return Err(config(format!(
            "`minhash_bits` and `minhash_scheme` set the signatures of method=\"minhash\" and \"auto\"; method=\"{}\" would ignore it",
            method.name()
        )));
    }
    let scheme = match scheme {
        Some(s) => s
            .parse()
            .map_err(|e: neardup::Error| config(format!("option `minhash_scheme`: {e}")))?,
        None => d.scheme,
    };
    let quote_edge = o.take::<f64>("quote_edge")?;
    if quote_edge.is_some() && !matches!(method, Method::Auto | Method::Short) {
        return Err(config(format!(
            "`quote_edge` sets the quotes of the short-text path (method=\"auto\" and \"short\"); method=\"{}\" would ignore it",
            method.name()
        )));
    }
    let passages = o.take::<bool>("passages")?;
    if passages.is_some() && method != Method::Auto {
        return Err(config(format!(
            "`passages` sets the auto detector's quotes of long texts; method=\"{}\" would ignore it",
            method.name()
        )));
    }
    let template_veto = o.take::<bool>("template_veto")?.unwrap_or(veto_default);
    // Out-of-range sizes are refused when the detector is built, with the library's message.
    Ok(DetectorSpec {
        method,
        distance: distance.unwrap_or(d.distance),
        // As the command: `auto` under the veto has its own default threshold.
        threshold: threshold.unwrap_or(DetectorSpec::default_threshold(method, template_veto)),
        template_veto,
        char_ngram: char_ngram.unwrap_or(d.char_ngram),
        word_ngram: word_ngram.unwrap_or(d.word_ngram),
        scheme,
        bits: bits.unwrap_or(d.bits),
        // Out of [0, 0.5]: refused when the detector is built, with the library's message.
        quote_edge: quote_edge.unwrap_or(d.quote_edge),
        passages: passages.unwrap_or(d.passages),
    })
}
