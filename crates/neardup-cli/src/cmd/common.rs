//! Options shared by the commands that fingerprint text.

use std::path::PathBuf;

use neardup::features::{FeatureOptions, Method, TopN};
use neardup::normalize::{HtmlMode, NormalizeOptions};
use neardup::{FingerprintConfig, Fingerprinter};

/// Feature and normalisation options (the fingerprint configuration).
#[derive(Debug, Clone, clap::Args)]
pub struct FeatureArgs {
    /// Feature method of the fingerprint: auto (Han-heavy → jieba, spaceless scripts → chars,
    /// else words), jieba, chars, words.
    #[arg(
        long = "features",
        value_name = "METHOD",
        default_value = "auto",
        value_parser = parse_method
    )]
    pub method: Method,
    /// n of character n-gram shingles (method chars).
    #[arg(long, default_value_t = FeatureOptions::default().char_ngram)]
    pub char_ngram: usize,
    /// n of word n-gram shingles (method words).
    #[arg(long, default_value_t = FeatureOptions::default().word_ngram)]
    pub word_ngram: usize,
    /// jieba words kept: all (default), a number, or auto = clamp(bytes/120, 5, 200) (cppjieba's rule).
    #[arg(long, default_value = "all", value_parser = parse_top_n)]
    pub top_n: TopN,
    /// Your own IDF dictionary (`word idf` a line) instead of the bundled jieba one.
    #[arg(long, value_name = "FILE")]
    pub idf: Option<PathBuf>,
    /// Your own stop-word list (a word a line) instead of the bundled one.
    #[arg(long, value_name = "FILE")]
    pub stopwords: Option<PathBuf>,
    /// HTML handling: auto (when the text looks like markup), always, never.
    #[arg(long, default_value = "auto", value_parser = parse_html)]
    pub html: HtmlMode,
    /// Skip Unicode NFKC normalisation.
    #[arg(long)]
    pub no_nfkc: bool,
    /// Keep case.
    #[arg(long)]
    pub keep_case: bool,
    /// Keep Traditional Chinese characters (by default they are folded to Simplified, so that
    /// a text and its copy in the other script are one text).
    #[arg(long)]
    pub keep_traditional: bool,
}

/// Parses a feature method (auto, jieba, chars, words).
pub fn parse_method(s: &str) -> Result<Method, String> {
    s.parse().map_err(|e: neardup::Error| e.to_string())
}

/// A Jaccard threshold, strictly between 0 and 1 (`--threshold` of dedup and compare).
pub fn parse_threshold(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(t) if t > 0.0 && t < 1.0 => Ok(t),
        _ => Err(format!(
            "`{s}` is not a Jaccard similarity strictly between 0 and 1 (e.g. 0.6)"
        )),
    }
}

fn parse_top_n(s: &str) -> Result<TopN, String> {
    if s == "auto" {
        return Ok(TopN::Auto);
    }
    if s == "all" {
        return Ok(TopN::All);
    }
    match s.parse::<usize>() {
        Ok(n) if n > 0 => Ok(TopN::Fixed(n)),
        _ => Err(format!("`{s}` is not a positive number, all or auto")),
    }
}

fn parse_html(s: &str) -> Result<HtmlMode, String> {
    match s {
        "auto" => Ok(HtmlMode::Auto),
        "always" => Ok(HtmlMode::Always),
        "never" => Ok(HtmlMode::Never),
        _ => Err(format!("`{s}`: use auto, always or never")),
    }
}

impl FeatureArgs {
    /// The fingerprint configuration these flags describe.
    pub fn config(&self) -> FingerprintConfig {
        FingerprintConfig {
            normalize: NormalizeOptions {
                html: self.html,
                nfkc: !self.no_nfkc,
                lowercase: !self.keep_case,
                fold_traditional: !self.keep_traditional,
                ..NormalizeOptions::default()
            },
            features: FeatureOptions {
                method: self.method,
                char_ngram: self.char_ngram,
                word_ngram: self.word_ngram,
                top_n: self.top_n,
                idf_file: self.idf.clone(),
                stopwords_file: self.stopwords.clone(),
                ..FeatureOptions::default()
            },
        }
    }

    /// A fingerprinter for these flags.
    pub fn fingerprinter(&self) -> anyhow::Result<Fingerprinter> {
        Ok(Fingerprinter::new(self.config())?)
    }
}

/// Applies the old spelling `--method` of `--features` (fingerprint, compare) with a
/// deprecation warning; both given and different is an error.
pub fn legacy_method(features: &mut FeatureArgs, legacy: Option<Method>) -> anyhow::Result<()> {
    let Some(m) = legacy else { return Ok(()) };
    if features.method != Method::default() && features.method != m {
        anyhow::bail!(
            "--method (the old spelling of --features) and --features disagree; pass only --features"
        );
    }
    eprintln!(
        "warning: --method is deprecated here: the feature method is now --features (--method \
         names the near-duplicate detector, as in dedup); using --features {m}"
    );
    features.method = m;
    Ok(())
}

/// Formats `n` with thousands separators (`1,204`).
pub fn thousands(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::with_capacity(s.len() + s.len() / 3);
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Sets the size of rayon's global pool (0 = one thread per core).
pub fn set_threads(threads: usize) {
    if threads > 0 {
        // Fails only if the pool was already built, in which case it keeps its size.
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build_global();
    }
}
