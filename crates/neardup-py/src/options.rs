//! Keyword options: read by name from a dict, every unknown name refused. The fingerprint
//! options are those of the CLI's fingerprint flags (`--features`, `--char-ngram`, …).

use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use neardup::features::{FeatureOptions, Method, TopN};
use neardup::normalize::{HtmlMode, NormalizeOptions};
use neardup::FingerprintConfig;

use crate::errors::config;

/// The keyword options of one call; each is taken once, and [`Options::finish`] refuses the rest.
pub struct Options<'py> {
    dict: Bound<'py, PyDict>,
}

impl<'py> Options<'py> {
    /// The options in `kw` (copied: the caller's dict is left alone).
    pub fn new(py: Python<'py>, kw: Option<&Bound<'py, PyDict>>) -> PyResult<Self> {
        Ok(Options {
            dict: match kw {
                Some(d) => d.copy()?,
                None => PyDict::new(py),
            },
        })
    }

    /// Takes option `key` (`None` when absent or None).
    pub fn take<T: FromPyObject<'py>>(&self, key: &str) -> PyResult<Option<T>> {
        let Some(v) = self.dict.get_item(key)? else {
            return Ok(None);
        };
        self.dict.del_item(key)?;
        if v.is_none() {
            return Ok(None);
        }
        v.extract::<T>().map(Some).map_err(|e| {
            config(format!(
                "option `{key}` = {}: {}",
                v.repr().map(|r| r.to_string()).unwrap_or_default(),
                e.value(v.py())
            ))
        })
    }

    /// Fails on any option not taken, naming it and the accepted ones.
    pub fn finish(self, accepted: &[&str]) -> PyResult<()> {
        if let Some((k, _)) = self.dict.iter().next() {
            let mut names: Vec<&str> = accepted.to_vec();
            names.extend_from_slice(FINGERPRINT_OPTIONS);
            return Err(config(format!(
                "unknown option `{k}`; accepted: {}",
                names.join(", ")
            )));
        }
        Ok(())
    }

    /// Takes the fingerprint options (the CLI's fingerprint flags, same defaults).
    pub fn fingerprint_config(&self) -> PyResult<FingerprintConfig> {
        let d = FeatureOptions::default();
        let method = match self.take::<String>("features")? {
            Some(m) => m.parse::<Method>().map_err(|e| config(e.to_string()))?,
            None => d.method,
        };
        let top_n = match self.take::<Bound<'py, PyAny>>("top_n")? {
            None => d.top_n,
            Some(v) => match v.extract::<String>() {
                Ok(s) if s == "all" => TopN::All,
                Ok(s) if s == "auto" => TopN::Auto,
                _ => match v.extract::<usize>() {
                    Ok(n) if n > 0 => TopN::Fixed(n),
                    _ => {
                        return Err(config(format!(
                            "option `top_n` = {v}: use a positive number, \"all\" or \"auto\""
                        )))
                    }
                },
            },
        };
        let html = match self.take::<String>("html")?.as_deref() {
            None | Some("auto") => HtmlMode::Auto,
            Some("always") => HtmlMode::Always,
            Some("never") => HtmlMode::Never,
            Some(o) => {
                return Err(config(format!(
                    "option `html` = {o:?}: use auto, always or never"
                )))
            }
        };
        Ok(FingerprintConfig {
            normalize: NormalizeOptions {
                html,
                nfkc: self.take::<bool>("nfkc")?.unwrap_or(true),
                lowercase: self.take::<bool>("lowercase")?.unwrap_or(true),
                fold_traditional: self.take::<bool>("fold_traditional")?.unwrap_or(true),
                ..NormalizeOptions::default()
            },
            features: FeatureOptions {
                method,
                char_ngram: self.take::<usize>("char_ngram")?.unwrap_or(d.char_ngram),
                word_ngram: self.take::<usize>("word_ngram")?.unwrap_or(d.word_ngram),
                top_n,
                idf_file: self.take::<PathBuf>("idf")?,
                stopwords_file: self.take::<PathBuf>("stopwords")?,
                ..d
            },
        })
    }

    /// Takes the fingerprint options and builds the fingerprinter.
    pub fn fingerprinter(&self) -> PyResult<neardup::Fingerprinter> {
        neardup::Fingerprinter::new(self.fingerprint_config()?).map_err(crate::errors::lib_error)
    }
}

/// The fingerprint options' names.
pub const FINGERPRINT_OPTIONS: &[&str] = &[
    "features",
    "char_ngram",
    "word_ngram",
    "top_n",
    "idf",
    "stopwords",
    "html",
    "nfkc",
    "lowercase",
    "fold_traditional",
];
