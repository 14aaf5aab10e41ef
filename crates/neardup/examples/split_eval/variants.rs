//! The columns of the evaluation: the default and the variants the `SPLIT_EVAL_*` knobs ask
//! for (see `main.rs`).

use neardup::policy::PolicyOptions;
use neardup::template_veto::TemplateVetoOptions;
use neardup::{FingerprintConfig, Fingerprinter};

#[derive(Clone)]
pub(crate) struct Variant {
    pub(crate) name: String,
    pub(crate) veto: Option<TemplateVetoOptions>,
    pub(crate) policy: PolicyOptions,
    /// Streamed through the online engine in requests of this many documents (`None`: batch
    /// dedup).
    pub(crate) engine: Option<usize>,
    /// Batch dedup indexes bodies as well (`TemplateVeto::with_body_index`, the default).
    pub(crate) body_index: bool,
    /// Normalisation keeps Traditional Chinese characters (`fold_traditional` off).
    pub(crate) keep_traditional: bool,
}

impl Variant {
    /// The fingerprinter of its documents: the default, its script step as the variant says.
    pub(crate) fn fingerprinter(&self) -> Fingerprinter {
        Fingerprinter::new(FingerprintConfig {
            normalize: neardup::normalize::NormalizeOptions {
                fold_traditional: !self.keep_traditional,
                ..Default::default()
            },
            ..FingerprintConfig::default()
        })
        .unwrap()
    }
}

/// Each `(name, veto, keep_traditional)` column in batch and through the online engine in
/// requests of 100.
fn batch_and_online(
    policy: &PolicyOptions,
    cols: &[(String, TemplateVetoOptions, bool)],
) -> Vec<Variant> {
    [None, Some(100)]
        .into_iter()
        .flat_map(|engine| {
            cols.iter().map(move |(name, veto, keep)| Variant {
                name: match engine {
                    Some(_) => format!("{name}, online, requests of 100"),
                    None => name.clone(),
                },
                veto: Some(veto.clone()),
                policy: policy.clone(),
                engine,
                body_index: engine.is_none(),
                keep_traditional: *keep,
            })
        })
        .collect()
}

