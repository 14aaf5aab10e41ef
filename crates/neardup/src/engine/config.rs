//! The configuration recorded in the data directory, how two of them differ, and id checks.

use super::{EngineConfig, EngineError, Result, MAX_ID_BYTES};
use crate::Fingerprinter;

/// The configuration blob recorded in every store file.
pub(super) fn config_blob(fp: &Fingerprinter, cfg: &EngineConfig) -> String {
    let mut blob = serde_json::json!({
        "engine": "neardup-engine/1",
        "detector": cfg.detector,
        "template_veto": match cfg.detector {
            super::EngineDetector::Auto(_) => cfg.template_veto.clone(),
            super::EngineDetector::Simhash => None,
        },
        // Derived from the short path's options, recorded so that a data directory indexed
        // with another reach (which texts carry a short-path sketch) is refused.
        "short_reach": match &cfg.detector {
            super::EngineDetector::Auto(p) => Some(p.short.reach()),
            super::EngineDetector::Simhash => None,
        },
        "fingerprint": fp.descriptor(),
        "distance": cfg.distance,
        "retention_ms": cfg.retention.as_millis() as u64,
        "segments": cfg.segments,
        "max_docs": cfg.max_docs,
    });
    // Bodies indexed with their documents (sketch encoding 5): recorded so that a directory
    // whose documents were stored without (whose bodies are not in its index) is refused.
    let bodies = matches!(cfg.detector, super::EngineDetector::Auto(_))
        && cfg
            .template_veto
            .as_ref()
            .is_some_and(|v| v.strip_template_share.is_some());
    if bodies {
        blob["template_veto_bodies"] = serde_json::json!("indexed");
    }
    // 32-bit signature entries are recorded without `bits`, the form of the descriptor
    // before the key existed: such a directory opens with `bits` = 32 and is refused, by
    // name, with any other.
    if let Some(m) = blob
        .pointer_mut("/detector/minhash")
        .and_then(|m| m.as_object_mut())
    {
        if m.get("bits") == Some(&serde_json::json!(32)) {
            m.remove("bits");
        }
    }
    // The script bands change what a text is searched by, never what is stored: not
    // recorded, so a directory written without them is searched with them.
    for at in ["/detector/minhash", "/detector/short"] {
        if let Some(m) = blob.pointer_mut(at).and_then(|m| m.as_object_mut()) {
            m.remove("script_band");
        }
    }
    // Guard samples of 256 are recorded without `guard_sample`, the form before the key
    // existed: such a directory opens with 256 and is refused, by name, with any other.
    if let Some(v) = blob
        .pointer_mut("/template_veto")
        .and_then(|v| v.as_object_mut())
    {
        if v.get("guard_sample") == Some(&serde_json::json!(UNRECORDED_GUARD_SAMPLE)) {
            v.remove("guard_sample");
        }
    }
    blob.to_string()
}

/// The containment guard's sample size of a data directory whose template veto records none.
const UNRECORDED_GUARD_SAMPLE: usize = 256;

/// The first setting on which two configuration descriptors ([`Engine::config_descriptor`],
/// JSON) differ, with both values, e.g. `retention_ms: stored 172800000, requested 86400000`.
///
/// [`Engine::config_descriptor`]: super::Engine::config_descriptor
pub fn config_difference(stored: &[u8], requested: &str) -> String {
    pub(super) fn walk(path: &str, a: &serde_json::Value, b: &serde_json::Value) -> Option<String> {
        use serde_json::Value;
        match (a, b) {
            (Value::Object(x), Value::Object(y)) => {
                // `method` first: another method explains every other difference.
                let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
                keys.sort_by_key(|k| (k.as_str() != "method", k.as_str()));
                keys.dedup();
                keys.into_iter().find_map(|k| {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    let null = Value::Null;
                    walk(&p, x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null))
                })
            }
            // A fingerprint descriptor is JSON in a string: the setting inside it is named.
            (Value::String(x), Value::String(y)) if x != y => {
                match (descriptor_value(x), descriptor_value(y)) {
                    (Some(x), Some(y)) => walk(path, &x, &y),
                    _ => Some(format!("{path}: stored {a}, requested {b}")),
                }
            }
            _ if a == b => None,
            _ => Some(format!("{path}: stored {a}, requested {b}")),
        }
    }
    // A fingerprint descriptor (JSON in a string), its normalisation without
    // `fold_traditional` read as the step off (see `NormalizeOptions::fold_traditional`).
    fn descriptor_value(s: &str) -> Option<serde_json::Value> {
        let mut v: serde_json::Value = serde_json::from_str(s).ok()?;
        v.pointer_mut("/config/normalize")?
            .as_object_mut()?
            .entry("fold_traditional")
            .or_insert(serde_json::json!(false));
        Some(v)
    }
    // A descriptor without `bits` means 32-bit entries, a containment without `edge` no quotes,
    // a veto without `guard_sample` samples of 256 (see `config_blob`), one without
    // `own_repeated_lines`, `by_content` or `text_lines` those rules off.
    fn with_bits(mut v: serde_json::Value) -> serde_json::Value {
        if let Some(m) = v
            .pointer_mut("/detector/minhash")
            .and_then(|m| m.as_object_mut())
        {
            m.entry("bits").or_insert(serde_json::json!(32));
        }
        if let Some(c) = v
            .pointer_mut("/detector/short/containment")
            .and_then(|c| c.as_object_mut())
        {
            c.entry("edge").or_insert(serde_json::json!(0.0));
        }
        if let Some(t) = v
            .pointer_mut("/template_veto")
            .and_then(|t| t.as_object_mut())
        {
            t.entry("guard_sample")
                .or_insert(serde_json::json!(UNRECORDED_GUARD_SAMPLE));
            t.entry("own_repeated_lines")
                .or_insert(serde_json::json!(false));
            t.entry("by_content").or_insert(serde_json::json!(false));
            t.entry("text_lines").or_insert(serde_json::json!(false));
        }
        v
    }
    let requested: serde_json::Value =
        with_bits(serde_json::from_str(requested).unwrap_or(serde_json::Value::Null));
    match serde_json::from_slice::<serde_json::Value>(stored).map(with_bits) {
        Ok(stored) => walk("", &stored, &requested)
            .unwrap_or_else(|| "the same settings, encoded differently".into()),
        Err(_) => format!(
            "the stored configuration is not this engine's ({} bytes that are not JSON)",
            stored.len()
        ),
    }
}