pub(crate) fn variants() -> Vec<Variant> {
    let mut base = PolicyOptions::default();
    // `SPLIT_EVAL_NO_PASSAGES=1`: every column without passages (`PolicyOptions::passages`).
    if std::env::var_os("SPLIT_EVAL_NO_PASSAGES").is_some() {
        base.passages = None;
    }
    // `SPLIT_EVAL_MINHASH=v1|v2|v3` and `SPLIT_EVAL_MINHASH_SEED=n`: the long path's MinHash
    // scheme and seed in every column but the online engine's.
    match std::env::var("SPLIT_EVAL_MINHASH").as_deref() {
        Ok("v1") => base.minhash.minhash.scheme = neardup::minhash::Scheme::Permutations,
        Ok("v2") => base.minhash.minhash.scheme = neardup::minhash::Scheme::SimilaritySketch,
        Ok("v3") => base.minhash.minhash.scheme = neardup::minhash::Scheme::CodePointSketch,
        _ => {}
    }
    if let Some(seed) = std::env::var("SPLIT_EVAL_MINHASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        base.minhash.minhash.seed = seed;
    }
    let with = |f: &dyn Fn(&mut PolicyOptions)| {
        let mut p = base.clone();
        f(&mut p);
        p
    };
    let guard = |c: f64| TemplateVetoOptions {
        contained_above: Some(c),
        ..TemplateVetoOptions::default()
    };
    let mut v = vec![
        Variant {
            name: "previous default: unguarded veto, t=0.6, no containment".into(),
            veto: Some(TemplateVetoOptions::unguarded()),
            policy: with(&|p| p.short.containment = None),
            engine: None,
            body_index: true,
            keep_traditional: false,
        },
        Variant {
            name: "no veto, t=0.6, no containment".into(),
            veto: None,
            policy: with(&|p| p.short.containment = None),
            engine: None,
            body_index: true,
            keep_traditional: false,
        },
    ];
    let guards: Vec<f64> = std::env::var("SPLIT_EVAL_GUARDS")
        .ok()
        .map_or(vec![0.5], |s| {
            s.split(',').map(|x| x.parse().unwrap()).collect()
        });
    for &c in &guards {
        v.push(Variant {
            name: format!("guarded veto ({c}), t=0.6, no containment"),
            veto: Some(guard(c)),
            policy: with(&|p| p.short.containment = None),
            engine: None,
            body_index: true,
            keep_traditional: false,
        });
    }
    // `SPLIT_EVAL_SHARES=0.05,0.175,0.35`: the default with the body searched from these
    // template shares.
    if let Ok(xs) = std::env::var("SPLIT_EVAL_SHARES") {
        let t5 = with(&|p| p.minhash.lsh.threshold = 0.5);
        return xs
            .split(',')
            .map(|x| Variant {
                name: format!("body searched from a template share of {x}"),
                veto: Some(TemplateVetoOptions {
                    strip_template_share: Some(x.parse().unwrap()),
                    ..TemplateVetoOptions::default()
                }),
                policy: t5.clone(),
                engine: None,
                body_index: true,
                keep_traditional: false,
            })
            .collect();
    }
    // `SPLIT_EVAL_BODY_INDEX=1`: the default against the one that searched bodies but did not
    // index them.
    if std::env::var_os("SPLIT_EVAL_BODY_INDEX").is_some() {
        let t5 = with(&|p| p.minhash.lsh.threshold = 0.5);
        let mut v: Vec<Variant> = [false, true]
            .into_iter()
            .map(|body_index| Variant {
                name: if body_index {
                    "default: bodies indexed too".into()
                } else {
                    "previous default: bodies searched, not indexed".into()
                },
                veto: Some(TemplateVetoOptions::default()),
                policy: t5.clone(),
                engine: None,
                body_index,
                keep_traditional: false,
            })
            .collect();
        v.push(Variant {
            name: "online engine (`serve`), bodies indexed too, requests of 100".into(),
            veto: Some(TemplateVetoOptions::default()),
            policy: t5,
            engine: Some(100),
            body_index: false,
            keep_traditional: false,
        });
        return v;
    }
    // `SPLIT_EVAL_BODY=1`: the default against the one before a text was searched by its body,
    // batch and online.
    if std::env::var_os("SPLIT_EVAL_BODY").is_some() {
        let t5 = with(&|p| p.minhash.lsh.threshold = 0.5);
        return vec![
            Variant {
                name: "previous default: no body search, exact line keys".into(),
                veto: Some(TemplateVetoOptions::whole_texts()),
                policy: t5.clone(),
                engine: None,
                body_index: true,
                keep_traditional: false,
            },
            Variant {
                name: "default: the body searched when the whole finds nothing".into(),
                veto: Some(TemplateVetoOptions::default()),
                policy: t5.clone(),
                engine: None,
                body_index: true,
                keep_traditional: false,
            },
            Variant {
                name: "previous online engine (no body search), requests of 100".into(),
                veto: Some(TemplateVetoOptions::whole_texts()),
                policy: t5.clone(),
                engine: Some(100),
                body_index: false,
                keep_traditional: false,
            },
            Variant {
                name: "online engine (`serve`) with the default, requests of 100".into(),
                veto: Some(TemplateVetoOptions::default()),
                policy: t5,
                engine: Some(100),
                body_index: false,
                keep_traditional: false,
            },
        ];
    }
    // `SPLIT_EVAL_ONLINE=1,100`: the default in batch against the online engine in requests
    // of those sizes.
    if let Ok(rs) = std::env::var("SPLIT_EVAL_ONLINE") {
        let t5 = with(&|p| p.minhash.lsh.threshold = 0.5);
        let mut v = vec![Variant {
            name: "`dedup` default".into(),
            veto: Some(TemplateVetoOptions::default()),
            policy: t5.clone(),
            engine: None,
            body_index: true,
            keep_traditional: false,
        }];
        for r in rs.split(',').map(|x| x.parse::<usize>().unwrap()) {
            v.push(Variant {
                name: format!("online engine (`serve`), requests of {r}"),
                veto: Some(TemplateVetoOptions::default()),
                policy: t5.clone(),
                engine: Some(r),
                body_index: false,
                keep_traditional: false,
            });
        }
        return v;
    }
    // `SPLIT_EVAL_TEXT_LINES=1`: the default with the veto's lines of HTML pages read from
    // their markup (`TemplateVetoOptions::text_lines` off) and from their text (on), in batch
    // and through the online engine in requests of 1 and of 100.
    if std::env::var_os("SPLIT_EVAL_TEXT_LINES").is_some() {
        let t5 = with(&|p| p.minhash.lsh.threshold = 0.5);
        let mut v = vec![];
        for text_lines in [false, true] {
            let veto = TemplateVetoOptions {
                text_lines,
                ..TemplateVetoOptions::default()
            };
            let lines = if text_lines { "text" } else { "markup" };
            for engine in [None, Some(1), Some(100)] {
                v.push(Variant {
                    name: match engine {
                        None => format!("`dedup` default, lines of {lines}"),
                        Some(r) => format!("online, requests of {r}, lines of {lines}"),
                    },
                    veto: Some(veto.clone()),
                    policy: t5.clone(),
                    engine,
                    body_index: engine.is_none(),
                    keep_traditional: false,
                });
            }
        }
        return v;
    }
    // `SPLIT_EVAL_THRESHOLDS=0.4,0.45,0.55`: the default with other MinHash thresholds.
    if let Ok(ts) = std::env::var("SPLIT_EVAL_THRESHOLDS") {
        let mut v = vec![];
        for t in ts.split(',').map(|x| x.parse::<f64>().unwrap()) {
            v.push(Variant {
                name: format!("guarded veto, t={t}, containment"),
                veto: Some(TemplateVetoOptions::default()),
                policy: with(&|p| p.minhash.lsh.threshold = t),
                engine: None,
                body_index: true,
                keep_traditional: false,
            });
        }
        return v;
    }
    // `SPLIT_EVAL_SCRIPT=1`: the default with Traditional characters kept and folded, in batch
    // and through the online engine in requests of 100.
    if std::env::var_os("SPLIT_EVAL_SCRIPT").is_some() {
        let cols: Vec<_> = [true, false]
            .map(|keep| {
                let name = format!(
                    "default, Traditional {}",
                    if keep { "kept" } else { "folded" }
                );
                (name, TemplateVetoOptions::default(), keep)
            })
            .into();
        return batch_and_online(&with(&|p| p.minhash.lsh.threshold = 0.5), &cols);
    }
    // `SPLIT_EVAL_GUARD_SAMPLE=256,128,64`: the default with the containment guard's samples
    // of those sizes, in batch and through the online engine in requests of 100.
    if let Ok(ks) = std::env::var("SPLIT_EVAL_GUARD_SAMPLE") {
        let cols: Vec<_> = ks
            .split(',')
            .map(|k| {
                let veto = TemplateVetoOptions {
                    guard_sample: k.parse().unwrap(),
                    ..TemplateVetoOptions::default()
                };
                (format!("default, guard samples of {k}"), veto, false)
            })
            .collect();
        return batch_and_online(&with(&|p| p.minhash.lsh.threshold = 0.5), &cols);
    }
    // `SPLIT_EVAL_CONTAINMENT=0.8,0.85,0.9`: the default with the short path's containment
    // confirmed from those alignment similarities.
    if let Ok(cs) = std::env::var("SPLIT_EVAL_CONTAINMENT") {
        return cs
            .split(',')
            .map(|c| Variant {
                name: format!("default, containment from {c}"),
                veto: Some(TemplateVetoOptions::default()),
                policy: with(&|p| {
                    p.minhash.lsh.threshold = 0.5;
                    if let Some(k) = p.short.containment.as_mut() {
                        k.threshold = c.parse().unwrap();
                    }
                }),
                engine: None,
                body_index: true,
                keep_traditional: false,
            })
            .collect();
    }
    // `SPLIT_EVAL_SHORT=0.7,0.75,0.8`: the default with the short path's edit similarity
    // confirmed from those thresholds (`ShortTextOptions::threshold`); a value `t/l` also sets
    // the candidates' band threshold to `l` (`ShortTextOptions::lsh`, default 0.3).
    if let Ok(ts) = std::env::var("SPLIT_EVAL_SHORT") {
        return ts
            .split(',')
            .map(|t| {
                let (t, l) = t.split_once('/').unwrap_or((t, ""));
                let (t, l): (f64, Option<f64>) = (t.parse().unwrap(), l.parse().ok());
                Variant {
                    name: match l {
                        Some(l) => format!("default, short threshold {t}, bands at {l}"),
                        None => format!("default, short threshold {t}"),
                    },
                    veto: Some(TemplateVetoOptions::default()),
                    policy: with(&|p| {
                        p.minhash.lsh.threshold = 0.5;
                        p.short.threshold = t;
                        if let Some(l) = l {
                            p.short.lsh.threshold = l;
                        }
                    }),
                    engine: None,
                    body_index: true,
                    keep_traditional: false,
                }
            })
            .collect();
    }
    // `SPLIT_EVAL_PASSAGES=0,1,4,1/5`: the default without passages (0) and with long texts
    // indexed by their sentences (`PolicyOptions::passages`), a sentence counting for none once
    // more than `h` documents hold it (`max_holders`); `h/m` also keys fragments from `m`
    // letters (`min_fragment`).
    if let Ok(hs) = std::env::var("SPLIT_EVAL_PASSAGES") {
        return hs
            .split(',')
            .map(|x| {
                let (h, m) = x.split_once('/').unwrap_or((x, "8"));
                let (h, m): (u32, u32) = (h.parse().unwrap(), m.parse().unwrap());
                Variant {
                    name: match h {
                        0 => "no passages".into(),
                        h => format!("passages, max_holders {h}, min_fragment {m}"),
                    },
                    veto: Some(TemplateVetoOptions::default()),
                    policy: with(&|p| {
                        p.minhash.lsh.threshold = 0.5;
                        p.passages = (h > 0).then(|| neardup::detect::passages::PassageOptions {
                            max_holders: h,
                            min_fragment: m,
                            ..Default::default()
                        });
                    }),
                    engine: None,
                    body_index: true,
                    keep_traditional: false,
                }
            })
            .collect();
    }
    // `SPLIT_EVAL_EDGE=0,0.1,0.2`: the default with the short path's containment allowing
    // that share of the shorter text at one edge outside the longer (an attribution).
    if let Ok(es) = std::env::var("SPLIT_EVAL_EDGE") {
        return es
            .split(',')
            .map(|e| Variant {
                name: format!("default, containment edge {e}"),
                veto: Some(TemplateVetoOptions::default()),
                policy: with(&|p| {
                    p.minhash.lsh.threshold = 0.5;
                    if let Some(k) = p.short.containment.as_mut() {
                        k.edge = e.parse().unwrap();
                    }
                }),
                engine: None,
                body_index: true,
                keep_traditional: false,
            })
            .collect();
    }
    // `SPLIT_EVAL_BITS=32,16,8`: the default, and the default without the veto, with the long
    // path's signature entries kept at those bits.
    if let Ok(bs) = std::env::var("SPLIT_EVAL_BITS") {
        let mut v = vec![];
        for b in bs.split(',').map(|x| x.parse::<u32>().unwrap()) {
            v.push(Variant {
                name: format!("default, {b}-bit entries"),
                veto: Some(TemplateVetoOptions::default()),
                policy: with(&|p| {
                    p.minhash.lsh.threshold = 0.5;
                    p.minhash.bits = b;
                }),
                engine: None,
                body_index: true,
                keep_traditional: false,
            });
            v.push(Variant {
                name: format!("no veto (t=0.6), {b}-bit entries"),
                veto: None,
                policy: with(&|p| p.minhash.bits = b),
                engine: None,
                body_index: true,
                keep_traditional: false,
            });
        }
        return v;
    }
    v.push(Variant {
        name: "guarded veto, t=0.6, containment".into(),
        veto: Some(TemplateVetoOptions::default()),
        policy: base.clone(),
        engine: None,
        body_index: true,
        keep_traditional: false,
    });
    for request in [1, 100] {
        v.push(Variant {
            name: format!("online engine (`serve`), requests of {request}"),
            veto: Some(TemplateVetoOptions::default()),
            policy: with(&|p| p.minhash.lsh.threshold = 0.5),
            engine: Some(request),
            body_index: false,
            keep_traditional: false,
        });
    }
    v.push(Variant {
        name: "default: guarded veto, t=0.5, containment".into(),
        veto: Some(TemplateVetoOptions::default()),
        policy: with(&|p| p.minhash.lsh.threshold = 0.5),
        engine: None,
        body_index: true,
        keep_traditional: false,
    });
    v
}