pub(super) fn check_id(id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(EngineError::InvalidId {
            reason: "the id is empty".into(),
        });
    }
    if id.len() > MAX_ID_BYTES {
        return Err(EngineError::InvalidId {
            reason: format!(
                "the id is {} bytes long; at most {MAX_ID_BYTES} are allowed",
                id.len()
            ),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template_veto::TemplateVetoOptions;
    use crate::FingerprintConfig;

    /// A directory written before bodies were indexed with their documents has none in its
    /// index: it is refused, by name, rather than opened with bodies missing.
    #[test]
    fn directory_without_indexed_bodies_is_refused_by_name() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let now = config_blob(&fp, &EngineConfig::default());
        let mut before: serde_json::Value = serde_json::from_str(&now).unwrap();
        assert!(before
            .as_object_mut()
            .unwrap()
            .remove("template_veto_bodies")
            .is_some());
        assert_eq!(
            config_difference(before.to_string().as_bytes(), &now),
            "template_veto_bodies: stored null, requested \"indexed\""
        );
        // Without the veto there are no bodies, and nothing is recorded.
        let no_veto = EngineConfig {
            template_veto: None,
            ..EngineConfig::default()
        };
        assert!(!config_blob(&fp, &no_veto).contains("template_veto_bodies"));
    }

    /// A directory written before the script step existed (its fingerprint descriptor has no
    /// `fold_traditional`) is refused under the default, naming the step and both values, and
    /// its configuration is the one that switches the step off.
    #[test]
    fn directory_without_the_script_step_is_refused_by_name() {
        let kept = Fingerprinter::new(FingerprintConfig {
            normalize: crate::normalize::NormalizeOptions {
                fold_traditional: false,
                ..Default::default()
            },
            ..Default::default()
        })
        .unwrap();
        let folded = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let old = config_blob(&kept, &EngineConfig::default());
        assert!(!old.contains("fold_traditional"), "{old}");
        let now = config_blob(&folded, &EngineConfig::default());
        assert_eq!(
            config_difference(old.as_bytes(), &now),
            "fingerprint.config.normalize.fold_traditional: stored false, requested true"
        );
    }

    /// A directory written before the veto's rule `name` (set by `set`, on by default) records
    /// none: it is refused under the default, naming the setting and both values, and it is
    /// the configuration with the rule off, byte for byte.
    fn refused_without_veto_rule(name: &str, set: fn(&mut TemplateVetoOptions, bool)) {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let with = |on: bool| {
            let mut cfg = EngineConfig::default();
            set(cfg.template_veto.as_mut().unwrap(), on);
            config_blob(&fp, &cfg)
        };
        let old = with(false);
        assert!(!old.contains(name), "{old}");
        let now = config_blob(&fp, &EngineConfig::default());
        assert_eq!(now, with(true));
        assert_eq!(
            config_difference(old.as_bytes(), &now),
            format!("template_veto.{name}: stored false, requested true")
        );
        assert_eq!(
            config_difference(old.as_bytes(), &with(false)),
            "the same settings, encoded differently"
        );
    }

    /// A directory written before pages whose own lines are repeated by their copies took a
    /// distinct part (no `own_repeated_lines`) opens only with the rule off (`neardup serve
    /// --no-template-own-lines`).
    #[test]
    fn directory_without_own_repeated_lines_is_refused_by_name() {
        refused_without_veto_rule("own_repeated_lines", |v, on| v.own_repeated_lines = on);
    }

    /// A directory written before the lines of minified HTML pages were read from their text
    /// (no `text_lines`) opens only with the rule off (`neardup serve --template-markup-lines`).
    #[test]
    fn directory_without_text_lines_is_refused_by_name() {
        refused_without_veto_rule("text_lines", |v, on| v.text_lines = on);
    }

    /// A directory written before passages (its detector has no `passages`) is refused under
    /// the default, naming the setting; it is the configuration with passages off (`neardup
    /// serve --no-passages`), byte for byte.
    #[test]
    fn directory_without_passages_is_refused_by_name() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let with = |on: bool| {
            let mut cfg = EngineConfig::default();
            if let super::super::EngineDetector::Auto(p) = &mut cfg.detector {
                if !on {
                    p.passages = None;
                }
            }
            config_blob(&fp, &cfg)
        };
        let old = with(false);
        assert!(!old.contains("passages"), "{old}");
        let now = config_blob(&fp, &EngineConfig::default());
        assert_eq!(now, with(true));
        let d = config_difference(old.as_bytes(), &now);
        assert!(
            d.starts_with("detector.passages: stored null, requested {"),
            "{d}"
        );
    }

    /// A directory written before quotes were matched (its containment has no `edge`) is
    /// refused under the default, naming the setting and both values; it is the
    /// configuration with quotes off (`neardup serve --quote-edge 0`).
    #[test]
    fn directory_without_quotes_is_refused_by_name() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let with = |edge: f64| {
            let mut cfg = EngineConfig::default();
            if let super::super::EngineDetector::Auto(p) = &mut cfg.detector {
                p.short.containment.as_mut().unwrap().edge = edge;
            }
            config_blob(&fp, &cfg)
        };
        let old = with(0.0);
        assert!(!old.contains("edge"), "{old}");
        let now = config_blob(&fp, &EngineConfig::default());
        assert_eq!(now, with(0.2));
        assert_eq!(
            config_difference(old.as_bytes(), &now),
            "detector.short.containment.edge: stored 0.0, requested 0.2"
        );
        assert_eq!(
            config_difference(old.as_bytes(), &with(0.0)),
            "the same settings, encoded differently"
        );
    }

    /// A directory written before the guard's sample size was a setting kept samples of 256:
    /// it opens with 256 (nothing recorded) and is refused, with both sizes named, with another.
    #[test]
    fn directory_without_a_guard_sample_size_is_read_as_256() {
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        let with = |k: usize| EngineConfig {
            template_veto: Some(crate::template_veto::TemplateVetoOptions {
                guard_sample: k,
                ..Default::default()
            }),
            ..EngineConfig::default()
        };
        let old = config_blob(&fp, &with(256));
        assert!(!old.contains("guard_sample"), "{old}");
        let other = config_blob(&fp, &with(64));
        assert!(other.contains("\"guard_sample\":64"), "{other}");
        assert_eq!(
            config_difference(old.as_bytes(), &other),
            "template_veto.guard_sample: stored 256, requested 64"
        );
    }
}
